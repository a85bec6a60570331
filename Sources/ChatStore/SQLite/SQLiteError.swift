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
