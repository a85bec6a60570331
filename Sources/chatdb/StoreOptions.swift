import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// The options every command that works on databases shares: which file(s), and how
/// to print.
enum StoreOptions {
  static let dataDir = Option.value(
    "--data-dir", valueName: "dir",
    help: "The folder of chats-<id>.db files (default: $\(StoreLocation.environmentKey), else ~/.local/share/chatdb).")
  static let user = Option.value("--user", valueName: "id", help: "The user whose database to use: <data-dir>/chats-<id>.db.")
  static let db = Option.value("--db", valueName: "path", help: "A database file given by path, instead of --user.")
  static let all = Option.flag("--all", help: "Every chats-*.db file in the data folder.")
  static let json = Option.flag("--json", help: "Print the result as JSON.")

  /// `--data-dir`, `--user`, `--db`, optionally `--all`, and `--json`.
  static func options(all allowAll: Bool) -> [Option] {
    [dataDir, user, db] + (allowAll ? [all] : []) + [json]
  }

  /// What a command works on.
  enum Target {
    /// One file; `owner` is the user id when it is known from `--user` or the file name.
    case file(path: String, owner: Int64?)
    /// Every chats-*.db in the folder.
    case all(dataDirectory: String)
  }

  /// Resolves `--data-dir`/`--user`/`--db`/`--all` into a target, or a usage error.
  static func target(_ arguments: ParsedArguments) throws -> Target {
    let dataDirectory = arguments.value("--data-dir") ?? StoreLocation.defaultDataDirectory()
    let userID = try arguments.value("--user") { text -> Int64? in
      guard let id = StoreLocation.parseUserID(text) else {
        throw InvalidValue("a user id is a positive 64-bit integer")
      }
      return id
    }
    let dbPath = arguments.value("--db")
    let all = arguments.flag("--all")
    switch (userID, dbPath, all) {
    case (let id?, nil, false):
      return .file(path: StoreLocation.path(forUser: id, in: dataDirectory), owner: id)
    case (nil, let path?, false):
      guard !path.isEmpty else { throw arguments.usageError("The value '' is invalid for '--db <path>'") }
      return .file(path: path, owner: StoreLocation.userID(fromFileName: path))
    case (nil, nil, true):
      return .all(dataDirectory: dataDirectory)
    case (nil, nil, false):
      throw arguments.usageError(
        arguments.command.options.contains { $0.names.contains("--all") }
          ? "Missing '--user <id>', '--db <path>' or '--all'" : "Missing '--user <id>' or '--db <path>'")
    default:
      throw arguments.usageError("Use only one of '--user <id>', '--db <path>' and '--all'")
    }
  }

  /// Makes the data folder (mode 0700) when a command is about to create a file in it.
  static func prepareFolder(for path: String) throws {
    let folder = (path as NSString).deletingLastPathComponent
    if !folder.isEmpty && !FileSystem.exists(folder) { try FileSystem.createPrivateDirectory(atPath: folder) }
  }
}

/// A reason a value is invalid, shown after the usage error's standard wording.
struct InvalidValue: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

// MARK: - Opening a file for writing records

extension StoreOptions {
  /// Opens `path` for writing records: created at the latest version when missing;
  /// an existing file must already be at the latest version (`chatdb migrate` first).
  /// Returns the connection and the file's owner.
  static func openForWriting(path: String, owner: Int64?) throws -> (Database, Int64) {
    if !FileSystem.exists(path) {
      try prepareFolder(for: path)
      _ = try Migrator().migrate(fileAt: path, owner: owner)
    }
    do {
      let db = try Database(path: path)
      try Migrator.requireLatest(db, for: "writing records")
      let recorded = try db.int64("SELECT value FROM StoreInfo WHERE key = 'owner_user_id'")
      guard let resolved = owner ?? recorded else {
        throw StoreError(.badInput, "\(path): cannot tell whose file this is; name it chats-<userId>.db or use --user", path: path)
      }
      if let recorded, recorded != resolved {
        throw StoreError(.badInput, "\(path) belongs to user \(recorded), not \(resolved)", path: path)
      }
      return (db, resolved)
    } catch {
      throw StoreError.from(error, path: path, doing: "open")
    }
  }

  /// Parses `--since`/`--until` style dates: `YYYY-MM-DD` or a full ISO 8601 time.
  static func time(_ text: String) throws -> String? {
    guard let ms = Timestamp.milliseconds(from: text) else {
      throw InvalidValue("expected a date like 2026-01-31 or a time like 2026-01-31T12:00:00Z")
    }
    return Timestamp.string(milliseconds: ms)
  }

  /// Parses a positive count (`--messages 1000000`, also `1_000_000` or `1e6`).
  static func count(_ text: String) throws -> Int? {
    let cleaned = text.replacingOccurrences(of: "_", with: "").replacingOccurrences(of: ",", with: "")
    if let n = Int(cleaned), n >= 0 { return n }
    if let d = Double(cleaned), d >= 0, d < 1e12, d == d.rounded() { return Int(d) }
    throw InvalidValue("expected a whole number from 0")
  }
}

extension ImportError: ExitCodeProviding {
  public var exitCode: Int32 { ChatExitCode.code(for: kind) }
}
