import Foundation
import TestSupport
import Testing

@testable import ChatStore

struct Boom: Error, Equatable {
  var tag = "boom"
}

@Suite(.ownThreads) struct TransactionTests {
  /// A file database with one table `t (x)`.
  func withTable<T>(_ body: (Database, String) throws -> T) throws -> T {
    try withTemporaryDirectory { dir in
      let path = dir + "/tx.db"
      let db = try Database(path: path, mode: .create)
      try db.execute("CREATE TABLE t (x INTEGER)")
      return try body(db, path)
    }
  }

  func values(_ db: Database) throws -> [Int] { try db.query("SELECT x FROM t ORDER BY x") { $0.int(0) } }

  @Test(
    "A committed transaction is visible to another connection",
    arguments: [Database.TransactionKind.deferred, .immediate, .exclusive])
  func commit(_ kind: Database.TransactionKind) throws {
    try withTable { db, path in
      try db.inTransaction(kind) { db in
        #expect(db.isInTransaction)
        try db.execute("INSERT INTO t VALUES (1), (2)")
        return .commit
      }
      #expect(!db.isInTransaction)
      #expect(try values(Database(path: path, mode: .readOnly)) == [1, 2])
    }
  }

  @Test(".rollback discards the transaction's work")
  func rollback() throws {
    try withTable { db, _ in
      try db.execute("INSERT INTO t VALUES (0)")
      try db.inTransaction { db in
        try db.execute("INSERT INTO t VALUES (1)")
        try db.execute("DELETE FROM t WHERE x = 0")
        return .rollback
      }
      #expect(!db.isInTransaction)
      #expect(try values(db) == [0])
    }
  }

  @Test("A throw rolls back and rethrows the original error")
  func throwRollsBack() throws {
    try withTable { db, _ in
      #expect(throws: Boom(tag: "original")) {
        try db.inTransaction { db in
          try db.execute("INSERT INTO t VALUES (1)")
          throw Boom(tag: "original")
        }
      }
      #expect(!db.isInTransaction)
      let remaining = try values(db)
      #expect(remaining.isEmpty)
      // The connection is usable afterwards.
      try db.inTransaction { db in
        try db.execute("INSERT INTO t VALUES (2)")
        return .commit
      }
      #expect(try values(db) == [2])
    }
  }

  @Test("A SQL error inside the body rolls back the earlier statements")
  func sqlErrorRollsBack() throws {
    try withTable { db, _ in
      #expect(throws: SQLiteError.self) {
        try db.write { db in
          try db.execute("INSERT INTO t VALUES (1)")
          try db.execute("INSERT INTO nowhere VALUES (1)")
        }
      }
      #expect(!db.isInTransaction)
      let remaining = try values(db)
      #expect(remaining.isEmpty)
    }
  }

  @Test("write commits and returns the body's value; read returns a value from one snapshot")
  func writeAndRead() throws {
    try withTable { db, path in
      let count = try db.write { db -> Int in
        try db.execute("INSERT INTO t VALUES (1), (2), (3)")
        return db.changes
      }
      #expect(count == 3)
      #expect(!db.isInTransaction)

      let other = try Database(path: path)
      let seen = try db.read { db -> (Int64?, Int64?) in
        let before = try db.int64("SELECT count(*) FROM t")
        try other.execute("INSERT INTO t VALUES (4)")  // another connection commits meanwhile
        let after = try db.int64("SELECT count(*) FROM t")
        return (before, after)
      }
      #expect(seen.0 == 3)
      #expect(seen.1 == 3, "a read transaction sees one snapshot")
      #expect(try db.int64("SELECT count(*) FROM t") == 4)
      #expect(!db.isInTransaction)
    }
  }

  @Test("write rethrows and rolls back")
  func writeThrows() throws {
    try withTable { db, _ in
      #expect(throws: Boom()) {
        try db.write { db -> Int in
          try db.execute("INSERT INTO t VALUES (1)")
          throw Boom()
        }
      }
      let remaining = try values(db)
      #expect(remaining.isEmpty)
    }
  }

  @Test("Rolling back a savepoint keeps the outer transaction's work")
  func savepoints() throws {
    try withTable { db, _ in
      try db.inTransaction { db in
        try db.execute("INSERT INTO t VALUES (1)")
        try db.inSavepoint { db in
          try db.execute("INSERT INTO t VALUES (2)")
          return .rollback
        }
        #expect(db.isInTransaction)
        #expect(throws: Boom()) {
          try db.inSavepoint { db in
            try db.execute("INSERT INTO t VALUES (3)")
            throw Boom()
          }
        }
        #expect(db.isInTransaction)
        try db.inSavepoint { db in
          try db.execute("INSERT INTO t VALUES (4)")
          // Nested savepoints with the same name: the inner one rolls back alone.
          try db.inSavepoint { db in
            try db.execute("INSERT INTO t VALUES (5)")
            return .rollback
          }
          return .commit
        }
        return .commit
      }
      #expect(try values(db) == [1, 4])
    }
  }

  @Test("A savepoint outside a transaction commits on release")
  func savepointAlone() throws {
    try withTable { db, path in
      try db.inSavepoint { db in
        try db.execute("INSERT INTO t VALUES (7)")
        return .commit
      }
      #expect(!db.isInTransaction)
      #expect(try values(Database(path: path, mode: .readOnly)) == [7])
    }
  }

  @Test("An immediate transaction on a second connection fails busy while the first writes")
  func busy() throws {
    try withTable { db, path in
      let second = try Database(path: path, busyTimeout: 50)
      try db.inTransaction(.immediate) { db in
        try db.execute("INSERT INTO t VALUES (1)")
        do {
          try second.inTransaction(.immediate) { _ in .commit }
          Issue.record("expected SQLITE_BUSY")
        } catch let error as SQLiteError {
          #expect(error.isBusy, "\(error)")
          #expect(error.code == 5)
          #expect(StoreError.from(error, path: path, doing: "write").kind == .busy)
        }
        #expect(!second.isInTransaction)
        // WAL: the reader is not blocked and does not see uncommitted rows.
        #expect(try second.int64("SELECT count(*) FROM t") == 0)
        return .commit
      }
      // Once the first commits, the second can write.
      try second.inTransaction(.immediate) { db in
        try db.execute("INSERT INTO t VALUES (2)")
        return .commit
      }
      #expect(try values(db) == [1, 2])
    }
  }

  @Test("A transaction inside a transaction is refused and the outer one is rolled back")
  func nestedTransaction() throws {
    try withTable { db, _ in
      #expect(throws: SQLiteError.self) {
        try db.inTransaction { db in
          try db.execute("INSERT INTO t VALUES (1)")
          try db.inTransaction { _ in .commit }
          return .commit
        }
      }
      #expect(!db.isInTransaction)
      let remaining = try values(db)
      #expect(remaining.isEmpty)
    }
  }
}
