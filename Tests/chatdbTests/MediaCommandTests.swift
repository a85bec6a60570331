import ChatCLI
import ChatStore
import Foundation
import TestSupport
import Testing

/// Issue 30: `chatdb usage`, `evict --media-*`, `check` and `vacuum` on a file with media,
/// run as a user runs them. The fixture: user 1 with contact 2; four messages with media
/// (a photo and a video here, a document only on the relay, the photo again in a newer
/// message), one queued request with its own file, and the files in `chats-1.media/`.
@Suite(.ownThreads) struct MediaCommandTests {
  struct Fixture {
    let folder: TemporaryFolder
    let db: String
    let media: MediaFolder
    /// photo, video, document, outbox file.
    let hashes: [String]
    let messages: [Int64]
  }

  static func fixture() throws -> Fixture {
    let folder = try TemporaryFolder()
    let repository = try ChatRepository.open(user: 1, in: folder.path)
    try repository.upsert(User(id: 1, name: "Ada"))
    try repository.upsert(User(id: 2, name: "Bob"))
    let media = repository.mediaFolder
    var hashes: [String] = []
    for (name, size) in [("photo.jpg", 300_000), ("video.mp4", 2_000_000), ("doc.pdf", 50_000), ("out.png", 70_000)] {
      let path = folder.file(name)
      var bytes = [UInt8](repeating: 0, count: size)
      for i in stride(from: 0, to: size, by: 997) { bytes[i] = UInt8(truncatingIfNeeded: i / 997 + name.count) }
      try Data(bytes).write(to: URL(fileURLWithPath: path))
      hashes.append(try repository.addMedia(copying: path).sha256)
    }
    media.remove(hashes[2])  // the document is only on the relay
    func attachment(_ index: Int, _ mime: String, _ size: Int64) -> ChatStore.Attachment {
      ChatStore.Attachment(
        sha256: hashes[index], mime: mime, size: size, relayID: Int64(index + 1), thumbnail: [0xFF, 0xD8])
    }
    let messages: [Int64] = [
      MessageID.make(milliseconds: 1_700_000_000_000), MessageID.make(milliseconds: 1_710_000_000_000),
      MessageID.make(milliseconds: 1_720_000_000_000), MessageID.make(milliseconds: 1_760_000_000_000),
    ]
    try repository.receive([
      Message(
        id: messages[0], fromUserID: 2, toUserID: 1, content: "",
        createdAt: Timestamp.string(milliseconds: 1_700_000_000_000),
        attachments: [attachment(0, "image/jpeg", 300_000)]),
      Message(
        id: messages[1], fromUserID: 1, toUserID: 2, content: "the clip",
        createdAt: Timestamp.string(milliseconds: 1_710_000_000_000),
        attachments: [attachment(1, "video/mp4", 2_000_000)]),
      Message(
        id: messages[2], fromUserID: 2, toUserID: 1, content: "doc",
        createdAt: Timestamp.string(milliseconds: 1_720_000_000_000),
        attachments: [attachment(2, "application/pdf", 50_000)]),
      Message(
        id: messages[3], fromUserID: 2, toUserID: 1, content: "again",
        createdAt: Timestamp.string(milliseconds: 1_760_000_000_000),
        attachments: [attachment(0, "image/jpeg", 300_000)]),
    ])
    // Files here are local (as after a download); the document stays remote.
    try repository.setStates([hashes[0], hashes[1]], .local)
    let out = try repository.addMedia(copying: folder.file("out.png"))
    _ = try repository.send(to: 2, content: "", attachments: [out])
    return Fixture(folder: folder, db: repository.database.path, media: media, hashes: hashes, messages: messages)
  }

  static func state(_ f: Fixture, _ index: Int) throws -> String? {
    try Database(path: f.db, mode: .readOnly).string("SELECT state FROM Media WHERE sha256 = ?", [f.hashes[index]])
  }

  @Test func usageShowsMediaByKindConversationAndSize() throws {
    let f = try Self.fixture()
    let run = try chatdb("usage", "--db", f.db, "--json", "--warn-below", "0%", "--critical-below", "0%")
    #expect(run.status == 0, "\(run.stderr)")
    let media = try #require(try fileResult(run)["media"] as? [String: Any])
    #expect(media["localFiles"] as? Int == 3 && media["localBytes"] as? Int == 2_370_000)
    #expect(media["outboxFiles"] as? Int == 1 && media["outboxBytes"] as? Int == 70_000)
    #expect(media["folderBytes"] as? Int == 2_370_000)
    let kinds = try #require(media["kinds"] as? [[String: Any]])
    let file = try #require(kinds.first { $0["kind"] as? String == "file" })
    #expect(file["elsewhere"] as? Int == 1 && file["elsewhereBytes"] as? Int == 50_000)
    let largest = try #require(media["largest"] as? [[String: Any]])
    #expect(largest.first?["sha256"] as? String == f.hashes[1])
    let conversations = try #require(media["conversations"] as? [[String: Any]])
    #expect(conversations.first?["id"] as? Int == 2 && conversations.first?["bytes"] as? Int == 2_300_000)
    let text = try chatdb("usage", "--db", f.db, "--warn-below", "0%", "--critical-below", "0%")
    #expect(text.stdout.contains("Media:") && text.stdout.contains("Largest media files:"), "\(text.stdout)")
  }

  /// The least recently accessed file goes first, the outbox's never; the dry run names
  /// what the run then removes; messages and thumbnails stay.
  @Test func evictMediaMaxSizeRemovesTheLeastRecentlyAccessedFirst() throws {
    let f = try Self.fixture()
    let dry = try chatdb("evict", "--db", f.db, "--media-max-size", "1MiB", "--dry-run", "--json")
    #expect(dry.status == 0, "\(dry.stderr)")
    let plan = try #require(try fileResult(dry)["media"] as? [String: Any])
    // Photo (accessed first) then video: the photo alone leaves 2.07 MB over 1 MiB.
    #expect(plan["evictFiles"] as? Int == 2 && plan["evictBytes"] as? Int == 2_300_000, "\(plan)")
    #expect(try Self.state(f, 0) == "local", "a dry run changes nothing")
    let run = try chatdb("evict", "--db", f.db, "--media-max-size", "1MiB", "--json")
    #expect(run.status == 0, "\(run.stderr)")
    let result = try fileResult(run)
    #expect(result["evictedMedia"] as? Int == 2 && result["evictedMediaBytes"] as? Int == 2_300_000)
    #expect(try Self.state(f, 0) == "evicted" && Self.state(f, 1) == "evicted")
    #expect(!FileSystem.exists(f.media.file(f.hashes[0])) && FileSystem.exists(f.media.file(f.hashes[3])))
    let db = try Database(path: f.db, mode: .readOnly)
    #expect(try db.int64("SELECT count(*) FROM Messages") == 4)
    #expect(try db.int64("SELECT count(*) FROM Attachments WHERE thumbnail IS NOT NULL") == 4)
    let check = try chatdb("check", "--db", f.db, "--full")
    #expect(check.status == 0, "\(check.stdout)")
  }

  @Test func evictMediaLargerThanAndOlderThan() throws {
    let f = try Self.fixture()
    let larger = try chatdb("evict", "--db", f.db, "--media-larger-than", "1MB", "--json")
    #expect(try fileResult(larger)["evictedMedia"] as? Int == 1)
    #expect(try Self.state(f, 1) == "evicted" && Self.state(f, 0) == "local")
    // Accessed "now" when the fixture was made: nothing is a year old.
    let old = try chatdb("evict", "--db", f.db, "--media-older-than", "1y", "--json")
    #expect(try fileResult(old)["evictedMedia"] as? Int == 0)
    let later = try chatdb("evict", "--db", f.db, "--media-older-than", "1d", "--now", "2099-01-01", "--json")
    #expect(try fileResult(later)["evictedMedia"] as? Int == 1, "the photo; the outbox's file stays")
    #expect(FileSystem.exists(f.media.file(f.hashes[3])))
  }

  /// Deleting messages deletes the media no other message keeps: the video (its only
  /// message is old), not the photo (a newer message has it too).
  @Test func evictingMessagesSweepsOnlyTheMediaNoKeptMessageHas() throws {
    let f = try Self.fixture()
    let dry = try chatdb("evict", "--db", f.db, "--older-than", "1y", "--now", "2025-08-01", "--dry-run", "--json")
    let plan = try #require(try fileResult(dry)["media"] as? [String: Any])
    #expect(plan["sweepFiles"] as? Int == 2, "the video and the document: \(plan)")
    let run = try chatdb("evict", "--db", f.db, "--older-than", "1y", "--now", "2025-08-01", "--json")
    #expect(run.status == 0, "\(run.stderr)")
    #expect(try fileResult(run)["sweptMedia"] as? Int == 2)
    #expect(try Self.state(f, 1) == nil && Self.state(f, 2) == nil && Self.state(f, 0) == "local")
    #expect(!FileSystem.exists(f.media.file(f.hashes[1])) && FileSystem.exists(f.media.file(f.hashes[0])))
    #expect(try chatdb("check", "--db", f.db).status == 0)
    // --media-only keeps the messages and removes their media's files instead.
    let only = try chatdb("evict", "--db", f.db, "--older-than", "1d", "--media-only", "--json")
    #expect(only.status == 0, "\(only.stderr)")
    #expect(try fileResult(only)["deletedMessages"] as? Int == 0 && fileResult(only)["evictedMedia"] as? Int == 1)
    #expect(try Self.state(f, 0) == "evicted")
    let refused = try chatdb("evict", "--db", f.db, "--media-only", "--max-size", "1MiB")
    #expect(refused.status == 64 && refused.stderr.contains("--media-only"), "\(refused.stderr)")
  }

  /// A kill between a row's change and its file's leaves strays; a file changed on disk
  /// is found by `--full`; a partial download is named. `vacuum` tidies what nothing keeps.
  @Test func checkFindsWhatIsWrongInTheMediaFolderAndVacuumTidiesIt() throws {
    let f = try Self.fixture()
    try Data("stray".utf8).write(to: URL(fileURLWithPath: f.media.file(String(repeating: "e", count: 64))))
    try Data("half".utf8).write(to: URL(fileURLWithPath: f.media.path + "/.incoming-1-2"))
    var video = try Data(contentsOf: URL(fileURLWithPath: f.media.file(f.hashes[1])))
    video[0] ^= 0xFF
    try video.write(to: URL(fileURLWithPath: f.media.file(f.hashes[1])))
    let raw = try Database(path: f.db)
    try raw.execute("UPDATE Media SET state = 'partial' WHERE sha256 = ?", [f.hashes[2]])
    try raw.execute(
      "INSERT INTO Media (sha256, size, mime, state, created_at, last_accessed_at) VALUES (?, 1, 'x/y', 'remote', '', '')",
      [String(repeating: "d", count: 64)])
    try Data(video.prefix(10)).write(to: URL(fileURLWithPath: f.media.partial(f.hashes[2])))
    let quick = try chatdb("check", "--db", f.db, "--json")
    #expect(quick.status == 4, "\(quick.stdout)")
    #expect(!quick.stdout.contains("media-bad-hash"))
    let full = try chatdb("check", "--db", f.db, "--full")
    for name in ["media-bad-hash", "media-partial", "media-stray-file", "media-unreferenced"] {
      #expect(full.stdout.contains(name), "\(name): \(full.stdout)")
    }
    let vacuum = try chatdb("vacuum", "--db", f.db, "--json")
    #expect(vacuum.status == 0, "\(vacuum.stderr)")
    // The stray file and the unreferenced row; the young `.incoming-*` copy is left.
    #expect(try fileResult(vacuum)["mediaRemoved"] as? Int == 2, "\(vacuum.stdout)")
    let after = try chatdb("check", "--db", f.db)
    #expect(!after.stdout.contains("media-stray-file") && !after.stdout.contains("media-unreferenced"))
    #expect(FileSystem.exists(f.media.partial(f.hashes[2])), "a partial download is kept for its resume")
  }

  /// The storage policy lives in the file; `set` changes only the parts given, `off`
  /// removes one, bad values are usage errors that change nothing.
  @Test func policySetAndShow() throws {
    let f = try Self.fixture()
    #expect(try fileResult(try chatdb("policy", "show", "--db", f.db, "--json"))["keepMedia"] is NSNull)
    let set = try chatdb("policy", "set", "--db", f.db, "--keep-media", "90d", "--media-cache-max", "2GiB", "--json")
    #expect(set.status == 0, "\(set.stderr)")
    let again = try chatdb("policy", "set", "--db", f.db, "--keep-messages", "1y", "--keep-media", "off", "--json")
    let result = try fileResult(again)
    #expect(result["keepMedia"] is NSNull && result["mediaCacheMax"] as? Int == 2 << 30)
    #expect(result["keepMessages"] as? String == "1y" && result["keepMessagesMilliseconds"] as? Int == 31_536_000_000)
    for bad in [["--keep-media", "5x"], ["--media-cache-max", "lots"], []] {
      let refused = try chatdb(["policy", "set", "--db", f.db] + bad)
      #expect(refused.status == 64 && refused.stderr.hasPrefix("Error: "), "\(bad): \(refused.stderr)")
    }
    let shown = try chatdb("policy", "show", "--db", f.db)
    #expect(shown.stdout.contains("keep messages:  1y") && shown.stdout.contains("media cache:    2.0 GiB"))
  }

  /// A delete for everyone drops the message's attachments, and the file once no other
  /// message has it.
  @Test func deleteForEveryoneTakesTheMediaWithIt() throws {
    let f = try Self.fixture()
    let repository = try ChatRepository.open(user: 1, in: f.folder.path)
    try repository.applyDelete(of: f.messages[1], deletedAt: "2026-01-01T00:00:00.000Z")
    try repository.eraseResidue()
    #expect(try repository.attachments(ofMessage: f.messages[1]).isEmpty)
    #expect(!FileSystem.exists(f.media.file(f.hashes[1])))
    try repository.applyDelete(of: f.messages[0], deletedAt: "2026-01-01T00:00:00.000Z")
    try repository.eraseResidue()
    #expect(FileSystem.exists(f.media.file(f.hashes[0])), "message 4 still has the photo")
    #expect(try chatdb("check", "--db", f.db, "--full").status == 0)
  }
}
