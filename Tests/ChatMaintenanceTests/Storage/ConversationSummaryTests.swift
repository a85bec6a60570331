import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

/// The chat list read from `ConversationSummaries` (migration 0004) equals the list
/// computed from the tables by the query it replaced, after random sequences of every
/// kind of write: the repository's (send, acknowledge, receive, receipts, markRead, the
/// outbox's state changes, placeholder users), import, generate, evict with several
/// policies, and another program's raw SQL (inserts, OR REPLACE, OR IGNORE, upserts,
/// updates of any column, deletes, rolled-back transactions, foreign keys off).
@Suite(.ownThreads) struct ConversationSummaryPropertyTests {
  /// The conversation list as `HotQuery.conversationList` read it before migration
  /// 0004, verbatim (the visible statuses spelled out): the oracle.
  static let oracle = """
    SELECT u.id, u.name, u.avatar_url, u.last_connected_at,
      m.id, m.from_user_id, m.to_user_id, m.content, m.status, m.created_at, m.request_id,
      r.request_id, r.to_user_id, r.content, r.status, r.created_at, r.last_modified_at, r.last_sent_at,
      r.fail_count, r.next_attempt_at, r.fail_reason,
      (SELECT count(*) FROM Messages
        WHERE conversation_id = u.id AND from_user_id = conversation_id AND status <> 'READ') AS unread,
      max(coalesce(m.created_at, ''), coalesce(r.created_at, '')) AS last_activity
    FROM Users u
    LEFT JOIN Messages m ON m.id = (SELECT max(id) FROM Messages WHERE conversation_id = u.id)
    LEFT JOIN MessageRequests r ON r.request_id = (
      SELECT request_id FROM MessageRequests
      WHERE to_user_id = u.id AND status IN ('PENDING', 'SENT', 'FAILED')
      ORDER BY created_at DESC, request_id DESC LIMIT 1)
    WHERE m.id IS NOT NULL OR r.request_id IS NOT NULL
    ORDER BY last_activity DESC, u.id
    LIMIT ?1
    """

  static let owner: Int64 = 1

  /// The oracle's rows as `ChatRepository.conversations` made them before migration
  /// 0004 (its mapping, verbatim).
  static func oracle(_ db: Database, limit: Int = -1) throws -> [ConversationPreview] {
    try db.query(Self.oracle, [limit]) { row in
      let contact = User(
        id: row.int64(0), name: row.string(1), avatarURL: row.optionalString(2), lastConnectedAt: row.optionalString(3))
      let message =
        row.isNull(4)
        ? nil
        : Message(
          id: row.int64(4), fromUserID: row.int64(5), toUserID: row.int64(6), content: row.string(7),
          status: MessageStatus(rawValue: row.string(8)) ?? .synced, createdAt: row.string(9),
          requestID: row.optionalInt64(10))
      let request =
        row.isNull(11)
        ? nil
        : MessageRequest(
          requestID: row.int64(11), toUserID: row.int64(12), content: row.string(13),
          status: MessageRequestStatus(rawValue: row.string(14)) ?? .pending, createdAt: row.string(15),
          lastModifiedAt: row.string(16), lastSentAt: row.optionalString(17), failCount: row.int(18),
          nextAttemptAt: row.optionalString(19), failReason: row.optionalString(20))
      return ConversationPreview(
        contact: contact, lastMessage: message, lastRequest: request, unreadCount: row.int(21),
        lastActivityAt: row.string(22))
    }
  }

  /// One file and the programs writing it.
  final class World {
    let folder: HistoryFolder
    let path: String
    /// The app: the repository on its own connection (triggers on).
    let chats: ChatRepository
    /// Another program on the same file (a user's sqlite3): raw SQL.
    let other: Database
    var rng: SplitMix64
    /// The app's clock, after the generated history (which ends 2026-01-01).
    var clock: Int64 = 1_767_900_000_000
    var steps: [String] = []
    let generation: HistoryGenerator.Options

    init(seed: UInt64) throws {
      folder = try HistoryFolder()
      path = folder.file("chats-1.db")
      chats = try ChatRepository.open(user: ConversationSummaryPropertyTests.owner, in: folder.path)
      other = try Database(path: path)
      rng = SplitMix64(state: seed)
      var options = HistoryGenerator.Options(
        owner: ConversationSummaryPropertyTests.owner, contacts: 12, messages: 400, seed: seed)
      options.pending = 3
      options.failed = 2
      options.days = 30
      generation = options
      chats.now = { [unowned self] in Date(timeIntervalSince1970: Double(self.clock) / 1000) }
    }

    func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &rng) }
    func chance(_ percent: Int) -> Bool { int(0...99) < percent }
    func pick<T>(_ items: [T]) -> T? { items.isEmpty ? nil : items[int(0...items.count - 1)] }
    func tick() -> Int64 {
      clock += Int64(int(1...5_000))
      return clock
    }

    /// Contacts 2…13 are the generated ones; 14…16 are not in the file until someone adds them.
    func contact() -> Int64 { Int64(int(2...16)) }
    func messageIDs() throws -> [Int64] {
      try chats.database.query("SELECT id FROM Messages ORDER BY id") { $0.int64(0) }
    }
    func requestIDs(_ filter: String = "1") throws -> [Int64] {
      try chats.database.query("SELECT request_id FROM MessageRequests WHERE \(filter) ORDER BY request_id") {
        $0.int64(0)
      }
    }
    func status() -> MessageStatus { MessageStatus.allCases[int(0...2)] }
    func requestStatus() -> String { ["DRAFT", "PENDING", "SENT", "FAILED"][int(0...3)] }
    /// A time near the app's clock, sometimes far before it.
    func time() -> String {
      Timestamp.string(milliseconds: clock - Int64(chance(20) ? int(0...40_000_000_000) : int(0...100_000)))
    }
    /// A message id: new and the newest, or anywhere in the history.
    func newMessageID() -> Int64 {
      chance(70)
        ? MessageID.make(milliseconds: tick())
        : MessageID.make(milliseconds: clock - Int64(int(0...3_000_000_000)), sequence: Int64(int(1...999)))
    }

    func incoming(from contact: Int64) -> Message {
      let id = newMessageID()
      return Message(
        id: id, fromUserID: contact, toUserID: ConversationSummaryPropertyTests.owner, content: "in \(id % 1000) 字",
        status: status(), createdAt: Timestamp.string(milliseconds: MessageID.milliseconds(of: id)))
    }
  }

  // MARK: - The property

  @Test(arguments: 1...16 as ClosedRange<UInt64>)
  func theSummaryListIsTheListComputedFromTheTables(seed: UInt64) throws {
    let w = try World(seed: seed)
    try w.chats.upsert(User(id: Self.owner, name: "Me"))
    try generate(w)
    guard try Self.matches(w) else { return }
    for _ in 0..<100 {
      try step(w)
      guard try Self.matches(w) else { return }
    }
    // The sequence did write: messages came and went, and the list was not empty.
    #expect(w.steps.count >= 100)
    #expect(try w.chats.conversations(limit: 5).count > 0)
    if ProcessInfo.processInfo.environment["SUMMARY_TEST_LOG"] != nil { print(w.steps.joined(separator: "\n")) }
    // `chatdb check` compares the same two lists and finds nothing.
    let report = HealthCheck().check(path: w.path)
    #expect(!report.findings.contains { $0.check == "conversation-summary" }, "\(report.findings)")
  }

  /// The repository's list (every field of every row) against the oracle's, whole and
  /// as first pages; false after recording the first difference with the steps that
  /// led to it.
  static func matches(_ w: World) throws -> Bool {
    // The search indexes hold exactly the text of the rows, after every kind of write.
    let search = try SearchIndexCheck.problems(w.chats.database, exact: true)
    guard search.isEmpty else {
      Issue.record(
        "the search index differs after \(w.steps.count) steps: \(search)\n\(w.steps.suffix(8).joined(separator: "\n"))"
      )
      return false
    }
    let computed = try w.chats.database.read { try Self.oracle($0) }
    let listed = try w.chats.conversations(limit: 1_000_000)
    let pages = try [3, 50].map { try w.chats.conversations(limit: $0) }
    guard listed == computed, pages[0] == Array(computed.prefix(3)), pages[1] == Array(computed.prefix(50)) else {
      let differing = Set(listed.map { "\($0)" }).symmetricDifference(computed.map { "\($0)" })
      Issue.record(
        """
        the summary list differs from the oracle after \(w.steps.count) steps:
        \(w.steps.suffix(8).joined(separator: "\n"))
        differing rows: \(differing.sorted().joined(separator: "\n"))
        order: \(listed.map(\.contact.id)) vs \(computed.map(\.contact.id))
        """)
      return false
    }
    return true
  }

  // MARK: - Writes

  func step(_ w: World) throws {
    switch w.int(0...99) {
    case 0..<30: try appWrite(w)
    case 30..<62: try rawWrite(w)
    case 62..<72: try importHistory(w)
    case 72..<76: try generate(w)
    default: try evict(w)
    }
  }

  /// The generated history (the same every time: a repeat only fills in what others
  /// deleted, or stops at a message someone changed, keeping its earlier batches).
  func generate(_ w: World) throws {
    w.steps.append("generate \(w.generation.messages) messages")
    let db = w.chance(50) ? w.chats.database : try Database(path: w.path)
    let generator = HistoryGenerator(w.generation)
    var options = RecordWriter.Options()
    options.batchSize = w.int(20...300)
    do {
      _ = try RecordWriter(database: db, owner: Self.owner, options: options).write { emit in
        try generator.generate(emit)
      }
    } catch let error as StoreError where error.kind == .badInput {
      w.steps.append("  stopped: \(error.message)")
    }
    #expect(db.triggersEnabled, "the writer turns its connection's triggers back on")
  }

  /// The repository's operations, as the sync client makes them.
  func appWrite(_ w: World) throws {
    let chats = w.chats
    let visible = try w.requestIDs("status IN ('PENDING', 'SENT', 'FAILED')")
    do {
      switch w.int(0...16) {
      case 0, 1:
        let to = w.contact()
        w.steps.append("send to \(to)")
        _ = w.tick()
        try chats.send(to: to, content: "out \(w.clock % 1000)")
      case 2, 3:
        guard let requestID = w.pick(visible), let request = try chats.request(requestID) else { return }
        let id = MessageID.make(milliseconds: w.tick())
        w.steps.append("acknowledge request \(requestID) as \(id)")
        try chats.acknowledge(
          Message(
            id: id, fromUserID: Self.owner, toUserID: request.toUserID, content: request.content,
            createdAt: request.createdAt),
          requestID: requestID)
      case 4, 5:
        let messages = (0..<w.int(1...4)).map { _ in w.incoming(from: Int64(w.int(2...13))) }
        w.steps.append("receive \(messages.map(\.id))")
        try chats.receive(
          messages, users: [User(id: messages[0].fromUserID, name: "synced")], messageCursor: messages.last?.id)
      case 6:
        // A message stored again: sync repeats, a status moves forward.
        guard let id = w.pick(try w.messageIDs()),
          let row = try chats.database.query(
            "SELECT from_user_id, to_user_id, content, created_at, request_id FROM Messages WHERE id = ?", [id],
            { ($0.int64(0), $0.int64(1), $0.string(2), $0.string(3), $0.optionalInt64(4)) }
          ).first,
          row.0 != row.1, row.0 == Self.owner || row.1 == Self.owner
        else { return }
        w.steps.append("receive again \(id)")
        try chats.receive(
          Message(
            id: id, fromUserID: row.0, toUserID: row.1, content: row.2, status: w.status(), createdAt: row.3,
            requestID: row.4))
      case 7:
        let conversation = w.contact()
        guard let id = w.pick(try w.messageIDs()) else { return }
        let status: MessageStatus = w.chance(50) ? .read : .delivered
        w.steps.append("\(status) up to \(id) in \(conversation)")
        try chats.applyUpdates([.init(status: status, messageID: id, conversation: conversation)], sequence: nil)
      case 8:
        guard let id = w.chance(80) ? w.pick(try w.messageIDs()) : w.newMessageID() else { return }
        w.steps.append("receipt for \(id)")
        try chats.apply(w.status(), toMessage: id)
      case 9:
        let conversation = w.contact()
        w.steps.append("mark \(conversation) read")
        try chats.markRead(conversation: conversation)
      case 10:
        guard let requestID = w.pick(visible) else { return }
        w.steps.append("mark \(requestID) sent")
        try chats.markSent(requestID)
      case 11:
        guard let requestID = w.pick(visible) else { return }
        w.steps.append("mark \(requestID) failed")
        try chats.markFailed(
          requestID, reason: "HTTP 500",
          retryAt: w.chance(50) ? nil : Date(timeIntervalSince1970: Double(w.clock) / 1000 + 5))
      case 12:
        guard let requestID = w.pick(try w.requestIDs()) else { return }
        w.steps.append("retry \(requestID)")
        try chats.retry(requestID)
      case 13:
        guard let requestID = w.pick(try w.requestIDs()) else { return }
        w.steps.append("delete failed \(requestID)")
        try chats.deleteFailedRequest(requestID)
      case 16:
        // A sender's backlog acknowledged in one batch (the bulk path from 32 on), some
        // of its messages already stored through sync first.
        let to = w.contact()
        var accepted: [(message: Message, requestID: Int64)] = []
        for n in 0..<w.int(30...40) {
          _ = w.tick()
          let request = try chats.send(to: to, content: "batch \(n) 你好")
          let message = Message(
            id: MessageID.make(milliseconds: w.tick()), fromUserID: Self.owner, toUserID: to,
            content: request.content, createdAt: request.createdAt)
          if w.chance(10) { try chats.receive(message) }
          accepted.append((message, request.requestID))
        }
        if let extra = w.pick(visible), let request = try chats.request(extra), request.toUserID != to {
          accepted.append(
            (
              Message(
                id: MessageID.make(milliseconds: w.tick()), fromUserID: Self.owner, toUserID: request.toUserID,
                content: request.content, createdAt: request.createdAt), extra
            ))
        }
        w.steps.append("acknowledge \(accepted.count) requests in one batch")
        try chats.acknowledge(accepted, messageCursor: nil)
      case 14:
        let id = Int64(w.int(14...16))
        w.steps.append("placeholder \(id)")
        try chats.addPlaceholder(User(id: id, name: "user \(id)"))
      default:
        w.steps.append("confirm delivered, resume sends, retry failed now")
        try chats.confirmDelivered(try chats.unacknowledgedIncoming())
        try chats.resumeInterruptedSends()
        try chats.retryFailedNow()
      }
    } catch let error as StoreError where error.kind == .badInput {
      w.steps.append("  refused: \(error.message)")
    } catch let error as SQLiteError where error.code == SQLiteError.ResultCode.constraint {
      // Rows another program made inconsistent (two messages claiming one request…).
      w.steps.append("  refused: \(error.message)")
    }
  }

  /// Another program's SQL on the same file, any statement SQLite accepts.
  func rawWrite(_ w: World) throws {
    let ids = try w.messageIDs()
    let requests = try w.requestIDs()
    let someID = w.pick(ids) ?? 1
    let otherID = w.pick(ids) ?? 2
    let c = w.contact()
    let fromOwner = w.chance(50)
    let (from, to) = fromOwner ? (Self.owner, c) : (c, Self.owner)
    // Usually the right conversation; sometimes a wrong one (another program's mistake).
    let conversation = w.chance(90) ? c : Int64(w.int(2...20))
    let requestID: Any = fromOwner && w.chance(40) ? "\(w.int(1...400))" : "NULL"
    let values =
      "(\(w.newMessageID()), \(from), \(to), 'raw', '\(w.status().rawValue)', '\(w.time())', \(conversation), \(requestID))"
    let columns = "(id, from_user_id, to_user_id, content, status, created_at, conversation_id, request_id)"
    let statements: [String] = [
      "INSERT INTO Messages \(columns) VALUES \(values)",
      "INSERT OR REPLACE INTO Messages \(columns) VALUES (\(someID), \(from), \(to), 'replaced', '\(w.status().rawValue)', '\(w.time())', \(conversation), \(requestID))",
      "INSERT OR IGNORE INTO Messages \(columns) VALUES (\(someID), \(from), \(to), 'ignored', 'SYNCED', '\(w.time())', \(conversation), NULL), \(values)",
      "REPLACE INTO Messages \(columns) VALUES \(values)",
      "INSERT INTO Messages \(columns) VALUES (\(someID), \(from), \(to), 'upsert', 'SYNCED', '\(w.time())', \(conversation), NULL) ON CONFLICT (id) DO UPDATE SET status = excluded.status, conversation_id = \(conversation)",
      "UPDATE Messages SET status = '\(w.status().rawValue)' WHERE id = \(someID)",
      "UPDATE Messages SET status = '\(w.status().rawValue)' WHERE conversation_id = \(c)",
      "UPDATE Messages SET conversation_id = \(conversation) WHERE id = \(someID)",
      "UPDATE Messages SET from_user_id = to_user_id, to_user_id = from_user_id WHERE id = \(someID)",
      "UPDATE Messages SET id = \(w.newMessageID()) WHERE id = \(someID)",
      "UPDATE OR REPLACE Messages SET id = \(otherID) WHERE id = \(someID)",
      "UPDATE OR REPLACE Messages SET request_id = (SELECT request_id FROM Messages WHERE id = \(otherID)), from_user_id = (SELECT from_user_id FROM Messages WHERE id = \(otherID)) WHERE id = \(someID)",
      "UPDATE Messages SET created_at = '\(w.time())' WHERE id = \(someID)",
      "DELETE FROM Messages WHERE id = \(someID)",
      "DELETE FROM Messages WHERE conversation_id = \(c)",
      "DELETE FROM Messages WHERE id IN (SELECT id FROM Messages ORDER BY random() LIMIT \(w.int(1...30)))",
      "INSERT INTO MessageRequests (request_id, to_user_id, content, status, created_at, last_modified_at) VALUES (\(w.int(1...300)), \(c), 'raw', '\(w.requestStatus())', '\(w.time())', '\(w.time())')",
      "INSERT OR REPLACE INTO MessageRequests (request_id, to_user_id, content, status, created_at, last_modified_at) VALUES (\(w.pick(requests) ?? 1), \(c), 'replaced', '\(w.requestStatus())', '\(w.time())', '\(w.time())')",
      "UPDATE MessageRequests SET status = '\(w.requestStatus())' WHERE request_id = \(w.pick(requests) ?? 1)",
      "UPDATE MessageRequests SET created_at = '\(w.time())', to_user_id = \(c) WHERE request_id = \(w.pick(requests) ?? 1)",
      "UPDATE OR REPLACE MessageRequests SET request_id = \(w.pick(requests) ?? 1) WHERE request_id = \(w.pick(requests) ?? 2)",
      "DELETE FROM MessageRequests WHERE request_id = \(w.pick(requests) ?? 1)",
      "INSERT OR IGNORE INTO Users (id, name) VALUES (\(w.int(14...20)), 'added by hand')",
      "DELETE FROM Users WHERE id = \(w.int(14...20))",
      "UPDATE Users SET name = 'renamed', avatar_url = 'https://a.invalid/x.png' WHERE id = \(c)",
    ]
    var chosen = [w.pick(statements)!]
    let transaction = w.chance(15)
    if transaction { chosen += (0..<w.int(1...3)).map { _ in w.pick(statements)! } }
    let rollback = transaction && w.chance(50)
    let foreignKeysOff = w.chance(20)
    w.steps.append(
      "raw\(foreignKeysOff ? " (foreign keys off)" : "")\(transaction ? (rollback ? " rolled back" : " in a transaction") : ""): "
        + chosen.joined(separator: "; "))
    if foreignKeysOff { try w.other.execute("PRAGMA foreign_keys = OFF") }
    defer { try? w.other.execute("PRAGMA foreign_keys = ON") }
    if transaction { try w.other.execute("BEGIN IMMEDIATE") }
    for sql in chosen {
      do { try w.other.execute(sql) } catch let error as SQLiteError
        where error.code == SQLiteError.ResultCode.constraint
      {
        w.steps.append("  refused: \(error.message)")
        // SQLite 3.40's FTS5 keeps a read handle on its index open after a statement that
        // wrote it through a trigger fails outside a transaction, so this connection's
        // next write would be refused as busy once another connection has written. Any
        // FTS5 read closes it (docs/architecture.md, "Search"); a sqlite3 shell run per
        // statement never meets it.
        if !transaction { try SearchTestSupport.releaseSearchReaders(w.other) }
      }
    }
    if transaction { try w.other.execute(rollback ? "ROLLBACK" : "COMMIT") }
  }

  /// An NDJSON history imported: users, new messages, messages the file holds (their
  /// status can only move forward), requests new and known, in small batches.
  func importHistory(_ w: World) throws {
    var lines: [String] = []
    var known = try Set(w.chats.database.query("SELECT id FROM Users") { $0.int64(0) })
    for id in 2...Int64(w.int(2...16)) where w.chance(30) {
      lines.append(#"{"type":"user","id":\#(id),"name":"imported \#(id)"}"#)
      known.insert(id)
    }
    let contacts = known.filter { $0 != Self.owner }.sorted()
    let existing = try w.chats.database.query(
      "SELECT id, from_user_id, to_user_id, content, created_at FROM Messages WHERE (from_user_id = 1) <> (to_user_id = 1)"
    ) { ($0.int64(0), $0.int64(1), $0.int64(2), $0.string(3), $0.string(4)) }
    func message(_ id: Int64, _ from: Int64, _ to: Int64, _ content: String, _ createdAt: String) -> String {
      #"{"type":"message","id":\#(id),"fromUserId":\#(from),"toUserId":\#(to),"status":"\#(w.status().rawValue)","createdAt":"\#(createdAt)","content":\#(Self.json(content))}"#
    }
    let count = w.chance(30) ? w.int(64...150) : w.int(0...20)
    for _ in 0..<count {
      if w.chance(25), let old = w.pick(existing) {
        lines.append(message(old.0, old.1, old.2, old.3, old.4))
      } else if let contact = w.pick(contacts) {
        let id = w.newMessageID()
        let (from, to) = w.chance(50) ? (Self.owner, contact) : (contact, Self.owner)
        lines.append(message(id, from, to, "imported", Timestamp.string(milliseconds: MessageID.milliseconds(of: id))))
      }
    }
    for _ in 0..<w.int(0...3) {
      guard let contact = w.pick(contacts) else { break }
      let status = ["DRAFT", "PENDING", "SENT", "FAILED"][w.int(0...3)]
      lines.append(
        #"{"type":"request","requestId":\#(w.int(1...500)),"toUserId":\#(contact),"content":"imported request","status":"\#(status)","createdAt":"\#(w.time())","lastModifiedAt":"\#(w.time())","lastSentAt":\#(status == "SENT" ? "\"\(w.time())\"" : "null"),"failCount":0,"nextAttemptAt":null,"failReason":null}"#
      )
    }
    let file = try w.folder.write("import-\(w.steps.count).ndjson", lines: lines)
    var options = HistoryImporter.Options()
    options.batchSize = w.int(1...100)
    options.skipBadRecords = w.chance(30)
    w.steps.append(
      "import \(lines.count) records, batches of \(options.batchSize)\(options.skipBadRecords ? ", skipping bad ones" : "")"
    )
    let db = w.chance(50) ? w.chats.database : try Database(path: w.path)
    do {
      _ = try HistoryImporter(database: db, owner: Self.owner, options: options).run(ByteSource.open(path: file))
    } catch let error as ImportError where error.kind == .badInput {
      w.steps.append("  stopped: \(error)")
    }
    #expect(db.triggersEnabled, "the importer turns its connection's triggers back on")
  }

  /// `text` as a JSON string.
  static func json(_ text: String) -> String {
    let data = try! JSONSerialization.data(withJSONObject: [text], options: [.fragmentsAllowed])
    return String(decoding: data.dropFirst().dropLast(), as: UTF8.self)
  }

  /// `chatdb evict` with one of its policies, on a connection of its own.
  func evict(_ w: World) throws {
    var policy = EvictionPolicy()
    policy.now = Date(timeIntervalSince1970: Double(w.clock) / 1000)
    switch w.int(0...4) {
    case 0: policy.olderThan = Int64(w.int(1...40)) * 86_400_000
    case 1: policy.conversations = [w.contact(), w.contact()]
    case 2:
      policy.olderThan = Int64(w.int(1...40)) * 86_400_000
      policy.keepLast = w.int(1...5)
    case 3:
      policy.maxSize = FileSystem.databaseSize(atPath: w.path) * Int64(w.int(50...95)) / 100
      policy.leastRecent = w.chance(50)
    default:
      policy.conversations = [w.contact()]
      policy.olderThan = Int64(w.int(1...40)) * 86_400_000
    }
    var options = Evictor.Options()
    options.fixedChunkRows = w.int(1...60)
    options.politePauseMillis = 0
    w.steps.append("evict \(policy), chunks of \(options.fixedChunkRows!)")
    let db = try Database(path: w.path)
    _ = try Evictor(database: db, options: options).run(policy)
    #expect(db.triggersEnabled, "the evictor turns its connection's triggers back on")
  }

  // MARK: - Other properties

  /// Migration 0004 computes the summaries of a file's existing rows.
  @Test(arguments: [1, 2, 3])
  func theMigrationBackfillsTheSummaries(fromVersion version: Int) throws {
    let folder = try HistoryFolder()
    let path = folder.file("chats-1.db")
    _ = try Migrator().migrate(fileAt: path, to: version, owner: 1)
    var db: Database! = try Database(path: path)
    try db.execute("INSERT INTO Users (id, name) VALUES (1, 'Me'), (2, 'Ada'), (3, 'Bo'), (4, 'Cy')")
    let columns = version >= 2 ? ", conversation_id" : ""
    func conversation(_ c: Int64) -> String { version >= 2 ? ", \(c)" : "" }
    try db.execute(
      """
      INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at\(columns)) VALUES
        (10, 2, 1, 'a', 'SYNCED', '2026-01-01T00:00:01.000Z'\(conversation(2))),
        (20, 1, 2, 'b', 'READ', '2026-01-01T00:00:02.000Z'\(conversation(2))),
        (15, 3, 1, 'c', 'DELIVERED', '2026-01-01T00:00:03.000Z'\(conversation(3))),
        (16, 3, 1, 'd', 'READ', '2026-01-01T00:00:00.000Z'\(conversation(3)))
      """)
    // Version 3 added requests' created_at (0003 set it to last_modified_at).
    let createdAt = version >= 3 ? ", created_at" : ""
    func at(_ time: String) -> String { version >= 3 ? ", '\(time)'" : "" }
    try db.execute(
      """
      INSERT INTO MessageRequests (request_id, to_user_id, content, status, last_modified_at\(createdAt))
      VALUES (1, 4, 'p', 'PENDING', '2026-01-01T00:00:05.000Z'\(at("2026-01-01T00:00:05.000Z"))),
        (2, 2, 'd', 'DRAFT', '2027-01-01T00:00:00.000Z'\(at("2027-01-01T00:00:00.000Z")))
      """)
    db = nil  // closed: migrate needs the file to itself
    _ = try Migrator().migrate(fileAt: path, owner: 1)
    let chats = try ChatRepository(database: Database(path: path), ownerID: 1)
    let listed = try chats.conversations()
    #expect(listed == (try Self.oracle(chats.database)))
    // Contact 4 by its request; 2 by message 20; 3 last: its newest id (16) is its oldest time.
    #expect(listed.map(\.contact.id) == [4, 2, 3])
    #expect(listed.map(\.unreadCount) == [0, 1, 1])
  }

  /// `chatdb check` finds summaries that differ from the tables (written by hand, or
  /// by a program that turned triggers off).
  @Test func checkFindsASummaryThatDiffers() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    try fill(db)
    #expect(!HealthCheck().check(path: db.path).findings.contains { $0.check == "conversation-summary" })
    try db.execute("UPDATE ConversationSummaries SET unread_count = unread_count + 7 WHERE conversation_id = 2")
    let finding = HealthCheck().check(path: db.path).findings.first { $0.check == "conversation-summary" }
    #expect(finding?.count == 1 && finding?.severity == .error)
    #expect(finding?.detail.hasSuffix(": 2") == true, "\(finding?.detail ?? "")")
  }

  /// The list reads a page of the summary's index and the rows it names by key, never
  /// every contact: its plan is the same at 10 contacts and at 2,000.
  @Test func theFirstPageDoesNotScanUsersOrMessages() throws {
    let folder = try HistoryFolder()
    let db = try folder.database()
    var options = HistoryGenerator.Options(owner: 1, contacts: 2_000, messages: 6_000, seed: 5)
    options.pending = 30
    _ = try RecordWriter(database: db, owner: 1).write { emit in try HistoryGenerator(options).generate(emit) }
    for analyzed in [false, true] {
      if analyzed { try db.execute("ANALYZE") }
      let plan = try HotQuery.conversationList.plan(in: db)
      #expect(plan.first == "SCAN s USING COVERING INDEX ConversationSummaries_by_activity", "\(plan)")
      #expect(plan.dropFirst().allSatisfy { $0.hasPrefix("SEARCH") && $0.contains("PRIMARY KEY") }, "\(plan)")
      #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(plan)")
    }
  }
}

/// A seeded generator (as in ChatStoreTests' property tests), so a failing sequence
/// can be replayed from its seed.
struct SplitMix64: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
