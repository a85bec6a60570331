import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

/// The header is never a skippable record; import and generate leave their caller's
/// connection as they found it; generating over another seed's file is a data conflict.
@Suite(.ownThreads) struct RecordWriterTests {
  static let goodHeader =
    #"{"type":"header","format":"chatdb-history","version":1,"schemaVersion":3,"userId":1,"exportedAt":"x","filters":{}}"#

  static let badHeaders = [
    #"{"type":"header","format":"something-else","version":1,"schemaVersion":3,"userId":1,"exportedAt":"x","filters":{}}"#,
    #"{"type":"header","format":"chatdb-history","version":1,"schemaVersion":3,"userId":"one","exportedAt":"x","filters":{}}"#,
    #"{"type":"header","format":"chatdb-history","version":1,"schemaVersion":3,"userId":2,"exportedAt":"x","filters":{}}"#,
    #"{"type":"header","format":"chatdb-history","version":99,"schemaVersion":3,"userId":1,"exportedAt":"x","filters":{}}"#,
    #"{"type":"header","format":"chatdb-history","version":1,"#,
  ]

  @Test(arguments: RecordWriterTests.badHeaders)
  func aBadHeaderStopsTheImportEvenWhenSkippingBadRecords(header: String) throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let trailer = #"{"type":"trailer","users":2,"messages":3,"requests":0}"#
    let path = try folder.write("header.ndjson", lines: [header] + validLines(messages: 3) + [trailer])
    do {
      try folder.importFile(path, into: db, skip: true)
      Issue.record("a bad header was skipped")
    } catch let error as ImportError {
      #expect(error.message.hasPrefix("\(path):1: header: "), "\(error.message)")
      #expect(error.kind == .badInput)
    }
    #expect(try db.int64("SELECT count(*) FROM Messages") == 0)
  }

  @Test func aGoodHeaderWithABadRecordIsStillSkippable() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let trailer = #"{"type":"trailer","users":2,"messages":3,"requests":0}"#
    var lines = [Self.goodHeader] + validLines(messages: 3) + [trailer]
    lines[3] = "not json"
    let summary = try folder.importFile(try folder.write("skip.ndjson", lines: lines), into: db, skip: true)
    #expect(summary.rejected == 1)
    #expect(summary.messages == 2)
  }

  // MARK: - Connection settings

  @Test(arguments: [false, true])
  func importRestoresTheConnectionSettings(skip: Bool) throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try unusualSettings(db)
    let before = try connectionSettings(db)
    try folder.importFile(
      try folder.write("ok.ndjson", lines: validLines(messages: 200)), into: db, batchSize: 50, skip: skip)
    #expect(try connectionSettings(db) == before)
  }

  @Test func aFailedImportRestoresTheConnectionSettings() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try unusualSettings(db)
    let before = try connectionSettings(db)
    var lines = validLines(messages: 200)
    lines[150] = "garbage"
    #expect(throws: ImportError.self) {
      try folder.importFile(try folder.write("bad.ndjson", lines: lines), into: db, batchSize: 50)
    }
    #expect(try connectionSettings(db) == before)
    #expect(
      try db.int64("SELECT count(*) FROM Messages") == 148,
      "the three batches before the bad line stay (2 users, 148 messages)")
  }

  @Test func generatingRestoresTheConnectionSettingsAndAgainChangesNothing() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try unusualSettings(db)
    let before = try connectionSettings(db)
    try fill(db, messages: 500, seed: 3)
    #expect(try connectionSettings(db) == before)
    let rows = try contents(db)
    try fill(db, messages: 500, seed: 3)
    #expect(try contents(db) == rows)
    #expect(try connectionSettings(db) == before)
  }

  // MARK: - Generating over another seed

  @Test func generatingWithAnotherSeedIsADataConflictNamingTheFile() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 500, seed: 3)
    try unusualSettings(db)
    let before = try connectionSettings(db)
    let rows = try contents(db)
    do {
      try fill(db, messages: 500, seed: 4)
      Issue.record("no error")
    } catch let error as StoreError {
      #expect(error.kind == .badInput)
      #expect(error.path == db.path)
      #expect(error.message.hasPrefix("\(db.path) already holds a different message with "), "\(error.message)")
      #expect(error.message.contains("another --seed"), "\(error.message)")
      #expect(error.message.hasSuffix("nothing was written"), "\(error.message)")
    }
    #expect(try contents(db) == rows)
    #expect(try connectionSettings(db) == before)
  }

  @Test func aMessageWithTheSameIdButOtherContentIsAConflictWhenGenerating() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db, messages: 300, seed: 3)
    let id = try #require(try db.int64("SELECT max(id) FROM Messages WHERE request_id IS NULL"))
    try db.execute("UPDATE Messages SET content = 'edited' WHERE id = ?", [id])
    do {
      try fill(db, messages: 300, seed: 3)
      Issue.record("no error")
    } catch let error as StoreError {
      #expect(error.kind == .badInput)
      #expect(
        error.message.hasPrefix("\(db.path) already holds a different message with id \(id) "), "\(error.message)")
    }
  }
}
