import ChatStore
import Foundation

/// What a `VACUUM` did, in file sizes measured before and after (not estimates).
///
/// For `VACUUM INTO` (`isCopy`) the original is untouched: `bytesBefore` is its size,
/// `bytesAfter` the new copy's, and nothing is freed.
public struct VacuumReport: Sendable, Hashable {
  public var path: String
  /// The new file written by `VACUUM INTO`, if that was asked for.
  public var into: String?
  /// The database with its `-wal` (`FileSystem.databaseSize`), before.
  public var bytesBefore: Int64
  /// The rebuilt file (the original, or the `--into` copy), after.
  public var bytesAfter: Int64

  /// Whether this was `VACUUM INTO`: `bytesAfter` is then the size of a new, compacted
  /// copy and the original is unchanged, so nothing was freed.
  public var isCopy: Bool { into != nil }
  /// Bytes given back to the file system (0 for a copy).
  public var bytesFreed: Int64 { isCopy ? 0 : max(bytesBefore - bytesAfter, 0) }
}

/// Rebuilds a database file without its free pages: `VACUUM`, or `VACUUM INTO` a new
/// file, after checking there is room for a full copy.
///
/// ```swift
/// let report = try DatabaseVacuum.run(path: "chats-1.db")
/// print(report.bytesFreed, "bytes freed")
/// ```
/// See <https://sqlite.org/lang_vacuum.html>.
public enum DatabaseVacuum {
  /// Room kept free beyond the copy itself, in bytes.
  public static let margin: Int64 = 8 << 20

  /// The folder SQLite writes its temporary files to (`SQLITE_TMPDIR`, `TMPDIR`, else `/tmp`).
  /// See <https://sqlite.org/tempfiles.html#temporary_file_storage_locations>.
  public static func temporaryFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
    FileSystem.sqliteTemporaryDirectory(environment: environment)
  }

  /// Vacuums the file at `path`, or copies it compacted to `into`.
  ///
  /// Refuses (`.diskSpace`) unless the file's folder (or `into`'s) and the temporary
  /// folder each have the file's size plus a margin free; refuses an existing `into`.
  /// A plain `VACUUM` builds its copy in the temporary folder and then writes it whole
  /// into the WAL beside the file: when both folders are on one file system, that file
  /// system needs room for two copies (measured on a tmpfs: 2.0× the file).
  public static func run(
    path: String, into: String? = nil, diskSpace: DiskSpaceProbe = DiskSpace.of,
    temporaryFolder temporary: String? = nil
  ) throws -> VacuumReport {
    guard FileSystem.exists(path) else { throw StoreError(.notFound, "\(path): no such file", path: path) }
    if let into {
      let source = URL(fileURLWithPath: path).standardizedFileURL.path
      let target = URL(fileURLWithPath: into).standardizedFileURL.path
      if ["", "-wal", "-shm", "-journal"].contains(where: { source + $0 == target }) {
        throw StoreError(
          .badInput, "\(into) is the database or one of its companion files; VACUUM INTO needs a new file", path: into)
      }
    }
    if let into, FileSystem.exists(into) {
      throw StoreError(.badInput, "\(into) already exists; VACUUM INTO writes a new file", path: into)
    }
    let before = FileSystem.databaseSize(atPath: path)
    let folder = FileSystem.parentFolder(of: into ?? path)
    let temporary = temporary ?? temporaryFolder()
    if into == nil, FileSystem.onSameFileSystem(folder, temporary) {
      try DiskSpace.require(
        2 * before + margin, in: folder, for: path, to: "VACUUM's copy and its rewrite of the WAL", probe: diskSpace)
    } else {
      for place in [folder, temporary] {
        try DiskSpace.require(before + margin, in: place, for: path, to: "VACUUM's full copy", probe: diskSpace)
      }
    }
    do {
      let db = try Database(path: path)
      if let into {
        // Made private before a byte is copied (SQLite would create it 0644 less the
        // umask); VACUUM INTO accepts an empty file. See <https://sqlite.org/lang_vacuum.html#vacuuminto>.
        try FileSystem.createNewPrivateFile(atPath: into)
        do {
          try db.execute("VACUUM INTO ?", [into])
        } catch {
          // Ours (created with O_EXCL above): a partial copy is not left looking finished.
          unlink(into)
          throw error
        }
      } else {
        try db.execute("VACUUM")
        try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
      }
    } catch {
      throw StoreError.from(error, path: path, doing: "vacuum")
    }
    return VacuumReport(
      path: path, into: into, bytesBefore: before, bytesAfter: FileSystem.databaseSize(atPath: into ?? path))
  }
}
