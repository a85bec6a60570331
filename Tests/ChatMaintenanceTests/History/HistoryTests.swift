import ChatMaintenance
import ChatStore
import Foundation
import TestSupport
import Testing

@Suite(.ownThreads) struct HistoryRoundTripTests {
  @Test func exportThenImportIntoAnEmptyFileGivesTheSameRows() throws {
    let folder = try HistoryFolder()
    let source = try folder.database()
    try fill(source)
    // NULLs and awkward text beyond what the generator makes.
    try source.execute(
      "INSERT INTO Users (id, name, avatar_url, last_connected_at) VALUES (99, 'tab\tnew\nline \"q\" \\ e\u{301} \u{1}', NULL, NULL)"
    )
    let path = try folder.export(source)
    #expect(FileSystem.permissions(atPath: path) == 0o600)

    let target = try Database(path: folder.file("copy.db"), mode: .create)
    _ = try Migrator().apply(Migration.shipped, to: target, owner: 1)
    let summary = try folder.importFile(path, into: target)
    #expect(try contents(target) == contents(source))
    #expect(summary.records > 3_000)
    #expect(summary.rejected == 0)
  }

  @Test func importingTheSameFileTwiceChangesNothing() throws {
    let folder = try HistoryFolder()
    let source = try folder.database()
    try fill(source)
    let path = try folder.export(source)
    let target = try Database(path: folder.file("again.db"), mode: .create)
    _ = try Migrator().apply(Migration.shipped, to: target, owner: 1)
    try folder.importFile(path, into: target)
    let before = try contents(target)
    let second = try folder.importFile(path, into: target)
    #expect(second.users + second.messages + second.requests == 0)
    #expect(second.unchanged == second.records)
    #expect(try contents(target) == before)
  }

  @Test func newSendsNeverReuseAnImportedRequestID() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db)
    let highest = try db.int64("SELECT max(request_id) FROM MessageRequests") ?? 0
    let chats = try ChatRepository(database: db, ownerID: 1)
    let contact = try #require(try db.int64("SELECT min(id) FROM Users WHERE id <> 1"))
    #expect(try chats.send(to: contact, content: "new").requestID > highest)
  }

  @Test func filtersSelectAConversationAndATimeRange() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db)
    let contact = try #require(
      try db.int64("SELECT conversation_id FROM Messages GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"))
    let path = try folder.export(db, filter: ExportFilter(conversation: contact, since: "2025-07-01T00:00:00.000Z"))
    let target = try Database(path: folder.file("part.db"), mode: .create)
    _ = try Migrator().apply(Migration.shipped, to: target, owner: 1)
    try folder.importFile(path, into: target)
    let expected = try db.int64(
      "SELECT count(*) FROM Messages WHERE conversation_id = ? AND created_at >= '2025-07-01T00:00:00.000Z'", [contact])
    #expect(try target.int64("SELECT count(*) FROM Messages") == expected)
    #expect(try target.int64("SELECT count(*) FROM Messages WHERE conversation_id <> ?", [contact]) == 0)
    #expect(try target.int64("SELECT count(*) FROM Users") == 2)
  }
}

@Suite(.ownThreads) struct BadInputTests {
  static let cases: [(String, String, String)] = [
    ("not JSON", "hello", ":3: expected '{'"),
    ("missing type", #"{"id":1}"#, ":3: missing field 'type'"),
    ("unknown type", #"{"type":"reaction"}"#, ":3: field 'type': unknown record type 'reaction'"),
    (
      "missing content",
      #"{"type":"message","id":5,"fromUserId":2,"toUserId":1,"status":"READ","createdAt":"2026-01-01"}"#,
      ":3: field 'content': missing"
    ),
    (
      "unknown status",
      #"{"type":"message","id":5,"fromUserId":2,"toUserId":1,"content":"x","status":"SENDING","createdAt":"2026-01-01"}"#,
      ":3: field 'status': 'SENDING' is not one of SYNCED, DELIVERED, READ"
    ),
    (
      "id zero",
      #"{"type":"message","id":0,"fromUserId":2,"toUserId":1,"content":"x","status":"READ","createdAt":"2026-01-01"}"#,
      ":3: field 'id': 0 is out of range"
    ),
    (
      "negative id",
      #"{"type":"message","id":-5,"fromUserId":2,"toUserId":1,"content":"x","status":"READ","createdAt":"2026-01-01"}"#,
      ":3: field 'id': -5 is out of range"
    ),
    (
      "id too big",
      #"{"type":"message","id":9223372036854775808,"fromUserId":2,"toUserId":1,"content":"x","status":"READ","createdAt":"2026-01-01"}"#,
      ":3: field 'id': not an integer, or out of range"
    ),
    (
      "fractional id",
      #"{"type":"message","id":1.5,"fromUserId":2,"toUserId":1,"content":"x","status":"READ","createdAt":"2026-01-01"}"#,
      ":3: field 'id': not an integer"
    ),
    (
      "bad time",
      #"{"type":"message","id":5,"fromUserId":2,"toUserId":1,"content":"x","status":"READ","createdAt":"yesterday"}"#,
      ":3: field 'createdAt': 'yesterday' is not an ISO 8601 time"
    ),
    (
      "someone else's message",
      #"{"type":"message","id":5,"fromUserId":2,"toUserId":3,"content":"x","status":"READ","createdAt":"2026-01-01"}"#,
      ":3: the message is between users 2 and 3"
    ),
    (
      "unknown user",
      #"{"type":"message","id":5,"fromUserId":7,"toUserId":1,"content":"x","status":"READ","createdAt":"2026-01-01"}"#,
      ":3: field 'fromUserId': user 7 is not in the file"
    ),
    (
      "a message to oneself",
      #"{"type":"message","id":5,"fromUserId":1,"toUserId":1,"content":"x","status":"READ","createdAt":"2026-01-01"}"#,
      ":3: the message is from user 1 to themselves"
    ),
    (
      "a request to oneself",
      #"{"type":"request","requestId":5,"toUserId":1,"content":"x","status":"PENDING","createdAt":"2026-01-01"}"#,
      ":3: field 'toUserId': a request from user 1 cannot be addressed to themselves"
    ),
    (
      "unpaired surrogate", #"{"type":"user","id":3,"name":"\ud800"}"#, ":3: field 'name': an unpaired UTF-16 surrogate"
    ),
    (
      "newer header", #"{"type":"header","format":"chatdb-history","version":2,"schemaVersion":3,"userId":1}"#,
      ":3: a header is only allowed on line 1"
    ),
  ]

  @Test(arguments: cases)
  func theFirstBadRecordStopsTheImportNamingFileLineAndField(name: String, line: String, expected: String) throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let path = try folder.write("bad.ndjson", lines: Array(validLines(messages: 0).prefix(2)) + [line])
    do {
      try folder.importFile(path, into: db)
      Issue.record("\(name): no error")
    } catch let error as ImportError {
      #expect(error.message.hasPrefix(path + expected), "\(name): \(error.message)")
      #expect(!error.message.contains("\n"))
    }
    #expect(try db.int64("SELECT count(*) FROM Users") == 0, "the failing batch is rolled back")
  }

  @Test func invalidUTF8AndOverlongContentAreRejected() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let head = Array(validLines(messages: 0).prefix(2).map { $0 + "\n" }.joined().utf8)
    let invalid = head + Array(#"{"type":"user","id":3,"name":"a"#.utf8) + [0xFF, 0xFE] + Array("\"}\n".utf8)
    do {
      try folder.importFile(try folder.write("utf8.ndjson", invalid), into: db)
      Issue.record("no error")
    } catch let error as ImportError {
      #expect(error.message.contains(":3: field 'name': invalid UTF-8"), "\(error.message)")
    }
    let long = String(repeating: "x", count: maximumContentBytes + 1)
    let path = try folder.write(
      "long.ndjson",
      lines: Array(validLines(messages: 0).prefix(2))
        + [
          #"{"type":"message","id":5,"fromUserId":2,"toUserId":1,"content":"\#(long)","status":"READ","createdAt":"2026-01-01"}"#
        ])
    do {
      try folder.importFile(path, into: db)
      Issue.record("no error")
    } catch let error as ImportError {
      #expect(
        error.message.contains(":3: field 'content': 65537 bytes is longer than the limit of 65536"), "\(error.message)"
      )
    }
  }

  @Test func batchesBeforeTheBadRecordStayCommitted() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    var lines = validLines(messages: 30)  // 2 users + 30 messages
    lines[26] = #"{"type":"message","id":25,"status":"NOPE"}"#  // line 27
    let path = try folder.write("partial.ndjson", lines: lines)
    do {
      try folder.importFile(path, into: db, batchSize: 10)
      Issue.record("no error")
    } catch let error as ImportError {
      #expect(error.message.hasPrefix("\(path):27: "))
      #expect(error.committed.batches == 2)
      #expect(error.committed.records == 20)
      #expect(error.description.contains("20 records before it were committed in 2 batches"))
    }
    #expect(try db.int64("SELECT count(*) FROM Messages") == 18)  // 20 records = 2 users + 18 messages
    // Fix the file and re-run: the import finishes the job.
    lines[26] = validLines(messages: 30)[26]
    let fixed = try folder.write("fixed.ndjson", lines: lines)
    let summary = try folder.importFile(fixed, into: db, batchSize: 10)
    #expect(summary.messages == 12)
    #expect(try db.int64("SELECT count(*) FROM Messages") == 30)
  }

  @Test func aRequestIDClashInsideAMultiRowInsertNamesItsLine() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    var lines = Array(validLines(messages: 0).prefix(2))
    for i in 1...200 {
      let requestID = i == 100 ? 10 : i  // message 100 reuses message 10's request id
      lines.append(
        #"{"type":"message","id":\#(i),"fromUserId":1,"toUserId":2,"content":"m","status":"SYNCED","createdAt":"2026-01-01T00:00:00.000Z","requestId":\#(requestID)}"#
      )
    }
    let path = try folder.write("clash.ndjson", lines: lines)
    do {
      try folder.importFile(path, into: db, batchSize: 10_000)
      Issue.record("no error")
    } catch let error as ImportError {
      #expect(
        error.message.hasPrefix("\(path):102: field 'requestId': 10 already belongs to another message"),
        "\(error.message)")
    }
    #expect(try db.int64("SELECT count(*) FROM Messages") == 0, "the batch is rolled back")
  }

  @Test func skipBadRecordsCountsAndWritesThem() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    var lines = validLines(messages: 10)
    lines[4] = "garbage"
    lines[8] =
      #"{"type":"message","id":7,"fromUserId":2,"toUserId":1,"content":"x","status":"LOST","createdAt":"2026-01-01"}"#
    let path = try folder.write("skip.ndjson", lines: lines)
    let rejectsFile = try OutputFile(path: folder.file("rejects.ndjson"))
    let rejects = PlainSink(fileDescriptor: rejectsFile.fileDescriptor, name: rejectsFile.path)
    var options = HistoryImporter.Options()
    options.skipBadRecords = true
    let summary = try HistoryImporter(database: db, owner: 1, options: options).run(
      ByteSource.open(path: path), rejects: rejects)
    try rejectsFile.commit()
    #expect(summary.rejected == 2)
    #expect(summary.messages == 8)
    let written = try String(contentsOfFile: rejectsFile.path, encoding: .utf8).split(separator: "\n")
    #expect(written.count == 2)
    #expect(written[0].contains(#""line":5"#) && written[0].contains(#""text":"garbage""#))
    #expect(written[1].contains(#""line":9"#) && written[1].contains("LOST"))
  }

  @Test func anOlderSchemaIsRefusedWithAPointerToMigrate() throws {
    let folder = try HistoryFolder()
    let path = folder.file("chats-1.db")
    _ = try Migrator().migrate(fileAt: path, to: 2, owner: 1)
    do {
      _ = try HistoryImporter(database: Database(path: path), owner: 1)
      Issue.record("no error")
    } catch let error as StoreError {
      #expect(error.message.contains("chatdb migrate"))
    }
  }

  @Test func aNewerFormatVersionIsRefused() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let path = try folder.write(
      "future.ndjson",
      lines: [#"{"type":"header","format":"chatdb-history","version":9,"schemaVersion":3,"userId":1,"filters":{}}"#])
    do {
      try folder.importFile(path, into: db)
      Issue.record("no error")
    } catch let error as ImportError {
      #expect(error.message.hasPrefix("\(path):1: header: format version 9 is newer"), "\(error.message)")
    }
  }
}

@Suite(.ownThreads) struct DamagedExportTests {
  func export(_ folder: HistoryFolder) throws -> (String, [UInt8]) {
    let db = try folder.database()
    try fill(db, messages: 5_000)
    let path = try folder.export(db)
    return (path, Array(try Data(contentsOf: URL(fileURLWithPath: path))))
  }

  @Test func aTruncatedExportIsRefusedBeforeAnythingChanges() throws {
    let folder = try HistoryFolder()
    let (_, bytes) = try export(folder)
    let cut = try folder.write("cut.ndjson.zst", Array(bytes.prefix(bytes.count / 2)))
    do {
      _ = try ExportVerifier.verify(path: cut)
      Issue.record("no error")
    } catch let error as StoreError {
      #expect(error.message.contains("truncated"), "\(error.message)")
      #expect(error.message.hasPrefix(cut))
    }
  }

  @Test func aCorruptedExportIsRefused() throws {
    let folder = try HistoryFolder()
    var (_, bytes) = try export(folder)
    bytes[bytes.count / 2] ^= 0x5A
    let bad = try folder.write("flipped.ndjson.zst", bytes)
    #expect(throws: StoreError.self) { _ = try ExportVerifier.verify(path: bad) }
  }

  @Test func aMissingTrailerOrAWrongCountIsRefused() throws {
    let folder = try HistoryFolder()
    let header =
      #"{"type":"header","format":"chatdb-history","version":1,"schemaVersion":3,"userId":1,"exportedAt":"x","filters":{}}"#
    let body = validLines(messages: 3)
    let noTrailer = try folder.write("no-trailer.ndjson", lines: [header] + body)
    let wrong = try folder.write(
      "wrong.ndjson", lines: [header] + body + [#"{"type":"trailer","users":2,"messages":4,"requests":0}"#])
    for path in [noTrailer, wrong] {
      do {
        _ = try ExportVerifier.verify(path: path)
        Issue.record("no error for \(path)")
      } catch let error as StoreError {
        #expect(error.message.hasPrefix(path))
      }
      // Read as a stream (standard input has no verification pass), it fails at the end.
      let db = try folder.database(owner: 1)
      #expect(throws: ImportError.self) { try folder.importFile(path, into: db) }
    }
  }

  @Test func anUncommittedOutputFileLeavesNothingBehind() throws {
    let folder = try HistoryFolder()
    do {
      let file = try OutputFile(path: folder.file("never.ndjson.zst"))
      _ = write(file.fileDescriptor, "partial", 7)
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
  }
}

@Suite(.ownThreads) struct JSONEscapeTests {
  /// A character that must be escaped, at every position of a 20-byte string (so on both
  /// sides of the eight-byte fast path), comes out escaped and nothing else changes.
  @Test(arguments: ["\"", "\\", "\n", "\u{1}", "\u{1F}"])
  func everyPositionIsEscaped(special: String) throws {
    for position in 0..<20 {
      var text = String(repeating: "a", count: 20)
      let index = text.index(text.startIndex, offsetBy: position)
      text.replaceSubrange(index...index, with: special + "é")
      var writer = JSONLineWriter()
      writer.begin(type: "user")
      writer.field("name", text)
      writer.end()
      let line = String(decoding: writer.buffer, as: UTF8.self)
      let parsed = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
      #expect(parsed?["name"] as? String == text, "position \(position): \(line)")
    }
  }
}

@Suite(.ownThreads) struct JSONIntegerTests {
  @Test(
    arguments: [0, 1, 9, 10, 99, 100, 101, 12_345, -1, -10, -100, Int64.max, Int64.min, 111_400_000_000_000_000]
      as [Int64])
  func integersAreWrittenExactly(value: Int64) {
    var writer = JSONLineWriter()
    writer.begin(type: "trailer")
    writer.field("users", value)
    writer.end()
    #expect(String(decoding: writer.buffer, as: UTF8.self) == "{\"type\":\"trailer\",\"users\":\(value)}\n")
  }
}
