import Foundation
import Testing

@testable import ChatStore

// Shared helpers for the ChatStore suites: temporary folders, database files at any
// shipped schema version filled with data, and snapshots to compare files with.

/// A problem in a fixture itself (not in the code under test).
struct FixtureError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Runs `body` with a new, empty folder that is removed afterwards.
func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
  let url = FileManager.default.temporaryDirectory
    .appendingPathComponent("chatstore-tests-\(UUID().uuidString)", isDirectory: true)
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: url) }
  return try body(url.path)
}

/// Writes `count` random bytes that do not start with the SQLite header.
func writeRandomBytes(to path: String, count: Int = 8192) throws {
  var bytes = (0..<count).map { _ in UInt8.random(in: 0...255) }
  bytes[0] = 0x00  // never "SQLite format 3"
  guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else {
    throw FixtureError("cannot write \(path)")
  }
}

/// Names of the files in `dir`, sorted.
func fileNames(in dir: String) throws -> [String] {
  try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
}

enum Fixture {
  /// The newest shipped schema version.
  static var latest: Int { Migration.shipped.count }

  /// Users other than the owner that fixture rows talk to.
  static let others: [Int64] = [1001, 1002, 1003]

  /// Tables the migrations' triggers keep from the others (`ConversationSummaries`,
  /// from 0004), and their work table, empty between statements: the fixture fills
  /// their sources, and the triggers fill them.
  /// The search indexes (0005) and their FTS5 shadow tables are filled the same way.
  static let derivedTables: Set<String> = Set(
    ["ConversationSummaries", "ConversationSummaryRefresh", "SearchStash"]
      + ["MessageSearch", "MessageSearchCJK", "RequestSearch"].flatMap {
        [$0] + ["_data", "_idx", "_config"].map($0.appending)
      })
  /// Tables that hold no rows between statements.
  static let workTables: Set<String> = ["ConversationSummaryRefresh", "SearchStash"]

  /// Rows for every user table any shipped version has, parents first (foreign keys).
  ///
  /// A row names its values by column; a column the table does not have (yet) at some
  /// version is skipped. Adding a migration with a new table makes `fill` fail until the
  /// table gets rows here; a new NOT NULL column without a default does too.
  static func rows(owner: Int64) -> [(table: String, rows: [[String: DatabaseValue]])] {
    let (a, b, c) = (others[0], others[1], others[2])
    return [
      (
        "Users",
        [
          [
            "id": .integer(owner), "name": .text("Owner Ada"), "avatar_url": .text("https://example.com/a.png"),
            "last_connected_at": .text("2024-01-01T00:00:00Z"),
          ],
          ["id": .integer(a), "name": .text("李小龍"), "avatar_url": .null, "last_connected_at": .null],
          ["id": .integer(b), "name": .text("Zoe\u{301} 👩‍💻"), "avatar_url": .text(""), "last_connected_at": .null],
          [
            "id": .integer(c), "name": .text("مرحبا O'Brien"), "avatar_url": .null,
            "last_connected_at": .text("2024-02-29T23:59:59Z"),
          ],
        ]
      ),
      (
        "Messages",
        [
          [
            "id": .integer(1), "from_user_id": .integer(owner), "to_user_id": .integer(a), "content": .text("hi 你好"),
            "status": .text("SYNCED"), "created_at": .text("2024-01-01T10:00:00Z"), "conversation_id": .integer(a),
            "request_id": .integer(10),
          ],
          [
            "id": .integer(2), "from_user_id": .integer(a), "to_user_id": .integer(owner), "content": .text("🎉🏳️‍🌈"),
            "status": .text("DELIVERED"), "created_at": .text("2024-01-01T10:01:00Z"), "conversation_id": .integer(a),
          ],
          [
            "id": .integer(3), "from_user_id": .integer(owner), "to_user_id": .integer(b), "content": .text(""),
            "status": .text("READ"), "created_at": .text("2024-01-02T10:00:00Z"), "conversation_id": .integer(b),
            "request_id": .null,
          ],
          [
            "id": .integer(4), "from_user_id": .integer(b), "to_user_id": .integer(owner),
            "content": .text("line one\nline two, e\u{301} vs é"), "status": .text("SYNCED"),
            "created_at": .text("2024-01-02T10:05:00Z"), "conversation_id": .integer(b),
          ],
          [
            "id": .integer(5), "from_user_id": .integer(c), "to_user_id": .integer(owner),
            "content": .text(String(repeating: "long ", count: 2000)), "status": .text("READ"),
            "created_at": .text("2024-01-03T00:00:00Z"), "conversation_id": .integer(c),
          ],
        ]
      ),
      (
        "MessageRequests",
        [
          [
            "request_id": .integer(1), "to_user_id": .integer(a), "content": .text("pending 待定"),
            "status": .text("PENDING"), "last_modified_at": .text("2024-01-04T00:00:00Z"), "last_sent_at": .null,
            "fail_count": .null, "created_at": .text("2024-01-04T00:00:00Z"),
          ],
          [
            "request_id": .integer(2), "to_user_id": .integer(c), "content": .text("retry"), "status": .text("FAILED"),
            "last_modified_at": .text("2024-01-04T00:00:01Z"), "last_sent_at": .text("2024-01-04T00:00:02Z"),
            "fail_count": .integer(3), "created_at": .text("2024-01-03T23:00:00Z"),
            "next_attempt_at": .text("2024-01-04T00:05:00Z"), "fail_reason": .text("offline ✈︎"),
          ],
          [
            "request_id": .integer(3), "to_user_id": .integer(b), "content": .text("draft e\u{301}"),
            "status": .text("DRAFT"),
            "last_modified_at": .text("2024-01-05T00:00:00Z"), "last_sent_at": .null, "fail_count": .integer(0),
          ],
        ]
      ),
      (
        "ConversationReceipts",
        [
          ["conversation_id": .integer(a), "delivered_up_to": .integer(2), "read_up_to": .integer(1)],
          ["conversation_id": .integer(b), "delivered_up_to": .integer(4), "read_up_to": .integer(4)],
        ]
      ),
      (
        "EarlyReceipts",
        [
          ["message_id": .integer(999), "status": .text("READ")],
          ["message_id": .integer(998), "status": .text("DELIVERED")],
        ]
      ),
      (
        // Migration 0006 derives it from the SYNCED incoming messages: message 4.
        "PendingDeliveryAcks",
        [["message_id": .integer(4)]]
      ),
      (
        "MessageEdits",
        [
          [
            "message_id": .integer(1), "version": .integer(0), "content": .text("hi"),
            "edited_at": .text("2024-01-01T10:00:00Z"),
          ]
        ]
      ),
      (
        "HiddenMessages",
        [["id": .integer(6), "hidden_at": .text("2024-01-05T00:00:00Z")]]
      ),
      (
        "MessageChanges",
        [
          [
            "request_id": .integer(20), "message_id": .integer(1), "kind": .text("edit"), "content": .text("hi 你好!"),
            "created_at": .text("2024-01-05T00:00:00Z"), "status": .text("PENDING"),
            "next_attempt_at": .text("2024-01-05T00:00:00Z"),
          ],
          [
            "request_id": .integer(21), "message_id": .integer(3), "kind": .text("delete"), "content": .null,
            "created_at": .text("2024-01-05T00:00:01Z"), "status": .text("FAILED"), "fail_count": .integer(1),
            "fail_reason": .text("too late"),
          ],
        ]
      ),
      (
        "Media",
        [
          [
            "id": .integer(1), "sha256": .text(String(repeating: "ab", count: 32)), "size": .integer(2_481_337),
            "mime": .text("image/jpeg"), "state": .text("local"), "relay_id": .null,
            "upload_url": .text("/v2/uploads/0123456789abcdef"), "width": .integer(4000), "height": .integer(3000),
            "duration_ms": .null, "created_at": .text("2024-01-05T00:00:00Z"),
            "last_accessed_at": .text("2024-01-05T00:00:00Z"),
          ],
          [
            "id": .integer(2), "sha256": .text(String(repeating: "0f", count: 32)), "size": .integer(0),
            "mime": .text("audio/ogg"), "state": .text("remote"), "relay_id": .integer(77), "upload_url": .null,
            "width": .null, "height": .null, "duration_ms": .integer(61_000),
            "created_at": .text("2024-01-01T10:01:00Z"), "last_accessed_at": .text("2024-01-01T10:01:00Z"),
          ],
        ]
      ),
      (
        "Attachments",
        [
          ["message_id": .integer(2), "position": .integer(0), "media_id": .integer(2), "thumbnail": .null],
          [
            "message_id": .integer(2), "position": .integer(1), "media_id": .integer(1),
            "thumbnail": .blob([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]),
          ],
        ]
      ),
      (
        "RequestAttachments",
        [
          [
            "request_id": .integer(1), "position": .integer(0), "media_id": .integer(1),
            "thumbnail": .blob([0xFF, 0xD8, 0xFF, 0xD9]),
          ]
        ]
      ),
      (
        "StoreInfo",
        [
          // owner_user_id is written by migration 0002 itself.
          ["key": .text("fixture_note"), "value": .text("ünïcödé ✓")],
          ["key": .text("fixture_null"), "value": .null],
          ["key": .text("fixture_blob"), "value": .blob([0, 1, 2, 255])],
        ]
      ),
    ]
  }

  /// The path of the owner's file in `dir`.
  static func path(owner: Int64, in dir: String) -> String { StoreLocation.path(forUser: owner, in: dir) }

  /// Creates `chats-<owner>.db` at schema `version` with rows in every user table;
  /// at version 0 the file is left missing.
  @discardableResult
  static func makeFile(at version: Int, in dir: String, owner: Int64 = 1) throws -> String {
    let path = path(owner: owner, in: dir)
    guard version > 0 else { return path }
    guard version <= latest else { throw FixtureError("no shipped version \(version)") }
    let db = try Database(path: path, mode: .create)
    _ = try Migrator().apply(Array(Migration.shipped.prefix(version)), to: db, owner: owner)
    try fill(db, owner: owner)
    return path
  }

  /// Inserts the fixture rows into every user table of `db` (but the migration records).
  /// Fails when a table has no fixture rows or a row misses a required column.
  static func fill(_ db: Database, owner: Int64) throws {
    precondition(!others.contains(owner), "the owner must not be one of the other users")
    let tables = Set(try userTables(db)).subtracting([Migrator.recordsTable])
    let data = rows(owner: owner)
    let known = Set(data.map(\.table))
    let missing = tables.subtracting(known).subtracting(derivedTables)
    if !missing.isEmpty {
      throw FixtureError(
        "the fixture has no rows for table(s) \(missing.sorted()); add them to Fixture.rows so migrations are tested with data in every table"
      )
    }
    try db.write { db in
      for (table, rows) in data where tables.contains(table) {
        try insert(rows, into: table, db)
      }
    }
  }

  /// Inserts `rows` into `table`, using only the columns the table has.
  static func insert(_ rows: [[String: DatabaseValue]], into table: String, _ db: Database) throws {
    struct Column {
      var name: String
      var required: Bool
    }
    let columns = try db.query(
      "SELECT name, \"notnull\", dflt_value IS NULL, pk FROM pragma_table_info(?) ORDER BY cid", [table]
    ) {
      Column(name: $0.string(0), required: $0.int(1) == 1 && $0.int(2) == 1 && $0.int(3) == 0)
    }
    for row in rows {
      for column in columns where column.required && row[column.name] == nil {
        throw FixtureError("fixture rows for \(table) lack the required column \(column.name); add it to Fixture.rows")
      }
      let used = columns.filter { row[$0.name] != nil }
      let names = used.map { quote($0.name) }.joined(separator: ", ")
      let marks = Array(repeating: "?", count: used.count).joined(separator: ", ")
      try db.execute("INSERT INTO \(quote(table)) (\(names)) VALUES (\(marks))", used.map { row[$0.name]! })
    }
  }

  static func quote(_ identifier: String) -> String {
    "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
  }

  /// User tables (not `sqlite_*`), sorted.
  static func userTables(_ db: Database) throws -> [String] {
    try db.query("SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name") {
      $0.string(0)
    }
  }

  /// Column names of `table`, in order.
  static func columns(of table: String, _ db: Database) throws -> [String] {
    try db.query("SELECT name FROM pragma_table_info(?) ORDER BY cid", [table]) { $0.string(0) }
  }

  /// A table's content as columns and rows (sorted by every column).
  struct TableContent: Equatable, CustomStringConvertible {
    var columns: [String]
    var rows: [[DatabaseValue]]
    var description: String { "\(columns): \(rows.count) rows" }
  }

  /// The content of every user table but the migration records.
  static func snapshot(_ db: Database) throws -> [String: TableContent] {
    var result: [String: TableContent] = [:]
    // FTS5 tables are read through their shadow tables (a contentless one cannot be scanned).
    let virtual = Set(
      try db.query("SELECT name FROM sqlite_schema WHERE sql LIKE 'CREATE VIRTUAL TABLE%'") { $0.string(0) })
    for table in try userTables(db) where table != Migrator.recordsTable && !virtual.contains(table) {
      let columns = try columns(of: table, db)
      result[table] = TableContent(columns: columns, rows: try content(of: table, columns: columns, db))
    }
    return result
  }

  /// The given columns of every row of `table`, sorted.
  static func content(of table: String, columns: [String], _ db: Database) throws -> [[DatabaseValue]] {
    let list = columns.map(quote).joined(separator: ", ")
    let order = (1...columns.count).map(String.init).joined(separator: ", ")
    return try db.query("SELECT \(list) FROM \(quote(table)) ORDER BY \(order)") { $0.values }
  }

  static func snapshot(ofFileAt path: String) throws -> [String: TableContent] {
    try snapshot(Database(path: path, mode: .readOnly))
  }

  /// `sqlite_schema` as rows of type, name, table name and SQL with whitespace collapsed.
  static func schema(ofFileAt path: String) throws -> [[String]] {
    let db = try Database(path: path, mode: .readOnly)
    return try db.query("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name") { row in
      [row.string(0), row.string(1), row.string(2), row.optionalString(3).map(collapseWhitespace) ?? "NULL"]
    }
  }

  static func collapseWhitespace(_ text: String) -> String {
    text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
  }

  static func userVersion(ofFileAt path: String) throws -> Int {
    Int(try Database(path: path, mode: .readOnly).int64("PRAGMA user_version") ?? -1)
  }

  /// Versions recorded in `chatdb_migrations`.
  static func recordedVersions(ofFileAt path: String) throws -> [Int] {
    let db = try Database(path: path, mode: .readOnly)
    guard try userTables(db).contains(Migrator.recordsTable) else { return [] }
    return try db.query("SELECT version FROM chatdb_migrations ORDER BY version") { $0.int(0) }
  }
}

/// Runs `body`, expecting a `StoreError`, and returns it.
func expectStoreError(
  _ kind: StoreError.Kind, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> StoreError? {
  do {
    try body()
    Issue.record("expected a StoreError of kind \(kind), but nothing was thrown", sourceLocation: sourceLocation)
    return nil
  } catch let error as StoreError {
    #expect(error.kind == kind, "\(error.message)", sourceLocation: sourceLocation)
    return error
  } catch {
    Issue.record(
      "expected a StoreError of kind \(kind), got \(type(of: error)): \(error)", sourceLocation: sourceLocation)
    return nil
  }
}
