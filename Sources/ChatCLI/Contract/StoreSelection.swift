import ChatStore
import Foundation

/// Which database file(s) a command works on: `--data-dir`, `--user`, `--db`, and for
/// commands that can work on a whole folder, `--all` and `--jobs`. Declared once here
/// for the three programs.
public struct StoreSelection: Sendable {
  public var dataDirectory: String
  public var user: Int64?
  public var db: String?
  public var all: Bool
  /// Files worked on at once with `--all` (default: the number of cores).
  public var jobs: Int
  let allowsAll: Bool

  /// Declares the options; `all` adds `--all` and `--jobs`.
  public init(_ o: inout OptionReader, all allowsAll: Bool) {
    self.allowsAll = allowsAll
    dataDirectory =
      o.option(
        "--data-dir", valueName: "dir",
        help:
          "The folder of chats-<id>.db files (default: $\(StoreLocation.environmentKey), else $XDG_DATA_HOME/chatdb, "
          + "else ~/.local/share/chatdb).",
        parse: Parse.path) ?? StoreLocation.defaultDataDirectory()
    user = o.option(
      "--user", valueName: "id", help: "The user whose database to use: <data-dir>/chats-<id>.db.", parse: Parse.userID)
    db = o.option(
      "--db", valueName: "path", help: "A database file given by path, instead of --user.", parse: Parse.path)
    if allowsAll {
      all = o.flag("--all", help: "Every chats-*.db file in the data folder.")
      jobs = StoreSelection.jobs(&o)
    } else {
      all = false
      jobs = 1
    }
  }

  /// `--jobs <n>`, for every command that works on many files at once.
  public static func jobs(_ o: inout OptionReader) -> Int {
    o.option(
      "--jobs", valueName: "n", help: "With many files: how many to work on at once (default: the number of cores).",
      parse: { text -> Int? in
        guard let n = try Parse.count(text), n >= 1, n <= 1024 else {
          throw InvalidValue("expected a number from 1 to 1024")
        }
        return n
      }) ?? ProcessInfo.processInfo.activeProcessorCount
  }

  /// Exactly one of `--user`, `--db` and (where offered) `--all`.
  public func validate() throws {
    let given = [user != nil, db != nil, all].filter { $0 }.count
    if given == 0 {
      throw ValidationError(
        allowsAll ? "Missing '--user <id>', '--db <path>' or '--all'" : "Missing '--user <id>' or '--db <path>'")
    }
    if given > 1 {
      throw ValidationError(
        allowsAll
          ? "Use only one of '--user <id>', '--db <path>' and '--all'"
          : "Use only one of '--user <id>' and '--db <path>'")
    }
  }

  /// The one file named by `--user` or `--db` (nil with `--all`).
  public var single: FileTarget? {
    if let user {
      return FileTarget(
        path: StoreLocation.path(forUser: user, in: dataDirectory), userID: user, dataFolder: dataDirectory)
    }
    if let db { return FileTarget(path: db, userID: StoreLocation.userID(fromFileName: db)) }
    return nil
  }

  /// The files to work on: the one named, or every `chats-*.db` of the data folder in
  /// user-id order.
  public func targets() throws -> [FileTarget] {
    if let single { return [single] }
    return try StoreLocation.databaseFiles(in: dataDirectory).map {
      FileTarget(path: $0, userID: StoreLocation.userID(fromFileName: $0), dataFolder: dataDirectory)
    }
  }
}

/// Value parsers shared by the three programs' options.
public enum Parse {
  /// A user id: a positive 64-bit integer in plain digits.
  public static func userID(_ text: String) throws -> Int64? {
    guard let id = StoreLocation.parseUserID(text) else { throw InvalidValue("a user id is a positive 64-bit integer") }
    return id
  }

  /// A message id: a positive 64-bit integer in plain digits (the rule user ids follow).
  public static func messageID(_ text: String) throws -> Int64? {
    guard let id = StoreLocation.parseUserID(text) else {
      throw InvalidValue("a message id is a positive 64-bit integer")
    }
    return id
  }

  /// A count from 0 (`1000000`, also `1_000_000`, `1,000,000` or `1e6`).
  public static func count(_ text: String) throws -> Int? {
    let cleaned = text.replacingOccurrences(of: "_", with: "").replacingOccurrences(of: ",", with: "")
    if let n = Int(cleaned), n >= 0 { return n }
    if let d = Double(cleaned), d >= 0, d < 1e12, d == d.rounded() { return Int(d) }
    throw InvalidValue("expected a whole number from 0")
  }

  /// A count from 1 up to `limit`.
  public static func count(from lower: Int, to limit: Int) -> @Sendable (String) throws -> Int? {
    { text in
      guard let n = try? count(text), n >= lower, n <= limit else {
        throw InvalidValue("expected a whole number from \(lower) to \(limit)")
      }
      return n
    }
  }

  /// A date (`2026-01-31`) or ISO 8601 time, normalised to the store's timestamp form.
  public static func time(_ text: String) throws -> String? {
    guard let ms = Timestamp.milliseconds(from: text) else {
      throw InvalidValue("expected a date like 2026-01-31 or a time like 2026-01-31T12:00:00Z")
    }
    return Timestamp.string(milliseconds: ms)
  }

  /// A date or time as a `Date`.
  public static func date(_ text: String) throws -> Date? {
    guard let ms = Timestamp.milliseconds(from: text) else {
      throw InvalidValue("expected a date like 2026-01-31 or a time like 2026-01-31T12:00:00Z")
    }
    return Date(timeIntervalSince1970: Double(ms) / 1000)
  }

  /// A size with a unit (`500MiB`, `2GB`, `4096B`); a bare number is refused so that
  /// `5` is never taken as five bytes.
  public static func size(_ text: String) throws -> Int64? {
    guard text.last?.isLetter == true, let bytes = ByteCount.parse(text), bytes > 0 else {
      throw InvalidValue("expected a size with a unit, like 500MiB, 2GB or 4096B")
    }
    return bytes
  }

  /// A path that is not empty.
  public static func path(_ text: String) throws -> String? {
    guard !text.isEmpty else { throw InvalidValue("a path cannot be empty") }
    return text
  }
}
