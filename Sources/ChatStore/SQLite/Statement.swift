import CSQLite

/// `SQLITE_TRANSIENT`, which the C importer does not bring over: SQLite copies the bytes.
// swift-format-ignore: AlwaysUseLowerCamelCase
let SQLITE_TRANSIENT = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)

/// A prepared statement, owned by one `Database` and used from its thread only.
///
/// Bind, step, read columns, reset, repeat: a statement is meant to be reused for
/// every row of a batch.
///
/// ```swift
/// let insert = try db.prepare("INSERT INTO Users(id, name) VALUES (?, ?)")
/// try insert.execute([1, "Ada"])
/// ```
/// See <https://sqlite.org/c3ref/stmt.html>.
public final class Statement {
  let handle: OpaquePointer
  unowned let database: Database
  /// The SQL text the statement was prepared from.
  public let sql: String

  init(database: Database, sql: String) throws {
    var stmt: OpaquePointer?
    let rc = sqlite3_prepare_v3(database.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
    guard rc == SQLITE_OK, let stmt else {
      sqlite3_finalize(stmt)
      throw database.error(rc, sql: sql)
    }
    self.handle = stmt
    self.database = database
    self.sql = sql
  }

  deinit { sqlite3_finalize(handle) }

  /// The number of `?` parameters.
  public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }
  /// The number of result columns.
  public var columnCount: Int { Int(sqlite3_column_count(handle)) }
  /// The name of result column `index`.
  public func columnName(_ index: Int) -> String { String(cString: sqlite3_column_name(handle, Int32(index))) }
  /// Whether the statement only reads (see `sqlite3_stmt_readonly`).
  public var isReadOnly: Bool { sqlite3_stmt_readonly(handle) != 0 }

  // MARK: - Binding

  /// Binds `value` to parameter `index` (1-based).
  public func bind(_ value: DatabaseValue, at index: Int32) throws {
    let rc: Int32
    switch value {
    case .null: rc = sqlite3_bind_null(handle, index)
    case .integer(let v): rc = sqlite3_bind_int64(handle, index, v)
    case .real(let v): rc = sqlite3_bind_double(handle, index, v)
    case .text(let v):
      var v = v
      rc = v.withUTF8 { bindText($0, index) }
    case .blob(let v):
      rc = v.withUnsafeBytes {
        sqlite3_bind_blob(
          handle, index, $0.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32($0.count), SQLITE_TRANSIENT)
      }
    }
    if rc != SQLITE_OK { throw database.error(rc, sql: sql) }
  }

  /// Binds an integer without going through `DatabaseValue` (hot loops).
  public func bind(_ value: Int64, at index: Int32) throws {
    try check(sqlite3_bind_int64(handle, index, value))
  }

  /// Binds UTF-8 text without going through `DatabaseValue` (hot loops).
  public func bind(_ value: String, at index: Int32) throws {
    var value = value
    try check(value.withUTF8 { bindText($0, index) })
  }

  /// Binds UTF-8 bytes as text, without making a `String` first.
  public func bindText(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int32) throws {
    try check(bindText(bytes, index))
  }

  private func bindText(_ bytes: UnsafeBufferPointer<UInt8>, _ index: Int32) -> Int32 {
    // An empty string must bind as '' (a non-NULL pointer), never as NULL.
    let empty: StaticString = ""
    let start = UnsafeRawPointer(bytes.baseAddress ?? empty.utf8Start).assumingMemoryBound(to: CChar.self)
    return sqlite3_bind_text(handle, index, start, Int32(bytes.count), SQLITE_TRANSIENT)
  }

  /// Binds NULL.
  public func bindNull(at index: Int32) throws { try check(sqlite3_bind_null(handle, index)) }

  /// Binds all parameters, in order.
  public func bind(_ values: [any DatabaseValueConvertible]) throws {
    guard values.count == parameterCount else {
      throw SQLiteError(
        code: SQLITE_RANGE, message: "expected \(parameterCount) arguments, got \(values.count)", sql: sql)
    }
    for (i, value) in values.enumerated() { try bind(value.databaseValue, at: Int32(i + 1)) }
  }

  /// Resets the statement so it can run again; bindings are kept until rebound.
  public func reset() { sqlite3_reset(handle) }

  /// Clears all bindings to NULL.
  public func clearBindings() { sqlite3_clear_bindings(handle) }

  // MARK: - Stepping

  /// Advances to the next row; returns false when the statement is done.
  @discardableResult
  public func step() throws -> Bool {
    let fresh = sqlite3_stmt_busy(handle) == 0
    var rc = sqlite3_step(handle)
    // SQLITE_SCHEMA on a statement's first step: another connection changed the schema
    // (`chatdb vacuum` rewrites it whole) and SQLite's own re-prepare gave up, with a
    // bogus "no such table" for a table that is there (SQLite 3.40.1: a few writes in
    // every run of `chat-sync run` beside a vacuum loop, each a received message left
    // unstored until the next connect). Nothing ran yet and the schema was reset:
    // stepping again re-prepares from the schema as it now is.
    // See <https://sqlite.org/rescode.html#schema>.
    var retries = 0
    while rc == SQLITE_SCHEMA && fresh && retries < 3 {
      sqlite3_reset(handle)
      retries += 1
      rc = sqlite3_step(handle)
    }
    switch rc {
    case SQLITE_ROW: return true
    case SQLITE_DONE: return false
    default:
      let error = database.error(rc, sql: sql)
      sqlite3_reset(handle)
      throw error
    }
  }

  /// Binds `arguments`, runs the statement to completion and resets it.
  public func execute(_ arguments: [any DatabaseValueConvertible] = []) throws {
    defer { sqlite3_reset(handle) }
    try withArguments(arguments) { while try step() {} }
  }

  /// Binds `arguments` and calls `body` for each row; resets afterwards.
  public func forEachRow(_ arguments: [any DatabaseValueConvertible] = [], _ body: (Row) throws -> Void) throws {
    defer { sqlite3_reset(handle) }
    let row = Row(statement: self)
    try withArguments(arguments) { while try step() { try body(row) } }
  }

  /// Runs the statement with the values bound so far, calling `body` for each row (an
  /// `INSERT … RETURNING` bound by position); resets afterwards.
  public func forEachRowOfBindings(_ body: (Row) throws -> Void) throws {
    defer { sqlite3_reset(handle) }
    let row = Row(statement: self)
    while try step() { try body(row) }
  }

  /// Binds `arguments` and runs `body`; a SQLite error from it carries the arguments
  /// (hidden from its description unless asked for).
  private func withArguments<T>(_ arguments: [any DatabaseValueConvertible], _ body: () throws -> T) throws -> T {
    if !arguments.isEmpty || parameterCount > 0 { try bind(arguments) }
    do {
      return try body()
    } catch var error as SQLiteError {
      error.arguments = arguments.map(\.databaseValue)
      throw error
    }
  }

  /// Binds `arguments` and maps every row.
  public func map<T>(_ arguments: [any DatabaseValueConvertible] = [], _ transform: (Row) throws -> T) throws -> [T] {
    var result: [T] = []
    try forEachRow(arguments) { result.append(try transform($0)) }
    return result
  }

  /// Binds `arguments` and maps the first row, if any.
  public func first<T>(_ arguments: [any DatabaseValueConvertible] = [], _ transform: (Row) throws -> T) throws -> T? {
    defer { sqlite3_reset(handle) }
    return try withArguments(arguments) { try step() ? transform(Row(statement: self)) : nil }
  }

  func check(_ rc: Int32) throws {
    if rc != SQLITE_OK { throw database.error(rc, sql: sql) }
  }
}

@available(*, unavailable)
extension Statement: Sendable {}

/// The current row of a statement: typed column access by index.
///
/// Valid only until the statement steps again.
public struct Row {
  /// The statement's handle, held directly: reading a column costs no reference counting
  /// (a row never outlives the step that made it, and the statement outlives the step).
  let handle: OpaquePointer

  init(statement: Statement) { handle = statement.handle }

  /// Whether column `index` is NULL.
  public func isNull(_ index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }
  /// Column `index` as an integer (NULL reads as 0).
  public func int64(_ index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }
  /// Column `index` as an `Int` (NULL reads as 0).
  public func int(_ index: Int32) -> Int { Int(sqlite3_column_int64(handle, index)) }
  /// Column `index` as a double.
  public func double(_ index: Int32) -> Double { sqlite3_column_double(handle, index) }
  /// Column `index` as text (NULL reads as "").
  public func string(_ index: Int32) -> String {
    guard let p = sqlite3_column_text(handle, index) else { return "" }
    let n = Int(sqlite3_column_bytes(handle, index))
    return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
  }
  /// Column `index` as optional text.
  public func optionalString(_ index: Int32) -> String? {
    // Two calls into SQLite instead of three when there is text (lists read thousands).
    guard let p = sqlite3_column_text(handle, index) else { return isNull(index) ? nil : "" }
    let n = Int(sqlite3_column_bytes(handle, index))
    return String(decoding: UnsafeBufferPointer(start: p, count: n), as: UTF8.self)
  }
  /// Column `index` as an optional integer.
  public func optionalInt64(_ index: Int32) -> Int64? {
    let value = sqlite3_column_int64(handle, index)
    return value == 0 && isNull(index) ? nil : value
  }
  /// Column `index` as optional bytes (a blob; text reads as its UTF-8).
  public func optionalBlob(_ index: Int32) -> [UInt8]? {
    if isNull(index) { return nil }
    let n = Int(sqlite3_column_bytes(handle, index))
    guard n > 0, let p = sqlite3_column_blob(handle, index) else { return [] }
    return Array(UnsafeRawBufferPointer(start: p, count: n))
  }
  /// Column `index` as raw UTF-8 bytes, valid until the next step (no copy).
  public func withUTF8<R>(_ index: Int32, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
    let p = sqlite3_column_text(handle, index)
    let n = Int(sqlite3_column_bytes(handle, index))
    return try body(UnsafeBufferPointer(start: p, count: p == nil ? 0 : n))
  }
  /// Column `index` as a `DatabaseValue` in its own storage class.
  public func value(_ index: Int32) -> DatabaseValue {
    switch sqlite3_column_type(handle, index) {
    case SQLITE_INTEGER: return .integer(int64(index))
    case SQLITE_FLOAT: return .real(double(index))
    case SQLITE_TEXT: return .text(string(index))
    case SQLITE_BLOB:
      let n = Int(sqlite3_column_bytes(handle, index))
      guard n > 0, let p = sqlite3_column_blob(handle, index) else { return .blob([]) }
      return .blob(Array(UnsafeRawBufferPointer(start: p, count: n)))
    default: return .null
    }
  }
  /// All columns as values.
  public var values: [DatabaseValue] { (0..<sqlite3_column_count(handle)).map(value) }
}
