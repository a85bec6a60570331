import ChatProtocol
import ChatStore

/// A delivery or read receipt waiting for the user it is addressed to: the wire's
/// ``StatusUpdate`` and who receives it.
///
/// `userId` is who receives the update (the sender of the message it is about);
/// `conversationId` is the conversation in that user's view: the other user. The wire's
/// fields read through (`record.sequence`, `record.type`).
@dynamicMemberLookup
public struct RelayStatusUpdate: Sendable, Hashable {
  /// Who receives the update.
  public var userId: Int64
  /// The update as the protocol carries it; its `type` is always set.
  public var update: StatusUpdate

  /// What happened.
  public var kind: StatusUpdate.Kind { update.type ?? .messageDelivered }

  /// An update for `userId`.
  public init(
    sequence: Int64, userId: Int64, type: StatusUpdate.Kind, messageId: Int64, conversationId: Int64, at: String
  ) {
    self.userId = userId
    update = StatusUpdate(sequence: sequence, type: type, messageId: messageId, conversationId: conversationId, at: at)
  }

  /// A field of the wire's update.
  public subscript<Value>(dynamicMember field: KeyPath<StatusUpdate, Value>) -> Value { update[keyPath: field] }
}

/// A push notification the relay would have sent to a user without a live socket.
public struct PushRecord: Sendable, Hashable, Codable {
  /// The record's number, increasing.
  public var id: Int64
  /// Who the push is for.
  public var toUserId: Int64
  /// The message it announces.
  public var messageId: Int64
  /// When it was recorded (the text the caller gave).
  public var createdAt: String
  /// Messages waiting for the recipient when it was recorded (the badge count).
  public var unread: Int64 = 0

  public init(id: Int64, toUserId: Int64, messageId: Int64, createdAt: String, unread: Int64 = 0) {
    self.unread = unread
    self.id = id
    self.toUserId = toUserId
    self.messageId = messageId
    self.createdAt = createdAt
  }
}

/// A request id the sender already used for a different message (another recipient or
/// content): the relay answers `409 conflict` instead of the old message.
public struct RequestIDConflict: Error, CustomStringConvertible, Sendable {
  public var requestID: Int64
  public var messageID: Int64
  public var description: String {
    "requestId \(requestID) was already used for a different message (message \(messageID))"
  }
}
