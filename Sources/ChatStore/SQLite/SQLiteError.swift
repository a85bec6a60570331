import CSQLite
import Foundation

/// An error reported by SQLite, with its result codes, message and the SQL that failed.
///
/// Bound arguments are kept out of the description (no chat content in logs) unless
/// `includeArguments` is set.
///
/// ```
/// SQLite error 19: UNIQUE constraint failed: Messages.id - while executing `INSERT INTO Messages …`
/// ```
/// See <https://sqlite.org/rescode.html>.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
  /// The extended result code, for example 2067 (`SQLITE_CONSTRAINT_UNIQUE`).
  public var extendedCode: Int32
  /// The primary result code, for example 19 (`SQLITE_CONSTRAINT`).
  public var code: Int32 { extendedCode & 0xFF }
  /// The text of `sqlite3_errmsg`, or `sqlite3_errstr` when no connection is at hand.
  public var message: String
  /// The statement that failed, when there is one.
  public var sql: String?
  /// Arguments bound to the failing statement, hidden from `description` by default.
  public var arguments: [DatabaseValue]
  /// Whether `description` shows `arguments`; off so chat content never reaches logs.
  public var includeArguments = false

  public init(code: Int32, message: String? = nil, sql: String? = nil, arguments: [DatabaseValue] = []) {
    self.extendedCode = code
    self.message = message ?? String(cString: sqlite3_errstr(code))
    self.sql = sql
    self.arguments = arguments
  }

  public var description: String {
    var text = "SQLite error \(code): \(message)"
    if let sql {
      let oneLine = sql.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        .joined(separator: " ")
      text += " - while executing `\(oneLine)`"
    }
    if includeArguments && !arguments.isEmpty {
      text += " with arguments \(arguments)"
    }
    return text
  }

  /// True for `SQLITE_BUSY` and `SQLITE_LOCKED`: another connection holds the lock.
  public var isBusy: Bool { code == SQLITE_BUSY || code == SQLITE_LOCKED }
  /// True when the file is not a database or is damaged (`SQLITE_NOTADB`, `SQLITE_CORRUPT`).
  public var isCorruptOrNotADatabase: Bool { code == SQLITE_NOTADB || code == SQLITE_CORRUPT }
  /// True for `SQLITE_FULL`: the disk is full.
  public var isDiskFull: Bool { code == SQLITE_FULL }
}

extension SQLiteError {
  /// SQLite's result codes by name, so no code compares against a bare number.
  /// See <https://sqlite.org/rescode.html>.
  public enum ResultCode {
    public static let busy = SQLITE_BUSY
    public static let locked = SQLITE_LOCKED
    public static let readOnly = SQLITE_READONLY
    public static let ioError = SQLITE_IOERR
    public static let corrupt = SQLITE_CORRUPT
    public static let full = SQLITE_FULL
    public static let cantOpen = SQLITE_CANTOPEN
    public static let constraint = SQLITE_CONSTRAINT
    public static let notADatabase = SQLITE_NOTADB
    public static let permission = SQLITE_PERM
    public static let range = SQLITE_RANGE
    /// `SQLITE_INTERRUPT`: a statement stopped by `Database.interrupt(after:)`.
    public static let interrupt = SQLITE_INTERRUPT
    /// `SQLITE_CONSTRAINT_FOREIGNKEY` (787), an extended code.
    public static let constraintForeignKey = SQLITE_CONSTRAINT | (3 << 8)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY` (1555), an extended code.
    public static let constraintPrimaryKey = SQLITE_CONSTRAINT | (6 << 8)
    /// `SQLITE_CONSTRAINT_UNIQUE` (2067), an extended code.
    public static let constraintUnique = SQLITE_CONSTRAINT | (8 << 8)
    /// `SQLITE_CONSTRAINT_CHECK` (275), an extended code.
    public static let constraintCheck = SQLITE_CONSTRAINT | (1 << 8)
    /// `SQLITE_CONSTRAINT_NOTNULL` (1299), an extended code.
    public static let constraintNotNull = SQLITE_CONSTRAINT | (5 << 8)
  }
}
