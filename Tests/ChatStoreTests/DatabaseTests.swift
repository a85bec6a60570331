import Foundation
import TestSupport
import Testing

@testable import ChatStore

/// One value to round-trip, with the storage class SQLite must report for it.
struct RoundTripCase: Sendable, CustomTestStringConvertible {
  var label: String
  var value: DatabaseValue
  var storageClass: String
  var testDescription: String { label }
}

/// True when two values are the same storage class and the same bits (text compared
/// byte for byte, not by Unicode equivalence; reals by bit pattern, so -0.0 ≠ 0.0).
func identical(_ a: DatabaseValue, _ b: DatabaseValue) -> Bool {
  switch (a, b) {
  case (.null, .null): true
  case (.integer(let x), .integer(let y)): x == y
  case (.real(let x), .real(let y)): x.bitPattern == y.bitPattern
  case (.text(let x), .text(let y)): Array(x.utf8) == Array(y.utf8)
  case (.blob(let x), .blob(let y)): x == y
  default: false
  }
}

@Suite(.ownThreads) struct DatabaseTests {
  static let mebibyteText = String(repeating: "0123456789abcdé", count: 1 << 16)  // > 1 MiB of UTF-8
  static let mebibyteBlob: [UInt8] = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }

  static let roundTrips: [RoundTripCase] = [
    RoundTripCase(label: "Int64.min", value: .integer(.min), storageClass: "integer"),
    RoundTripCase(label: "Int64.max", value: .integer(.max), storageClass: "integer"),
    RoundTripCase(label: "zero", value: .integer(0), storageClass: "integer"),
    RoundTripCase(label: "minus one", value: .integer(-1), storageClass: "integer"),
    RoundTripCase(label: "1.5", value: .real(1.5), storageClass: "real"),
    RoundTripCase(label: "negative zero", value: .real(-0.0), storageClass: "real"),
    RoundTripCase(label: "greatest finite", value: .real(.greatestFiniteMagnitude), storageClass: "real"),
    RoundTripCase(label: "most negative", value: .real(-.greatestFiniteMagnitude), storageClass: "real"),
    RoundTripCase(label: "least nonzero", value: .real(.leastNonzeroMagnitude), storageClass: "real"),
    RoundTripCase(label: "2^63 as real", value: .real(9.223372036854775808e18), storageClass: "real"),
    RoundTripCase(label: "pi", value: .real(.pi), storageClass: "real"),
    RoundTripCase(label: "empty text", value: .text(""), storageClass: "text"),
    RoundTripCase(label: "ascii", value: .text("hello, world"), storageClass: "text"),
    RoundTripCase(label: "quote", value: .text("it's \"quoted\""), storageClass: "text"),
    RoundTripCase(label: "CJK", value: .text("你好，世界 こんにちは 안녕하세요"), storageClass: "text"),
    RoundTripCase(label: "emoji ZWJ and flags", value: .text("👩‍👩‍👧‍👦 🏳️‍🌈 🇯🇵"), storageClass: "text"),
    RoundTripCase(label: "combining marks (NFD kept)", value: .text("e\u{301} a\u{308}\u{331}"), storageClass: "text"),
    RoundTripCase(label: "precomposed (NFC kept)", value: .text("é ä"), storageClass: "text"),
    RoundTripCase(label: "right-to-left", value: .text("مرحبا بالعالم"), storageClass: "text"),
    RoundTripCase(label: "newlines and tabs", value: .text("a\r\nb\tc\n"), storageClass: "text"),
    // Embedded NUL: bound with an explicit length and read back with sqlite3_column_bytes,
    // so every byte survives (SQL functions such as length() stop at the NUL).
    RoundTripCase(label: "embedded NUL", value: .text("a\u{0}b\u{0}"), storageClass: "text"),
    RoundTripCase(label: "1 MiB text", value: .text(mebibyteText), storageClass: "text"),
    RoundTripCase(label: "empty blob", value: .blob([]), storageClass: "blob"),
    RoundTripCase(label: "blob with zero bytes", value: .blob([0, 0, 1, 255, 0]), storageClass: "blob"),
    RoundTripCase(label: "1 MiB blob", value: .blob(mebibyteBlob), storageClass: "blob"),
    RoundTripCase(label: "null", value: .null, storageClass: "null"),
  ]

  @Test("A bound value comes back in its own storage class, bit for bit", arguments: roundTrips)
  func roundTrip(_ c: RoundTripCase) throws {
    try withTemporaryDirectory { dir in
      let db = try Database(path: dir + "/t.db", mode: .create)
      try db.execute("CREATE TABLE t (x)")  // no affinity: values keep their class
      try db.execute("INSERT INTO t (x) VALUES (?)", [c.value])
      let rows = try db.query("SELECT x, typeof(x) FROM t") { ($0.value(0), $0.string(1)) }
      let (value, type) = try #require(rows.first)
      #expect(rows.count == 1)
      #expect(type == c.storageClass)
      #expect(identical(value, c.value), "got \(String(describing: value).prefix(80))")
    }
  }

  @Test("Text bound through every text API round-trips; an empty string is '' and never NULL")
  func textBindingAPIs() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x)")
    let insert = try db.prepare("INSERT INTO t (id, x) VALUES (?, ?)")
    let samples = ["", "plain", "e\u{301}", "👩‍💻", "a\u{0}b"]
    var id: Int64 = 0
    for sample in samples {
      // String overload
      id += 1
      try insert.bind(id, at: 1)
      try insert.bind(sample, at: 2)
      try insert.step()
      insert.reset()
      // Raw UTF-8 bytes
      id += 1
      try insert.bind(id, at: 1)
      try Array(sample.utf8).withUnsafeBufferPointer { try insert.bindText($0, at: 2) }
      try insert.step()
      insert.reset()
    }
    // A buffer with no base address (an empty Swift array may have one or not).
    id += 1
    try insert.bind(id, at: 1)
    try insert.bindText(UnsafeBufferPointer(start: nil, count: 0), at: 2)
    try insert.step()
    insert.reset()

    let rows = try db.query("SELECT x, typeof(x), x IS NULL FROM t ORDER BY id") { row in
      (Array(row.string(0).utf8), row.string(1), row.int(2), row.optionalString(0).map { Array($0.utf8) })
    }
    let expected = samples.flatMap { [Array($0.utf8), Array($0.utf8)] } + [[]]
    #expect(rows.map(\.0) == expected)
    #expect(rows.allSatisfy { $0.1 == "text" && $0.2 == 0 })
    #expect(rows.map(\.3) == expected.map { Optional($0) })
    // withUTF8 sees the same bytes without a copy.
    let viaWithUTF8 = try db.query("SELECT x FROM t ORDER BY id") { row in row.withUTF8(0) { Array($0) } }
    #expect(viaWithUTF8 == expected)
  }

  @Test("NULL binds through Optional, and typed accessors read it as documented")
  func nullThroughOptional() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, i INTEGER)")
    let noText: String? = nil
    let noInt: Int64? = nil
    try db.execute("INSERT INTO t (id, s, i) VALUES (?, ?, ?)", [1, noText, noInt])
    try db.execute("INSERT INTO t (id, s, i) VALUES (?, ?, ?)", [2, Optional("x"), Optional(Int64(7))])
    let rows = try db.query("SELECT s, i FROM t ORDER BY id") { row in
      (row.isNull(0), row.optionalString(0), row.optionalInt64(1), row.string(0), row.int64(1), row.values)
    }
    try #require(rows.count == 2)
    #expect(rows[0].0 == true)
    #expect(rows[0].1 == nil)
    #expect(rows[0].2 == nil)
    #expect(rows[0].3 == "")  // documented: NULL reads as ""
    #expect(rows[0].4 == 0)  // documented: NULL reads as 0
    #expect(rows[0].5 == [.null, .null])
    #expect(rows[1].1 == "x")
    #expect(rows[1].2 == 7)
    #expect(rows[1].5 == [.text("x"), .integer(7)])
    #expect(try db.int64("SELECT i FROM t WHERE id = 1") == nil)
    #expect(try db.string("SELECT s FROM t WHERE id = 1") == nil)
    #expect(try db.int64("SELECT i FROM t WHERE id = 99") == nil)
  }

  @Test("Swift convenience types bind to the expected storage classes")
  func convertibleTypes() throws {
    let db = try Database(path: ":memory:")
    let values: [any DatabaseValueConvertible] = [
      Int(42), Int32(-7), Int64.max, true, false, 2.5, "s", [UInt8]([1, 2]),
    ]
    let marks = Array(repeating: "?", count: values.count).joined(separator: ", ")
    let row = try #require(try db.prepare("SELECT \(marks)").first(values) { $0.values })
    #expect(
      row == [
        .integer(42), .integer(-7), .integer(.max), .integer(1), .integer(0), .real(2.5), .text("s"), .blob([1, 2]),
      ])
  }

  @Test("execute runs several statements, skipping comments and blank space")
  func executeSeveralStatements() throws {
    let db = try Database(path: ":memory:")
    try db.execute(
      """
      -- a comment first
      CREATE TABLE a (x);
      INSERT INTO a VALUES (1);

      INSERT INTO a VALUES (2); INSERT INTO a VALUES (3);
      SELECT * FROM a;  -- a query's rows are stepped through and dropped
      /* block comment */
      """)
    #expect(try db.int64("SELECT sum(x) FROM a") == 6)
    #expect(try db.int64("SELECT count(*) FROM a") == 3)
  }

  @Test("A failing statement in a batch names that statement; earlier ones took effect")
  func executeBatchError() throws {
    let db = try Database(path: ":memory:")
    do {
      try db.execute(
        "CREATE TABLE a (x); INSERT INTO a VALUES (1); INSERT INTO missing VALUES (2); INSERT INTO a VALUES (3);")
      Issue.record("expected an error")
    } catch let error as SQLiteError {
      #expect(error.code == 1)
      #expect(error.message.contains("no such table: missing"))
      #expect(error.sql?.hasPrefix("INSERT INTO missing") == true, "\(error.sql ?? "nil")")
    }
    #expect(try db.int64("SELECT count(*) FROM a") == 1)
  }

  @Test("A UNIQUE violation reads 'SQLite error 19: UNIQUE constraint failed: …' and hides the arguments")
  func uniqueViolationDescription() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, body TEXT UNIQUE)")
    let sql = """
      INSERT INTO m (id, body)
        VALUES (?, ?)
      """
    try db.execute(sql, [1, "secret-chat-content"])
    do {
      try db.execute(sql, [2, "secret-chat-content"])
      Issue.record("expected a UNIQUE violation")
    } catch let error as SQLiteError {
      #expect(error.code == 19)
      #expect(error.extendedCode == 2067)  // SQLITE_CONSTRAINT_UNIQUE
      #expect(error.description.hasPrefix("SQLite error 19: UNIQUE constraint failed: "), "\(error)")
      #expect(error.description.contains("m.body"))
      #expect(error.description.contains(" - while executing `INSERT"), "\(error)")
      #expect(!error.description.contains("\n"), "the SQL is shown on one line")
      #expect(!error.description.contains("secret-chat-content"), "\(error)")
      #expect(!error.includeArguments)
      #expect(!error.isBusy && !error.isCorruptOrNotADatabase && !error.isDiskFull)
    }
  }

  /// `SQLiteError.arguments` is documented as "Arguments bound to the failing statement",
  /// but `Statement` never fills it, so `includeArguments` can never show anything.
  @Test("With includeArguments set, a statement's error shows the bound values")
  func includeArgumentsShowsValues() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE m (id INTEGER PRIMARY KEY, body TEXT UNIQUE)")
    try db.execute("INSERT INTO m (id, body) VALUES (?, ?)", [1, "visible-value"])
    do {
      try db.execute("INSERT INTO m (id, body) VALUES (?, ?)", [2, "visible-value"])
      Issue.record("expected a UNIQUE violation")
    } catch var error as SQLiteError {
      #expect(!error.description.contains("visible-value"))
      error.includeArguments = true
      #expect(error.arguments == [.integer(2), .text("visible-value")])
      #expect(error.description.contains("visible-value"), "\(error)")
    }
  }

  @Test("A description shows arguments only when asked to")
  func descriptionArgumentsFlag() {
    var error = SQLiteError(
      code: 2067, message: "UNIQUE constraint failed: m.body", sql: "INSERT INTO m\n  VALUES (?)",
      arguments: [.text("secret")])
    #expect(
      error.description
        == "SQLite error 19: UNIQUE constraint failed: m.body - while executing `INSERT INTO m VALUES (?)`")
    error.includeArguments = true
    #expect(error.description.contains("secret"))
  }

  @Test("A syntax error is SQLite error 1", arguments: ["SELEC 1", "SELECT * FROM", "CREATE TABLE (x)"])
  func syntaxError(_ sql: String) throws {
    let db = try Database(path: ":memory:")
    #expect {
      try db.execute(sql)
    } throws: { error in
      (error as? SQLiteError)?.code == 1 && String(describing: error).hasPrefix("SQLite error 1: ")
    }
    #expect {
      _ = try db.prepare(sql)
    } throws: { error in
      (error as? SQLiteError)?.code == 1
    }
  }

  @Test(
    "Opening a file that is not a database fails with a not-a-database error",
    arguments: [Database.Mode.readWrite, .readOnly, .create])
  func notADatabase(_ mode: Database.Mode) throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/random.db"
      try writeRandomBytes(to: path)
      let before = try Data(contentsOf: URL(fileURLWithPath: path))
      do {
        _ = try Database(path: path, mode: mode)
        Issue.record("expected an error")
      } catch let error as SQLiteError {
        #expect(error.isCorruptOrNotADatabase, "\(error)")
        #expect(error.code == 26)  // SQLITE_NOTADB
        let store = StoreError.from(error, path: path, doing: "open")
        #expect(store.kind == .notADatabase)
        #expect(store.message.contains(path))
      }
      #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before, "the file is left untouched")
    }
  }

  @Test("Opening a missing file read-write fails and creates nothing")
  func missingFile() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/missing.db"
      do {
        _ = try Database(path: path)
        Issue.record("expected an error")
      } catch let error as SQLiteError {
        #expect(error.code == 14)  // SQLITE_CANTOPEN
        #expect(StoreError.from(error, path: path, doing: "open").kind == .notFound)
      }
      #expect(!FileSystem.exists(path))
    }
  }

  @Test(
    "A read-write file is in WAL mode with foreign_keys=1 and synchronous=1 (NORMAL)",
    arguments: [Database.Mode.create, .readWrite])
  func pragmas(_ mode: Database.Mode) throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/p.db"
      if mode == .readWrite { _ = try Database(path: path, mode: .create) }
      let db = try Database(path: path, mode: mode)
      #expect(try db.string("PRAGMA journal_mode") == "wal")
      #expect(try db.int64("PRAGMA foreign_keys") == 1)
      #expect(try db.int64("PRAGMA synchronous") == 1)
      // Foreign keys are enforced.
      try db.execute("CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (p INTEGER REFERENCES p(id))")
      #expect(throws: SQLiteError.self) { try db.execute("INSERT INTO c VALUES (?)", [42]) }
      // Read-only connections enforce foreign keys too and leave the journal mode alone.
      let reader = try Database(path: path, mode: .readOnly)
      #expect(try reader.int64("PRAGMA foreign_keys") == 1)
      #expect(try reader.string("PRAGMA journal_mode") == "wal")
    }
  }

  @Test("A file created with mode .create is private (0600), and so is its WAL")
  func createdFileIsPrivate() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/private.db"
      let db = try Database(path: path, mode: .create)
      #expect(FileSystem.permissions(atPath: path) == 0o600)
      try db.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
      #expect(FileSystem.exists(path + "-wal"))
      #expect(FileSystem.permissions(atPath: path + "-wal") == 0o600)
      // Opening an existing file with .create keeps its content.
      let again = try Database(path: path, mode: .create)
      #expect(try again.int64("SELECT x FROM t") == 1)
    }
  }

  @Test("backup(to:) writes a private, self-contained copy with the same rows and no temporary files")
  func backup() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/source.db"
      let db = try Database(path: path, mode: .create)
      try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT, data BLOB)")
      let insert = try db.prepare("INSERT INTO t (id, body, data) VALUES (?, ?, ?)")
      try db.write { _ in
        for i in 1...500 {
          try insert.execute([
            i, "row \(i) 🌍 " + String(repeating: "x", count: i), [UInt8](repeating: UInt8(i & 0xFF), count: i % 7),
          ])
        }
      }
      // Uncommitted work on the source is not in the copy.
      let destination = dir + "/copy.db"
      try db.backup(to: destination)

      #expect(FileSystem.permissions(atPath: destination) == 0o600)
      let names = try fileNames(in: dir)
      #expect(!names.contains { $0.contains(".tmp-") }, "\(names)")
      #expect(!FileSystem.exists(destination + "-wal"), "the backup is one file")
      let source = try Fixture.snapshot(db)
      let copy = try Fixture.snapshot(ofFileAt: destination)
      #expect(copy == source)
      #expect(copy["t"]?.rows.count == 500)
      #expect(try Database(path: destination, mode: .readOnly).string("PRAGMA integrity_check") == "ok")

      // A second backup over the first replaces it.
      try db.execute("DELETE FROM t WHERE id > 10")
      try db.backup(to: destination)
      #expect(try Database(path: destination, mode: .readOnly).int64("SELECT count(*) FROM t") == 10)
      #expect(FileSystem.permissions(atPath: destination) == 0o600)
      #expect(!(try fileNames(in: dir)).contains { $0.contains(".tmp-") })
    }
  }

  @Test("A backup into a folder that does not exist fails and leaves nothing behind")
  func backupFailure() throws {
    try withTemporaryDirectory { dir in
      let db = try Database(path: dir + "/s.db", mode: .create)
      try db.execute("CREATE TABLE t (x)")
      #expect(throws: (any Error).self) { try db.backup(to: dir + "/no/such/folder/copy.db") }
      #expect(try fileNames(in: dir).allSatisfy { $0.hasPrefix("s.db") })
    }
  }
}

/// A read-only connection must leave a user's folder as it found it: no `-wal` or
/// `-shm` appears because a command only looked at the file.
@Suite(.ownThreads) struct ReadOnlyFootprintTests {
  /// How the file is left before the read: WAL mode closed cleanly (no companions), or
  /// a rollback-journal file.
  enum Setup: String, CaseIterable, Sendable { case walClosed, rollbackJournal }

  static func makeFile(_ setup: Setup, at path: String) throws {
    let db = try Database(path: path, mode: .create)
    try db.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1), (2)")
    if setup == .rollbackJournal { try db.execute("PRAGMA journal_mode = DELETE") }
  }

  @Test("A read-only connection creates no -wal or -shm and leaves the folder unchanged", arguments: Setup.allCases)
  func leavesNoCompanions(_ setup: Setup) throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/chats-1.db"
      try Self.makeFile(setup, at: path)
      let before = try fileNames(in: dir)
      #expect(before == ["chats-1.db"])
      let content = try Data(contentsOf: URL(fileURLWithPath: path))
      do {
        let db = try Database(path: path, mode: .readOnly)
        #expect(try db.int64("SELECT count(*) FROM t") == 2)
        #expect(try db.read { try $0.int64("SELECT sum(x) FROM t") } == 3)
      }
      #expect(try fileNames(in: dir) == before)
      #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == content, "the file's bytes are unchanged")
    }
  }

  @Test("A read-only connection cannot write, whatever it opened the file with", arguments: Setup.allCases)
  func cannotWrite(_ setup: Setup) throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/chats-1.db"
      try Self.makeFile(setup, at: path)
      let db = try Database(path: path, mode: .readOnly)
      #expect { try db.execute("INSERT INTO t VALUES (3)") } throws: { error in
        ((error as? SQLiteError)?.code ?? 0) & 0xFF == SQLiteError.ResultCode.readOnly
      }
      #expect(try db.int64("SELECT count(*) FROM t") == 2)
    }
  }

  @Test("With a writer live, a reader uses its -wal, sees its commits and leaves its files to it")
  func besideALiveWriter() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/chats-1.db"
      try Self.makeFile(.walClosed, at: path)
      let writer = try Database(path: path)
      try writer.execute("INSERT INTO t VALUES (3)")
      let before = try fileNames(in: dir)
      #expect(before == ["chats-1.db", "chats-1.db-shm", "chats-1.db-wal"])
      do {
        let reader = try Database(path: path, mode: .readOnly)
        #expect(try reader.int64("SELECT count(*) FROM t") == 3)
      }
      #expect(try fileNames(in: dir) == before)
      try writer.execute("INSERT INTO t VALUES (4)")
      #expect(try Database(path: path, mode: .readOnly).int64("SELECT count(*) FROM t") == 4)
    }
    // The writer closed last and removed its companions.
  }

  @Test("A database's size is the file and its -wal; the -shm is shared memory, not data")
  func sizeLeavesOutSharedMemory() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/chats-1.db"
      let db = try Database(path: path, mode: .create)
      try db.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
      #expect(FileSystem.exists(path + "-shm"))
      let file = try #require(FileSystem.size(atPath: path))
      let wal = try #require(FileSystem.size(atPath: path + "-wal"))
      #expect(FileSystem.databaseSize(atPath: path) == file + wal)
    }
  }
}

/// What a long job asks of its connection: who else has the file open, and a deadline.
@Suite(.ownThreads) struct ConnectionWatchTests {
  @Test("Another connection, in this process or another, is seen while it has the file open")
  func othersHaveTheFileOpen() throws {
    try withTemporaryDirectory { dir in
      let path = dir + "/chats-1.db"
      let db = try Database(path: path, mode: .create)
      try db.execute("CREATE TABLE t (x); INSERT INTO t VALUES (1)")
      #expect(!db.othersHaveTheFileOpen())
      do {
        let other = try Database(path: path)
        #expect(try other.int64("SELECT count(*) FROM t") == 1)
        #expect(db.othersHaveTheFileOpen())
      }
      #expect(!db.othersHaveTheFileOpen())
      #expect(!(try Database(path: ":memory:").othersHaveTheFileOpen()))
      // Python's sqlite3 in another process: it reads, then keeps the file open until
      // its standard input closes.
      let python = Process()
      python.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
      python.arguments = [
        "-c",
        "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute('SELECT count(*) FROM t').fetchall(); "
          + "print('open', flush=True); sys.stdin.read()",
        path,
      ]
      let input = Pipe()
      let output = Pipe()
      python.standardInput = input
      python.standardOutput = output
      try python.run()
      #expect(String(decoding: output.fileHandleForReading.availableData, as: UTF8.self).hasPrefix("open"))
      #expect(db.othersHaveTheFileOpen())
      try input.fileHandleForWriting.close()
      python.waitUntilExit()
      #expect(!db.othersHaveTheFileOpen())
    }
  }

  @Test("A deadline stops FTS5's merge, whose work is many short statements, when checked often")
  func aDeadlineStopsASearchIndexMerge() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE VIRTUAL TABLE f USING fts5(content); INSERT INTO f (f, rank) VALUES ('automerge', 0)")
    for batch in 0..<8 {
      try db.inTransaction { db in
        for row in 0..<500 {
          try db.execute("INSERT INTO f (content) VALUES (?)", ["word\(row % 50) batch\(batch) row\(row) common"])
        }
        return .commit
      }
    }
    let merge = "INSERT INTO f (f, rank) VALUES ('merge', -1000)"
    let stopped = { (instructions: Int32) -> Bool in
      try db.execute("BEGIN IMMEDIATE")
      defer { if db.isInTransaction { try? db.execute("ROLLBACK") } }
      db.interrupt(after: 0, checkingEvery: instructions)
      defer { db.interrupt(after: nil) }
      do {
        try db.execute(merge)
        return false
      } catch let error as SQLiteError {
        #expect(error.code & 0xFF == SQLiteError.ResultCode.interrupt)
        return true
      }
    }
    // Checked every 1,000 instructions of a statement, FTS5's own short statements
    // never reach a check: the merge runs to its end. Every 16, it stops.
    #expect(try !stopped(1_000))
    #expect(try stopped(16))
    #expect(try db.string("SELECT count(*) FROM f WHERE f MATCH 'common'") == "4000")
    try db.execute("INSERT INTO f (f, rank) VALUES ('integrity-check', 0)")
  }

  @Test(
    "collectingInsertedRowIDs lists the rows inserted into one table, in order, as RETURNING would, and stops after")
  func insertedRowIDsAreCollected() throws {
    let db = try Database(path: ":memory:")
    try db.execute(
      """
      CREATE TABLE t (id INTEGER PRIMARY KEY, k TEXT UNIQUE); CREATE TABLE other (id INTEGER PRIMARY KEY);
      CREATE TABLE t_log (id INTEGER); INSERT INTO t VALUES (5, 'five');
      CREATE TRIGGER t_insert AFTER INSERT ON t BEGIN INSERT INTO t_log VALUES (NEW.id); END;
      """)
    var ids: [Int64] = [99]
    try db.collectingInsertedRowIDs(into: "t", &ids) {
      // 5 is there already and 'dup' clashes on k: OR IGNORE skips both; the other
      // tables' inserts (the trigger's, the second statement's) are not listed.
      try db.execute("INSERT OR IGNORE INTO t VALUES (7, 'a'), (5, 'b'), (3, 'dup'), (4, 'dup'), (NULL, 'c')")
      try db.execute("INSERT INTO other VALUES (1), (2); UPDATE t SET k = 'x' WHERE id = 7; DELETE FROM t WHERE id = 5")
    }
    #expect(ids == [99, 7, 3, 8])
    #expect(try db.query("SELECT id FROM t_log ORDER BY rowid") { $0.int64(0) } == [7, 3, 8])
    // A failing body still removes the hook; inserts after it are not collected.
    var after: [Int64] = []
    #expect(throws: SQLiteError.self) {
      try db.collectingInsertedRowIDs(into: "t", &after) {
        try db.execute("INSERT INTO t VALUES (20, 'y')")
        try db.execute("INSERT INTO t VALUES (21, 'y')")
      }
    }
    try db.execute("INSERT INTO t VALUES (30, 'z')")
    #expect(after == [20])
  }
}
