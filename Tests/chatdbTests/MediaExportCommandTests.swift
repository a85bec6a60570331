import ChatStore
import Foundation
import TestSupport
import Testing

/// History format 3 (issue 30) through the binary: `chatdb export` carries each message's
/// and request's attachments, `--with-media` the files that are here; `chatdb import`
/// brings both back, twice without a change, and refuses a damaged media line before
/// anything is written. The fixture: user 1 with contact 2; a photo (local), a 2.5 MB
/// video (local, three `media` lines), a document only on the relay, an empty file
/// (local), and one queued request with its own file.
@Suite(.ownThreads) struct MediaExportCommandTests {
  struct Fixture {
    let folder: TemporaryFolder
    let db: String
    let media: MediaFolder
    /// photo, video, document, empty, outbox file.
    let hashes: [String]
  }

  static func fixture() throws -> Fixture {
    let folder = try TemporaryFolder()
    let repository = try ChatRepository.open(user: 1, in: folder.path)
    try repository.upsert(User(id: 1, name: "Ada"))
    try repository.upsert(User(id: 2, name: "Bob"))
    var hashes: [String] = []
    let files = [("photo.jpg", 300_000), ("video.mp4", 2_500_000), ("doc.pdf", 50_000), ("empty.txt", 0)]
    for (name, size) in files + [("out.png", 70_000)] {
      var bytes = [UInt8](repeating: 0, count: size)
      for i in stride(from: 0, to: size, by: 7) { bytes[i] = UInt8(truncatingIfNeeded: i / 7 + name.count) }
      try Data(bytes).write(to: URL(fileURLWithPath: folder.file(name)))
      hashes.append(try repository.addMedia(copying: folder.file(name)).sha256)
    }
    repository.mediaFolder.remove(hashes[2])  // the document is only on the relay
    let thumbnail = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 * 31) }
    let at: Int64 = 1_760_000_000_000
    try repository.receive([
      Message(
        id: MessageID.make(milliseconds: at), fromUserID: 2, toUserID: 1, content: "",
        createdAt: Timestamp.string(milliseconds: at),
        attachments: [
          ChatStore.Attachment(
            sha256: hashes[0], mime: "image/jpeg", size: 300_000, relayID: 11, width: 4000, height: 3000,
            thumbnail: thumbnail),
          ChatStore.Attachment(sha256: hashes[3], mime: "text/plain", size: 0, relayID: 14),
        ]),
      Message(
        id: MessageID.make(milliseconds: at + 1000), fromUserID: 1, toUserID: 2, content: "the clip",
        createdAt: Timestamp.string(milliseconds: at + 1000),
        attachments: [
          ChatStore.Attachment(
            sha256: hashes[1], mime: "video/mp4", size: 2_500_000, relayID: 12, width: 1920, height: 1080,
            durationMs: 61_500, thumbnail: [0xFF, 0xD8, 0xFF])
        ]),
      Message(
        id: MessageID.make(milliseconds: at + 2000), fromUserID: 2, toUserID: 1, content: "doc",
        createdAt: Timestamp.string(milliseconds: at + 2000),
        attachments: [ChatStore.Attachment(sha256: hashes[2], mime: "application/pdf", size: 50_000, relayID: 13)]),
    ])
    try repository.setStates([hashes[0], hashes[1], hashes[3]], .local)
    let out = try repository.addMedia(copying: folder.file("out.png"), mime: "image/png")
    _ = try repository.send(to: 2, content: "with a file", attachments: [out])
    return Fixture(
      folder: folder, db: repository.database.path, media: repository.mediaFolder, hashes: hashes)
  }

  /// Every attachment of a file as text, in order: what an export and import must keep.
  static func attachments(_ path: String) throws -> [String] {
    let db = try Database(path: path, mode: .readOnly)
    return try db.query(
      """
      SELECT 'm', a.message_id, a.position, m.sha256, m.mime, m.size, m.relay_id, m.width, m.height, m.duration_ms,
        hex(a.thumbnail)
      FROM Attachments a JOIN Media m ON m.id = a.media_id
      UNION ALL
      SELECT 'r', a.request_id, a.position, m.sha256, m.mime, m.size, m.relay_id, m.width, m.height, m.duration_ms,
        hex(a.thumbnail)
      FROM RequestAttachments a JOIN Media m ON m.id = a.media_id
      ORDER BY 1, 2, 3
      """
    ) { $0.values.map(\.description).joined(separator: "|") }
  }

  /// Each media's state by SHA-256.
  static func states(_ path: String) throws -> [String: String] {
    let db = try Database(path: path, mode: .readOnly)
    return Dictionary(
      uniqueKeysWithValues: try db.query("SELECT sha256, state FROM Media") { ($0.string(0), $0.string(1)) })
  }

  /// Everything of a file an import may change, media rows included, as text.
  static func dump(_ path: String) throws -> [String] {
    let db = try Database(path: path, mode: .readOnly)
    var rows = try tableContents(path)
    for table in ["Media", "Attachments", "RequestAttachments"] {
      rows += try db.query("SELECT * FROM \(table) ORDER BY 1, 2") {
        $0.values.map(\.description).joined(separator: "|")
      }
    }
    return rows
  }

  static func text(_ path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
  }

  @Test func attachmentsRoundTripThenTheFilesWithMedia() throws {
    let f = try Self.fixture()
    // Without --with-media: the metadata only.
    let plain = f.folder.file("meta.ndjson")
    let exported = try chatdb("export", "--db", f.db, "-o", plain, "--json")
    #expect(exported.status == 0, "\(exported.stderr)")
    #expect(try fileResult(exported)["mediaFiles"] is NSNull, "no media without --with-media")
    let lines = try Self.text(plain)
    #expect(lines[0].contains(#""version":3"#))
    #expect(!lines.contains { $0.hasPrefix(#"{"type":"media""#) })
    #expect(!lines.last!.contains("media"), "\(lines.last!)")
    let clip = try #require(lines.first { $0.contains("the clip") })
    #expect(
      clip.hasSuffix(
        #""content":"the clip","attachments":[{"sha256":"\#(f.hashes[1])","mime":"video/mp4","size":2500000,"mediaId":12,"width":1920,"height":1080,"durationMs":61500,"thumbnail":"/9j/"}]}"#
      ), "\(clip)")
    #expect(lines.contains { $0.hasPrefix(#"{"type":"request""#) && $0.contains(f.hashes[4]) })

    let meta = f.folder.file("meta/chats-1.db")
    let imported = try chatdb("import", "--data-dir", f.folder.file("meta"), "--user", "1", plain, "--json")
    #expect(imported.status == 0, "\(imported.stderr)")
    #expect(try fileResult(imported)["attachments"] as? Int == 5)
    #expect(try Self.attachments(meta) == Self.attachments(f.db))
    #expect(Set(try Self.states(meta).values) == ["remote"], "no file is here")

    // With --with-media, zstd: the same records, then the local files.
    let zst = f.folder.file("all.ndjson.zst")
    let withMedia = try chatdb("export", "--db", f.db, "-o", zst, "--with-media", "--json")
    #expect(withMedia.status == 0, "\(withMedia.stderr)")
    let result = try fileResult(withMedia)
    #expect(result["mediaFiles"] as? Int == 4 && result["mediaBytes"] as? Int == 2_870_000, "\(result)")
    #expect(result["mediaSkipped"] as? Int == 0)
    if FileManager.default.isExecutableFile(atPath: "/usr/bin/zstd") {
      #expect(try run("/usr/bin/zstd", ["-tq", zst]).status == 0, "one valid zstd stream")
    }
    let full = f.folder.file("full/chats-1.db")
    let back = try chatdb("import", "--data-dir", f.folder.file("full"), "--user", "1", zst, "--json")
    #expect(back.status == 0, "\(back.stderr)")
    #expect(try fileResult(back)["mediaFiles"] as? Int == 4)
    #expect(try Self.attachments(full) == Self.attachments(f.db))
    let target = MediaFolder(database: full)
    for index in [0, 1, 3, 4] {
      #expect(
        FileManager.default.contentsEqual(atPath: target.file(f.hashes[index]), andPath: f.media.file(f.hashes[index])))
      #expect(FileSystem.permissions(atPath: target.file(f.hashes[index])) == 0o600)
    }
    #expect(FileSystem.permissions(atPath: target.path) == 0o700)
    #expect(try target.names().sorted() == [0, 1, 3, 4].map { f.hashes[$0] }.sorted(), "no .incoming-* left")
    #expect(try Self.states(full)[f.hashes[1]] == "local" && Self.states(full)[f.hashes[2]] == "remote")
    let check = try chatdb("check", "--full", "--db", full)
    #expect(check.status == 0, "\(check.stdout)")

    // The metadata into the file with the media: already local, nothing changes.
    let before = try Self.dump(full)
    #expect(try chatdb("import", "--db", full, plain).status == 0)
    #expect(try Self.dump(full) == before)
  }

  @Test func importingTwiceChangesNothing() throws {
    let f = try Self.fixture()
    let export = f.folder.file("all.ndjson")
    #expect(try chatdb("export", "--db", f.db, "-o", export, "--with-media").status == 0)
    let db = f.folder.file("again/chats-1.db")
    let first = try chatdb("import", "--data-dir", f.folder.file("again"), "--user", "1", export, "--json")
    #expect(first.status == 0, "\(first.stderr)")
    let before = try Self.dump(db)
    let media = MediaFolder(database: db)
    let modified = try media.names().sorted().map { FileSystem.modifiedAt(media.file($0)) }
    // Into the existing file (checked whole first), then from standard input.
    let second = try chatdb("import", "--db", db, export, "--json")
    #expect(second.status == 0, "\(second.stderr)")
    let result = try fileResult(second)
    #expect(result["messages"] as? Int == 0 && result["attachments"] as? Int == 0 && result["mediaFiles"] as? Int == 0)
    let piped = try run("/bin/sh", ["-c", "\"$0\" import --db \"$1\" - < \"$2\"", binaryPath, db, export])
    #expect(piped.status == 0, "\(piped.stderr)")
    #expect(try Self.dump(db) == before)
    #expect(
      try media.names().sorted().map { FileSystem.modifiedAt(media.file($0)) } == modified, "no file written again")
  }

  /// A media line whose bytes do not hash to its name: refused naming the line, into an
  /// existing file and into a new one, and nothing is written.
  @Test func aMediaLineWithWrongDataIsRefusedNamingTheLine() throws {
    let f = try Self.fixture()
    let export = f.folder.file("all.ndjson")
    #expect(try chatdb("export", "--db", f.db, "-o", export, "--with-media").status == 0)
    var lines = try Self.text(export)
    // The photo's one line: its first base64 digits changed, still valid base64.
    let index = try #require(lines.firstIndex { $0.hasPrefix(#"{"type":"media","sha256":"\#(f.hashes[0])""#) })
    lines[index] = lines[index].replacingOccurrences(of: #""data":""#, with: #""data":"AAAA"#)
    lines[index] = String(lines[index].dropLast(6)) + #""}"#
    let bad = f.folder.file("bad.ndjson")
    try (lines.joined(separator: "\n") + "\n").write(toFile: bad, atomically: true, encoding: .utf8)
    let expected = "\(bad):\(index + 1): field 'data': the file's bytes hash to "

    // A new file: no database, no media folder left.
    let fresh = try chatdb("import", "--data-dir", f.folder.file("new"), "--user", "1", bad)
    #expect(fresh.status != 0 && fresh.stderr.contains(expected), "\(fresh.stderr)")
    #expect(!FileSystem.exists(f.folder.file("new/chats-1.db")))
    #expect(try MediaFolder(database: f.folder.file("new/chats-1.db")).names().isEmpty)

    // An existing file: refused by the whole-file check before anything changes.
    let db = f.folder.file("old/chats-1.db")
    let meta = f.folder.file("meta.ndjson")
    #expect(try chatdb("export", "--db", f.db, "-o", meta).status == 0)
    #expect(try chatdb("import", "--data-dir", f.folder.file("old"), "--user", "1", meta).status == 0)
    let before = try Self.dump(db)
    let existing = try chatdb("import", "--db", db, bad)
    #expect(existing.status != 0 && existing.stderr.contains(expected), "\(existing.stderr)")
    #expect(try Self.dump(db) == before)
    #expect(try MediaFolder(database: db).names().isEmpty)

    // Standard input, read once: stopped at the same line; the files before it stay
    // with their rows, the bad one and the ones after it are not there.
    let piped = try run("/bin/sh", ["-c", "\"$0\" import --db \"$1\" - < \"$2\"", binaryPath, db, bad])
    #expect(piped.status != 0 && piped.stderr.contains("<stdin>:\(index + 1): field 'data'"), "\(piped.stderr)")
    let states = try Self.states(db)
    for name in try MediaFolder(database: db).names() { #expect(states[name] == "local", "\(name) without its row") }
    #expect(states[f.hashes[0]] == "remote")
    #expect(try chatdb("check", "--full", "--db", db).status == 0)
  }

  /// A version 2 file (no attachments, no media) reads as before.
  @Test func aVersion2FileStillImports() throws {
    let folder = try TemporaryFolder()
    let lines = [
      #"{"type":"header","format":"chatdb-history","version":2,"schemaVersion":8,"userId":1,"exportedAt":"2026-12-04T03:06:03.549Z","filters":{}}"#,
      #"{"type":"user","id":1,"name":"Ada","avatarUrl":null,"lastConnectedAt":null}"#,
      #"{"type":"user","id":2,"name":"Bob","avatarUrl":null,"lastConnectedAt":null}"#,
      #"{"type":"message","id":14320700845654016,"fromUserId":1,"toUserId":2,"status":"READ","createdAt":"2026-12-04T03:02:33.364Z","version":1,"editedAt":"2026-12-04T03:03:00.000Z","content":"Lunch at one?"}"#,
      #"{"type":"edit","messageId":14320700845654016,"version":0,"editedAt":"2026-12-04T03:02:33.364Z","content":"Lunch at noon?"}"#,
      #"{"type":"trailer","users":2,"messages":1,"requests":0,"edits":1}"#,
    ]
    let path = folder.file("v2.ndjson")
    try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
    let run = try chatdb("import", "--data-dir", folder.file("data"), "--user", "1", path, "--json")
    #expect(run.status == 0, "\(run.stderr)")
    let result = try fileResult(run)
    #expect(result["messages"] as? Int == 1 && result["edits"] as? Int == 1 && result["attachments"] as? Int == 0)
    let db = try Database(path: folder.file("data/chats-1.db"), mode: .readOnly)
    #expect(try db.string("SELECT content FROM Messages") == "Lunch at one?")
    #expect(try db.int64("SELECT count(*) FROM Media") == 0)
  }

  /// `chatdb` beside the tests, for a shell's redirection.
  var binaryPath: String { binaryDirectory.appendingPathComponent("chatdb").path }
}
