import ChatProtocol
import ChatStore

/// An edit or a delete the relay refuses for good (the client does not retry it).
public struct ChangeRefused: Error, CustomStringConvertible, Sendable {
  public enum Reason: Sendable {
    /// Only the sender edits or deletes a message (403).
    case notSender
    /// The edit window has passed (403).
    case tooLate
    /// The message was deleted for everyone: it cannot be edited (409).
    case deleted
  }

  public var reason: Reason
  public var description: String
}

/// What ``RelayStore/change(_:of:by:device:requestID:content:now:editWindow:)`` did: the
/// update as the sender's side sees it, and the updates to push (both parties, new only).
public struct Changed: Sendable {
  public var update: StatusUpdate
  public var pushed: [RelayStatusUpdate]
  public var isNew: Bool
}

extension RelayStore {
  /// What a change does.
  public enum ChangeKind: String, Sendable {
    case edit
    case delete
  }

  /// The sender `sender` edits (`content`) or deletes for everyone message `messageID`,
  /// idempotent per (`sender`, `device`, `requestID`) as a post is. An edit makes the
  /// next version of the text; a delete erases the text and every version (with
  /// `secure_delete`, on for the relay's connection) and leaves a tombstone. Both
  /// parties get a `message_edited` or `message_deleted` update, which reaches every
  /// device of theirs.
  ///
  /// Refused: a message not on the relay (`.notFound`), another user's
  /// (`ChangeRefused.notSender`), one older than `editWindow` milliseconds by the relay's
  /// clock (`.tooLate`), an edit of a deleted message (`.deleted`); a `requestID` used
  /// before for something else (`RequestIDConflict`). A delete of a message already
  /// deleted answers with that delete and records nothing new.
  public func change(
    _ kind: ChangeKind, of messageID: Int64, by sender: Int64, device: Int64, requestID: Int64, content: String?,
    now: Int64, editWindow: Int64
  ) throws -> Changed {
    guard requestID > 0 else { throw StoreError(.badInput, "requestId \(requestID) must be positive", path: path) }
    if kind == .edit { try requireText(content ?? "", field: "content", maximumBytes: Self.maximumContentBytes) }
    let digest = content.map { SHA256.digest($0.utf8) }
    let at = Timestamp.string(milliseconds: now)
    return try writing("\(kind.rawValue) message \(messageID) in") { db in
      let records = try db.query(
        RelayQuery.changeRecord, [sender, device, requestID]
      ) { row -> (Int64, String, Int64?, [UInt8]?, String) in
        var digest: [UInt8]?
        if case .blob(let bytes) = row.value(3) { digest = bytes }
        return (row.int64(0), row.string(1), row.optionalInt64(2), digest, row.string(4))
      }
      if let recorded = records.first {
        guard recorded.0 == messageID, recorded.1 == kind.rawValue, recorded.3 == digest else {
          throw RequestIDConflict(requestID: requestID, messageID: recorded.0)
        }
        let other = try counterpart(of: messageID, for: sender, db) ?? 0
        let update = StatusUpdate(
          sequence: 0, type: kind == .edit ? .messageEdited : .messageDeleted, messageId: messageID,
          conversationId: other, at: recorded.4, version: recorded.2, content: content)
        return Changed(update: update, pushed: [], isNew: false)
      }
      if let used = try db.int64(RelayQuery.postedByKey, [sender, device, requestID]) {
        throw RequestIDConflict(requestID: requestID, messageID: used)
      }
      guard
        let message = try db.query(
          RelayQuery.messageToChange, [messageID],
          { ($0.int64(0), $0.int64(1), $0.int64(2), $0.optionalString(3), $0.string(4), $0.string(5)) }
        ).first
      else {
        throw StoreError(.notFound, "message \(messageID) is not on the relay", path: path)
      }
      guard message.0 == sender else {
        throw ChangeRefused(
          reason: .notSender,
          description: "message \(messageID) is from user \(message.0): only its sender can change it")
      }
      let recipient = message.1
      if let deletedAt = message.3 {
        guard kind == .delete else {
          throw ChangeRefused(
            reason: .deleted, description: "message \(messageID) was deleted for everyone at \(deletedAt)")
        }
        let update = StatusUpdate(
          sequence: 0, type: .messageDeleted, messageId: messageID, conversationId: recipient, at: deletedAt)
        return Changed(update: update, pushed: [], isNew: false)
      }
      let written = MessageID.milliseconds(of: messageID)
      guard now - written <= editWindow else {
        throw ChangeRefused(
          reason: .tooLate,
          description:
            "message \(messageID) was sent \(Self.duration(now - written)) ago; messages can be changed for \(Self.duration(editWindow)) after they are sent"
        )
      }
      var version: Int64?
      switch kind {
      case .edit:
        let next = message.2 + 1
        version = next
        if message.2 == 0 {
          // The text as sent becomes version 0 of the history a later device fetches.
          try db.execute(RelayQuery.insertVersion, [messageID, 0, message.5, message.4])
        }
        try db.execute(RelayQuery.insertVersion, [messageID, next, content, at])
        try db.execute(RelayQuery.editMessage, [content, next, at, messageID])
      case .delete:
        try db.execute(RelayQuery.eraseVersions, [messageID])
        try db.execute(RelayQuery.dropAttachments, [messageID])
        try db.execute(RelayQuery.leaveTombstone, [at, messageID])
        // An idempotency record made before 0003 kept the text itself: it keeps the digest instead.
        let kept = try db.query(RelayQuery.requestTextOf, [messageID]) { $0.string(0) }
        for text in kept { try db.execute(RelayQuery.forgetRequestText, [SHA256.digest(text.utf8), messageID]) }
      }
      try db.execute(
        RelayQuery.recordChange, [sender, device, requestID, messageID, kind.rawValue, version, digest, at])
      let type: StatusUpdate.Kind = kind == .edit ? .messageEdited : .messageDeleted
      var pushed: [RelayStatusUpdate] = []
      for (user, other) in [(sender, recipient), (recipient, sender)] {
        try db.execute(RelayQuery.insertChangeUpdate, [user, type.rawValue, messageID, other, at, version])
        pushed.append(
          RelayStatusUpdate(
            sequence: db.lastInsertRowID, userId: user, type: type, messageId: messageID, conversationId: other, at: at,
            version: version, content: content))
      }
      return Changed(update: pushed[0].update, pushed: pushed, isNew: true)
    }
  }

  /// `90 s`, `12 min`, `52 h`: a duration for a refusal's message.
  static func duration(_ milliseconds: Int64) -> String {
    let seconds = max(milliseconds, 0) / 1000
    return seconds < 120 ? "\(seconds) s" : seconds < 7_200 ? "\(seconds / 60) min" : "\(seconds / 3_600) h"
  }

  /// The other party of message `messageID` from `user`'s side, or nil when it is gone.
  private func counterpart(of messageID: Int64, for user: Int64, _ db: Database) throws -> Int64? {
    try db.query(RelayQuery.partiesOf, [messageID]) {
      $0.int64(0) == user ? $0.int64(1) : $0.int64(0)
    }.first
  }
}
