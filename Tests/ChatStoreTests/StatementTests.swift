import Foundation
import TestSupport
import Testing

@testable import ChatStore

@Suite(.ownThreads) struct StatementTests {
  @Test("One statement is bound, stepped, reset and rebound many times")
  func reuse() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    let insert = try db.prepare("INSERT INTO t (id, body) VALUES (?, ?)")
    #expect(insert.parameterCount == 2)
    #expect(!insert.isReadOnly)
    try db.write { _ in
      for i in 1...1000 {
        try insert.bind(Int64(i), at: 1)
        try insert.bind("row \(i) ✓", at: 2)
        #expect(try insert.step() == false)
        insert.reset()
      }
    }
    #expect(try db.int64("SELECT count(*) FROM t") == 1000)
    #expect(try db.int64("SELECT sum(id) FROM t") == 500_500)
    #expect(try db.string("SELECT body FROM t WHERE id = 777") == "row 777 ✓")

    let select = try db.prepare("SELECT body FROM t WHERE id = ?")
    #expect(select.isReadOnly)
    #expect(select.columnCount == 1)
    #expect(select.columnName(0) == "body")
    for i in stride(from: 1, through: 1000, by: 37) {
      #expect(try select.first([i]) { $0.string(0) } == "row \(i) ✓")
    }
    #expect(try select.first([5000]) { $0.string(0) } == nil)
  }

  @Test("execute, map and forEachRow reset the statement so it can run again")
  func helpersReset() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t (g INTEGER, v INTEGER)")
    let insert = try db.prepare("INSERT INTO t (g, v) VALUES (?, ?)")
    for i in 0..<100 { try insert.execute([i % 3, i]) }
    let byGroup = try db.prepare("SELECT v FROM t WHERE g = ? ORDER BY v")
    for _ in 0..<3 {
      #expect(try byGroup.map([0]) { $0.int(0) }.count == 34)
      var sum = 0
      try byGroup.forEachRow([1]) { sum += $0.int(0) }
      #expect(sum == (0..<100).filter { $0 % 3 == 1 }.reduce(0, +))
      // Stopping after the first row must not leave the statement mid-way.
      #expect(try byGroup.first([2]) { $0.int(0) } == 2)
    }
  }

  @Test("reset keeps the bindings; clearBindings sets them to NULL")
  func resetKeepsBindings() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t (x)")
    let insert = try db.prepare("INSERT INTO t (x) VALUES (?)")
    try insert.bind("kept", at: 1)
    try insert.step()
    insert.reset()
    try insert.step()
    insert.reset()
    insert.clearBindings()
    try insert.step()
    insert.reset()
    try insert.bindNull(at: 1)
    try insert.step()
    insert.reset()
    #expect(
      try db.query("SELECT x FROM t ORDER BY rowid") { $0.value(0) } == [.text("kept"), .text("kept"), .null, .null])
  }

  @Test("A statement that fails can run again after its error")
  func reuseAfterError() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
    let insert = try db.prepare("INSERT INTO t (id) VALUES (?)")
    try insert.execute([1])
    #expect(throws: SQLiteError.self) { try insert.execute([1]) }
    try insert.execute([2])
    #expect(try db.int64("SELECT count(*) FROM t") == 2)
  }

  @Test("A wrong number of arguments is refused before anything runs", arguments: [[], [1], [1, 2, 3]] as [[Int]])
  func argumentCount(_ arguments: [Int]) throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t (a, b)")
    let insert = try db.prepare("INSERT INTO t (a, b) VALUES (?, ?)")
    #expect {
      try insert.execute(arguments)
    } throws: { error in
      (error as? SQLiteError)?.code == 25  // SQLITE_RANGE
    }
    #expect(try db.int64("SELECT count(*) FROM t") == 0)
  }

  @Test("cachedStatement returns the same object for the same SQL; prepare makes a new one")
  func cachedStatement() throws {
    let db = try Database(path: ":memory:")
    let a = try db.cachedStatement("SELECT 1")
    let b = try db.cachedStatement("SELECT 1")
    let c = try db.cachedStatement("SELECT 2")
    #expect(a === b)
    #expect(a !== c)
    #expect(try db.prepare("SELECT 1") !== a)
    #expect(a.sql == "SELECT 1")
    // The helpers share the cache and leave the statement ready for reuse.
    #expect(try db.int64("SELECT 1") == 1)
    #expect(try db.int64("SELECT 1") == 1)
    #expect(try db.cachedStatement("SELECT 1") === a)
  }

  @Test("A SQL error in a cached statement is not cached")
  func failedPrepareNotCached() throws {
    let db = try Database(path: ":memory:")
    #expect(throws: SQLiteError.self) { try db.cachedStatement("SELECT * FROM later") }
    try db.execute("CREATE TABLE later (x); INSERT INTO later VALUES (5)")
    #expect(try db.int64("SELECT * FROM later") == 5)
  }

  @Test("changes and lastInsertRowID report the last write")
  func changesAndRowID() throws {
    let db = try Database(path: ":memory:")
    try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, x)")
    try db.execute("INSERT INTO t (x) VALUES (?)", ["a"])
    #expect(db.lastInsertRowID == 1)
    try db.execute("INSERT INTO t (id, x) VALUES (?, ?)", [Int64.max, "b"])
    #expect(db.lastInsertRowID == .max)
    try db.execute("UPDATE t SET x = 'c'")
    #expect(db.changes == 2)
  }

  @Test("Row.values reads each column in its own storage class")
  func rowValues() throws {
    let db = try Database(path: ":memory:")
    let row = try #require(try db.prepare("SELECT 1, 2.5, 'x', x'00ff', NULL, x''").first { $0.values })
    #expect(row == [.integer(1), .real(2.5), .text("x"), .blob([0, 255]), .null, .blob([])])
  }
}
