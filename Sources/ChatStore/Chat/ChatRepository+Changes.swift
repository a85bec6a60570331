import Foundation

/// An edit or a delete for everyone waiting in `MessageChanges` to be sent.
public struct MessageChange: Hashable, Sendable {
  /// What the change does.
  public enum Kind: String, Sendable {
    case edit
    case delete
  }

  /// The idempotency key (from the same counter as `MessageRequest.requestID`).
  public var requestID: Int64
  /// The owner's message it changes.
  public var messageID: Int64
  public var kind: Kind
  /// The new text of an edit; nil for a delete.
  public var content: String?
  public var createdAt: String
  public var status: MessageRequestStatus
  public var failCount: Int
  public var failReason: String?
  /// When it is due (again); nil once it failed for good.
  public var nextAttemptAt: String?
}

/// A version of a message's text that a newer one replaced (`MessageEdits`).
public struct MessageVersion: Hashable, Sendable {
  public var version: Int64
  public var content: String
  /// When this version was made (the message's `createdAt` for version 0).
  public var editedAt: String

  public init(version: Int64, content: String, editedAt: String) {
    self.version = version
    self.content = content
    self.editedAt = editedAt
  }
}

/// Editing and deleting messages (issue 29): the changes the owner queues, the ones the
/// relay numbered and sends to every device of both parties, and deleting for this device
/// only. Erasing text (a delete, for everyone or for this device) leaves none of it in
/// the file's bytes or its `-wal` once ``eraseResidue()`` ran.
extension ChatRepository {
  /// The most bytes of UTF-8 a message's text may have: the protocol's limit, which the
  /// relay, `chat-sync` and the history format all enforce.
  public static let maximumContentBytes = 65_536

  // MARK: - Queueing

  /// Queues an edit of the owner's message `messageID` (PENDING, due now). Refused: a
  /// message not in this file (`.notFound`), another user's or one deleted for everyone,
  /// or text empty or over ``maximumContentBytes`` (`.badInput`).
  @discardableResult
  public func queueEdit(of messageID: Int64, content: String) throws -> MessageChange {
    guard (1...Self.maximumContentBytes).contains(content.utf8.count) else {
      throw StoreError(
        .badInput, "the text must be 1 to \(Self.maximumContentBytes) bytes of UTF-8, not \(content.utf8.count)",
        path: database.path)
    }
    return try queue(.edit, of: messageID, content: content)
  }

  /// Queues a delete for everyone of the owner's message `messageID`; pending edits of it
  /// are dropped (a delete wins over any edit). Refused as ``queueEdit(of:content:)``.
  @discardableResult
  public func queueDelete(of messageID: Int64) throws -> MessageChange {
    try queue(.delete, of: messageID, content: nil)
  }

  private func queue(_ kind: MessageChange.Kind, of messageID: Int64, content: String?) throws -> MessageChange {
    let at = timestamp
    let path = database.path
    return try database.write { db in
      guard let message = try Self.message(messageID, db) else {
        throw StoreError(.notFound, "\(path): no message \(messageID)", path: path)
      }
      guard message.fromUserID == ownerID else {
        throw StoreError(
          .badInput, "\(path): message \(messageID) is from user \(message.fromUserID): only its sender can change it",
          path: path)
      }
      guard message.deletedAt == nil else {
        throw StoreError(.badInput, "\(path): message \(messageID) was deleted for everyone", path: path)
      }
      if kind == .delete {
        try db.execute("DELETE FROM MessageChanges WHERE message_id = ? AND kind = 'edit'", [messageID])
      }
      let requestID = try nextRequestID(at: at, db)
      try db.execute(
        "INSERT INTO MessageChanges (request_id, message_id, kind, content, created_at, status, next_attempt_at) VALUES (?, ?, ?, ?, ?, 'PENDING', ?)",
        [requestID, messageID, kind.rawValue, content, at, at])
      return MessageChange(
        requestID: requestID, messageID: messageID, kind: kind, content: content, createdAt: at, status: .pending,
        failCount: 0, nextAttemptAt: at)
    }
  }

  /// The changes waiting to be sent or failed, oldest first.
  public func messageChanges() throws -> [MessageChange] {
    try database.read { db in
      try db.query(
        Self.selectChanges + " ORDER BY request_id",
        [], Self.change)
    }
  }

  /// The head of each message's changes (its oldest one not failed for good), oldest
  /// first: one message's changes reach the relay in the order they were queued, so the
  /// relay numbers its edits in that order. A later edit never overtakes an earlier one
  /// waiting for its retry, or for the answer a killed run never got.
  public func changeHeads() throws -> [MessageChange] {
    try database.read { db in
      try db.query(
        Self.selectChanges + """
           c WHERE next_attempt_at IS NOT NULL AND request_id = (
            SELECT min(request_id) FROM MessageChanges WHERE message_id = c.message_id AND next_attempt_at IS NOT NULL)
          ORDER BY request_id
          """, [], Self.change)
    }
  }

  /// After a restart nothing is in flight: changes left SENT by a killed run are due now
  /// (the relay answers a repeated request id from its record). Returns how many.
  @discardableResult
  public func resumeInterruptedChanges() throws -> Int {
    let at = timestamp
    return try database.write { db in
      try db.execute("UPDATE MessageChanges SET next_attempt_at = ? WHERE status = 'SENT'", [at])
      return db.changes
    }
  }

  /// Marks a change SENT, due again after `replyTimeout` seconds if no answer settles it.
  public func markChangeSent(_ requestID: Int64, replyTimeout: TimeInterval) throws {
    let due = Timestamp.string(now().addingTimeInterval(replyTimeout))
    try database.write { db in
      try db.execute(
        "UPDATE MessageChanges SET status = 'SENT', next_attempt_at = ? WHERE request_id = ?", [due, requestID])
    }
  }

  /// A change failed: due again at `retryAt`, or for good (nil), with its reason.
  public func recordChangeFailure(_ requestID: Int64, reason: String, retryAt: Date?) throws {
    try database.write { db in
      try db.execute(
        "UPDATE MessageChanges SET status = 'FAILED', fail_count = fail_count + 1, fail_reason = ?, next_attempt_at = ? WHERE request_id = ?",
        [reason, retryAt.map(Timestamp.string), requestID])
    }
  }

  /// Deletes a change that failed for good (at the user's word: `chat-sync delete
  /// REQUEST_ID`); returns false, deleting nothing, for one still being sent or unknown.
  @discardableResult
  public func dropFailedChange(_ requestID: Int64) throws -> Bool {
    try database.write { db in
      try db.execute(
        "DELETE FROM MessageChanges WHERE request_id = ? AND status = 'FAILED' AND next_attempt_at IS NULL", [requestID]
      )
      return db.changes > 0
    }
  }

  /// A queued change by request id.
  public func change(_ requestID: Int64) throws -> MessageChange? {
    try database.read { db in
      try db.query(
        Self.selectChanges + " WHERE request_id = ?",
        [requestID], Self.change
      ).first
    }
  }

  /// `MessageChanges` as `change(_:)` reads it.
  private static let selectChanges =
    "SELECT request_id, message_id, kind, content, created_at, status, fail_count, fail_reason, next_attempt_at FROM MessageChanges"

  private static func change(_ row: Row) -> MessageChange {
    MessageChange(
      requestID: row.int64(0), messageID: row.int64(1), kind: MessageChange.Kind(rawValue: row.string(2)) ?? .edit,
      content: row.optionalString(3), createdAt: row.string(4),
      status: MessageRequestStatus(rawValue: row.string(5)) ?? .pending, failCount: row.int(6),
      failReason: row.optionalString(7), nextAttemptAt: row.optionalString(8))
  }

  // MARK: - Applying what the relay numbered

  /// Applies version `version` of message `messageID`'s text, made at `editedAt`; in
  /// version order whatever order they come in: a newer one replaces the text shown (which
  /// goes to the edit history), an older one goes to the history only, one already known
  /// changes nothing. A message deleted for everyone, hidden on this device, or not
  /// stored (it comes later with its newest text) is left alone; `requestID` (this
  /// device's change the relay answered) leaves the outbox in the same transaction.
  /// Returns whether anything changed.
  @discardableResult
  public func applyEdit(
    of messageID: Int64, version: Int64, content: String, editedAt: String, settling requestID: Int64? = nil
  ) throws -> Bool {
    try database.write { db in
      if let requestID { try db.execute("DELETE FROM MessageChanges WHERE request_id = ?", [requestID]) }
      return try Self.applyEdit(of: messageID, version: version, content: content, editedAt: editedAt, db)
    }
  }

  /// ``applyEdit(of:version:content:editedAt:settling:)`` in the caller's transaction, with
  /// triggers on (they keep the search index and the chat list): the one rule for every
  /// writer, `chat-sync` and `chatdb import` alike.
  public static func applyEdit(of messageID: Int64, version: Int64, content: String, editedAt: String, _ db: Database)
    throws -> Bool
  {
    guard version > 0, let message = try message(messageID, db), message.deletedAt == nil,
      version != message.version
    else { return false }
    if version < message.version {
      try db.execute(
        "INSERT INTO MessageEdits (message_id, version, content, edited_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
        [messageID, version, content, editedAt])
      return db.changes > 0
    }
    try db.execute(
      "INSERT INTO MessageEdits (message_id, version, content, edited_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
      [messageID, message.version, message.content, message.editedAt ?? message.createdAt])
    try db.execute(
      "UPDATE Messages SET content = ?, version = ?, edited_at = ? WHERE id = ?",
      [content, version, editedAt, messageID])
    return true
  }

  /// Message `messageID` was deleted for everyone at `deletedAt`: it becomes a tombstone
  /// (its id, parties, time and status kept; its text and edit history erased, with
  /// `secure_delete` so the freed bytes are zeroed), and changes of it queued here are
  /// dropped. A message not stored is left alone (it comes later as a tombstone).
  /// Returns whether it erased anything; call ``eraseResidue()`` afterwards.
  @discardableResult
  public func applyDelete(of messageID: Int64, deletedAt: String, settling requestID: Int64? = nil) throws -> Bool {
    try erasing { db in
      if let requestID { try db.execute("DELETE FROM MessageChanges WHERE request_id = ?", [requestID]) }
      return try Self.applyDelete(of: messageID, deletedAt: deletedAt, db)
    }
  }

  /// ``applyDelete(of:deletedAt:settling:)`` in the caller's transaction, with triggers
  /// on and `secure_delete` set by the caller (``erasing(_:)`` does both).
  public static func applyDelete(of messageID: Int64, deletedAt: String, _ db: Database) throws -> Bool {
    try db.execute("DELETE FROM MessageChanges WHERE message_id = ?", [messageID])
    guard let message = try message(messageID, db), message.deletedAt == nil else { return false }
    try db.execute("DELETE FROM MessageEdits WHERE message_id = ?", [messageID])
    try db.execute(HotQuery.deleteMessageAttachments.sql, [messageID])
    try db.execute(
      "UPDATE Messages SET content = '', edited_at = NULL, deleted_at = ? WHERE id = ?", [deletedAt, messageID])
    return true
  }

  /// Deletes message `messageID` from this file only ("delete for me"): the row, its
  /// edit history and index entries go (erased as ``applyDelete(of:deletedAt:settling:)``
  /// erases), and its id is kept in `HiddenMessages` so no sync brings it back. Changes
  /// of it queued here still go (a delete for everyone queued before still reaches the
  /// others). Refused with `.notFound` for a message not in the file.
  public func deleteForMe(_ messageID: Int64) throws {
    let at = timestamp
    let path = database.path
    try erasing { db in
      guard try Self.message(messageID, db) != nil else {
        throw StoreError(.notFound, "\(path): no message \(messageID)", path: path)
      }
      try db.execute("DELETE FROM Messages WHERE id = ?", [messageID])
      try db.execute(
        "INSERT INTO HiddenMessages (id, hidden_at) VALUES (?, ?) ON CONFLICT DO NOTHING", [messageID, at])
      try db.execute("DELETE FROM PendingDeliveryAcks WHERE message_id = ?", [messageID])
    }
  }

  /// Whether message `messageID` was deleted on this device only.
  public func isHidden(_ messageID: Int64) throws -> Bool {
    try database.read { db in try db.int64("SELECT 1 FROM HiddenMessages WHERE id = ?", [messageID]) != nil }
  }

  /// The versions of message `messageID` that newer ones replaced, oldest first.
  public func editHistory(of messageID: Int64) throws -> [MessageVersion] {
    try database.read { db in
      try db.query(
        "SELECT version, content, edited_at FROM MessageEdits WHERE message_id = ? ORDER BY version", [messageID]
      ) { MessageVersion(version: $0.int64(0), content: $0.string(1), editedAt: $0.string(2)) }
    }
  }

  // MARK: - Erasing

  /// Runs `body` in a write transaction with `secure_delete` on (SQLite then overwrites
  /// every cell and page it frees with zeros). A repository turns it on when it opens,
  /// so text deleted before (an acknowledged request's) left no bytes behind either;
  /// this makes sure of it for the erasing transaction whoever changed the setting.
  func erasing<T>(_ body: (Database) throws -> T) throws -> T {
    try database.execute("PRAGMA secure_delete = ON")
    return try database.write(body)
  }

  /// Leaves no erased text in the file's bytes (and no media of deleted messages in the
  /// media folder, ``sweepMedia()``): merges the search indexes whole (so the
  /// deletion markers meet the entries they cancel, and the segments that held them are
  /// freed, zeroed by `secure_delete`), then checkpoints the WAL and truncates it (older
  /// frames still held the text). Returns false when a reader kept the checkpoint from
  /// finishing (the WAL still holds old frames: run it again later). Each merge step is
  /// a short transaction of its own, as eviction's are.
  @discardableResult
  public func eraseResidue() throws -> Bool {
    // A deleted message's media goes too, unless another message or request has it.
    try sweepMedia()
    try database.execute("PRAGMA secure_delete = ON")
    // RequestSearch too: a sent message's text was indexed while it waited in the outbox.
    for table in ["MessageSearch", "MessageSearchCJK", "RequestSearch"] {
      while try database.write({ db in try SearchIndexUpkeep.mergeStep(db, table, pages: 2_000, anyLevel: true) }) >= 2
      {}
    }
    let result = try database.query("PRAGMA wal_checkpoint(TRUNCATE)", []) { $0.int64(0) }
    return result.first == 0
  }

  // MARK: - Helpers

  /// A stored message by id, in the caller's transaction.
  public static func message(_ id: Int64, _ db: Database) throws -> Message? {
    try db.query("SELECT \(HotQuery.Columns.message.list()) FROM Messages WHERE id = ?", [id], HotQuery.message).first
  }

  /// The next request id (MessageRequests and MessageChanges share it): above every one
  /// used in this file and at least the clock's MessageID.
  func nextRequestID(at: String, _ db: Database) throws -> Int64 {
    let floor = MessageID.make(
      milliseconds: min(
        max(Timestamp.milliseconds(from: at) ?? 0, MessageID.representable.lowerBound),
        MessageID.representable.upperBound))
    guard let requestID = try db.int64(StoreInfoSQL.nextRequestID, [floor]) else {
      throw StoreError(.schemaMismatch, "\(db.path): StoreInfo has no last_request_id", path: db.path)
    }
    return requestID
  }
}
