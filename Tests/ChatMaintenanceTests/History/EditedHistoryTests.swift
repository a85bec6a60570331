import ChatMaintenance
import ChatStore
import Foundation
import Testing

/// History format 2 (issue 29): an export carries each message's version, its edit time
/// and tombstones, never text deleted for everyone; an import applies them to the
/// messages a file already holds (a newer version, a delete) and a version 1 file still
/// reads.
@Suite struct EditedHistoryTests {
  static let header =
    #"{"type":"header","format":"chatdb-history","version":2,"schemaVersion":8,"userId":1,"exportedAt":"2026-12-04T03:06:03.549Z","filters":{}}"#
  static let users = [
    #"{"type":"user","id":1,"name":"Alice","avatarUrl":null,"lastConnectedAt":null}"#,
    #"{"type":"user","id":2,"name":"Bob","avatarUrl":null,"lastConnectedAt":null}"#,
  ]
  static func message(_ id: Int64, _ extra: String, _ content: String) -> String {
    #"{"type":"message","id":\#(id),"fromUserId":1,"toUserId":2,"status":"DELIVERED","createdAt":"2026-12-04T03:02:33.364Z",\#(extra)"content":"\#(content)"}"#
  }
  static let first: Int64 = 14_320_700_845_654_016
  static let trailer = #"{"type":"trailer","users":2,"messages":2,"requests":0}"#

  @Test func anExportCarriesVersionsAndTombstonesAndAnImportAppliesThem() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let before = try folder.write(
      "before.ndjson",
      lines: [Self.header] + Self.users + [
        Self.message(Self.first, "", "qqoriginal words"), Self.message(Self.first + 1, "", "zzdoomed words"),
        Self.trailer,
      ])
    let after = try folder.write(
      "after.ndjson",
      lines: [Self.header] + Self.users + [
        Self.message(Self.first, #""version":1,"editedAt":"2026-12-04T03:03:00.000Z","#, "new words"),
        Self.message(Self.first + 1, #""deletedAt":"2026-12-04T03:04:00.000Z","#, ""), Self.trailer,
      ])
    try folder.importFile(before, into: db)
    try folder.importFile(after, into: db)
    // Replayed, and an older file after it: nothing moves back.
    try folder.importFile(after, into: db)
    try folder.importFile(before, into: db)
    let rows = try db.query("SELECT content, version, deleted_at IS NOT NULL FROM Messages ORDER BY id") {
      "\($0.string(0))|\($0.int64(1))|\($0.int64(2))"
    }
    #expect(rows == ["new words|1|0", "|0|1"])
    #expect(
      try db.query("SELECT version, content FROM MessageEdits") { "\($0.int64(0)) \($0.string(1))" } == [
        "0 qqoriginal words"
      ])
    try db.execute("INSERT INTO MessageSearch (MessageSearch) VALUES ('integrity-check')")
    #expect(try db.int64("SELECT count(*) FROM MessageSearch WHERE MessageSearch MATCH 'zzdoomed'") == 0)
    #expect(try db.int64("SELECT count(*) FROM MessageSearch WHERE MessageSearch MATCH 'new'") == 1)

    // The export says so, and holds no deleted text; a new file made from it is the same.
    let exported = try folder.export(db)
    let zstd = Process()
    zstd.executableURL = URL(fileURLWithPath: "/usr/bin/zstd")
    zstd.arguments = ["-dcq", exported]
    let pipe = Pipe()
    zstd.standardOutput = pipe
    try zstd.run()
    let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    zstd.waitUntilExit()
    #expect(text.contains(#""version":3"#) && text.contains(#""deletedAt":"2026-12-04T03:04:00.000Z""#))
    #expect(!text.contains("zzdoomed"))
    #expect(
      text.contains(
        #"{"type":"edit","messageId":14320700845654016,"version":0,"editedAt":"2026-12-04T03:02:33.364Z","content":"qqoriginal words"}"#
      ) && text.contains(#""edits":1"#), "\(text)")
    let copy = try HistoryFolder()
    let copyDB = try copy.database()
    try copy.importFile(exported, into: copyDB)
    #expect(
      try copyDB.query("SELECT content, version, deleted_at IS NOT NULL FROM Messages ORDER BY id") {
        "\($0.string(0))|\($0.int64(1))|\($0.int64(2))"
      } == rows)
    #expect(
      try copyDB.query("SELECT version, content FROM MessageEdits") { "\($0.int64(0)) \($0.string(1))" } == [
        "0 qqoriginal words"
      ])
  }

  @Test func aTombstoneWithTextIsRefusedNamingTheField() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let bad = try folder.write(
      "bad.ndjson",
      lines: [Self.header] + Self.users + [
        Self.message(Self.first, #""deletedAt":"2026-12-04T03:04:00.000Z","#, "still here"),
        #"{"type":"trailer","users":2,"messages":1,"requests":0}"#,
      ])
    #expect {
      try folder.importFile(bad, into: db)
    } throws: { "\($0)".contains("bad.ndjson:4") && "\($0)".contains("content") }
  }

  @Test func evictPurgesOldVersionsAndLeavesNoneOfTheirText() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let before = try folder.write(
      "before.ndjson",
      lines: [Self.header] + Self.users + [
        Self.message(Self.first, "", "qqoriginal words"), Self.message(Self.first + 1, "", "kept words"),
        Self.trailer,
      ])
    let after = try folder.write(
      "after.ndjson",
      lines: [Self.header] + Self.users + [
        Self.message(Self.first, #""version":1,"editedAt":"2026-12-04T03:03:00.000Z","#, "new words"),
        Self.message(Self.first + 1, "", "kept words"), Self.trailer,
      ])
    try folder.importFile(before, into: db)
    try folder.importFile(after, into: db)
    var policy = EvictionPolicy()
    policy.editHistoryOlderThan = EvictionPolicy.age("1h")
    policy.now = Date(timeIntervalSince1970: 1_780_000_000)  // 2026-05-28: the history is newer
    #expect(try db.read { try EvictionPlanner(database: $0).plan(policy) }.editVersions == 0)
    policy.now = Date(timeIntervalSince1970: 1_800_000_000)  // 2027-01-15
    let plan = try db.read { try EvictionPlanner(database: $0).plan(policy) }
    #expect(plan.editVersions == 1 && plan.editBytes == 16 && plan.messages == 0)
    let result = try Evictor(database: db).run(policy)
    #expect(result.purgedEditVersions == 1 && result.deletedMessages == 0)
    #expect(try db.int64("SELECT count(*) FROM MessageEdits") == 0)
    #expect(try db.int64("SELECT count(*) FROM Messages") == 2)
    let bytes =
      (FileManager.default.contents(atPath: db.path) ?? Data())
      + (FileManager.default.contents(atPath: db.path + "-wal") ?? Data())
    #expect(bytes.range(of: Data("qqoriginal".utf8)) == nil, "the purged version's text is still in the file")
    #expect(bytes.range(of: Data("kept words".utf8)) != nil)
    try db.execute("INSERT INTO MessageSearch (MessageSearch) VALUES ('integrity-check')")
  }

  @Test func generateEditsAndDeletesAtTheirRatesAndKeepsOldSeeds() throws {
    let folder = try HistoryFolder()
    var options = HistoryGenerator.Options(owner: 1, contacts: 6, messages: 3_000, seed: 11)
    options.pending = 0
    options.failed = 0
    let plain = try folder.database(owner: 1)
    _ = try RecordWriter(database: plain, owner: 1).write { emit in try HistoryGenerator(options).generate(emit) }
    options.editRate = 0.1
    options.deleteRate = 0.05
    let changedFolder = try HistoryFolder()
    let changed = try changedFolder.database(owner: 1)
    let write = {
      try RecordWriter(database: changed, owner: 1).write { emit in try HistoryGenerator(options).generate(emit) }
    }
    _ = try write()
    _ = try write()  // again: the same seed into the same file changes nothing and clashes with nothing
    let edited = try changed.int64("SELECT count(*) FROM Messages WHERE version = 1") ?? 0
    let deleted = try changed.int64("SELECT count(*) FROM Messages WHERE deleted_at IS NOT NULL AND content = ''") ?? 0
    #expect((200...400).contains(edited) && (75...225).contains(deleted), "\(edited) edited, \(deleted) deleted")
    #expect(try changed.int64("SELECT count(*) FROM MessageEdits") == edited)
    // The same ids and times as without changes: the seed's history is the same one.
    let ids = { (db: Database) in
      try db.query("SELECT id, created_at FROM Messages ORDER BY id") { "\($0.int64(0)) \($0.string(1))" }
    }
    #expect(try ids(changed) == ids(plain))
    try changed.execute("INSERT INTO MessageSearch (MessageSearch) VALUES ('integrity-check')")
  }

  @Test func anImportDoesNotBringBackAMessageDeletedOnThisDevice() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let file = try folder.write(
      "h.ndjson",
      lines: [Self.header] + Self.users + [
        Self.message(Self.first, "", "hidden words"), Self.message(Self.first + 1, "", "kept words"), Self.trailer,
      ])
    try folder.importFile(file, into: db)
    let chats = try ChatRepository(database: db, ownerID: 1)
    try chats.deleteForMe(Self.first)
    try folder.importFile(file, into: db)
    #expect(try db.query("SELECT content FROM Messages") { $0.string(0) } == ["kept words"])
  }
}
