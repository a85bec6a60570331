import ChatProtocol
import ChatStore

// MARK: - Posting

/// What `RelayStore.post` did: the message, and where it sits in its parties' logs when
/// it is new (nil for a retry that replays it).
public struct Posted: Sendable, Hashable {
  /// The message (with its sending device and request id).
  public var message: RelayMessage
  /// Where it was written; nil when a retry replayed it.
  public var place: LogPlace?
  /// Whether this call stored it (not a replay).
  public var isNew: Bool { place != nil }
}

/// Where a new message sits in its two parties' logs: the id before it in each, which
/// its `new_message` events and its `201` answer carry as `previousId`.
public struct LogPlace: Sendable, Hashable {
  /// The message before it in the sender's log (0 before the sender's first).
  public var sender: Int64
  /// The message before it in the recipient's log.
  public var recipient: Int64
}

extension RelayStore {
  /// Reads `RelayQuery.requestByKey` rows: id, from, to, content (or nil), created_at, digest (or nil).
  private static func recorded(_ row: Row) -> (message: RelayMessage, content: String?, digest: [UInt8]?) {
    let content = row.optionalString(3)
    return (
      RelayMessage(
        messageId: row.int64(0), fromUserId: row.int64(1), toUserId: row.int64(2), content: content ?? "",
        createdAt: row.string(4)),
      content, { if case .blob(let digest) = row.value(5) { digest } else { nil } }()
    )
  }

  /// Accepts a message from `from` to `to` and gives it the relay's id; idempotent per
  /// (`from`, `device`, `requestID`): each device numbers its own requests, so the same
  /// `requestID` from two devices of one user is two messages. Without `device`, the
  /// sender's first device (callers that know only the user: tools and tests).
  ///
  /// The message is stored once and belongs to both parties' logs. The first call with
  /// a `requestID` stores it and returns it with `place` (the message before it in each
  /// log); a retry returns that same message with `place == nil`, also after it left the
  /// relay (the idempotency record keeps its fields and the content's SHA-256, so the
  /// replay's content is the retry's own) and even if the recipient has been removed
  /// since. A retry naming another recipient or other content is refused
  /// (`RequestIDConflict`): the key was reused for a different message, which would
  /// otherwise be lost silently.
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
    createdAt: String, attachments posted: [AttachmentPost] = [], now: Int64
  ) throws -> Posted {
    guard requestID > 0 else { throw StoreError(.badInput, "requestId \(requestID) must be positive", path: path) }
    guard sender != recipient else {
      throw StoreError(
        .badInput, "toUserId \(recipient) is the sender; a message to oneself is not relayed", path: path)
    }
    // A message with attachments may have no text (a photo without a caption).
    try requireText(
      content, field: "content", maximumBytes: Self.maximumContentBytes, allowEmpty: !posted.isEmpty)
    guard createdAt.utf8.count <= Self.maximumFieldBytes, Timestamp.milliseconds(from: createdAt) != nil else {
      throw StoreError(
        .badInput, "createdAt '\(createdAt.prefix(64))' is not an ISO 8601 time such as 2026-01-31T12:00:00.000Z",
        path: path)
    }
    // The attachments' media ids are part of what a retry must repeat.
    let digest = SHA256.digest(
      posted.isEmpty
        ? Array(content.utf8)
        : Array(content.utf8) + [0] + Array(posted.map { String($0.mediaId) }.joined(separator: ",").utf8))
    return try writing("post a message from user \(sender) to") { db in
      let device = try device ?? db.int64(RelayQuery.firstDeviceOf, [sender]) ?? 0
      let attachments = try checkAttachments(posted, from: sender, db)
      if let recorded = try db.query(RelayQuery.requestByKey, [sender, device, requestID], Self.recorded).first {
        let sameContent = recorded.digest.map { $0 == digest } ?? (recorded.content == content)
        guard recorded.message.toUserId == recipient, sameContent else {
          throw RequestIDConflict(requestID: requestID, messageID: recorded.message.messageId)
        }
        var message = recorded.message
        message.content = content
        message.fromDeviceId = device
        message.requestId = requestID
        if !attachments.isEmpty { message.attachments = attachments.map(\.0) }
        return Posted(message: message, place: nil)
      }
      if let changed = try db.int64(RelayQuery.changeRecord, [sender, device, requestID]) {
        throw RequestIDConflict(requestID: requestID, messageID: changed)
      }
      try requireUser(sender, db, role: "sender")
      try requireUser(recipient, db, role: "toUserId")
      let place = LogPlace(
        sender: try db.int64(RelayQuery.logHead, [sender]) ?? 0,
        recipient: try db.int64(RelayQuery.logHead, [recipient]) ?? 0)
      let lastIssued = try db.int64(RelayQuery.lastMessageID) ?? 0
      let clock = min(max(now, MessageID.representable.lowerBound), MessageID.representable.upperBound)
      let id = max(lastIssued + 1, MessageID.make(milliseconds: clock))
      try db.execute(RelayQuery.setLastMessageID, [id])
      try db.execute(RelayQuery.setLogHeads, [id, sender, recipient])
      try db.execute(
        "INSERT INTO RelayMessages (id, from_user_id, to_user_id, content, created_at, from_device_id, request_id, attachments) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [id, sender, recipient, content, createdAt, device, requestID, attachments.count])
      for (position, (attachment, thumbnail)) in attachments.enumerated() {
        try db.execute(
          "INSERT INTO RelayAttachments (message_id, position, media_id, width, height, duration_ms, thumbnail) VALUES (?, ?, ?, ?, ?, ?, ?)",
          [id, position, attachment.mediaId, attachment.width, attachment.height, attachment.durationMs, thumbnail])
      }
      try db.execute(
        "INSERT INTO RelayRequests (from_user_id, device_id, request_id, message_id, to_user_id, content_digest, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [sender, device, requestID, id, recipient, digest, createdAt])
      try db.execute(
        "INSERT OR IGNORE INTO RelayContacts (user_id, contact_id) VALUES (?1, ?2), (?2, ?1)", [sender, recipient])
      var message = RelayMessage(
        messageId: id, fromUserId: sender, toUserId: recipient, content: content, createdAt: createdAt,
        fromDeviceId: device, requestId: requestID)
      if !attachments.isEmpty { message.attachments = attachments.map(\.0) }
      return Posted(message: message, place: place)
    }
  }

  /// Whether `device` of `sender` has a message with `requestID` on record (its idempotency
  /// record, which outlives the message): what a batch's `after` asks.
  public func hasRequest(from sender: Int64, device: Int64, requestID: Int64) throws -> Bool {
    try reading("look up request \(requestID) in") {
      try !$0.query(RelayQuery.requestByKey, [sender, device, requestID], { _ in true }).isEmpty
    }
  }

  /// The newest message id the relay has issued (0 before the first): ids only go up.
  public func lastIssuedMessageID() throws -> Int64 {
    try reading("read the last message id of") { try $0.int64(RelayQuery.lastMessageID) ?? 0 }
  }

  // MARK: - The log

  /// A page of `user`'s log: the messages they sent or received with an id above
  /// `cursor`, in id order, at most `limit` (1 to 1,000, else `.badInput`). `hasMore`
  /// says whether more follow; `next` is the cursor to ask with next (the page's last id
  /// while more follow, else the log's newest id, never below `cursor`).
  ///
  /// Each message has the status the relay knows: `READ` when its recipient read it (on
  /// any device), `DELIVERED` when a device of the recipient stored it, else `SYNCED`.
  /// The user's own messages carry their sending device and its `requestId`; an edited
  /// one, the versions its text replaced (``RelayMessage/edits``).
  public func log(for user: Int64, after cursor: Int64, limit: Int) throws -> (
    messages: [RelayMessage], hasMore: Bool, next: Int64
  ) {
    guard (1...Self.maximumPageSize).contains(limit) else {
      throw StoreError(.badInput, "limit \(limit) must be between 1 and \(Self.maximumPageSize)", path: path)
    }
    return try reading("read the log of user \(user) in") { db in
      var carrying: Set<Int64> = []
      var messages = try db.query(RelayQuery.log, [user, cursor, limit + 1]) { row in
        let own = row.int64(1) == user
        let status = row.int64(6) != 0 ? "READ" : row.int64(5) != 0 ? "DELIVERED" : RelayMessage.syncedStatus
        if row.int64(12) > 0 { carrying.insert(row.int64(0)) }
        return RelayMessage(
          messageId: row.int64(0), fromUserId: row.int64(1), toUserId: row.int64(2), content: row.string(3),
          status: status, createdAt: row.string(4), fromDeviceId: own ? row.optionalInt64(7) : nil,
          requestId: own ? row.optionalInt64(8) : nil, version: row.int64(9) > 0 ? row.int64(9) : nil,
          editedAt: row.optionalString(10), deletedAt: row.optionalString(11))
      }
      let hasMore = messages.count > limit
      if hasMore { messages.removeLast() }
      for index in messages.indices where carrying.contains(messages[index].messageId) {
        messages[index].attachments = try Self.attachments(of: messages[index].messageId, db)
      }
      for index in messages.indices where (messages[index].version ?? 0) > 0 && messages[index].deletedAt == nil {
        messages[index].edits = try db.query(RelayQuery.earlierVersions, [messages[index].messageId]) {
          RelayMessageVersion(version: $0.int64(0), content: $0.string(1), editedAt: $0.string(2))
        }
      }
      let next =
        hasMore ? messages.last?.messageId ?? cursor : max(cursor, try db.int64(RelayQuery.logHead, [user]) ?? 0)
      return (messages, hasMore, next)
    }
  }

  /// `user`'s device `device` stored its log up to `messages` and its status updates up
  /// to `updates`: its acknowledged place rises (never falls). The updates every device
  /// of the user has stored are dropped; with `retention` 0, so are the messages every
  /// device of both parties acknowledged.
  public func acknowledgeSync(user: Int64, device: Int64, messages: Int64, updates: Int64, retention: Retention)
    throws
  {
    try writing("record how far device \(device) synced in") { db in
      try db.execute(RelayQuery.raiseDeviceCursors, [device, messages, updates])
      guard db.changes > 0,
        let slowest = try db.query(RelayQuery.slowestDevice, [user], { ($0.optionalInt64(0), $0.optionalInt64(1)) })
          .first,
        let slowestMessage = slowest.0, let slowestUpdate = slowest.1
      else { return }
      try db.execute(RelayQuery.dropStatusUpdates, [user, slowestUpdate])
      if retention == .untilAcknowledged { try dropAcknowledged(of: user, upTo: slowestMessage, db) }
    }
  }

  /// Retention 0: deletes `user`'s messages up to `slowest` (their slowest device's place)
  /// that every device of the other party acknowledged too.
  private func dropAcknowledged(of user: Int64, upTo slowest: Int64, _ db: Database) throws {
    try db.execute(RelayQuery.dropAcknowledgedReceived, [user, slowest])
    try db.execute(RelayQuery.dropAcknowledgedSent, [user, slowest])
  }

  /// Deletes what the retention window no longer keeps, at most `batch` messages (and as
  /// many updates and push records) a call: messages made before `now - window`
  /// (`window` is ``Retention/longestHold`` for `.untilAcknowledged`), the status updates
  /// and push records recorded before it, and the idempotency records older than
  /// `idempotencyWindow` whose message is gone. With `.untilAcknowledged` it also deletes,
  /// for every user, the messages all devices of both parties acknowledged: what a removed
  /// device held is released here, without waiting for another device to acknowledge.
  /// Returns the messages deleted by age: a full `batch` says more may be left.
  @discardableResult
  public func sweep(now: Int64, retention: Retention, idempotencyWindow: Int64, batch: Int = 10_000) throws -> Int {
    let cutoff = now - retention.window
    let cutoffText = Timestamp.string(milliseconds: cutoff)
    return try writing("delete what the retention window left behind in") { db in
      try db.execute(RelayQuery.dropMessagesBefore, [MessageID.lowerBound(milliseconds: cutoff), batch])
      let messages = db.changes
      let updates = try db.query(RelayQuery.oldestUpdates, [batch]) { ($0.int64(0), $0.string(1)) }
      if let last = updates.prefix(while: { $0.1 < cutoffText }).last {
        try db.execute(RelayQuery.dropUpdatesUpTo, [last.0])
      }
      let pushes = try db.query(RelayQuery.oldestPushes, [batch]) { ($0.int64(0), $0.string(1)) }
      if let last = pushes.prefix(while: { $0.1 < cutoffText }).last {
        try db.execute(RelayQuery.dropPushesUpTo, [last.0])
      }
      try db.execute(RelayQuery.forgetRequests, [MessageID.lowerBound(milliseconds: now - idempotencyWindow)])
      try db.execute(RelayQuery.forgetChangeRequests, [MessageID.lowerBound(milliseconds: now - idempotencyWindow)])
      if retention == .untilAcknowledged {
        for (user, slowest) in try db.query(RelayQuery.slowestDeviceOfEachUser, [], { ($0.int64(0), $0.int64(1)) }) {
          try dropAcknowledged(of: user, upTo: slowest, db)
        }
      }
      return messages
    }
  }

  // MARK: - Delivering

  /// `user`'s device stored the messages `ids`: each one not yet delivered becomes
  /// delivered (its `delivered_at`), and its sender gets a `message_delivered` update
  /// (`conversationId` = `user`). Returns the new updates, in sequence order, for the
  /// caller to push. The message stays in both logs for the retention window.
  ///
  /// Ids of messages not addressed to `user`, unknown or already delivered (by this or
  /// another device of the user) are ignored, so acknowledging twice is a no-op. `now`
  /// stamps the updates' `at`.
  @discardableResult
  public func acknowledgeDelivery(by user: Int64, ids: [Int64], now: Int64 = RelayStore.currentMilliseconds()) throws
    -> [RelayStatusUpdate]
  {
    let at = Timestamp.string(milliseconds: now)
    return try writing("acknowledge messages for user \(user) in") { db in
      var updates: [RelayStatusUpdate] = []
      for id in Set(ids).sorted() {
        let senders = try db.query(RelayQuery.markDelivered, [id, user, at]) { $0.int64(0) }
        guard let sender = senders.first else { continue }
        updates.append(
          try recordUpdate(for: sender, type: .messageDelivered, messageId: id, conversationId: user, at: at, db))
      }
      return updates
    }
  }

  /// The ids among `ids` that name no message to `user` on the relay (never issued,
  /// another user's, or gone with the retention window).
  public func unheldMessages(to user: Int64, among ids: Set<Int64>) throws -> Set<Int64> {
    try reading("look up messages to user \(user) in") { db in
      Set(try ids.filter { try db.int64(RelayQuery.messageTo, [$0, user]) != 1 })
    }
  }

  /// `user` has read the conversation with `other` up to `messageId`: `other` (the
  /// sender side) gets a `message_read` update with `conversationId` = `user`, and
  /// `user` a `conversation_read` update (so each of their devices counts it read).
  ///
  /// A read mark covers only what the reader has: it stops below the oldest message from
  /// `other` that no device of the reader stored yet (not acknowledged with
  /// `delivery_ack`), which the reader may never have seen. A later receipt, once it
  /// was delivered and read, moves the mark past it.
  ///
  /// Forward only: returns no update and records nothing when the mark would not rise
  /// above the one already recorded for the pair. Refused: `other` == `user` or a
  /// `messageId` that is not positive or above every id issued (`.badInput`), an
  /// unknown user (`.notFound`), a pair that never exchanged a message (`.badInput`).
  @discardableResult
  public func markRead(
    by user: Int64, conversation other: Int64, upTo messageId: Int64, now: Int64 = RelayStore.currentMilliseconds()
  ) throws -> [RelayStatusUpdate] {
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
      guard upTo > mark else { return [] }
      try db.execute(
        "INSERT INTO RelayReadMarks (reader_id, sender_id, up_to) VALUES (?1, ?2, ?3) ON CONFLICT (reader_id, sender_id) DO UPDATE SET up_to = ?3",
        [user, other, upTo])
      return [
        try recordUpdate(for: other, type: .messageRead, messageId: upTo, conversationId: user, at: at, db),
        try recordUpdate(for: user, type: .conversationRead, messageId: upTo, conversationId: other, at: at, db),
      ]
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
          conversationId: row.int64(4), at: row.string(5), version: row.optionalInt64(6),
          content: row.optionalString(7))
      }
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
    try writing("forget old idempotency records in") { db in
      try db.execute(RelayQuery.forgetRequests, [messageID])
      let forgotten = db.changes
      try db.execute(RelayQuery.forgetChangeRequests, [messageID])
      return forgotten
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
