import Foundation
import Testing

@testable import ChatStore

/// `DatabaseQueue` runs every use of its connection on its own thread, in order.
@Suite struct DatabaseQueueTests {
  func withQueue(_ body: (DatabaseQueue, String) async throws -> Void) async throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dbqueue-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/q.db"
    let queue = try DatabaseQueue(path: path, mode: .create, busyTimeout: 20)
    try await queue.write { db in try db.execute("CREATE TABLE t (x INTEGER)") }
    try await body(queue, path)
  }

  @Test func synchronousCallsRunOnTheQueuesThreadAndNest() async throws {
    try await withQueue { queue, _ in try Self.nest(queue) }
  }

  static func nest(_ queue: DatabaseQueue) throws {
    do {
      #expect(!queue.isCurrent)
      let nested = try queue.write { db in
        try db.execute("INSERT INTO t VALUES (1)")
        // A call made on the queue's thread runs at once instead of waiting for itself.
        return try queue.inDatabase { db in (queue.isCurrent, try db.int64("SELECT count(*) FROM t")) }
      }
      #expect(nested.0 && nested.1 == 1)
      #expect(try queue.read { db in try db.int64("SELECT x FROM t") } == 1)
    }
  }

  /// Many synchronous calls in a row: the worker must have let go of each one's closure
  /// before the call returns (it traps otherwise: "non-escaping closure has escaped").
  @Test func manySynchronousCallsReturnOnlyOnceTheWorkerLetGoOfThem() async throws {
    try await withQueue { queue, _ in
      // Off the cooperative pool: these calls block their thread.
      DispatchQueue.concurrentPerform(iterations: 2) { _ in
        for _ in 0..<5_000 { _ = try? queue.read { db in try db.int64("SELECT count(*) FROM t") } }
      }
    }
  }

  @Test func asynchronousCallsRunOnTheQueuesThreadInOrder() async throws {
    try await withQueue { queue, _ in
      try await withThrowingTaskGroup(of: Void.self) { group in
        for i in 0..<50 {
          group.addTask {
            let onQueue = try await queue.write { db in
              try db.execute("INSERT INTO t VALUES (?)", [i])
              return queue.isCurrent
            }
            #expect(onQueue)
          }
        }
        try await group.waitForAll()
      }
      let count = try await queue.read { db in try db.int64("SELECT count(*) FROM t") }
      #expect(count == 50)
    }
  }

  /// An actor isolated to the queue (as `SyncEngine` is) runs on its thread.
  actor Owner {
    let queue: DatabaseQueue
    nonisolated var unownedExecutor: UnownedSerialExecutor { queue.asUnownedSerialExecutor() }
    init(_ queue: DatabaseQueue) { self.queue = queue }

    func insertAfterASleep() async throws -> Bool {
      try await Task.sleep(for: .milliseconds(10))
      try await queue.write { db in try db.execute("INSERT INTO t VALUES (7)") }
      return queue.isCurrent
    }

    func writePatiently(_ patience: Double, waits: Locked<Int>) async throws {
      let insert = { try self.queue.inDatabase { db in try db.execute("INSERT INTO t VALUES (8)") } }
      try await queue.write(retryingBusyFor: patience, onWait: { waits.withLock { $0 += 1 } }, insert)
    }
  }

  @Test func anActorIsolatedToTheQueueRunsOnItsThread() async throws {
    try await withQueue { queue, _ in
      let onQueue = try await Owner(queue).insertAfterASleep()
      let count = try await queue.read { db in try db.int64("SELECT count(*) FROM t WHERE x = 7") }
      #expect(onQueue && count == 1)
    }
  }

  /// `write(retryingBusyFor:)` waits out another program's write lock held longer than
  /// `busy_timeout` (20 ms here), and gives up with the busy error after its patience.
  @Test func aWriteWaitsOutAnotherWriterThenGivesUpAfterItsPatience() async throws {
    try await withQueue { queue, path in
      let owner = Owner(queue)
      let other = try Database(path: path)
      try other.beginTransaction(.immediate)
      let waits = Locked(0)
      async let patient: Void = owner.writePatiently(30, waits: waits)
      // The lock goes once the writer has met it (however long the machine takes to get there).
      while waits.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
      try other.commit()
      try await patient
      #expect(waits.withLock { $0 } == 1)
      let count = try await queue.read { db in try db.int64("SELECT count(*) FROM t WHERE x = 8") }
      #expect(count == 1)

      try other.beginTransaction(.immediate)
      await #expect(throws: SQLiteError.self) { try await owner.writePatiently(0.2, waits: waits) }
      other.rollback()
    }
  }
}
