import Foundation

/// The chat data layer over one user's file: what `chat-sync` writes through and what
/// a UI (or `chatdb`) reads.
///
/// Every operation is one transaction. Those the network can repeat (acknowledge,
/// receive, status events) are idempotent, and a message status only moves forward.
///
/// ```swift
/// let chats = try ChatRepository(database: Database(path: "chats-1.db"), ownerID: 1)
/// let request = try chats.send(to: 7, content: "Hello")
/// // … the relay answers with message 123456 …
/// try chats.acknowledge(Message(id: 123456, fromUserID: 1, toUserID: 7, content: "Hello",
///                               createdAt: request.createdAt), requestID: request.requestID)
/// ```
public final class ChatRepository {
  /// The connection; use it from one thread.
  public let database: Database
  /// Whose file this is.
  public let ownerID: Int64
  /// The clock, injectable for tests.
  public var now: () -> Date = Date.init

  /// Opens the repository over a file at the latest schema version.
  ///
  /// The file's recorded owner must match `ownerID` (a file records its owner the first
  /// time a repository opens it).
  public init(database: Database, ownerID: Int64) throws {
    self.database = database
    self.ownerID = ownerID
    try Migrator.requireLatest(database, for: "the chat data layer")
    // What the user deletes (a message for everyone or for this device, an acknowledged
    // request's text) leaves no bytes behind: SQLite overwrites what it frees with zeros.
    try database.execute("PRAGMA secure_delete = ON")
    if let recorded = try database.int64(StoreInfoSQL.owner) {
      guard recorded == ownerID else {
        throw StoreError(
          .badInput, "\(database.path) belongs to user \(recorded), not \(ownerID)", path: database.path)
      }
    } else {
      try database.execute(StoreInfoSQL.recordOwner, [ownerID])
    }
  }

  /// Opens (creating or migrating as needed) `chats-<owner>.db` in a data folder.
  public static func open(user ownerID: Int64, in dataDirectory: String) throws -> ChatRepository {
    let path = StoreLocation.path(forUser: ownerID, in: dataDirectory)
    if !FileSystem.exists(dataDirectory) { try FileSystem.createPrivateDirectory(atPath: dataDirectory) }
    try StoreLocation.requireInsideDataFolder(path, dataDirectory: dataDirectory)
    _ = try Migrator().migrate(fileAt: path, owner: ownerID)
    return try ChatRepository(database: Database(path: path), ownerID: ownerID)
  }

  var timestamp: String { Timestamp.string(now()) }

  // MARK: - Users

  /// Inserts or updates a contact; a known last-seen time never moves back.
  public func upsert(_ user: User) throws {
    try database.write { db in try upsert(user, in: db) }
  }

  func upsert(_ user: User, in db: Database) throws {
    try db.execute(HotQuery.upsertUser.sql, [user.id, user.name, user.avatarURL, user.lastConnectedAt])
  }

  /// Records a contact's presence (the last time they were online).
  public func updatePresence(of userID: Int64, lastConnectedAt: String) throws {
    try database.write { db in
      try db.execute(HotQuery.updatePresence.sql, [userID, lastConnectedAt])
    }
  }

  /// A user by id.
  public func user(_ id: Int64) throws -> User? {
    try database.cachedStatement(HotQuery.userByID.sql).first([id]) { HotQuery.user($0) }
  }

  // MARK: - Sending

  /// Stores a new message to send (PENDING, due now) with a request id never used
  /// before in this file. It shows at once in the timeline and the conversation list.
  /// `attachments` are files added to ``mediaFolder`` already: the outbox uploads them
  /// before it posts the message.
  @discardableResult
  public func send(to recipient: Int64, content: String, attachments: [Attachment] = []) throws -> MessageRequest {
    try send(to: recipient, content: content, attachments: attachments) {}
  }

  /// ``send(to:content:attachments:)``, running `placing` (the files' naming) in its transaction.
  func send(to recipient: Int64, content: String, attachments: [Attachment], placing: () throws -> Void) throws
    -> MessageRequest
  {
    guard recipient != ownerID else {
      throw StoreError(.badInput, "user \(ownerID) cannot send a message to themselves", path: database.path)
    }
    let at = timestamp
    return try database.write { db in
      // Request ids rise in the file and start from the clock's MessageID: a new file
      // for the same user (a new device, a restored backup) never reuses an id the
      // relay still remembers (it keeps them 7 days and refuses a reused one with 409).
      let requestID = try nextRequestID(at: at, db)
      let request = MessageRequest(
        requestID: requestID, toUserID: recipient, content: content, status: .pending, createdAt: at,
        lastModifiedAt: at, failCount: 0, nextAttemptAt: at)
      do {
        try db.execute(HotQuery.insertRequest.sql, [requestID, recipient, content, at])
        // Its media, whose files are in the media folder (or placed now, `StagedMedia`).
        try placing()
        let media = try Self.storeMedia(attachments, state: .local, at: at, db)
        let insert = try db.cachedStatement(HotQuery.insertRequestAttachment)
        for (position, (attachment, id)) in zip(attachments, media).enumerated() {
          try insert.execute([requestID, position, id, attachment.thumbnail])
        }
      } catch let error as SQLiteError where error.extendedCode == SQLiteError.ResultCode.constraintForeignKey {
        throw StoreError(.badInput, "user \(recipient) is not a contact in \(db.path)", path: db.path)
      }
      return request
    }
  }

  /// Requests due for sending at `date`: PENDING ones, SENT ones whose reply is
  /// overdue, and FAILED ones whose backoff has passed, while `failCount` is below
  /// `maxAttempts`; oldest first per conversation.
  public func dueRequests(at date: Date? = nil, maxAttempts: Int = 10, limit: Int = 100) throws -> [MessageRequest] {
    let at = Timestamp.string(date ?? now())
    return try database.read { db in
      try db.query(HotQuery.dueRequests.sql, [at, maxAttempts, limit], HotQuery.request)
    }
  }

  /// Marks requests SENT in one transaction; if no reply comes within `replyTimeout` each
  /// is due again (the relay deduplicates by request id). Returns those marked (one that
  /// is gone, already acknowledged, is not).
  @discardableResult
  public func markSent(_ requestIDs: [Int64], replyTimeout: TimeInterval = 30) throws -> Set<Int64> {
    let date = now()
    let sent = Timestamp.string(date)
    let due = Timestamp.string(date.addingTimeInterval(replyTimeout))
    return try database.write { db in
      let statement = try db.cachedStatement(HotQuery.markRequestSent.sql)
      var marked: Set<Int64> = []
      for id in requestIDs {
        try statement.execute([id, sent, due])
        if db.changes > 0 { marked.insert(id) }
      }
      return marked
    }
  }

  /// ``markSent(_:replyTimeout:)`` for one request: whether it was marked.
  @discardableResult
  public func markSent(_ requestID: Int64, replyTimeout: TimeInterval = 30) throws -> Bool {
    let date = now()
    return try database.write { db in
      try db.execute(
        HotQuery.markRequestSent.sql,
        [requestID, Timestamp.string(date), Timestamp.string(date.addingTimeInterval(replyTimeout))])
      return db.changes > 0
    }
  }

  /// Records a failed attempt: increments `failCount`, keeps the reason, and schedules
  /// the next attempt at `retryAt`, or never (a permanent failure) when it is nil.
  @discardableResult
  public func markFailed(_ requestID: Int64, reason: String, retryAt: Date?) throws -> Bool {
    let at = timestamp
    return try database.write { db in
      try db.execute(
        HotQuery.markRequestFailed.sql,
        [requestID, reason, at, retryAt.map(Timestamp.string)])
      return db.changes > 0
    }
  }

  /// Puts a failed request back in line now, at the user's request ("tap to retry").
  @discardableResult
  public func retry(_ requestID: Int64) throws -> Bool {
    let at = timestamp
    return try database.write { db in
      try db.execute(HotQuery.retryRequest.sql, [requestID, at])
      return db.changes > 0
    }
  }

  /// Deletes one FAILED request, at the user's explicit request only. Returns false
  /// (and deletes nothing) when the request is not failed.
  @discardableResult
  public func deleteFailedRequest(_ requestID: Int64) throws -> Bool {
    try database.write { db in
      try db.execute(HotQuery.deleteFailedRequest.sql, [requestID])
      return db.changes > 0
    }
  }

  /// A request by id.
  public func request(_ requestID: Int64) throws -> MessageRequest? {
    try database.cachedStatement(HotQuery.requestByID.sql)
      .first([requestID], HotQuery.request)
  }

  // MARK: - Receiving

  /// The relay acknowledged requests with their messages (a batch): in one transaction
  /// each request is deleted and its message stored, and the message cursor raised to
  /// `messageCursor` when given.
  public func acknowledge(_ accepted: [(message: Message, requestID: Int64)], messageCursor: Int64?) throws {
    let messages = accepted.map { message, requestID in
      var message = message
      message.requestID = requestID
      return message
    }
    try database.write { db in
      if messages.count >= Self.bulkReceiveThreshold {
        try storeInBulk(messages, settling: accepted.map(\.requestID), in: db)
      } else {
        for message in messages {
          try store(message, in: db)
          try db.execute(HotQuery.deleteRequest.sql, [message.requestID])
        }
      }
      if let messageCursor { try raise("sync_message_cursor", to: messageCursor, db) }
    }
  }

  /// The relay acknowledged a request with `message`: in one transaction the request
  /// is deleted and the message stored. Repeating it, or receiving the same message
  /// through sync first, leaves exactly one message and no request.
  public func acknowledge(_ message: Message, requestID: Int64, messageCursor: Int64? = nil) throws {
    var message = message
    message.requestID = requestID
    try database.write { db in
      try store(message, in: db)
      try db.execute(HotQuery.deleteRequest.sql, [requestID])
      if let messageCursor { try raise("sync_message_cursor", to: messageCursor, db) }
    }
  }

  /// Stores messages from sync or the socket. A message already stored keeps its row;
  /// its status can only move forward. A message of the owner's that carries its
  /// request id also settles that request.
  public func receive(_ messages: [Message]) throws {
    guard !messages.isEmpty else { return }
    try database.write { db in try store(messages, in: db) }
  }

  func store(_ messages: [Message], in db: Database) throws {
    for var message in messages {
      if let requestID = try requestSettled(by: &message, db) {
        try db.execute(HotQuery.deleteRequest.sql, [requestID])
      }
      try store(message, in: db)
      if message.fromUserID != ownerID && message.status == .synced {
        // Acknowledged to the relay until it confirms, whatever the status becomes here.
        try db.execute(HotQuery.rememberDeliveryAck.sql, [message.id])
      }
    }
  }

  /// Stores one message.
  public func receive(_ message: Message) throws { try receive([message]) }

  /// A message this device sent, fetched before its answer came (or in a file that lost
  /// its outbox): it completes its request only if it is that request's message (the
  /// request id is returned, for the caller to delete); otherwise the request id means
  /// nothing here and is cleared when another message holds it.
  func requestSettled(by message: inout Message, _ db: Database) throws -> Int64? {
    guard message.fromUserID == ownerID, let requestID = message.requestID else { return nil }
    if try db.int64(HotQuery.matchingRequest.sql, [requestID, message.toUserID, message.content]) != nil {
      return requestID
    }
    if let holder = try db.int64(HotQuery.messageByRequest.sql, [ownerID, requestID]), holder != message.id {
      message.requestID = nil
    }
    return nil
  }

  private func store(_ message: Message, in db: Database) throws {
    guard message.fromUserID != message.toUserID else {
      throw StoreError(
        .badInput, "message \(message.id) is from user \(message.fromUserID) to themselves", path: db.path)
    }
    guard message.fromUserID == ownerID || message.toUserID == ownerID else {
      throw StoreError(
        .badInput,
        "message \(message.id) is between users \(message.fromUserID) and \(message.toUserID), not with \(ownerID)",
        path: db.path)
    }
    var status = message.status
    if message.fromUserID == ownerID {
      // Receipts that came before the message itself.
      let conversation = message.toUserID
      if let marks = try db.cachedStatement(HotQuery.receiptMarks.sql).first([conversation], HotQuery.marks) {
        if marks.read >= message.id {
          status = .read
        } else if marks.delivered >= message.id {
          status = max(status, .delivered)
        }
      }
      if let early = try db.string(HotQuery.takeEarlyReceipt.sql, [message.id]),
        let earlyStatus = MessageStatus(rawValue: early)
      {
        status = max(status, earlyStatus)
      }
    }
    try db.execute(
      HotQuery.storeMessage.sql,
      [
        message.id, message.fromUserID, message.toUserID, message.content, status.rawValue,
        message.createdAt, message.conversationID(owner: ownerID), message.requestID, message.version,
        message.editedAt, message.deletedAt,
      ])
    try storeAttachments(of: message, db)
    for earlier in message.history {
      try db.execute(
        HotQuery.storeEarlierVersion.sql, [message.id, earlier.version, earlier.content, earlier.editedAt])
    }
  }

  // MARK: - Receipts

  /// Moves one message forward to `status` (a delivery or read receipt). A receipt
  /// for a message not stored yet is kept and applied when it arrives. Returns false
  /// when nothing changed now.
  @discardableResult
  public func apply(_ status: MessageStatus, toMessage id: Int64) throws -> Bool {
    try database.write { db in try apply(status, toMessage: id, db) }
  }

  func apply(_ status: MessageStatus, toMessage id: Int64, _ db: Database) throws -> Bool {
    try db.execute(HotQuery.statusOfMessage(status).sql, [id, status.rawValue])
    if db.changes > 0 { return true }
    if try db.int64(HotQuery.messageExists.sql, [id]) == nil {
      try db.execute(HotQuery.keepEarlyReceipt.sql, [id, status.rawValue])
    }
    return false
  }

  /// Moves every message the owner sent in a conversation, up to and including
  /// `id`, forward to `status` ("read up to N"). The mark is kept for messages that
  /// arrive later. Returns how many stored messages changed.
  @discardableResult
  public func apply(_ status: MessageStatus, upTo id: Int64, inConversation conversation: Int64) throws -> Int {
    try database.write { db in try apply(status, upTo: id, inConversation: conversation, db) }
  }

  @discardableResult
  func apply(_ status: MessageStatus, upTo id: Int64, inConversation conversation: Int64, _ db: Database) throws -> Int
  {
    guard status > .synced else { return 0 }
    try db.execute(HotQuery.raiseReceiptMark(status).sql, [conversation, id])
    try db.execute(HotQuery.statusUpTo(status).sql, [conversation, id])
    return db.changes
  }

  /// Marks a conversation's incoming messages read. Returns the highest id newly
  /// read (what the read receipt carries), or nil when nothing was unread.
  @discardableResult
  public func markRead(conversation: Int64) throws -> Int64? {
    try database.write { db in
      var highest: Int64?
      try db.cachedStatement(HotQuery.markConversationRead.sql).forEachRow([conversation]) {
        let id = HotQuery.messageID($0)
        highest = max(highest ?? id, id)
      }
      return highest
    }
  }

  /// Incoming messages of a conversation not yet read.
  public func unreadCount(conversation: Int64) throws -> Int {
    Int(try database.int64(HotQuery.unreadCount.sql, [conversation]) ?? 0)
  }

  // MARK: - Queries

  /// The chat list: contacts with messages or unsent requests, newest activity first.
  ///
  /// One statement, so one snapshot without a transaction of its own; its cost is that of
  /// the page, whatever the number of contacts (see `HotQuery.conversationList`).
  public func conversations(limit: Int = 100) throws -> [ConversationPreview] {
    var list: [ConversationPreview] = []
    list.reserveCapacity(min(max(limit, 0), 1_000))
    try database.cachedStatement(HotQuery.conversationList.sql).forEachRow([limit]) { row in
      list.append(HotQuery.conversationPreview(row))
    }
    return list
  }

  /// A page of a conversation's timeline, oldest first.
  ///
  /// With no cursor it is the newest page; `before:` reads the page above a cursor and
  /// `after:` the page below it. Pages are keyset reads on indexes: their cost does not
  /// grow with how deep in the history they are.
  public func timeline(
    conversation: Int64, before: TimelineCursor? = nil, after: TimelineCursor? = nil, limit: Int = 50
  ) throws -> TimelinePage {
    precondition(before == nil || after == nil, "page in one direction at a time")
    precondition(limit > 0, "a page holds at least one item")
    return try database.read { db in
      if let after {
        return try page(after: after, conversation: conversation, limit: limit, db)
      }
      return try page(before: before, conversation: conversation, limit: limit, db)
    }
  }

  private func page(before cursor: TimelineCursor?, conversation: Int64, limit: Int, _ db: Database) throws
    -> TimelinePage
  {
    // Walk backwards: requests first (they sit at the end), then messages; one extra
    // row tells whether there is more.
    var items: [TimelineItem] = []
    var messageBound = Int64.max
    switch cursor.backwardStart {
    case .requests(let createdAt, let requestID):
      items += try db.query(HotQuery.requestsBefore.sql, [conversation, createdAt, requestID, limit + 1]) {
        TimelineItem.request(HotQuery.request($0))
      }
    case .messages(let id):
      messageBound = id
    }
    if items.count <= limit {
      items += try db.query(HotQuery.messagesBefore.sql, [conversation, messageBound, limit + 1 - items.count]) {
        TimelineItem.message(HotQuery.message($0))
      }
    }
    let hasOlder = items.count > limit
    items = Array(items.prefix(limit).reversed())
    let hasNewer =
      try cursor != nil && !items.isEmpty && hasItems(after: items.last!.cursor, conversation: conversation, db)
    return TimelinePage(
      items: items, older: hasOlder ? items.first?.cursor : nil, newer: hasNewer ? items.last?.cursor : nil)
  }

  private func page(after cursor: TimelineCursor, conversation: Int64, limit: Int, _ db: Database) throws
    -> TimelinePage
  {
    var items: [TimelineItem] = []
    var requestBound = ("", Int64.min)
    if case .message(let id) = cursor {
      items += try db.query(HotQuery.messagesAfter.sql, [conversation, id, limit + 1]) {
        TimelineItem.message(HotQuery.message($0))
      }
    } else if case .request(let createdAt, let requestID) = cursor {
      requestBound = (createdAt, requestID)
    }
    if items.count <= limit {
      items += try db.query(
        HotQuery.requestsAfter.sql, [conversation, requestBound.0, requestBound.1, limit + 1 - items.count]
      ) { TimelineItem.request(HotQuery.request($0)) }
    }
    let hasNewer = items.count > limit
    items = Array(items.prefix(limit))
    return TimelinePage(
      items: items, older: items.isEmpty ? nil : items.first?.cursor, newer: hasNewer ? items.last?.cursor : nil)
  }

  private func hasItems(after cursor: TimelineCursor, conversation: Int64, _ db: Database) throws -> Bool {
    try !page(after: cursor, conversation: conversation, limit: 1, db).items.isEmpty
  }
}

@available(*, unavailable)
extension ChatRepository: Sendable {}
