import ChatProtocol
import ChatStore

// MARK: - Posting

extension RelayStore {
  /// Reads `RelayQuery.requestByKey` and `.undelivered` rows: id, from, to, content, created_at.
  private static func message(_ row: Row) -> RelayMessage {
    RelayMessage(
      messageId: row.int64(0), fromUserId: row.int64(1), toUserId: row.int64(2), content: row.string(3),
      createdAt: row.string(4))
  }

  /// Accepts a message from `from` to `to` and gives it the relay's id; idempotent per
  /// (`from`, `device`, `requestID`): each device numbers its own requests, so the same
  /// `requestID` from two devices of one user is two messages. Without `device`, the
  /// sender's first device (callers that know only the user: tools and tests).
  ///
  /// The first call with a `requestID` stores the message and returns it with
  /// `isNew == true`. A retry returns that same message with `isNew == false`, also
  /// after it was delivered and deleted (the idempotency record keeps its fields) and
  /// even if the recipient has been removed since. A retry naming another recipient
  /// or other content is refused (`RequestIDConflict`): the key was reused for a different
  /// message, which would otherwise be lost silently.
  ///
  /// The id is `max(lastIssued + 1, MessageID.make(milliseconds: now))`, with
  /// `lastIssued` stored in the same transaction: ids rise strictly across restarts
  /// and when the clock steps back. `now` is clamped into `MessageID.representable`.
  ///
  /// Refused (`.badInput`, naming the field): `requestID` not positive, a message to
  /// oneself, content empty or over 65,536 UTF-8 bytes, `createdAt` that is not ISO 8601
  /// (`Timestamp.milliseconds(from:)`). An unknown sender or recipient is `.notFound`.
  /// The sender and the recipient become each other's contacts.
  public func post(
    from sender: Int64, device: Int64? = nil, requestID: Int64, to recipient: Int64, content: String,
    createdAt: String, now: Int64
  ) throws -> (message: RelayMessage, isNew: Bool) {
    guard requestID > 0 else { throw StoreError(.badInput, "requestId \(requestID) must be positive", path: path) }
    guard sender != recipient else {
      throw StoreError(
        .badInput, "toUserId \(recipient) is the sender; a message to oneself is not relayed", path: path)
    }
    try requireText(content, field: "content", maximumBytes: Self.maximumContentBytes)
    guard createdAt.utf8.count <= Self.maximumFieldBytes, Timestamp.milliseconds(from: createdAt) != nil else {
      throw StoreError(
        .badInput, "createdAt '\(createdAt.prefix(64))' is not an ISO 8601 time such as 2026-01-31T12:00:00.000Z",
        path: path)
    }
    return try writing("post a message from user \(sender) to") { db in
      let device = try device ?? db.int64(RelayQuery.firstDeviceOf, [sender]) ?? 0
      let recorded = try db.query(RelayQuery.requestByKey, [sender, device, requestID], Self.message).first
      if let recorded {
        guard recorded.toUserId == recipient, recorded.content == content else {
          throw RequestIDConflict(requestID: requestID, messageID: recorded.messageId)
        }
        return (recorded, false)
      }
      try requireUser(sender, db, role: "sender")
      try requireUser(recipient, db, role: "toUserId")
      let lastIssued = try db.int64(RelayQuery.lastMessageID) ?? 0
      let clock = min(max(now, MessageID.representable.lowerBound), MessageID.representable.upperBound)
      let id = max(lastIssued + 1, MessageID.make(milliseconds: clock))
      try db.execute(RelayQuery.setLastMessageID, [id])
      try db.execute(
        "INSERT INTO RelayMessages (id, from_user_id, to_user_id, content, created_at) VALUES (?, ?, ?, ?, ?)",
        [id, sender, recipient, content, createdAt])
      try db.execute(
        "INSERT INTO RelayRequests (from_user_id, device_id, request_id, message_id, to_user_id, content, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [sender, device, requestID, id, recipient, content, createdAt])
      try db.execute(
        "INSERT OR IGNORE INTO RelayContacts (user_id, contact_id) VALUES (?1, ?2), (?2, ?1)", [sender, recipient])
      return (
        RelayMessage(messageId: id, fromUserId: sender, toUserId: recipient, content: content, createdAt: createdAt),
        true
      )
    }
  }

  /// The newest message id the relay has issued (0 before the first): ids only go up.
  public func lastIssuedMessageID() throws -> Int64 {
    try reading("read the last message id of") { try $0.int64(RelayQuery.lastMessageID) ?? 0 }
  }

  // MARK: - Delivering

  /// The messages waiting for `user` with an id above `cursor`, in id order, at most
  /// `limit` (1 to 1,000, else `.badInput`); `hasMore` says whether more follow.
  ///
  /// Keyset paging: pass the last id of a page as the next `cursor`.
  public func undelivered(for user: Int64, after cursor: Int64, limit: Int) throws -> (
    messages: [RelayMessage], hasMore: Bool
  ) {
    guard (1...Self.maximumPageSize).contains(limit) else {
      throw StoreError(.badInput, "limit \(limit) must be between 1 and \(Self.maximumPageSize)", path: path)
    }
    var messages = try reading("read the messages waiting for user \(user) in") { db in
      try db.query(RelayQuery.undelivered, [user, cursor, limit + 1], Self.message)
    }
    let hasMore = messages.count > limit
    if hasMore { messages.removeLast() }
    return (messages, hasMore)
  }

  /// `user` has the messages `ids`: they leave the relay, and each sender gets a
  /// `message_delivered` update (`conversationId` = `user`). Returns the new updates,
  /// in sequence order, for the caller to push.
  ///
  /// Ids of messages not addressed to `user`, unknown or already acknowledged are
  /// ignored, so acknowledging twice is a no-op. `now` stamps the updates' `at`.
  @discardableResult
  public func acknowledgeDelivery(by user: Int64, ids: [Int64], now: Int64 = RelayStore.currentMilliseconds()) throws
    -> [RelayStatusUpdate]
  {
    let at = Timestamp.string(milliseconds: now)
    return try writing("acknowledge messages for user \(user) in") { db in
      var updates: [RelayStatusUpdate] = []
      for id in Set(ids).sorted() {
        let senders = try db.query(RelayQuery.deleteDelivered, [id, user]) { $0.int64(0) }
        guard let sender = senders.first else { continue }
        updates.append(
          try recordUpdate(for: sender, type: .messageDelivered, messageId: id, conversationId: user, at: at, db))
      }
      return updates
    }
  }

  /// `user` has read the conversation with `other` up to `messageId`: `other` (the
  /// sender side) gets a `message_read` update with `conversationId` = `user`.
  ///
  /// A read mark covers only what the reader has: it stops below the oldest message from
  /// `other` still on the relay (not yet acknowledged with `delivery_ack`), which the
  /// reader may never have seen. Such a message is neither deleted nor marked read here;
  /// a later receipt, once it was delivered and read, moves the mark past it.
  ///
  /// Forward only: returns nil and records nothing when the mark would not rise above
  /// the one already recorded for the pair. Refused: `other` == `user` or a `messageId`
  /// that is not positive or above every id issued (`.badInput`), an unknown user
  /// (`.notFound`), a pair that never exchanged a message (`.badInput`).
  @discardableResult
  public func markRead(
    by user: Int64, conversation other: Int64, upTo messageId: Int64, now: Int64 = RelayStore.currentMilliseconds()
  ) throws -> RelayStatusUpdate? {
    guard other != user else { throw StoreError(.badInput, "conversation \(other) is the reader's own id", path: path) }
    let at = Timestamp.string(milliseconds: now)
    return try writing("record a read receipt from user \(user) in") { db in
      try requireUser(user, db)
      try requireUser(other, db, role: "conversation user")
      let lastIssued = try db.int64(RelayQuery.lastMessageID) ?? 0
      guard messageId > 0, messageId <= lastIssued else {
        throw StoreError(.badInput, "messageId \(messageId) was never issued by this relay", path: path)
      }
      guard try db.int64(RelayQuery.contactExists, [user, other]) == 1 else {
        throw StoreError(.badInput, "user \(user) has no conversation with user \(other)", path: path)
      }
      var upTo = messageId
      if let undelivered = try db.int64(RelayQuery.firstUndeliveredFrom, [user, other]) {
        upTo = min(upTo, undelivered - 1)
      }
      let mark = try db.int64(RelayQuery.readMark, [user, other]) ?? 0
      guard upTo > mark else { return nil }
      try db.execute(
        "INSERT INTO RelayReadMarks (reader_id, sender_id, up_to) VALUES (?1, ?2, ?3) ON CONFLICT (reader_id, sender_id) DO UPDATE SET up_to = ?3",
        [user, other, upTo])
      return try recordUpdate(for: other, type: .messageRead, messageId: upTo, conversationId: user, at: at, db)
    }
  }

  /// How far `user` has read the conversation with `other`, as recorded (0 before any read).
  public func readMark(by user: Int64, conversation other: Int64) throws -> Int64 {
    try reading("read a read mark of") { try $0.int64(RelayQuery.readMark, [user, other]) ?? 0 }
  }

  private func recordUpdate(
    for user: Int64, type: StatusUpdate.Kind, messageId: Int64, conversationId: Int64, at: String, _ db: Database
  ) throws -> RelayStatusUpdate {
    try db.execute(
      "INSERT INTO RelayStatusUpdates (user_id, type, message_id, conversation_id, at) VALUES (?, ?, ?, ?, ?)",
      [user, type.rawValue, messageId, conversationId, at])
    return RelayStatusUpdate(
      sequence: db.lastInsertRowID, userId: user, type: type, messageId: messageId, conversationId: conversationId,
      at: at)
  }

  // MARK: - Status updates

  /// The updates waiting for `user` with a sequence above `sequence`, in order.
  public func statusUpdates(for user: Int64, after sequence: Int64) throws -> [RelayStatusUpdate] {
    try reading("read the status updates of user \(user) in") { db in
      try db.query(RelayQuery.statusUpdates, [user, sequence]) { row in
        guard let type = StatusUpdate.Kind(rawValue: row.string(2)) else {
          throw StoreError(.internalError, "status update \(row.int64(0)) has unknown type '\(row.string(2))'")
        }
        return RelayStatusUpdate(
          sequence: row.int64(0), userId: row.int64(1), type: type, messageId: row.int64(3),
          conversationId: row.int64(4), at: row.string(5))
      }
    }
  }

  /// Drops `user`'s updates up to and including `sequence`: the client has them (its
  /// cursor). Returns how many were dropped.
  @discardableResult
  public func dropStatusUpdates(for user: Int64, upTo sequence: Int64) throws -> Int {
    try writing("drop status updates of user \(user) in", singleWrite: true) { db in
      try db.execute(RelayQuery.dropStatusUpdates, [user, sequence])
      return db.changes
    }
  }

  // MARK: - Push records

  /// Records that `to` would get a push notification for `messageId`.
  @discardableResult
  public func recordPush(to user: Int64, messageId: Int64, at: String) throws -> PushRecord {
    try requireText(at, field: "at")
    return try writing("record a push for user \(user) in", singleWrite: true) { db in
      let unread = try db.int64(RelayQuery.undeliveredCount, [user]) ?? 0
      try db.execute(
        "INSERT INTO RelayPushes (to_user_id, message_id, created_at, unread) VALUES (?, ?, ?, ?)",
        [user, messageId, at, unread])
      return PushRecord(id: db.lastInsertRowID, toUserId: user, messageId: messageId, createdAt: at, unread: unread)
    }
  }

  /// Forgets the idempotency records of messages made before `messageID` (relay time,
  /// see `MessageID.lowerBound`) that are no longer on the relay: a retry older than the
  /// window gets a new message. Returns how many were forgotten.
  @discardableResult
  public func forgetRequests(before messageID: Int64) throws -> Int {
    try writing("forget old idempotency records in", singleWrite: true) { db in
      try db.execute(RelayQuery.forgetRequests, [messageID])
      return db.changes
    }
  }

  /// Push records with an id above `after`, oldest first, at most `limit`.
  public func pushes(after: Int64 = 0, limit: Int) throws -> [PushRecord] {
    guard limit >= 1 else { throw StoreError(.badInput, "limit \(limit) must be at least 1", path: path) }
    return try reading("read the push records of") { db in
      try db.query(RelayQuery.pushesAfter, [after, limit]) {
        PushRecord(
          id: $0.int64(0), toUserId: $0.int64(1), messageId: $0.int64(2), createdAt: $0.string(3), unread: $0.int64(4))
      }
    }
  }
}
