import ChatStore
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ChatMaintenance

/// History format 3 (issue 30): attachments on messages and requests are checked field
/// by field, `media` lines carry a file in pieces of at most 1 MiB that must arrive in
/// order and hash to their name, and the trailer counts them.
@Suite(.ownThreads) struct MediaHistoryTests {
  static let hash = String(repeating: "ab", count: 32)
  static func message(_ attachments: String, extra: String = "") -> String {
    #"{"type":"message","id":7,"fromUserId":2,"toUserId":1,"content":"","status":"READ","createdAt":"2026-01-01T00:00:00.000Z",\#(extra)"attachments":\#(attachments)}"#
  }
  static func attachment(_ fields: String = "") -> String {
    #"{"sha256":"\#(hash)","mime":"image/jpeg","size":10\#(fields)}"#
  }

  static let cases: [(String, String, String)] = [
    (
      "uppercase hash", message(#"[{"sha256":"\#(hash.uppercased())","mime":"image/jpeg","size":1}]"#),
      ":3: field 'attachments[0].sha256': '\(hash.uppercased())' is not a SHA-256 (64 lowercase hex digits)"
    ),
    (
      "short hash", message(#"[{"sha256":"abc","mime":"image/jpeg","size":1}]"#),
      ":3: field 'attachments[0].sha256': 'abc' is not a SHA-256"
    ),
    ("negative size", message("[\(attachment(#","size":-1"#))]"), ":3: field 'attachments[0].size': -1 is negative"),
    (
      "no size", message(#"[{"sha256":"\#(hash)","mime":"image/jpeg"}]"#),
      ":3: field 'attachments[0].size': missing"
    ),
    (
      "the second one's mime", message(#"[\#(attachment()),{"sha256":"\#(hash)","size":1}]"#),
      ":3: field 'attachments[1].mime': missing"
    ),
    (
      "thumbnail not base64", message("[\(attachment(#","thumbnail":"!!!!""#))]"),
      ":3: field 'attachments[0].thumbnail': not valid base64"
    ),
    (
      "thumbnail over 20 KiB",
      message("[\(attachment(#","thumbnail":"\#(String(repeating: "AAAA", count: 6_827))""#))]"),
      ":3: field 'attachments[0].thumbnail': 20481 bytes is longer than the limit of 20480"
    ),
    (
      "eleven", message("[" + Array(repeating: attachment(), count: 11).joined(separator: ",") + "]"),
      ":3: field 'attachments': more than 10"
    ),
    ("not an array", message(#""x""#), ":3: field 'attachments': must be an array"),
    (
      "a tombstone's", message("[\(attachment())]", extra: #""deletedAt":"2026-01-02T00:00:00.000Z","#),
      ":3: field 'attachments': a message deleted for everyone (deletedAt) keeps no attachments"
    ),
    (
      "a request's",
      #"{"type":"request","requestId":5,"toUserId":2,"content":"x","status":"PENDING","createdAt":"2026-01-01T00:00:00.000Z","attachments":[{"sha256":"x","mime":"a/b","size":1}]}"#,
      ":3: field 'attachments[0].sha256': 'x' is not"
    ),
  ]

  @Test(arguments: cases)
  func aBadAttachmentStopsTheImportNamingItsField(name: String, line: String, expected: String) throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    let path = try folder.write("bad.ndjson", lines: Array(validLines(messages: 0).prefix(2)) + [line])
    do {
      try folder.importFile(path, into: db)
      Issue.record("\(name): no error")
    } catch let error as ImportError {
      #expect(error.message.hasPrefix(path + expected), "\(name): \(error.message)")
    }
    #expect(try db.int64("SELECT count(*) FROM Media") == 0)
  }

  @Test func attachmentsAreWrittenAndReadBackAsTheyWere() throws {
    let attachments = [
      ChatStore.Attachment(
        sha256: Self.hash, mime: "video/mp4", size: 9_000_000, relayID: 4, width: 1920, height: 1080,
        durationMs: 12_000, thumbnail: Array(0...255)),
      ChatStore.Attachment(sha256: String(repeating: "0", count: 64), mime: "application/pdf", size: 0),
    ]
    let message = Message(
      id: 7, fromUserID: 2, toUserID: 1, content: "two \"files\"", status: .read,
      createdAt: "2026-01-01T00:00:00.000Z", attachments: attachments)
    var writer = JSONLineWriter()
    writer.write(.message(message))
    let line = String(decoding: writer.buffer.dropLast(), as: UTF8.self)
    #expect(
      line.hasSuffix(
        #""attachments":[{"sha256":"\#(Self.hash)","mime":"video/mp4","size":9000000,"mediaId":4,"width":1920,"height":1080,"durationMs":12000,"thumbnail":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w=="},{"sha256":"0000000000000000000000000000000000000000000000000000000000000000","mime":"application/pdf","size":0}]}"#
      ), "\(line)")
    let parser = RecordParser()
    let kind = try Array(line.utf8).withUnsafeBufferPointer { try parser.parse($0) }
    #expect(try parser.record(kind) == .message(message))
  }

  @Test func base64IsFoundationsAndRefusesWhatIsNot() throws {
    var random = SystemRandomNumberGenerator()
    for count in 0..<100 {
      let bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
      var text: [UInt8] = []
      bytes.withUnsafeBytes { Base64.encode($0, into: &text) }
      #expect(String(decoding: text, as: UTF8.self) == Data(bytes).base64EncodedString())
      #expect(text.count == Base64.encodedCount(count))
      #expect(Base64.decode(text) == bytes)
    }
    for bad in ["A", "AB", "ABC", "A===", "AB=C", "@@@@", "AB==CD==", "AAAA AAA", "====", "AAA-"] {
      #expect(Base64.decode(Array(bad.utf8)) == nil, "\(bad)")
    }
  }

  // MARK: - Media lines

  /// A user file with one local file of `size` bytes attached to a message.
  static func history(_ folder: HistoryFolder, size: Int) throws -> (db: Database, bytes: [UInt8], sha256: String) {
    let repository = try ChatRepository.open(user: 1, in: folder.path)
    try repository.upsert(User(id: 1, name: "Ada"))
    try repository.upsert(User(id: 2, name: "Bob"))
    let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
    let source = try folder.write("file.bin", bytes)
    let attachment = try repository.addMedia(copying: source, mime: "application/octet-stream")
    try repository.receive(
      Message(
        id: 9, fromUserID: 2, toUserID: 1, content: "big", createdAt: "2026-01-01T00:00:00.000Z",
        attachments: [attachment]))
    try repository.setStates([attachment.sha256], .local)
    return (try Database(path: repository.database.path), bytes, attachment.sha256)
  }

  /// Exports `db` as plain NDJSON with its media; the file's lines.
  static func export(_ db: Database, _ folder: HistoryFolder, name: String = "media.ndjson") throws -> [String] {
    let output = try OutputFile(path: folder.file(name))
    let trailer = try HistoryExporter.export(
      db, owner: 1, media: MediaFolder(database: db.path),
      to: PlainSink(fileDescriptor: output.fileDescriptor, name: output.path))
    try output.commit()
    #expect(trailer.media == 1)
    return try String(contentsOfFile: output.path, encoding: .utf8).split(separator: "\n").map(String.init)
  }

  @Test func aFileTravelsInPiecesOfAtMost1MiBAndComesBackWhole() throws {
    let folder = try HistoryFolder()
    let size = (5 << 19) + 1  // 2.5 MiB and a byte: three pieces
    let (db, bytes, sha256) = try Self.history(folder, size: size)
    let lines = try Self.export(db, folder)
    let media = lines.filter { $0.hasPrefix(#"{"type":"media""#) }
    #expect(media.count == 3)
    for (index, line) in media.enumerated() {
      #expect(
        line.hasPrefix(#"{"type":"media","sha256":"\#(sha256)","size":\#(size),"offset":\#(index << 20),"data":""#))
      #expect(line.utf8.count < Base64.encodedCount(MediaPiece.maximumBytes) + 200)
    }
    #expect(lines.last == #"{"type":"trailer","users":2,"messages":1,"requests":0,"media":1,"mediaBytes":\#(size)}"#)
    let verified = try ExportVerifier.verify(path: folder.file("media.ndjson"))
    #expect(verified.mediaFiles == 1 && verified.mediaBytes == Int64(size) && verified.records == 3)

    let target = try HistoryFolder()
    let into = try target.database()
    let summary = try target.importFile(folder.file("media.ndjson"), into: into)
    #expect(summary.mediaFiles == 1 && summary.mediaBytes == Int64(size) && summary.attachments == 1)
    let copied = MediaFolder(database: into.path).file(sha256)
    #expect(try Array(Data(contentsOf: URL(fileURLWithPath: copied))) == bytes)
    #expect(try into.string("SELECT state FROM Media") == "local")
    // Again: the file is there, nothing is written.
    let again = try target.importFile(folder.file("media.ndjson"), into: into)
    #expect(again.mediaFiles == 0 && again.attachments == 0 && again.messages == 0)
  }

  /// A stream whose media lines are damaged, each way the import and the verifier refuse.
  @Test(arguments: [
    ("the last piece left out", "drop", ": media "),
    ("out of order", "swap", ":6: field 'offset': 2097152, but media "),
    ("a trailer that counts another file", "trailer", ": the trailer counts 2 media files"),
    ("a byte changed", "flip", ":7: field 'data': the file's bytes hash to "),
  ])
  func aDamagedMediaStreamIsRefused(name: String, damage: String, expected: String) throws {
    let folder = try HistoryFolder()
    let (db, _, _) = try Self.history(folder, size: (5 << 19) + 1)
    var lines = try Self.export(db, folder)
    // Lines 1 to 4 the header, users and message; 5, 6 and 7 the pieces; 8 the trailer.
    switch damage {
    case "drop": lines.remove(at: 6)
    case "swap": lines.swapAt(5, 6)
    case "trailer": lines[7] = lines[7].replacingOccurrences(of: #""media":1"#, with: #""media":2"#)
    default:
      // The second piece's first byte, still valid base64: found when the last arrives.
      let start = try #require(lines[5].range(of: #""data":""#)).upperBound
      let text = Array(lines[5][start...].dropLast(2).utf8)
      var data = try #require(Base64.decode(text))
      data[0] ^= 0xFF
      var encoded: [UInt8] = []
      data.withUnsafeBytes { Base64.encode($0, into: &encoded) }
      lines[5] = lines[5][..<start] + String(decoding: encoded, as: UTF8.self) + #""}"#
    }
    let path = try folder.write("bad.ndjson", lines: lines)
    let verified = #expect(throws: StoreError.self, "\(name)") { try ExportVerifier.verify(path: path) }
    #expect(verified?.message.hasPrefix(path + expected) == true, "\(name): \(verified?.message ?? "")")

    let target = try HistoryFolder()
    let into = try target.database()
    do {
      try target.importFile(path, into: into)
      Issue.record("\(name): imported")
    } catch let error as ImportError {
      #expect(error.message.hasPrefix(path + expected), "\(name): \(error.message)")
    }
    // No `.incoming-*` left, no file without its row: only a file whose row committed
    // before the trailer was found wrong (read straight, without `ExportVerifier`).
    let states = Dictionary(
      uniqueKeysWithValues: try into.query("SELECT sha256, state FROM Media") { ($0.string(0), $0.string(1)) })
    let names = try MediaFolder(database: into.path).names()
    #expect(names.allSatisfy { states[$0] == "local" }, "\(name): \(names)")
    #expect(names.count == (damage == "trailer" ? 1 : 0), "\(name): \(names)")
  }

  /// A media line no record names is not written (it would be a stray).
  @Test func aFileNoRecordNamesIsNotWritten() throws {
    let folder = try HistoryFolder()
    let (db, _, _) = try Self.history(folder, size: 1000)
    var lines = try Self.export(db, folder)
    lines.removeAll { $0.hasPrefix(#"{"type":"message""#) }
    lines[lines.count - 1] = lines[lines.count - 1].replacingOccurrences(of: #""messages":1"#, with: #""messages":0"#)
    let path = try folder.write("orphan.ndjson", lines: lines)
    let target = try HistoryFolder()
    let into = try target.database()
    let summary = try target.importFile(path, into: into)
    #expect(summary.mediaFiles == 0)
    #expect(try MediaFolder(database: into.path).names().isEmpty)
  }

  /// Items that hold much are handed over in smaller blocks: the producer runs at most a
  /// few blocks of 4 MiB ahead, not `maxBlocks` blocks of 2,048 items.
  @Test func aPipelineOfHeavyItemsStaysSmall() throws {
    let made = Atomic<Int>(0)
    var ahead = 0
    var consumed = 0
    try Pipeline<Int>.run(
      { emit in
        for i in 0..<200 {
          made.add(1, ordering: .relaxed)
          try emit(i)
        }
      },
      weight: { _ in 1 << 20 },
      into: { _ in
        consumed += 1
        ahead = max(ahead, made.load(ordering: .relaxed) - consumed)
      })
    #expect(consumed == 200)
    #expect(ahead <= (Pipeline<Int>.maxBlocks + 3) * 4, "\(ahead) items of 1 MiB ahead")
  }
}
