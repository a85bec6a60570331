import Foundation

/// What the sync client keeps in the file besides messages and requests: its cursors
/// (in `StoreInfo`, so they survive restarts and `chatdb evict`), the outbox's queue
/// heads, and the incoming messages whose delivery the relay has not yet confirmed.
extension ChatRepository {
  /// Where sync resumes: the last message id fetched by `GET /v2/messages` and the
  /// last status-update sequence stored.
  public struct SyncCursor: Hashable, Sendable {
    public var messages: Int64
    public var updates: Int64
    public init(messages: Int64 = 0, updates: Int64 = 0) {
      self.messages = messages
      self.updates = updates
    }
  }

  /// The stored cursor (zeros before the first sync).
  public func syncCursor() throws -> SyncCursor {
    try database.read { db in
      SyncCursor(
        messages: try db.int64(StoreInfoSQL.value, ["sync_message_cursor"]) ?? 0,
        updates: try db.int64(StoreInfoSQL.value, ["sync_update_cursor"]) ?? 0)
    }
  }

  /// Stores a page of synced messages, the profiles of their senders and the message
  /// cursor in one transaction: a crash leaves all of it or none. The cursor only moves
  /// forward. A message already stored (or twice in `messages`) is dropped: its row
  /// stays as it is. Returns the messages stored now, in order.
  @discardableResult
  public func receive(_ messages: [Message], users: [User], messageCursor: Int64?) throws -> [Message] {
    try database.write { db in
      for user in users { try upsert(user, in: db) }
      let exists = try db.cachedStatement(HotQuery.messageExists.sql)
      let hidden = try db.cachedStatement(HotQuery.messageHidden.sql)
      var seen: Set<Int64> = []
      // A message deleted here only ("delete for me") is not stored again.
      let fresh = try messages.filter { message in
        try seen.insert(message.id).inserted && exists.first([message.id], HotQuery.messageID) == nil
          && hidden.first([message.id], HotQuery.messageID) == nil
      }
      if fresh.count >= Self.bulkReceiveThreshold {
        // This device's own messages, met in a page before their batch's answer (the
        // catch-up at a start races the first batches): each settles its request as the
        // answer would, so the page goes in bulk as an acknowledged batch does. Row by
        // row, every request deleted recomputed its conversation's summary over the rest
        // of the outbox: a sender's run that met 300 of its messages so spent 1 ms each.
        var settling: [Int64] = []
        var page = fresh
        for index in page.indices {
          if let requestID = try requestSettled(by: &page[index], db) { settling.append(requestID) }
        }
        try storeInBulk(page, settling: settling, in: db)
      } else {
        try store(fresh, in: db)
      }
      if let messageCursor { try raise("sync_message_cursor", to: messageCursor, db) }
      return fresh
    }
  }

  /// Pages (and acknowledged batches) at least this long are stored as bulk jobs store
  /// theirs (see `storeInBulk`).
  static let bulkReceiveThreshold = 32

  /// Stores a catch-up page, or an acknowledged batch of sent messages, as import does:
  /// with this connection's triggers off, the chat list and the search index kept exact
  /// per page (`ConversationSummaryUpkeep`, `SearchIndexUpkeep`) in the same transaction.
  /// Row by row, the triggers (the search index's above all) cost a new device most of
  /// its first sync, and a sender most of its backlog. `settling` are the requests the
  /// messages answer: deleted with their index entries, their conversations' summaries
  /// recomputed. A message already stored goes the triggers' way (its row may change
  /// status).
  func storeInBulk(_ messages: [Message], settling requestIDs: [Int64] = [], in db: Database) throws {
    let summaries = try ConversationSummaryUpkeep(database: db)
    let search = try SearchIndexUpkeep(database: db)
    // Messages already stored go the triggers' way (a row may change status), all at
    // once: turning triggers on or off expires every prepared statement of the
    // connection, and doing it per stored message cost a sender whose catch-up page
    // had stored 300 of its messages before their batch's answer about 1 ms each.
    var stored: [Message] = []
    var fresh: [Message] = []
    for message in messages {
      let known =
        try db.int64(HotQuery.messageExists.sql, [message.id]) != nil
        || (message.requestID.map { try db.int64(HotQuery.messageByRequest.sql, [message.fromUserID, $0]) != nil }
          ?? false)
      if known { stored.append(message) } else { fresh.append(message) }
    }
    try search.deletingRequests(requestIDs)
    try db.setTriggersEnabled(false)
    defer { try? db.setTriggersEnabled(true) }
    if !requestIDs.isEmpty {
      let delete = try db.cachedStatement(HotQuery.deleteRequest.sql)
      // With triggers off, the request's attachments go here (the message has its own).
      let attachments = try db.cachedStatement(HotQuery.deleteRequestAttachments)
      for id in requestIDs {
        try delete.execute([id])
        try attachments.execute([id])
      }
      for conversation in Set(messages.map { $0.conversationID(owner: ownerID) }) {
        summaries.changed(conversation: conversation)
      }
    }
    if !stored.isEmpty {
      try db.setTriggersEnabled(true)
      try store(stored, in: db)
      try db.setTriggersEnabled(false)
    }
    for message in fresh {
      try store([message], in: db)
      let incoming = message.fromUserID != ownerID
      summaries.inserted(
        conversation: message.conversationID(owner: ownerID), id: message.id, createdAt: message.createdAt,
        unread: incoming && message.status != .read)
      try search.insertedMessage(id: message.id, content: message.content)
    }
    try summaries.apply()
    try search.flush()
  }

  /// A status update as the file applies it: `status` for the owner's message
  /// `messageID` (`read` covers the conversation up to it), or nil: the owner read
  /// `conversation` up to `messageID` on another of their devices; or an edit (`edit`)
  /// or a delete for everyone (`deletedAt`) of message `messageID`.
  public struct StatusChange: Sendable, Equatable {
    public var status: MessageStatus?
    public var messageID: Int64
    public var conversation: Int64
    /// A new version of the message's text: its number, its text (nil once the relay
    /// erased it: a delete follows) and when it was made.
    public var edit: (version: Int64, content: String?, at: String)? {
      get { editVersion.map { ($0, editContent, editedAt ?? "") } }
      set {
        editVersion = newValue?.version
        editContent = newValue?.content
        editedAt = newValue?.at
      }
    }
    private var editVersion: Int64?
    private var editContent: String?
    private var editedAt: String?
    /// When the message was deleted for everyone.
    public var deletedAt: String?

    public init(status: MessageStatus?, messageID: Int64, conversation: Int64) {
      self.status = status
      self.messageID = messageID
      self.conversation = conversation
    }
  }

  /// Applies status updates in one transaction and, when `sequence` is given, moves the
  /// update cursor forward to it in the same one. A read elsewhere counts the
  /// conversation's incoming messages up to there as read, and a receipt queued here
  /// that it covers is not sent. Edits apply in version order; a delete erases (the
  /// transaction runs with `secure_delete`). Returns whether a delete erased text, for the
  /// caller to run ``eraseResidue()``.
  @discardableResult
  public func applyUpdates(_ changes: [StatusChange], sequence: Int64?) throws -> Bool {
    let write: ((Database) throws -> Bool) throws -> Bool =
      changes.contains { $0.deletedAt != nil } ? { try self.erasing($0) } : { try self.database.write($0) }
    return try write { db in
      var erased = false
      for change in changes {
        if let deletedAt = change.deletedAt {
          if try Self.applyDelete(of: change.messageID, deletedAt: deletedAt, db) { erased = true }
          continue
        }
        if let edit = change.edit {
          if let content = edit.content {
            _ = try Self.applyEdit(
              of: change.messageID, version: edit.version, content: content, editedAt: edit.at, db)
          }
          continue
        }
        switch change.status {
        case .read?:
          try apply(.read, upTo: change.messageID, inConversation: change.conversation, db)
        case let status?:
          _ = try apply(status, toMessage: change.messageID, db)
        case nil:
          try db.execute(HotQuery.markReadElsewhere.sql, [change.conversation, change.messageID])
          try db.execute(
            StoreInfoSQL.clearValueUpTo, ["read_receipt:\(change.conversation)", change.messageID])
        }
      }
      if let sequence { try raise("sync_update_cursor", to: sequence, db) }
      return erased
    }
  }

  /// Raises the message cursor: every message of the owner's log up to `cursor` is stored.
  public func raiseMessageCursor(to cursor: Int64) throws {
    try database.write { db in try raise("sync_message_cursor", to: cursor, db) }
  }

  func raise(_ key: String, to value: Int64, _ db: Database) throws {
    try db.execute(StoreInfoSQL.raiseValue, [key, value])
  }

  /// Incoming messages the relay has not confirmed as delivered, oldest first: what the
  /// client acknowledges on every (re)connect. Kept apart from the status
  /// (`PendingDeliveryAcks`), so a message read here before the relay's confirmation
  /// came is still acknowledged, and one evicted meanwhile still leaves the relay.
  public func unacknowledgedIncoming(after: Int64 = 0, limit: Int = 500) throws -> [Int64] {
    try database.read { db in
      try db.query(HotQuery.unconfirmedDeliveryAcks.sql, [after, limit], HotQuery.messageID)
    }
  }

  /// The relay holds no message to the owner with these ids (an `error` event answering
  /// a `delivery_ack`: gone with its retention window, or never one): they are no longer
  /// acknowledged, and their status stays as it is.
  public func forgetDeliveryAcks(_ ids: [Int64]) throws {
    guard !ids.isEmpty else { return }
    try database.write { db in
      let forget = try db.cachedStatement(HotQuery.forgetDeliveryAck.sql)
      for id in ids { try forget.execute([id]) }
    }
  }

  /// The relay confirmed these incoming messages' delivery (`delivery_acknowledged`): they
  /// are no longer acknowledged, and `SYNCED` ones become `DELIVERED` (a message already
  /// read stays read).
  public func confirmDelivered(_ ids: [Int64]) throws {
    guard !ids.isEmpty else { return }
    try database.write { db in
      let forget = try db.cachedStatement(HotQuery.forgetDeliveryAck.sql)
      let statement = try db.cachedStatement(HotQuery.confirmDelivered.sql)
      for id in ids {
        try forget.execute([id])
        try statement.execute([id])
      }
    }
  }

  /// The next request to send in each conversation: the first (in the timeline's order,
  /// creation time then request id) that is neither a draft nor permanently failed,
  /// with its due time. A conversation whose head waits for its backoff waits whole, so
  /// it reaches the relay in order.
  ///
  /// The conversations are walked by a skip-scan of `MessageRequests_by_conversation`
  /// and each head is one seek on it: the cost does not grow with the backlog (reading
  /// every queued request on each step made sending a backlog of n cost n²).
  public func outboxHeads() throws -> [MessageRequest] {
    var heads: [MessageRequest] = []
    try database.cachedStatement(HotQuery.outboxHeads.sql).forEachRow { heads.append(HotQuery.request($0)) }
    return heads
  }

  /// `head` and the requests of its conversation due behind it, in order, at most
  /// `limit`: what one batch sends. Stops at the first one not due yet (a request in
  /// backoff holds back those behind it, as the head does).
  public func dueRequests(after head: MessageRequest, limit: Int) throws -> [MessageRequest] {
    let now = timestamp
    let requests = try database.read { db in
      try db.query(
        HotQuery.requestsFromHead.sql, [head.toUserID, head.createdAt, head.requestID, limit], HotQuery.request)
    }
    let due = requests.prefix { ($0.nextAttemptAt ?? now) <= now }
    return due.first?.requestID == head.requestID ? Array(due) : [head]
  }

  /// Makes SENT requests due now again without counting an attempt: the relay did not
  /// try them (``HotQuery/requeueSent``).
  public func requeue(_ requestIDs: [Int64]) throws {
    let at = timestamp
    try database.write { db in
      let statement = try db.cachedStatement(HotQuery.requeueSent.sql)
      for id in requestIDs { try statement.execute([id, at]) }
    }
  }

  /// FAILED requests, waiting for a retry or failed for good, by request id.
  public func failedRequests(limit: Int = 100) throws -> [MessageRequest] {
    try database.read { db in
      try db.query(HotQuery.failedRequests.sql, [limit], HotQuery.request)
    }
  }

  /// After a restart nothing is in flight: requests left `SENT` by a killed process are
  /// due now (the relay deduplicates by request id). Returns how many.
  @discardableResult
  public func resumeInterruptedSends() throws -> Int {
    let at = Timestamp.string(now())
    return try database.write { db in
      try db.execute(HotQuery.resumeInterruptedSends.sql, [at])
      return db.changes
    }
  }

  /// Outbox counts by status (`PENDING`, `SENT`, `FAILED`, and `permanent` for failed
  /// requests that wait for `retry`).
  public func outboxCounts() throws -> [String: Int] {
    try database.read { db in
      var counts: [String: Int] = [:]
      for (status, count) in try db.query(HotQuery.outboxCounts.sql, [], HotQuery.statusCount) {
        counts[status] = count
      }
      return counts
    }
  }

  /// Stores `user` unless a profile for that id is already there: the stand-in profile
  /// for a contact whose real one cannot be fetched yet ("user 7"), replaced by the real
  /// one through `upsert` later.
  public func addPlaceholder(_ user: User) throws {
    try database.write { db in
      try db.execute(
        HotQuery.addPlaceholderUser.sql,
        [user.id, user.name, user.avatarURL, user.lastConnectedAt])
    }
  }

  /// Counts one more failed send of `requestID` that reached the relay (toward the retry
  /// limit) and returns the count.
  public func recordFailedAnswer(_ requestID: Int64) throws -> Int {
    try database.write { db in
      try db.int64(HotQuery.recordFailedAnswer.sql, [requestID]).map(Int.init) ?? 0
    }
  }

  /// Contacts whose profile is still the stand-in ("user 7", stored when the relay would
  /// not show the real one yet), at most `limit`: the sync client asks for them again.
  public func standInContacts(limit: Int = 100) throws -> [Int64] {
    try database.read { db in
      try db.query(HotQuery.standInContacts.sql, [ownerID, limit], HotQuery.userID)
    }
  }

  /// The ids among `ids` that have no profile in the file.
  public func unknownUsers(_ ids: some Sequence<Int64>) throws -> [Int64] {
    var unknown: [Int64] = []
    for id in Set(ids).sorted() where try user(id) == nil { unknown.append(id) }
    return unknown
  }
}

// MARK: - Read receipts to send, and the client's state for `chat-sync status`

extension ChatRepository {
  /// Whether a message with this id is stored.
  public func hasMessage(_ id: Int64) throws -> Bool {
    try database.int64(HotQuery.messageExists.sql, [id]) != nil
  }

  /// Keeps "read up to `upTo`" for `conversation` until the client sends it (forward only).
  public func queueReadReceipt(conversation: Int64, upTo: Int64) throws {
    try database.write { db in try raise("read_receipt:\(conversation)", to: upTo, db) }
  }

  /// Read receipts waiting for the relay's confirmation, by conversation: `upTo` as
  /// queued, and `sendable`, what may be said now: "read up to" covers only what was
  /// read, so it stops below the conversation's oldest unread incoming message (one that
  /// arrived after the conversation was read, say). `sendable` is 0 when nothing can be.
  public func pendingReadReceipts() throws -> [(conversation: Int64, upTo: Int64, sendable: Int64)] {
    try database.read { db in
      let firstUnread = try db.cachedStatement(HotQuery.firstUnread.sql)
      return try db.query(StoreInfoSQL.readReceipts, [], StoreInfoSQL.readReceipt).filter { $0.0 > 0 }.map {
        conversation, upTo in
        let unread = try firstUnread.first([conversation], HotQuery.optionalID) ?? nil
        return (conversation, upTo, min(upTo, (unread ?? .max) - 1))
      }
    }
  }

  /// The relay's read mark for `conversation` reached `upTo`: the receipt is forgotten
  /// unless a higher one was queued (or is still waiting for an unread message).
  public func clearReadReceipt(conversation: Int64, upTo: Int64) throws {
    try database.write { db in
      try db.execute(StoreInfoSQL.clearValueUpTo, ["read_receipt:\(conversation)", upTo])
    }
  }

  /// Records a fact of the sync client's state (`sync_state`, `last_sync_at`…) for `status`.
  public func setSyncInfo(_ key: String, _ value: String) throws {
    try database.write { db in
      try db.execute(StoreInfoSQL.setValue, [key, value])
    }
  }

  /// A fact recorded by `setSyncInfo`.
  public func syncInfo(_ key: String) throws -> String? {
    try database.string(StoreInfoSQL.value, [key])
  }

  /// Requests failed for a passing reason become due now (the relay is reachable again).
  @discardableResult
  public func retryFailedNow() throws -> Int {
    let at = Timestamp.string(now())
    return try database.write { db in
      try db.execute(HotQuery.retryFailedNow.sql, [at])
      return db.changes
    }
  }
}
