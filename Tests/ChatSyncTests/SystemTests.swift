import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatSync

/// One device of a user: a data folder (its file and outbox), a token, and `chat-sync`
/// against the relay.
final class Client {
  let id: Int64
  /// The device's name (for a user's first device made by `init(_:name:relay:folder:)`,
  /// the user's name).
  let name: String
  let folder: String
  let token: String
  let relay: RelayProcess
  private(set) var running: Background?
  private var runs = 0

  /// A new user (`user add`) and their first device, in `folder/user<id>`.
  init(_ id: Int64, name: String, relay: RelayProcess, folder: String) throws {
    self.id = id
    self.name = name
    self.relay = relay
    self.folder = folder + "/user\(id)"
    token = try relay.addUser(id, name)
    try FileManager.default.createDirectory(atPath: self.folder, withIntermediateDirectories: true)
  }

  /// A device of user `user` in `folder/user<id>-<device>`: the first one's `token`, or
  /// without it a new device (`device add`).
  init(user: Int64, device: String, token: String? = nil, relay: RelayProcess, folder: String) throws {
    id = user
    name = device
    self.relay = relay
    self.folder = folder + "/user\(user)-\(device)"
    self.token = try token ?? relay.addDevice(user: user, name: device).token
    try FileManager.default.createDirectory(atPath: self.folder, withIntermediateDirectories: true)
  }

  var db: String { folder + "/chats-\(id).db" }
  var environment: [String: String] { ["CHAT_SYNC_SERVER": relay.url, "CHAT_SYNC_TOKEN": token] }

  func cli(_ arguments: [String]) throws -> Output {
    try tool(
      "chat-sync", [arguments[0], "--data-dir", folder, "--user", String(id)] + arguments.dropFirst(),
      environment: environment)
  }

  func start(_ options: [String] = []) throws {
    runs += 1
    running = try Background(
      "chat-sync", ["run", "--data-dir", folder, "--user", String(id)] + options, log: folder + "/run-\(runs).log",
      environment: environment)
  }

  /// SIGTERM; the run must end cleanly (exit 0).
  func stop() throws {
    guard let running else { return }
    let status = running.stop()
    self.running = nil
    #expect(status == 0, "chat-sync run for user \(id) exited \(status): \(running.logText.suffix(2_000))")
  }

  /// `signal` (SIGKILL unless told), and the run's exit status (0 when none runs).
  @discardableResult
  func halt(_ signal: Int32 = SIGKILL) -> Int32 {
    guard let running else { return 0 }
    self.running = nil
    return running.stop(signal)
  }

  var log: String { running?.logText ?? "" }

  /// A read-only look at the file (a second connection, as a UI would have).
  func count(_ sql: String) throws -> Int64 {
    guard FileManager.default.fileExists(atPath: db) else { return 0 }
    let database = try Database(path: db, mode: .readOnly)
    // A starting chat-sync may still be migrating the file it just created.
    guard try database.int64("PRAGMA user_version") == Int64(Migration.shipped.count) else { return 0 }
    return try database.int64(sql) ?? 0
  }

  func messagesRequests() throws -> [Int64] {
    try Database(path: db, mode: .readOnly).query("SELECT request_id FROM MessageRequests ORDER BY request_id", []) {
      $0.int64(0)
    }
  }

  /// Every message of the file: id, sender, content, status, in id order.
  func allMessages() throws -> [(id: Int64, from: Int64, content: String, status: String)] {
    try Database(path: db, mode: .readOnly).query(
      "SELECT id, from_user_id, content, status FROM Messages ORDER BY id", []
    ) { ($0.int64(0), $0.int64(1), $0.string(2), $0.string(3)) }
  }

  func messages(_ filter: String) throws -> [(id: Int64, content: String, status: String)] {
    try Database(path: db, mode: .readOnly).query(
      "SELECT id, content, status FROM Messages WHERE \(filter) ORDER BY id", []
    ) {
      ($0.int64(0), $0.string(1), $0.string(2))
    }
  }
}

func chatdbCheck(_ db: String) throws {
  let out = try tool("chatdb", ["check", "--db", db])
  #expect(out.status == 0, "chatdb check \(db): \(out.stdout) \(out.stderr)")
}

@Suite(.serialized, .ownThreads) struct SystemTests {
  @Test func aThousandMessagesArriveExactlyOnceThroughEveryFault() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(
        folder: folder,
        faults: ["--faults", "drop-response=0.4,duplicate-event=0.1,close-socket=0.01", "--faults-seed", "11"])
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      // A knows B (a stand-in profile: they have not talked yet) and queues half before running.
      #expect(try a.cli(["send", "--to", "2", "m0000"]).status == 0)
      let outbox = try ChatRepository.open(user: 1, in: a.folder)
      for i in 1..<500 { try outbox.send(to: 2, content: String(format: "m%04d", i)) }
      try b.start()
      try a.start()
      defer {
        try? a.stop()
        try? b.stop()
      }
      // The other half while A runs, in bursts, each followed by a nudge.
      for burst in 0..<10 {
        for i in 0..<50 { try outbox.send(to: 2, content: String(format: "m%04d", 500 + burst * 50 + i)) }
        Nudge.send("outbox", to: a.db)
        try await Task.sleep(for: .milliseconds(100))
      }
      let fromA = "from_user_id = 1"
      #expect(try await waitUntil(120) { try b.count("SELECT count(*) FROM Messages WHERE \(fromA)") >= 300 })
      try relay.kill9AndRestart()
      #expect(try await waitUntil(120) { try b.count("SELECT count(*) FROM Messages WHERE \(fromA)") >= 600 })
      try relay.kill9AndRestart()
      let arrived = try await waitUntil(180) {
        try b.count("SELECT count(*) FROM Messages WHERE \(fromA)") == 1000
          && a.count("SELECT count(*) FROM MessageRequests") == 0
      }
      let onB = try b.count("SELECT count(*) FROM Messages")
      let left = try a.count("SELECT count(*) FROM MessageRequests")
      #expect(arrived, "B has \(onB) messages; A's outbox \(left)\n\(a.log.suffix(3_000))")
      // Every message delivered, then B reads the conversation.
      #expect(
        try await waitUntil(60) {
          try a.count("SELECT count(*) FROM Messages WHERE \(fromA) AND status = 'SYNCED'") == 0
        })
      #expect(try b.cli(["read", "--with", "1"]).status == 0)
      #expect(
        try await waitUntil(60) {
          try a.count("SELECT count(*) FROM Messages WHERE \(fromA) AND status <> 'READ'") == 0
        })
      try a.stop()
      try b.stop()

      let onA = try a.messages(fromA)
      let onBoth = try b.messages(fromA)
      #expect(onA.count == 1000 && onBoth.count == 1000)
      #expect(onA.map(\.id) == onBoth.map(\.id), "the same ids on both sides")
      #expect(onA.map(\.content) == (0..<1000).map { String(format: "m%04d", $0) }, "in A's send order")
      #expect(Set(onA.map(\.id)).count == 1000)
      #expect(onA.allSatisfy { $0.status == "READ" })
      #expect(try a.count("SELECT count(*) FROM MessageRequests") == 0)
      // The faults really happened: lost answers replayed, sockets re-made, duplicates dropped.
      // (A sends its queue in batches of up to 100, so a dozen or so POSTs meet the
      // drop-response fault: at 0.4, all of them answered has odds of about 1 in 500.)
      let logA = try String(contentsOfFile: a.folder + "/run-1.log", encoding: .utf8)
      let logB = try String(contentsOfFile: b.folder + "/run-1.log", encoding: .utf8)
      #expect(logA.contains("(replayed)"))
      #expect(logA.contains("reconnect 2"))
      // The last metrics line is the run's total (a slow run also logs them every minute).
      let finalMetrics = logB.split(separator: "\n").last { $0.contains("metrics: ") } ?? ""
      #expect(!finalMetrics.contains("duplicates dropped 0,"), "\(logB.suffix(400))")
      try chatdbCheck(a.db)
      try chatdbCheck(b.db)
    }
  }

  @Test func runOnceSaysHowItEndedInItsExitCode() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      // A recipient the relay does not know: refused for good (404), exit 7 and the reason kept.
      #expect(try a.cli(["send", "--to", "5", "nobody"]).status == 0)
      let unsent = try a.cli(["run", "--once", "--json"])
      #expect(unsent.status == 7, "\(unsent.stdout) \(unsent.stderr)")
      #expect(unsent.stdout.contains(#""rejected": 1"#))
      let status = try a.cli(["status"])
      #expect(status.stdout.contains("permanent 1") && status.stdout.contains("not_found"), "\(status.stdout)")
      let failed = try #require(try a.messagesRequests().first)
      #expect(try a.cli(["delete", String(failed)]).status == 0)
      #expect(try a.cli(["run", "--once"]).status == 0)
      // A wrong token: 77, one error line naming it.
      let refused = try tool(
        "chat-sync", ["run", "--once", "--data-dir", a.folder, "--user", "1"],
        environment: ["CHAT_SYNC_SERVER": relay.url, "CHAT_SYNC_TOKEN": "wrong"])
      #expect(refused.status == 77, "\(refused.stderr)")
      #expect(refused.stderr.split(separator: "\n").filter { $0.hasPrefix("Error: ") }.count == 1)
      // No relay: 69.
      relay.stop()
      let down = try a.cli(["run", "--once"])
      #expect(down.status == 69, "\(down.stderr)")
      // A request still to be sent is never dropped (65, saying why); an unknown one is 66.
      #expect(try a.cli(["send", "--to", "2", "still queued"]).status == 0)
      let pending = try #require(try a.messagesRequests().first)
      let kept = try a.cli(["delete", String(pending)])
      #expect(kept.status == 65 && kept.stderr.contains("is PENDING, not FAILED"), "\(kept.stderr)")
      #expect(try a.cli(["delete", "999999"]).status == 66)
      // Bad command lines: 64.
      #expect(try a.cli(["send", "--to", "2"]).status == 64)
      #expect(try a.cli(["retry", "x"]).status == 64)
      #expect(
        try tool("chat-sync", ["run", "--user", "1", "--data-dir", a.folder], environment: ["CHAT_SYNC_SERVER": ""])
          .status == 64)
      // A token file others can read is refused.
      let tokenFile = folder + "/token"
      try a.token.write(toFile: tokenFile, atomically: true, encoding: .utf8)
      chmod(tokenFile, 0o644)
      let loose = try tool(
        "chat-sync", ["status", "--data-dir", a.folder, "--user", "1"], environment: [:])
      #expect(loose.status == 0, "status needs no relay")
      let leaky = try tool(
        "chat-sync",
        ["run", "--once", "--data-dir", a.folder, "--user", "1", "--server", relay.url, "--token-file", tokenFile],
        environment: ["CHAT_SYNC_TOKEN": ""])
      #expect(leaky.status == 77 && leaky.stderr.contains("chmod 600"), "\(leaky.stderr)")
    }
  }

  /// Issue 25, bug 4: another user's token sent this user's outbox under their name.
  /// Every command that talks to the relay asks `GET /v2/me` first; nothing is sent.
  @Test func aTokenOfAnotherUserIsRefusedBeforeAnythingIsSent() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      let c = try Client(3, name: "Cy", relay: relay, folder: folder)
      #expect(try a.cli(["send", "--to", "2", "queued by Ada"]).status == 0)
      let asCy = ["CHAT_SYNC_SERVER": relay.url, "CHAT_SYNC_TOKEN": c.token]
      for command in [["run", "--once"], ["send", "--to", "2", "as Cy?"], ["typing", "--to", "2"]] {
        let out = try tool(
          "chat-sync", [command[0], "--data-dir", a.folder, "--user", "1"] + command.dropFirst(), environment: asCy)
        #expect(out.status == 77, "\(command): \(out.stderr)")
        let errors = out.stderr.split(separator: "\n").filter { $0.hasPrefix("Error: ") }
        #expect(
          errors.count == 1 && errors[0].contains("user 3") && errors[0].contains("user 1"), "\(command): \(out.stderr)"
        )
      }
      #expect(try a.messagesRequests().count == 1, "nothing queued with the wrong token, nothing sent")
      let relayDB = try Database(path: relay.db, mode: .readOnly)
      #expect(try relayDB.int64("SELECT count(*) FROM RelayRequests") == 0)
      #expect(try a.cli(["run", "--once"]).status == 0)
      #expect(try b.cli(["run", "--once"]).status == 0)
      #expect(try b.messages("1").map(\.content) == ["queued by Ada"])
    }
  }

  /// Issue 25, bug 3: while another program held relay.db's write lock past the busy
  /// timeout, a valid token's upgrade was answered 401 and `run` stopped for good (77).
  @Test func aLockedRelayDatabaseAnswersTheUpgrade503AndTheClientWaits() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let lock = try Database(path: relay.db)
      try lock.execute("BEGIN IMMEDIATE")
      let connector = SocketConnector.libwebsockets(
        url: URL(string: relay.url.replacingOccurrences(of: "http:", with: "ws:") + "/v2/socket/updates")!,
        token: a.token)
      do {
        let socket = try await connector.connect()
        socket.close()
        Issue.record("the upgrade was accepted while relay.db was locked")
      } catch let refused as SocketRefused {
        #expect(refused.status == 503, "\(refused)")
      }
      try a.start()
      try? await Task.sleep(for: .seconds(1))
      #expect(a.running?.process.isRunning == true, "run waits and retries: \(a.log)")
      try lock.execute("COMMIT")
      #expect(await waitUntil(60) { a.log.contains("socket: connected") }, "\(a.log)")
      try a.stop()
    }
  }

  /// A file without `Messages_unread` (dropped by hand, or by `chatdb index`): `run`
  /// still receives and acknowledges, where its `INDEXED BY` failed with "no such index".
  @Test func runWorksOnAFileWithoutTheUnreadIndex() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      let first = try b.cli(["run", "--once"])
      try #require(first.status == 0, "\(first.stderr)")
      try Database(path: b.db).execute("DROP INDEX Messages_unread")
      #expect(try a.cli(["send", "--to", "2", "hello"]).status == 0)
      #expect(try a.cli(["run", "--once"]).status == 0)
      for _ in 0..<2 {  // the second run acknowledges on connect what the first received
        let run = try b.cli(["run", "--once"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(!run.stderr.contains("no such index"), "\(run.stderr)")
      }
      #expect(try b.messages("from_user_id = 1").map(\.content) == ["hello"])
      #expect(try b.count("SELECT count(*) FROM sqlite_schema WHERE name = 'Messages_unread'") == 0)
    }
  }

  /// docs/protocol.md: a token rotated while the relay serves stops working at the next
  /// request; the client says so with 77 and keeps its outbox, and the new token works.
  @Test func aRotatedTokenIsRefusedAtOnceAndTheNewOneWorks() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      _ = try Client(2, name: "Bob", relay: relay, folder: folder)
      #expect(try a.cli(["send", "--to", "2", "before"]).status == 0)
      #expect(try a.cli(["run", "--once"]).status == 0)
      let rotated = try tool("chat-relay", ["user", "token", "--db", relay.db, "--id", "1"])
      let fresh = try #require(rotated.stdout.split(separator: "\n").last.map(String.init))
      #expect(try a.cli(["send", "--to", "2", "after"]).status == 0)
      let old = try a.cli(["run", "--once"])
      #expect(old.status == 77, "\(old.stderr)")
      #expect(try a.count("SELECT count(*) FROM MessageRequests") == 1, "the message waits in the outbox")
      let new = try tool(
        "chat-sync", ["run", "--once", "--data-dir", a.folder, "--user", "1"],
        environment: ["CHAT_SYNC_SERVER": relay.url, "CHAT_SYNC_TOKEN": fresh])
      #expect(new.status == 0, "\(new.stderr)")
      #expect(try a.count("SELECT count(*) FROM MessageRequests") == 0)
    }
  }

  @Test func messagesComposedWhileTheRelayIsDownArriveInOrder() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      relay.stop()
      for i in 0..<50 {
        let out = try a.cli(["send", "--to", "2", "offline \(i)"])
        #expect(out.status == 0, "\(out.stderr)")
      }
      let once = try a.cli(["run", "--once", "--json"])
      #expect(once.status == 69, "unreachable relay: \(once.stdout) \(once.stderr)")
      #expect(try a.count("SELECT count(*) FROM MessageRequests") == 50)
      try a.start()
      try await Task.sleep(for: .milliseconds(500))
      try relay.kill9AndRestart()
      defer { relay.stop() }
      try b.start()
      #expect(try await waitUntil(60) { try b.count("SELECT count(*) FROM Messages") == 50 })
      try a.stop()
      try b.stop()
      #expect(try b.messages("1").map(\.content) == (0..<50).map { "offline \($0)" })
      try chatdbCheck(a.db)
      try chatdbCheck(b.db)
    }
  }

  @Test func anOfflineRecipientGetsPushesThenEverythingAndTheSenderLearnsLater() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      for i in 0..<5 { #expect(try a.cli(["send", "--to", "2", "while you were out \(i)"]).status == 0) }
      let sent = try a.cli(["run", "--once", "--json"])
      #expect(sent.status == 0, "\(sent.stdout) \(sent.stderr)")
      let pushes = try tool("chat-relay", ["push", "list", "--db", relay.db, "--json"])
      #expect(pushes.stdout.components(separatedBy: #""toUserId": 2"#).count - 1 == 5, "\(pushes.stdout)")
      // A is offline now; B comes, syncs, reads.
      let synced = try b.cli(["run", "--once"])
      #expect(synced.status == 0, "\(synced.stdout) \(synced.stderr)")
      #expect(try b.count("SELECT count(*) FROM Messages") == 5)
      #expect(
        try b.count("SELECT count(*) FROM Messages WHERE status = 'SYNCED'") == 0,
        "the relay confirmed the acknowledgements")
      #expect(
        try b.count("SELECT count(*) FROM Users WHERE id = 1 AND name = 'Ada'") == 1, "the sender's profile came first")
      #expect(try b.cli(["read", "--with", "1"]).status == 0)
      #expect(try b.cli(["run", "--once"]).status == 0)
      // A's next start learns both.
      #expect(try a.cli(["run", "--once"]).status == 0)
      #expect(try a.messages("1").map(\.status) == Array(repeating: "READ", count: 5))
      let history = try a.cli(["history", "--with", "2", "--json"])
      #expect(history.status == 0 && history.stdout.contains("while you were out 4"))
      // The synced messages are searchable on both sides (ChatRepository.search).
      let found = try b.cli(["search", "WHILE out", "--json"])
      #expect(
        found.status == 0 && found.stdout.components(separatedBy: #""kind": "message""#).count - 1 == 5,
        "\(found.stdout)")
      #expect(try a.cli(["search", "out", "--with", "2", "--limit", "2"]).stdout.contains("«out» 4"))
      let conversations = try b.cli(["conversations"])
      #expect(conversations.stdout.contains("Ada"))
      try chatdbCheck(a.db)
      try chatdbCheck(b.db)
    }
  }

  @Test func presenceAndTypingReachTheOtherSideQuickly() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      #expect(try a.cli(["send", "--to", "2", "hi"]).status == 0)
      #expect(try a.cli(["run", "--once"]).status == 0)
      try b.start()
      #expect(await waitUntil(20) { b.log.contains("sync: ") })
      try a.start()
      var started = Date()
      #expect(await waitUntil(5) { b.log.contains("contact 1: online") })
      let online = Date().timeIntervalSince(started)
      #expect(await waitUntil(20) { a.log.contains("sync: ") })
      started = Date()
      #expect(try a.cli(["typing", "--to", "2"]).status == 0)
      #expect(await waitUntil(5) { b.log.contains("contact 1: online, typing") })
      let typing = Date().timeIntervalSince(started)
      try a.stop()
      #expect(await waitUntil(5) { b.log.contains("contact 1: offline") })
      // Without a running `run`: a socket of its own, held for the typing window, so Bob
      // sees Ada online and typing until the indicator would have expired anyway.
      let (folderA, environmentA) = (a.folder, a.environment)
      let held = Task.detached {
        try tool("chat-sync", ["typing", "--data-dir", folderA, "--user", "1", "--to", "2"], environment: environmentA)
      }
      #expect(await waitUntil(5) { b.log.components(separatedBy: "contact 1: online, typing").count > 2 })
      let heldRun = try await held.value
      #expect(heldRun.status == 0 && heldRun.stdout.contains("held for 5 s"), "\(heldRun.stdout) \(heldRun.stderr)")
      #expect(await waitUntil(5) { b.log.components(separatedBy: "contact 1: offline").count > 2 })
      // To a user Ada never exchanged a message with: the relay's refusal, 65.
      let refused = try a.cli(["typing", "--to", "3"])
      #expect(refused.status == 65 && refused.stderr.contains("no conversation"), "\(refused.stderr)")
      try b.stop()
      print("presence after \(online) s, typing after \(typing) s")
      try chatdbCheck(a.db)
      try chatdbCheck(b.db)
    }
  }

  @Test func maintenanceOnTheFileWhileItSyncsLosesNothing() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      #expect(try a.cli(["send", "--to", "2", "first"]).status == 0)
      try a.start()
      try b.start()
      let outbox = try ChatRepository.open(user: 1, in: a.folder)
      var maintenance: [Output] = []
      for round in 0..<5 {
        for i in 0..<40 { try outbox.send(to: 2, content: "r\(round) \(i)") }
        Nudge.send("outbox", to: a.db)
        maintenance.append(try tool("chatdb", ["check", "--db", a.db]))
        maintenance.append(try tool("chatdb", ["export", "--db", a.db, "-o", folder + "/a-\(round).ndjson.zst"]))
        maintenance.append(try tool("chatdb", ["evict", "--db", a.db, "--older-than", "3650d"]))
      }
      #expect(
        try await waitUntil(60) {
          try b.count("SELECT count(*) FROM Messages") == 201 && a.count("SELECT count(*) FROM MessageRequests") == 0
        })
      try a.stop()
      try b.stop()
      for out in maintenance {
        #expect(out.status == 0, "\(out.stdout) \(out.stderr)")
        #expect(!out.stderr.contains("locked") && !out.stderr.contains("BUSY"))
      }
      #expect(try a.count("SELECT count(*) FROM Messages") == 201)
      try chatdbCheck(a.db)
    }
  }
}
