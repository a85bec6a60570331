import Foundation
import TestSupport
import Testing

@testable import ChatStore

/// `SearchIndexUpkeep.levels` and `nextMergeLevel` against what FTS5 itself does: the
/// evictor decides from them when to merge its deletion markers.
@Suite(.ownThreads) struct SearchIndexLevelsTests {
  typealias Level = SearchIndexUpkeep.Level

  /// A fixture whose word index merges only when told, with `batches` transactions of
  /// messages written after that: a level-0 segment each.
  static func fixture(batches: Int) throws -> (ChatFixture, Database) {
    let f = try ChatFixture()
    let db = f.chats.database
    try db.execute("INSERT INTO MessageSearch (MessageSearch, rank) VALUES ('automerge', 0)")
    try db.execute("INSERT INTO MessageSearch (MessageSearch, rank) VALUES ('crisismerge', 64)")
    for batch in 0..<batches {
      try f.chats.receive(
        (0..<5).map { f.incoming(f.relayID(Int64(batch * 5 + $0)), from: 2, "batch \(batch) word\($0)") })
    }
    return (f, db)
  }

  @Test("Each transaction adds a segment to level 0, and 'optimize' leaves one segment")
  func levelsFollowTheIndex() throws {
    let (f, db) = try Self.fixture(batches: 0)
    let before = try #require(try SearchIndexUpkeep.levels(db, "MessageSearch")).first?.segments ?? 0
    for batch in 1...5 {
      try f.chats.receive([f.incoming(f.relayID(Int64(100 + batch)), from: 3, "more \(batch)")])
      #expect(try SearchIndexUpkeep.levels(db, "MessageSearch")?.first?.segments == before + batch)
    }
    try db.execute("INSERT INTO MessageSearch (MessageSearch) VALUES ('optimize')")
    let levels = try #require(try SearchIndexUpkeep.levels(db, "MessageSearch"))
    #expect(levels.map(\.segments).reduce(0, +) == 1)
    #expect(levels.allSatisfy { $0.merging == 0 })
  }

  @Test("The level it predicts is the one FTS5's next merge step takes")
  func nextMergeLevelIsWhatFTS5Merges() throws {
    let (_, db) = try Self.fixture(batches: 18)
    let levels = try #require(try SearchIndexUpkeep.levels(db, "MessageSearch"))
    #expect(levels[0].segments >= 18)
    #expect(SearchIndexUpkeep.nextMergeLevel(levels, usermerge: 16) == 0)
    // A step of one page starts merging level 0 and stops; the rest continues it.
    _ = try SearchIndexUpkeep.mergeStep(db, "MessageSearch", pages: 1, anyLevel: false)
    let started = try #require(try SearchIndexUpkeep.levels(db, "MessageSearch"))
    #expect(started[0].merging > 0 || started[0].segments == 0)
    while try SearchIndexUpkeep.mergeStep(db, "MessageSearch", pages: 1, anyLevel: false) >= 2 {}
    let merged = try #require(try SearchIndexUpkeep.levels(db, "MessageSearch"))
    #expect(merged[0].segments == 0)
    #expect(merged.map(\.segments).reduce(0, +) < levels.map(\.segments).reduce(0, +))
    #expect(SearchIndexUpkeep.nextMergeLevel(merged, usermerge: 16) == nil)
    try db.execute("INSERT INTO MessageSearch (MessageSearch, rank) VALUES ('integrity-check', 0)")
  }

  @Test("A damaged structure record reads as nil, never as a crash")
  func aDamagedStructureIsNil() throws {
    let (_, db) = try Self.fixture(batches: 2)
    let cookie: [UInt8] = [0, 0, 0, 1]
    let damaged: [[UInt8]] = [
      [], cookie, cookie + [0xFF],
      cookie + [UInt8](repeating: 0xFF, count: 9) + [0, 0],  // a level count that reads as negative
      cookie + [1, 1, 0] + [0] + [UInt8](repeating: 0xFF, count: 9),  // a segment count that reads as negative
      cookie + [65, 0, 0],  // more levels than FTS5 has
      cookie + [1, 5, 0, 0, 5, 1, 1],  // five segments announced, one there
      cookie + [0xFF, 0x00, 0x00, 0x01, 1, 1, 0],  // the V2 format
    ]
    for record in damaged {
      try db.execute("UPDATE MessageSearch_data SET block = ? WHERE id = 10", [DatabaseValue.blob(record)])
      #expect(try SearchIndexUpkeep.levels(db, "MessageSearch") == nil, "\(record)")
    }
    try db.execute(
      "UPDATE MessageSearch_data SET block = ? WHERE id = 10", [DatabaseValue.blob(cookie + [1, 0, 0, 0, 0])])
    #expect(try SearchIndexUpkeep.levels(db, "MessageSearch") == [Level(segments: 0, merging: 0)])
  }

  @Test("FTS5's choice: an unfinished merge first unless a lower level holds more, else the fullest level")
  func nextMergeLevelFollowsFTS5sRule() {
    let cases: [([Level], Int?)] = [
      ([], nil),
      ([Level(segments: 15, merging: 0)], nil),
      ([Level(segments: 16, merging: 0)], 0),
      ([Level(segments: 5, merging: 0), Level(segments: 20, merging: 0)], 1),
      ([Level(segments: 16, merging: 0), Level(segments: 16, merging: 0)], 0),
      ([Level(segments: 2, merging: 0), Level(segments: 17, merging: 16)], 1),
      ([Level(segments: 20, merging: 0), Level(segments: 17, merging: 16)], 0),
      ([Level(segments: 10, merging: 0), Level(segments: 3, merging: 3)], nil),
      ([Level(segments: 4, merging: 4), Level(segments: 30, merging: 0)], 0),
    ]
    for (levels, expected) in cases {
      #expect(SearchIndexUpkeep.nextMergeLevel(levels, usermerge: 16) == expected, "\(levels)")
    }
  }
}
