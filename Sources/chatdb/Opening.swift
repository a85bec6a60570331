import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

// MARK: - Opening files for commands

/// Makes the folder of `path` (mode 0700) when a command is about to create a file in it.
func prepareFolder(for path: String) throws {
  let folder = FileSystem.parentFolder(of: path)
  if !FileSystem.exists(folder) { try FileSystem.createPrivateDirectory(atPath: folder) }
}

/// Opens a file that must exist (66 when missing, never created).
func openExisting(_ path: String, mode: Database.Mode) throws -> Database {
  guard FileSystem.exists(path) else { throw StoreError(.notFound, "\(path): no such file", path: path) }
  do { return try Database(path: path, mode: mode) } catch {
    throw StoreError.from(error, path: path, doing: "open", otherwise: mode == .readOnly ? .readFailed : .writeFailed)
  }
}

/// Opens an existing file at the latest schema for `task`; refuses an older file with a
/// pointer to `chatdb migrate` (15) and a newer one (10).
func openLatest(_ path: String, mode: Database.Mode, for task: String) throws -> Database {
  let db = try openExisting(path, mode: mode)
  do { try Migrator.requireLatest(db, for: task) } catch {
    throw StoreError.from(error, path: path, doing: "open", otherwise: .readFailed)
  }
  return db
}

/// The owner recorded in a file (`StoreInfo.owner_user_id`), if any.
func recordedOwner(_ db: Database) throws -> Int64? {
  try db.int64("SELECT value FROM StoreInfo WHERE key = 'owner_user_id'")
}

/// Opens `path` for writing records: created at the latest version when missing (the
/// returned flag says so, so a failed first write can remove it); an existing file must
/// already be at the latest version. Returns the connection and the file's owner.
func openForWriting(path: String, owner: Int64?) throws -> (db: Database, owner: Int64, created: Bool) {
  var created = false
  if isUnfinishedNewFile(path) { FileSystem.removeDatabase(atPath: path) }
  if !FileSystem.exists(path) {
    guard owner != nil else {
      throw StoreError(
        .badInput, "\(path): cannot tell whose file this is; name it chats-<userId>.db or use --user", path: path)
    }
    try prepareFolder(for: path)
    _ = try Migrator().migrate(fileAt: path, owner: owner)
    created = true
  }
  do {
    let db = try Database(path: path)
    try Migrator.requireLatest(db, for: "writing records")
    let recorded = try recordedOwner(db)
    guard let resolved = owner ?? recorded else {
      throw StoreError(
        .badInput, "\(path): cannot tell whose file this is; name it chats-<userId>.db or use --user", path: path)
    }
    if let recorded, recorded != resolved {
      throw StoreError(.badInput, "\(path) belongs to user \(recorded), not \(resolved)", path: path)
    }
    return (db, resolved, created)
  } catch {
    if created { FileSystem.removeDatabase(atPath: path) }
    throw StoreError.from(error, path: path, doing: "open")
  }
}

/// A file that holds no table at all: one whose creation was cut short (a command killed
/// while it made a new file) or an empty file. Writing into it starts as into a new one.
func isUnfinishedNewFile(_ path: String) -> Bool {
  guard isRegularFile(path) else { return false }
  if FileSystem.size(atPath: path) == 0 { return true }
  guard let db = try? Database(path: path, mode: .readOnly) else { return false }
  return (try? db.int64("SELECT count(*) FROM sqlite_schema")) == 0
}

/// Refuses when the file system that will hold `path` has less than `bytes` (plus a
/// 16 MiB margin) available.
func requireSpace(_ bytes: Int64, toWrite path: String) throws {
  try DiskSpace.require(bytes + (16 << 20), in: path, for: path, to: "writing it")
}

/// Seconds since `start`, rounded to milliseconds for JSON.
func seconds(since start: DispatchTime) -> Double {
  (Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e6).rounded() / 1000
}

/// Whether `path` is an existing folder (following links).
func isRegularFile(_ path: String) -> Bool {
  var info = stat()
  return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
}

func isDirectory(_ path: String) -> Bool {
  var info = stat()
  return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
}
