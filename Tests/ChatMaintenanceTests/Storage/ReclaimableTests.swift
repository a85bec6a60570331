import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

/// `StorageReport.reclaimableBytes` against what `VACUUM INTO` really saves.
@Suite(.ownThreads) struct Reclaimable {
  /// The file's size minus the size of a `VACUUM INTO` copy, with no connection open.
  static func vacuumSaving(_ path: String, in folder: HistoryFolder) throws -> Int64 {
    let copy = folder.file("vacuumed-\(UUID().uuidString).db")
    defer { unlink(copy) }
    try Database(path: path).execute("VACUUM INTO ?", [copy])
    return try #require(FileSystem.size(atPath: path)) - (try #require(FileSystem.size(atPath: copy)))
  }

  /// Within two pages per table and index, or 10% of the saving.
  static func expectClose(_ report: StorageReport, to saving: Int64, sourceLocation: SourceLocation = #_sourceLocation)
  {
    let tolerance = max(2 * report.pageSize * Int64(report.btrees.count), saving / 10)
    #expect(
      abs(report.reclaimableBytes - saving) <= tolerance,
      "reclaimable \(report.reclaimableBytes), VACUUM saves \(saving), free pages \(report.freeBytes)",
      sourceLocation: sourceLocation)
  }

  static func generated() throws -> (HistoryFolder, String) {
    let folder = try HistoryFolder()
    do {
      let db = try folder.database()
      try fill(db, messages: 6_000)
    }
    return (folder, folder.file("chats-1.db"))
  }

  @Test func everyOtherMessageDeletedIsReclaimableAsVacuumSays() throws {
    let (folder, path) = try Self.generated()
    do {
      let db = try Database(path: path)
      // Every other message: pages stay half full, few become free.
      try db.execute(
        """
        DELETE FROM Messages WHERE id IN (
          SELECT id FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM Messages) WHERE n % 2 = 0)
        """)
    }
    let report = try StorageReport.measure(path: path)
    #expect(report.unusedBytes > report.freeBytes, "the space is inside pages, not in free pages")
    #expect(report.fragmentedBytes == report.freeBytes + report.unusedBytes)
    let saving = try Self.vacuumSaving(path, in: folder)
    #expect(saving > 20 * report.pageSize)
    Self.expectClose(report, to: saving)
  }

  @Test func afterAnEvictionTheReclaimableFigureMatchesVacuum() throws {
    let (folder, path) = try Self.generated()
    do {
      let db = try Database(path: path)
      var policy = EvictionPolicy()
      policy.now = Storage.now
      policy.olderThan = EvictionPolicy.age("180d")
      policy.keepLast = 40
      _ = try Evictor(database: db).run(policy)
    }
    let report = try StorageReport.measure(path: path)
    let saving = try Self.vacuumSaving(path, in: folder)
    Self.expectClose(report, to: saving)
  }

  @Test func aVacuumedFileHasLittleToReclaim() throws {
    let (folder, path) = try Self.generated()
    _ = try DatabaseVacuum.run(path: path)
    let report = try StorageReport.measure(path: path)
    #expect(report.freeBytes == 0)
    Self.expectClose(report, to: try Self.vacuumSaving(path, in: folder))
  }
}
