import ChatStore
import Foundation
import Testing

@testable import ChatMaintenance

/// Eviction's checkpointing thread against SQLite's own account of the WAL.
@Suite struct WALCopierTests {
  /// (frames in the WAL, frames copied into the file), from a checkpoint that copies
  /// nothing more (the file is checkpointed by the copier or not at all).
  static func walState(_ db: Database) throws -> (Int64, Int64) {
    try db.query("PRAGMA wal_checkpoint(PASSIVE)") { ($0.int64(1), $0.int64(2)) }.first ?? (0, 0)
  }

  @Test("What the writer committed is copied on the copier's thread, and the WAL then starts again")
  func copiesTheCommittedFramesAndLetsTheWALStartAgain() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try db.execute("PRAGMA wal_autocheckpoint = 0")  // before the frame count: it sets a WAL hook too
    db.countWALFrames()
    try db.execute("CREATE TABLE t (x)")
    let copier = try WALCopier(path: db.path)
    #expect(!db.othersHaveTheFileOpen(besides: 1))
    for round in 0..<3 {
      try db.inTransaction { db in
        for i in 0..<500 { try db.execute("INSERT INTO t VALUES (?)", [String(repeating: "x", count: 100 + i % 50)]) }
        return .commit
      }
      let frames = db.walFrames
      #expect(frames > 10)
      copier.copy()
      copier.wait()
      // All copied: the next transaction writes the WAL from its first frame again.
      try db.execute("INSERT INTO t VALUES (\(round))")
      #expect(db.walFrames < frames, "round \(round)")
    }
    try copier.finish()
    #expect(try db.int64("SELECT count(*) FROM t") == 1_503)
    #expect(!db.othersHaveTheFileOpen())
  }
}
