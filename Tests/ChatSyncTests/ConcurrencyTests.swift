import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatSync

/// Issue 14, sanitizers and concurrency: `chatdb`'s maintenance commands on a file while
/// `chat-sync run` writes into it, `migrate` against a file someone has open, and a
/// client meeting a file from a newer schema.
@Suite(.serialized, .ownThreads) struct ConcurrencyTests {
  /// One maintenance command, as run against the receiving client's file again and
  /// again while messages arrive. `run` is the run's number (each export writes its own
  /// file); `folder` is the test's folder.
  struct Maintenance: CustomTestStringConvertible, Sendable {
    var name: String
    var arguments: @Sendable (_ db: String, _ folder: String, _ run: Int) -> [String]
    var testDescription: String { name }
  }

  static let maintenance: [Maintenance] = [
    Maintenance(name: "evict --older-than") { db, _, _ in ["evict", "--db", db, "--older-than", "30d"] },
    Maintenance(name: "evict --max-size") { db, folder, _ in
      ["evict", "--db", db, "--max-size", (try? String(contentsOfFile: folder + "/target", encoding: .utf8)) ?? "1GiB"]
    },
    Maintenance(name: "vacuum") { db, _, _ in ["vacuum", "--db", db] },
    Maintenance(name: "index apply") { db, _, _ in ["index", "apply", "--db", db] },
    Maintenance(name: "migrate") { db, _, _ in ["migrate", "--db", db] },
    Maintenance(name: "check --full") { db, _, _ in ["check", "--full", "--db", db] },
    Maintenance(name: "export") { db, folder, run in ["export", "--db", db, "-o", folder + "/export-\(run).ndjson.zst"]
    },
    Maintenance(name: "import") { db, folder, _ in ["import", "--db", db, folder + "/before.ndjson.zst"] },
  ]

  /// B's file holds a generated history (so each command has real work); A sends 200
  /// messages in bursts while the command runs on B's file over and over. Every message
  /// the relay accepted for B ends in B's file, every run of the command succeeds within
  /// its bound, and neither side ever reports a locked file.
  @Test(arguments: maintenance)
  func maintenanceWhileTheClientWritesLosesNothing(_ command: Maintenance) async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let a = try Client(1, name: "Ada", relay: relay, folder: folder)
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      let generated = try tool(
        "chatdb", ["generate", "--db", b.db, "--contacts", "20", "--messages", "4000", "--seed", "5"])
      try #require(generated.status == 0, "\(generated.stderr)")
      let before = try tool("chatdb", ["export", "--db", b.db, "-o", folder + "/before.ndjson.zst"])
      try #require(before.status == 0, "\(before.stderr)")
      let size = try #require(FileSystem.size(atPath: b.db))
      try "\(size * 7 / 10)B".write(toFile: folder + "/target", atomically: true, encoding: .utf8)
      if command.name == "index apply" {
        // Two indexes chat-sync does not name: its sync names Messages_unread (INDEXED
        // BY), and fails ("no such index") on a file without it until index apply ran.
        let db = try Database(path: b.db)
        try db.execute("DROP INDEX Messages_by_created_at")
        try db.execute("DROP INDEX ConversationSummaries_by_activity")
      }
      #expect(try a.cli(["send", "--to", "2", "hello"]).status == 0)
      try a.start()
      try b.start()
      defer {
        try? a.stop()
        try? b.stop()
      }
      #expect(await waitUntil(20) { b.log.contains("sync: ") })

      let target = b.db
      let loop = MaintenanceLoop { run in try tool("chatdb", command.arguments(target, folder, run), seconds: 30) }
      let outbox = try ChatRepository.open(user: 1, in: a.folder)
      for burst in 0..<10 {
        for i in 0..<20 { try outbox.send(to: 2, content: "burst \(burst) message \(i)") }
        Nudge.send("outbox", to: a.db)
        try await Task.sleep(for: .milliseconds(150))
      }
      // At least three runs of the command overlap the traffic.
      _ = await waitUntil(60) { loop.runs.count >= 3 }
      let runs = await loop.stop()

      // Everything the relay accepted for B is in B's file, and B acknowledged it all.
      let sent = 201
      let arrived = try await waitUntil(120) {
        try a.count("SELECT count(*) FROM MessageRequests") == 0 && relayIDs(relay, to: 2).count == sent
          && Set(try relayIDs(relay, to: 2)).isSubset(of: Set(try b.messages("from_user_id = 1").map(\.id)))
          && relayUnacknowledged(relay, to: 2) == 0
      }
      let onRelay = try relayIDs(relay, to: 2)
      let onB = Set(try b.messages("from_user_id = 1").map(\.id))
      let unacknowledged = try relayUnacknowledged(relay, to: 2)
      let outboxLeft = try a.count("SELECT count(*) FROM MessageRequests")
      #expect(
        arrived,
        """
        relay holds \(onRelay.count) for B, \(onRelay.filter { !onB.contains($0) }.count) missing from B's file, \
        \(unacknowledged) unacknowledged; A's outbox \(outboxLeft)
        B: \(b.log.split(separator: "\n").filter { !$0.contains("received message") }.suffix(30).joined(separator: "\n"))
        A: \(a.log.split(separator: "\n").filter { !$0.contains("sent request") }.suffix(30).joined(separator: "\n"))
        """)
      try a.stop()
      try b.stop()

      #expect(runs.count >= 3, "\(command.name) ran \(runs.count) time(s)")
      for (run, out) in runs.enumerated() {
        #expect(
          out.status == 0, "\(command.name) run \(run): exit \(out.status): \(out.stdout.suffix(500)) \(out.stderr)")
        #expect(!mentionsLock(out.stderr + out.stdout), "\(command.name) run \(run): \(out.stderr)")
      }
      for client in [a, b] {
        let logs = try (1...1).map { try String(contentsOfFile: client.folder + "/run-\($0).log", encoding: .utf8) }
          .joined()
        #expect(
          !mentionsLock(logs),
          "chat-sync for user \(client.id): \(logs.split(separator: "\n").filter { mentionsLock(String($0)) }.prefix(5))"
        )
      }
      let check = try tool("chatdb", ["check", "--full", "--db", b.db])
      #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
      try chatdbCheck(a.db)
    }
  }

  // MARK: - migrate against an open file

  /// A file one version behind, open in another program (a UI, an older client): migrate
  /// waits for it up to a bound, then refuses with 75 and says why; once the other
  /// program closes the file, the same command migrates it.
  @Test func migrateRefusesAFileSomeoneHasOpenAfterABoundedWait() async throws {
    try await withDataFolder { folder in
      let db = folder + "/chats-2.db"
      let latest = Migration.shipped.count
      #expect(try tool("chatdb", ["migrate", "--db", db, "--to", String(latest - 1)]).status == 0)
      let holder = HeldFile(try Database(path: db, mode: .readOnly))
      #expect(try holder.int64("PRAGMA user_version") == Int64(latest - 1))
      let started = Date()
      let refused = try tool("chatdb", ["migrate", "--db", db], seconds: 60)
      let waited = Date().timeIntervalSince(started)
      #expect(refused.status == 75, "\(refused.stdout) \(refused.stderr)")
      let lines = refused.stderr.split(separator: "\n")
      #expect(lines.count == 1 && lines[0].hasPrefix("Error: ") && lines[0].contains(db), "\(refused.stderr)")
      #expect(refused.stderr.contains("open"), "says another program has the file open: \(refused.stderr)")
      #expect(waited >= 1 && waited < 30, "waited \(waited) s")
      #expect(try holder.int64("PRAGMA user_version") == Int64(latest - 1), "the file was not changed")
      // The other program closes the file during the wait: migrate goes ahead. The close
      // comes from a thread of its own: after a sleep on the test pool it came late when
      // other suites' blocking calls held both of the pool's threads (issue 14's flaky
      // runs), later than migrate's bound, which then refused the file.
      let waiting = Task(executorPreference: TestThreads.shared) {
        try tool("chatdb", ["migrate", "--db", db], seconds: 60)
      }
      holder.close(after: 0.5)
      let done = try await waiting.value
      #expect(holder.isClosed)
      #expect(done.status == 0, "\(done.stdout) \(done.stderr)")
      let status = try tool("chatdb", ["migrate", "status", "--db", db, "--json"])
      #expect(status.stdout.contains("\"version\": \(latest)"), "\(status.stdout)")
    }
  }

  /// With `chat-sync run` on the file: `migrate` on the current file only reads it and
  /// succeeds at once; a downgrade is refused (12) without waiting for the client.
  @Test func migrateBesideARunningClient() async throws {
    try await withDataFolder { folder in
      let relay = try RelayProcess(folder: folder)
      defer { relay.stop() }
      let b = try Client(2, name: "Bob", relay: relay, folder: folder)
      try b.start()
      defer { try? b.stop() }
      #expect(await waitUntil(20) { b.log.contains("sync: ") })
      let current = try tool("chatdb", ["migrate", "--db", b.db], seconds: 30)
      #expect(current.status == 0 && !mentionsLock(current.stderr), "\(current.stderr)")
      let down = try tool(
        "chatdb", ["migrate", "--db", b.db, "--to", String(Migration.shipped.count - 1)], seconds: 30)
      #expect(down.status == 12, "\(down.stderr)")
      try b.stop()
      try chatdbCheck(b.db)
    }
  }

  // MARK: - A file from a newer schema

  /// A file a newer release migrated further: `ChatRepository` and every `chat-sync`
  /// command refuse it with 10 and one line naming the file and both versions, and
  /// leave it as it was.
  @Test func aClientRefusesAFileFromANewerSchema() async throws {
    try await withDataFolder { folder in
      let db = folder + "/chats-1.db"
      let latest = Migration.shipped.count
      _ = try ChatRepository.open(user: 1, in: folder)
      do {
        let raw = try Database(path: db)
        try raw.execute(
          "INSERT INTO chatdb_migrations (version, name, checksum, applied_at) VALUES (?, 'from the future', 'x', '2030-01-01T00:00:00Z')",
          [latest + 1])
        try raw.execute("PRAGMA user_version = \(latest + 1)")
      }
      let bytes = try Data(contentsOf: URL(fileURLWithPath: db))
      #expect {
        _ = try ChatRepository.open(user: 1, in: folder)
      } throws: { ($0 as? StoreError)?.kind == .newerSchema }
      #expect {
        _ = try ChatRepository(database: Database(path: db), ownerID: 1)
      } throws: { ($0 as? StoreError)?.kind == .newerSchema }
      for arguments in [
        ["run", "--once"], ["run"], ["send", "--to", "2", "hi"], ["status"], ["history", "--with", "2"],
      ] {
        let out = try tool(
          "chat-sync", [arguments[0], "--data-dir", folder, "--user", "1"] + arguments.dropFirst(),
          environment: ["CHAT_SYNC_SERVER": "http://127.0.0.1:9", "CHAT_SYNC_TOKEN": "t"], seconds: 20)
        #expect(out.status == 10, "chat-sync \(arguments.joined(separator: " ")): \(out.status) \(out.stderr)")
        let lines = out.stderr.split(separator: "\n").filter { $0.hasPrefix("Error: ") }
        #expect(lines.count == 1 && lines[0].contains(db) && lines[0].contains("\(latest + 1)"), "\(out.stderr)")
      }
      #expect(try Data(contentsOf: URL(fileURLWithPath: db)) == bytes, "the file is as it was")
    }
  }
}

/// Runs a command again and again on a thread of its own (its waits must not hold one
/// of the test pool's two threads) until `stop()`.
final class MaintenanceLoop: @unchecked Sendable {
  // @unchecked: `outputs` and `stopping` are only touched under `lock`.
  private let lock = NSLock()
  private var outputs: [Output] = []
  private var stopping = false
  private let finished = DispatchSemaphore(value: 0)

  init(_ body: @escaping @Sendable (Int) throws -> Output) {
    let thread = Thread { [self] in
      var run = 0
      while !lock.withLock({ stopping }) {
        let out = (try? body(run)) ?? Output(status: -1, stdout: "", stderr: "could not start")
        lock.withLock { outputs.append(out) }
        run += 1
      }
      finished.signal()
    }
    thread.start()
  }

  var runs: [Output] { lock.withLock { outputs } }

  /// Stops after the run in progress and returns every run's output.
  func stop() async -> [Output] {
    lock.withLock { stopping = true }
    let finished = self.finished
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
      DispatchQueue.global().async {
        finished.wait()
        done.resume()
      }
    }
    return runs
  }
}

/// Another program's connection to a file (a UI, an older client), closed explicitly
/// from a thread of its own, so the moment it closes never waits for a thread of the
/// test pool.
final class HeldFile: @unchecked Sendable {
  // @unchecked: `database` is only touched under `lock`; a `Database` is used by one
  // thread at a time, and this one only for a query before `close(after:)`.
  private let lock = NSLock()
  private var database: Database?
  private let path: String

  init(_ database: Database) {
    self.database = database
    path = URL(fileURLWithPath: database.path).resolvingSymlinksInPath().path
  }

  func int64(_ sql: String) throws -> Int64? { try lock.withLock { try database?.int64(sql) } }

  /// Whether the connection is closed: dropped, and no descriptor of this process is
  /// left open on the file (`/proc/self/fd`).
  var isClosed: Bool {
    guard lock.withLock({ database == nil }) else { return false }
    let descriptors = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    return !descriptors.contains {
      (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path
    }
  }

  /// Closes the connection `seconds` from now, on a new thread. This is the only
  /// reference to it, so dropping it closes it there and then (`Database.deinit`).
  func close(after seconds: Double) {
    Thread { [self] in
      usleep(useconds_t(seconds * 1_000_000))
      lock.withLock { database = nil }
    }.start()
  }
}

/// What a user must never see: SQLite's lock errors reaching them.
func mentionsLock(_ text: String) -> Bool {
  let lower = text.lowercased()
  return lower.contains("locked") || lower.contains("sqlite_busy") || lower.contains("database is busy")
    || lower.contains("error 5")
}

/// The ids of the messages the relay accepted for `user` (it keeps each request's
/// message for its deduplication window).
func relayIDs(_ relay: RelayProcess, to user: Int64) throws -> [Int64] {
  try Database(path: relay.db, mode: .readOnly).query(
    "SELECT message_id FROM RelayRequests WHERE to_user_id = ? ORDER BY message_id", [user]
  ) {
    $0.int64(0)
  }
}

/// Messages for `user` the relay still waits to see acknowledged.
func relayUnacknowledged(_ relay: RelayProcess, to user: Int64) throws -> Int64 {
  try Database(path: relay.db, mode: .readOnly).int64(
    "SELECT count(*) FROM RelayMessages WHERE to_user_id = ? AND delivered_at IS NULL", [user])
    ?? 0
}

/// The writer's side of the same promise, without processes: another program holds the
/// file's write lock for longer than the connection's `busy_timeout` (here 50 ms, in
/// production 5 s: `chatdb vacuum` on a large file can take longer); a message arriving
/// meanwhile is stored once the lock goes, not dropped with "database is locked".
@Suite(.ownThreads) struct BusyWriterTests {
  @Test func aMessageArrivingWhileAnotherProgramWritesIsStoredWhenTheLockGoes() async throws {
    try await withDataFolder { folder in
      try ownerRepository(in: folder).upsert(User(id: 1, name: "Ada"))
      let path = StoreLocation.path(forUser: 1, in: folder)
      let repository = try ChatRepository(database: Database(path: path, busyTimeout: 50), ownerID: 1)
      let lines = LogLines()
      var options = SyncEngine.Options.test
      options.log = { lines.append($0) }
      let engine = SyncEngine(
        repository: repository, http: ScriptedRelay().transport, socket: connector(nil), options: options)
      let other = try Database(path: path)
      try other.execute("BEGIN IMMEDIATE")
      let release = Task.detached {
        try await Task.sleep(for: .milliseconds(700))
        try other.execute("COMMIT")
      }
      await engine.handle(
        #"{"type":"new_message","payload":{"messageId":99,"fromUserId":2,"toUserId":1,"content":"hi","status":"SYNCED","createdAt":"2026-01-01T00:00:01.000Z"}}"#
      )
      try await release.value
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try check.hasMessage(99), "\(lines.all)")
      #expect(!lines.all.contains { mentionsLock($0) }, "\(lines.all)")
      #expect(lines.all.contains { $0.contains("another program is writing the file") })
    }
  }
}

/// Log lines collected from the engine's threads.
final class LogLines: @unchecked Sendable {
  // @unchecked: `lines` is only touched under `lock`.
  private let lock = NSLock()
  private var lines: [String] = []
  func append(_ line: String) { lock.withLock { lines.append(line) } }
  var all: [String] { lock.withLock { lines } }
}

/// A message with media arrives: it is stored at once with its attachments and their
/// thumbnails (thumbnail first), an image small enough is wanted for download, and an
/// attachment the client cannot store (a malformed SHA-256) is left out rather than the
/// message refused.
@Suite(.ownThreads) struct ReceivedAttachmentTests {
  @Test func aMessageIsStoredWithItsAttachmentsAndThumbnails() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      try repository.upsert(User(id: 1, name: "Ada"))
      let lines = LogLines()
      var options = SyncEngine.Options.test
      options.log = { lines.append($0) }
      let engine = SyncEngine(
        repository: repository, http: ScriptedRelay().transport, socket: connector(nil), options: options)
      let photo = String(repeating: "ab", count: 32)
      let video = String(repeating: "cd", count: 32)
      let thumbnail = Data([0xFF, 0xD8, 0xFF, 0xD9]).base64EncodedString()
      await engine.handle(
        #"{"type":"new_message","payload":{"attachments":[{"mediaId":4,"mime":"image/jpeg","sha256":"\#(photo)","size":9,"width":4000,"height":3000,"thumbnail":"\#(thumbnail)"},{"mediaId":5,"mime":"video/mp4","sha256":"\#(video)","size":90000000,"durationMs":61000}],"messageId":98,"fromUserId":2,"toUserId":1,"content":"","status":"SYNCED","createdAt":"2026-01-01T00:00:01.000Z"}}"#
      )
      await engine.handle(
        #"{"type":"new_message","payload":{"attachments":[{"mediaId":6,"mime":"image/jpeg","sha256":"00","size":9}],"messageId":99,"fromUserId":2,"toUserId":1,"content":"bad hash","status":"SYNCED","createdAt":"2026-01-01T00:00:02.000Z"}}"#
      )
      let file = try ChatRepository.open(user: 1, in: folder)
      #expect(try file.hasMessage(98) && file.hasMessage(99), "\(lines.all)")
      let attachments = try file.attachments(ofMessage: 98)
      #expect(attachments.map(\.sha256) == [photo, video])
      #expect(attachments.first?.thumbnail == [0xFF, 0xD8, 0xFF, 0xD9])
      #expect(attachments.first?.width == 4000 && attachments.last?.durationMs == 61000)
      // The photo is under the auto-download size; the video is neither an image nor small.
      #expect(attachments.map(\.state) == [.partial, .remote])
      #expect(try file.attachments(ofMessage: 99).isEmpty)
      #expect(lines.all.contains { $0.contains("message 99: an attachment left out") }, "\(lines.all)")
    }
  }
}
