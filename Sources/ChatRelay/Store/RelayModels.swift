import ChatStore

/// A user the relay knows: the profile that contacts may see.
///
/// Encodes as the API's JSON: `{"id", "name", "avatarURL", "lastConnectedAt"}`.
public struct RelayUser: Sendable, Hashable, Codable {
  /// The user's id: positive, chosen by whoever adds the user.
  public var id: Int64
  /// The display name.
  public var name: String
  /// The avatar's URL, if any.
  public var avatarURL: String?
  /// When the user last connected (the text the caller gave, ISO 8601 by convention), or nil.
  public var lastConnectedAt: String?

  public init(id: Int64, name: String, avatarURL: String?, lastConnectedAt: String?) {
    self.id = id
    self.name = name
    self.avatarURL = avatarURL
    self.lastConnectedAt = lastConnectedAt
  }
}

/// A message as the relay hands it out, with the field names of seed 000.
///
/// Encodes as `{"messageId", "fromUserId", "toUserId", "content", "status", "createdAt"}`.
public struct RelayMessage: Sendable, Hashable, Codable {
  /// The relay's time-sortable id (see `MessageID`).
  public var messageId: Int64
  /// The sender.
  public var fromUserId: Int64
  /// The recipient.
  public var toUserId: Int64
  /// The text, 1 to 65,536 UTF-8 bytes.
  public var content: String
  /// Always `SYNCED`: the relay has the message. `DELIVERED` and `READ` travel as
  /// status updates, never as a changed message.
  public var status: String
  /// When the sender wrote it, as the sender's client said (ISO 8601).
  public var createdAt: String

  /// The only status the relay gives a message.
  public static let syncedStatus = "SYNCED"

  public init(
    messageId: Int64, fromUserId: Int64, toUserId: Int64, content: String, status: String = RelayMessage.syncedStatus,
    createdAt: String
  ) {
    self.messageId = messageId
    self.fromUserId = fromUserId
    self.toUserId = toUserId
    self.content = content
    self.status = status
    self.createdAt = createdAt
  }
}

/// A delivery or read receipt waiting for the user it is addressed to.
///
/// Encodes as `{"sequence", "userId", "type", "messageId", "conversationId", "at"}`.
/// `userId` is who receives the update (the sender of the message it is about) and
/// `conversationId` is the conversation in that user's view: the other user.
public struct StatusUpdate: Sendable, Hashable, Codable {
  /// What happened to the sender's message(s).
  public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
    /// The recipient acknowledged `messageId`: the relay no longer holds it.
    case messageDelivered = "message_delivered"
    /// The recipient read every message of the conversation up to `messageId`.
    case messageRead = "message_read"
  }

  /// The relay-wide, ever-increasing number of the update: a client's cursor.
  public var sequence: Int64
  /// Who receives the update.
  public var userId: Int64
  /// What happened.
  public var type: Kind
  /// The message delivered, or the highest message read.
  public var messageId: Int64
  /// The other user of the conversation, from `userId`'s point of view.
  public var conversationId: Int64
  /// When the relay recorded it (ISO 8601 UTC with milliseconds, see `Timestamp`).
  public var at: String

  public init(sequence: Int64, userId: Int64, type: Kind, messageId: Int64, conversationId: Int64, at: String) {
    self.sequence = sequence
    self.userId = userId
    self.type = type
    self.messageId = messageId
    self.conversationId = conversationId
    self.at = at
  }
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
