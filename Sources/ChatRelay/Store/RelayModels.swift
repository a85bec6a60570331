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
    sequence: Int64, userId: Int64, type: StatusUpdate.Kind, messageId: Int64, conversationId: Int64, at: String,
    version: Int64? = nil, content: String? = nil
  ) {
    self.userId = userId
    update = StatusUpdate(
      sequence: sequence, type: type, messageId: messageId, conversationId: conversationId, at: at, version: version,
      content: content)
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

/// Who a token belongs to: one device of one user.
public struct RelayCredential: Sendable, Hashable {
  /// The token's user.
  public var user: Int64
  /// The user's device the token was made for (`RelayDevices.id`).
  public var device: Int64

  /// Device `device` of user `user`.
  public init(user: Int64, device: Int64) {
    self.user = user
    self.device = device
  }
}

/// One device of a user as the relay keeps it (never its token): `chat-relay device list`.
public struct RelayDevice: Sendable, Hashable, Codable {
  /// The device's id, unique in the relay and never reused.
  public var id: Int64
  /// The user it belongs to.
  public var userId: Int64
  /// The name given to `device add` (`first device` for the one `user add` makes).
  public var name: String
  /// When it was added (ISO 8601).
  public var createdAt: String
  /// When it last opened or closed a socket (ISO 8601), or nil.
  public var lastSeenAt: String?
  /// The newest message of its user's log it acknowledged (`sync_ack`, or a catch-up's
  /// `lastSyncedMessage`); at first the newest id when it was added.
  public var syncedMessage: Int64
  /// Messages of its user's log above ``syncedMessage`` still on the relay: how far
  /// behind it is (filled by `devices(of:)`, 0 elsewhere).
  public var lag: Int64

  /// A device as the store read it.
  public init(
    id: Int64, userId: Int64, name: String, createdAt: String, lastSeenAt: String?, syncedMessage: Int64 = 0,
    lag: Int64 = 0
  ) {
    self.id = id
    self.userId = userId
    self.name = name
    self.createdAt = createdAt
    self.lastSeenAt = lastSeenAt
    self.syncedMessage = syncedMessage
    self.lag = lag
  }

  /// The device as `GET /v2/me` names it.
  public var info: DeviceInfo { DeviceInfo(id: id, name: name) }

  private enum CodingKeys: String, CodingKey {
    case id, userId, name, createdAt, lastSeenAt, syncedMessage, lag
  }

  /// Writes nulls rather than leaving them out, as the relay's other records do.
  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(id, forKey: .id)
    try container.encode(userId, forKey: .userId)
    try container.encode(name, forKey: .name)
    try container.encode(createdAt, forKey: .createdAt)
    try container.encode(lastSeenAt, forKey: .lastSeenAt)
    try container.encode(syncedMessage, forKey: .syncedMessage)
    try container.encode(lag, forKey: .lag)
  }
}

/// How long the relay keeps a message in its parties' logs (`serve --retention-days`).
public enum Retention: Sendable, Hashable {
  /// For this many days after it was made, whoever acknowledged it: a device added later
  /// fetches that history.
  case days(Int)
  /// Until every device of both parties that existed when it was made acknowledged it
  /// (`--retention-days 0`), and at most ``longestHold``: a device silent longer holds
  /// nothing back.
  case untilAcknowledged

  /// The retention of `--retention-days days`: 0 is ``untilAcknowledged``.
  public init(days: Int) { self = days == 0 ? .untilAcknowledged : .days(days) }

  /// The longest a message waits for an unacknowledging device with `.untilAcknowledged`.
  public static let longestHold: Int64 = 30 * 86_400_000

  /// The window in milliseconds: the days, or ``longestHold``.
  public var window: Int64 {
    switch self {
    case .days(let days): Int64(days) * 86_400_000
    case .untilAcknowledged: Self.longestHold
    }
  }
}
