import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

/// Every read-only path of the maintenance library leaves the user's folder exactly as
/// it found it: a look at a file never leaves a `-wal` or `-shm` behind.
@Suite(.ownThreads) struct ReadOnlyFootprint {
  /// One read-only piece of work on a closed, current file.
  struct Reader: Sendable, CustomTestStringConvertible {
    var name: String
    var run: @Sendable (String) throws -> Void
    var testDescription: String { name }
  }

  static let readers: [Reader] = [
    Reader(name: "StorageReport.measure") { _ = try StorageReport.measure(path: $0) },
    Reader(name: "StorageSuggestion.suggest") { _ = try StorageSuggestion.suggest(path: $0, needed: 1 << 30) },
    Reader(name: "HealthCheck.check") { #expect(HealthCheck(full: true).check(path: $0).isClean) },
    Reader(name: "Migrator.status") { _ = try Migrator().status(ofFileAt: $0) },
    Reader(name: "Migrator.migrate with nothing to do") {
      let applied = try Migrator().migrate(fileAt: $0).applied
      #expect(applied.isEmpty)
    },
    Reader(name: "IndexTools.list and verify") {
      let db = try Database(path: $0, mode: .readOnly)
      _ = try IndexTools.list(db)
      let checks = try IndexTools.verify(db)
      #expect(checks.allSatisfy { $0.isOK })
      _ = try IndexTools.repairStatements(db)
    },
    Reader(name: "EvictionPlanner.plan (evict --dry-run)") { path in
      let db = try Database(path: path, mode: .readOnly)
      var policy = EvictionPolicy()
      policy.olderThan = EvictionPolicy.age("90d")
      policy.now = Storage.now
      _ = try db.read { try EvictionPlanner(database: $0).plan(policy) }
    },
    Reader(name: "HistoryExporter.export") { path in
      let db = try Database(path: path, mode: .readOnly)
      let sink = try HistoryExporter.sink(fileDescriptor: open("/dev/null", O_WRONLY | O_CLOEXEC), name: "/dev/null")
      _ = try HistoryExporter.export(db, owner: 1, filter: ExportFilter(), to: sink)
    },
  ]

  @Test(arguments: readers)
  func leavesTheFolderAsItFoundIt(_ reader: Reader) throws {
    let (folder, path) = try Health.generatedFile()
    let before = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    #expect(before == ["chats-1.db"])
    let size = FileSystem.size(atPath: path)
    try reader.run(path)
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == before)
    #expect(FileSystem.size(atPath: path) == size)
  }

  @Test func aClosedFileIsReportedWithoutCompanions() throws {
    let (folder, path) = try Health.generatedFile()
    _ = folder
    let report = try StorageReport.measure(path: path)
    #expect(report.walBytes == 0)
    #expect(report.shmBytes == 0, "the -shm of the report's own connection is not the file's")
    #expect(report.totalBytes == FileSystem.size(atPath: path))
  }

  @Test func sizesNeverCountTheSharedMemoryFile() throws {
    let (folder, path) = try Health.generatedFile()
    _ = folder
    let writer = try Database(path: path)
    try writer.execute("DELETE FROM Messages WHERE id % 3 = 0")
    let shm = try #require(FileSystem.size(atPath: path + "-shm"))
    #expect(shm > 0)
    let report = try StorageReport.measure(path: path)
    #expect(report.shmBytes == shm)
    #expect(report.totalBytes == report.fileBytes + report.walBytes)
    #expect(report.walBytes > 0)
    let plan = try EvictionPlanner(database: writer).plan(EvictionPolicy())
    #expect(plan.fileBytes == report.fileBytes + report.walBytes)
    #expect(try Migrator().status(ofFileAt: path).fileSize == report.fileBytes + report.walBytes)
  }
}

/// A read that fails is reported as a failed read, never as a failed write.
@Suite(.ownThreads) struct FailedReads {
  /// A file with chatdb's version and tables, but a `Messages` without `content` and no
  /// `MessageRequests`: every query that reads them fails with a plain SQL error.
  static func malformedFile(in folder: HistoryFolder) throws -> String {
    let path = folder.file("chats-1.db")
    let db = try Database(path: path, mode: .create)
    try db.execute(
      """
      CREATE TABLE Messages (id INTEGER PRIMARY KEY, conversation_id INTEGER);
      CREATE TABLE chatdb_migrations (version INTEGER PRIMARY KEY);
      INSERT INTO chatdb_migrations VALUES (1);
      PRAGMA user_version = 1;
      """)
    return path
  }

  static let readers: [ReadOnlyFootprint.Reader] = [
    .init(name: "StorageReport.measure") { _ = try StorageReport.measure(path: $0) },
    .init(name: "StorageSuggestion.suggest") { _ = try StorageSuggestion.suggest(path: $0, needed: 1 << 30) },
    .init(name: "Migrator.status") { _ = try Migrator().status(ofFileAt: $0) },
    .init(name: "Migrator.migrate") { _ = try Migrator().migrate(fileAt: $0) },
  ]

  @Test(arguments: readers)
  func isAReadFailure(_ reader: ReadOnlyFootprint.Reader) throws {
    let folder = try HistoryFolder()
    let path = try Self.malformedFile(in: folder)
    do {
      try reader.run(path)
      Issue.record("the read succeeded")
    } catch let error as StoreError {
      #expect(error.kind == .readFailed, "\(error)")
      #expect(error.message.contains(path))
    }
  }

  @Test func checkReportsAReadFailure() throws {
    let folder = try HistoryFolder()
    let path = try Self.malformedFile(in: folder)
    let report = HealthCheck().check(path: path)
    guard case .failed(let kind, let message) = report.outcome else {
      Issue.record("expected a failed check, got \(report.outcome)")
      return
    }
    #expect(kind == .readFailed, "\(message)")
  }
}
