import ChatStore
import Foundation
import TestSupport
import Testing

/// `chatdb search` and the search index in `migrate`, `check`, `index`, `usage` and
/// `evict`, through the built binary: stdout, stderr and exit codes together.
@Suite(.ownThreads) struct SearchCommands {
  /// Our two messages: after the generated history (which ends 2026-01-01), so the newest.
  static let first = MessageID.make(milliseconds: Timestamp.milliseconds(from: "2026-06-01T00:00:00.000Z")!)
  static let second = MessageID.make(milliseconds: Timestamp.milliseconds(from: "2026-06-01T00:00:01.000Z")!)

  /// A generated `chats-1.db` with a few messages of our own on top.
  static func generated() throws -> (TemporaryFolder, String) {
    let (folder, path) = try HealthCommands.generated()
    let chats = try ChatRepository(database: Database(path: path), ownerID: 1)
    let contact = try #require(try chats.database.int64("SELECT min(id) FROM Users WHERE id <> 1"))
    try chats.receive([
      Message(
        id: Self.first, fromUserID: contact, toUserID: 1, content: "zyzzyva at the café 你好世界",
        createdAt: "2026-06-01T00:00:00.000Z"),
      Message(
        id: Self.second, fromUserID: 1, toUserID: contact, content: "another zyzzyva AND( NEAR \"x",
        createdAt: "2026-06-01T00:00:01.000Z"),
    ])
    try chats.send(to: contact, content: "unsent zyzzyva")
    return (folder, path)
  }

  @Test func searchFindsWordsAccentsCJKAndSyntaxAsText() throws {
    let (folder, path) = try Self.generated()
    defer { withExtendedLifetime(folder) {} }
    var run = try chatdb("search", "--db", path, "zyzzyva", "--json")
    #expect(run.status == 0, "\(run.stderr)")
    var hits = try #require(try fileResult(run)["hits"] as? [[String: Any]])
    #expect(hits.map { $0["kind"] as? String } == ["request", "message", "message"])
    #expect(hits.map { $0["messageId"] as? Int64 }.compactMap { $0 } == [Self.second, Self.first])
    #expect((hits[1]["snippet"] as? String)?.contains("«zyzzyva»") == true)

    for (query, id) in [
      ("cafe", Self.first), ("世界", Self.first), ("AND(", Self.second), ("\"x", Self.second), ("NEAR", Self.second),
    ] {
      run = try chatdb("search", "--db", path, query, "--json")
      #expect(run.status == 0, "\(query): \(run.stderr)")
      hits = try #require(try fileResult(run)["hits"] as? [[String: Any]])
      #expect(hits.contains { $0["messageId"] as? Int64 == id }, "\(query)")
    }

    // Pages: --limit 1, then --before with the cursor the page printed.
    run = try chatdb("search", "--db", path, "zyzzyva", "--limit", "1", "--json")
    let older = try #require(try fileResult(run)["older"] as? String)
    run = try chatdb("search", "--db", path, "zyzzyva", "--limit", "2", "--before", older)
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("«zyzzyva» at the café"))
    #expect(!run.stdout.contains("unsent"))
    run = try chatdb("search", "--db", path, "zyzzyva", "--before", String(Self.second))
    #expect(run.stdout.split(separator: "\n").count == 1)

    run = try chatdb("search", "--db", path, "no-such-word-anywhere")
    #expect(run.status == 0)
    #expect(run.stdout.contains("No messages match"))
  }

  @Test func usageErrorsAndOlderFiles() throws {
    let (folder, path) = try Self.generated()
    var run = try chatdb("search", "--db", path)
    #expect(run.status == 64)
    #expect(run.stderr.contains("Usage: chatdb search"))
    run = try chatdb("search", "--db", path, "x", "--before", "yesterday")
    #expect(run.status == 64)
    run = try chatdb("search", "--db", path, "x", "--limit", "0")
    #expect(run.status == 64)
    for blank in ["", "   "] {
      run = try chatdb("search", "--db", path, blank)
      #expect(run.status == 64)
      #expect(run.stderr.hasPrefix("Error: '<text>' is empty"), "\(run.stderr)")
    }
    run = try chatdb("search", "--help")
    #expect(run.status == 0)
    #expect(run.stdout.contains("OVERVIEW:") && run.stdout.contains("--with <id>"))

    let old = folder.file("chats-7.db")
    try makeDatabase(at: 4, path: old, owner: 7)
    run = try chatdb("search", "--db", old, "message")
    #expect(run.status == 15, "\(run.stderr)")
    #expect(run.stderr.contains("chatdb migrate"))
    // migrate builds the index of an older file; then the search finds its rows.
    run = try chatdb("migrate", "--db", old, "--json")
    #expect(run.status == 0, "\(run.stderr)")
    run = try chatdb("search", "--db", old, "message", "--json")
    #expect(try #require(try fileResult(run)["hits"] as? [[String: Any]]).count == 5)
    // (The fixture's ids are not times: check warns about that, and only that.)
    run = try chatdb("check", "--db", old)
    #expect(run.stdout.contains("message-id-time") && !run.stdout.contains("search-index"), "\(run.stdout)")
  }

  @Test func indexCheckUsageAndEvictCoverTheSearchIndex() throws {
    let (folder, path) = try Self.generated()
    defer { withExtendedLifetime(folder) {} }
    var run = try chatdb("index", "list", "--db", path)
    #expect(
      run.stdout.contains("MessageSearch ") && run.stdout.contains("MessageSearchCJK")
        && run.stdout.contains("RequestSearch"))
    run = try chatdb("usage", "--db", path, "--json")
    let before = try #require(try fileResult(run)["searchIndexBytes"] as? Int64)
    #expect(before > 0)

    // A writer with triggers off leaves the index behind: check and verify say so, apply rebuilds it.
    let db = try Database(path: path)
    try db.setTriggersEnabled(false)
    try db.execute("UPDATE Messages SET content = 'changed behind the index' WHERE id = ?", [Self.first])
    #expect(try chatdb("check", "--db", path).status == 0, "FTS5's own integrity-check cannot see it")
    run = try chatdb("check", "--db", path, "--full")
    #expect(run.status == 4)
    #expect(run.stdout.contains("search-index"))
    run = try chatdb("index", "verify", "--db", path, "--full")
    #expect(run.status == 4)
    #expect(run.stdout.contains("STALE\tsearch index"))
    run = try chatdb("index", "apply", "--db", path)
    #expect(!run.stdout.contains("rebuild the search index"), "only when asked, or when integrity-check fails")
    run = try chatdb("index", "apply", "--db", path, "--rebuild-search")
    #expect(run.status == 0, "\(run.stderr)")
    #expect(run.stdout.contains("rebuild the search index"))
    #expect(try chatdb("index", "verify", "--db", path, "--full").status == 0)
    #expect(try chatdb("check", "--db", path, "--full").status == 0)

    // Evicting most of the history gives the index's pages back.
    run = try chatdb("evict", "--db", path, "--older-than", "1d", "--now", "2026-06-01T00:00:00Z")
    #expect(run.status == 0, "\(run.stderr)")
    run = try chatdb("usage", "--db", path, "--json")
    let after = try #require(try fileResult(run)["searchIndexBytes"] as? Int64)
    #expect(after < before / 2, "\(before) -> \(after)")
    #expect(try chatdb("check", "--db", path, "--full").status == 0)
  }

  @Test func killedImportLeavesTheIndexEqualToItsRows() throws {
    let folder = try TemporaryFolder()
    let history = folder.file("h.ndjson")
    var run = try chatdb(
      "generate", "--user", "1", "--contacts", "50", "--messages", "150000", "--seed", "5", "--format", "ndjson", "-o",
      history)
    #expect(run.status == 0, "\(run.stderr)")
    let path = folder.file("chats-1.db")
    let process = Process()
    process.executableURL = binaryDirectory.appendingPathComponent("chatdb")
    process.arguments = ["import", "--db", path, "--batch-size", "2000", history]
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    // Kill it once some batches are committed, in the middle of the rest.
    let deadline = Date().addingTimeInterval(60)
    var committed: Int64 = 0
    while process.isRunning && Date() < deadline && committed < 10_000 {
      Thread.sleep(forTimeInterval: 0.05)
      committed = (try? Database(path: path, mode: .readOnly).int64("SELECT count(*) FROM Messages")) ?? 0
    }
    let killedMidway = process.isRunning
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    #expect(killedMidway, "the import finished before it could be killed")
    run = try chatdb("check", "--db", path, "--full")
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    run = try chatdb("index", "verify", "--db", path, "--full")
    #expect(run.status == 0, "\(run.stdout)\(run.stderr)")
    // Importing again finishes the job, and the index still equals its rows.
    run = try chatdb("import", "--db", path, history)
    #expect(run.status == 0, "\(run.stderr)")
    #expect(try chatdb("check", "--db", path, "--full").status == 0)
  }
}
