// MARK: - The WebSocket's events: `{"type": "...", "payload": {...}}`, one a text frame

/// A server → client event of `/v2/socket/updates`.
///
/// ```swift
/// let event = try WireJSON.decode(ServerEvent.self, from: text)
/// if case .newMessage(let message) = event { … }
/// ```
public enum ServerEvent: Sendable, Hashable, Codable {
  /// `new_message`: a message to this user.
  case newMessage(RelayMessage)
  /// `message_delivered`: the recipient acknowledged one of this user's messages.
  case messageDelivered(StatusUpdate)
  /// `message_read`: the recipient read this user's messages up to `messageId`.
  case messageRead(StatusUpdate)
  /// `conversation_read`: this user read a conversation on one of their devices.
  case conversationRead(StatusUpdate)
  /// `message_edited`: a message of this user's conversation has a new version.
  case messageEdited(StatusUpdate)
  /// `message_deleted`: a message of this user's conversation was deleted for everyone.
  case messageDeleted(StatusUpdate)
  /// `contact_status_update`: a contact came online, went offline, or typed.
  case contactStatusUpdate(ContactStatus)
  /// `delivery_acknowledged`: the relay processed this socket's `delivery_ack`.
  case deliveryAcknowledged(MessageIDs)
  /// `read_acknowledged`: the relay processed this socket's `read`; its mark now.
  case readAcknowledged(ReadMark)
  /// `error`: the client sent something the relay could not use.
  case error(EventError)
  /// A type this side does not know (a newer peer's); its payload is not read.
  case unknown(String)

  /// The event's `type`.
  public var type: String {
    switch self {
    case .newMessage: "new_message"
    case .messageDelivered: StatusUpdate.Kind.messageDelivered.rawValue
    case .messageRead: StatusUpdate.Kind.messageRead.rawValue
    case .conversationRead: StatusUpdate.Kind.conversationRead.rawValue
    case .messageEdited: StatusUpdate.Kind.messageEdited.rawValue
    case .messageDeleted: StatusUpdate.Kind.messageDeleted.rawValue
    case .contactStatusUpdate: "contact_status_update"
    case .deliveryAcknowledged: "delivery_acknowledged"
    case .readAcknowledged: "read_acknowledged"
    case .error: "error"
    case .unknown(let type): type
    }
  }

  /// Decodes `type`, then the payload that type names; an unknown type is ``unknown(_:)``.
  public init(from decoder: any Decoder) throws {
    let envelope = try decoder.container(keyedBy: EventKeys.self)
    let type = try envelope.decode(String.self, forKey: .type)
    func payload<P: Decodable>(_: P.Type) throws -> P { try envelope.decode(P.self, forKey: .payload) }
    switch type {
    case "new_message": self = .newMessage(try payload(RelayMessage.self))
    case StatusUpdate.Kind.messageDelivered.rawValue: self = .messageDelivered(try payload(StatusUpdate.self))
    case StatusUpdate.Kind.messageRead.rawValue: self = .messageRead(try payload(StatusUpdate.self))
    case StatusUpdate.Kind.conversationRead.rawValue: self = .conversationRead(try payload(StatusUpdate.self))
    case StatusUpdate.Kind.messageEdited.rawValue: self = .messageEdited(try payload(StatusUpdate.self))
    case StatusUpdate.Kind.messageDeleted.rawValue: self = .messageDeleted(try payload(StatusUpdate.self))
    case "contact_status_update": self = .contactStatusUpdate(try payload(ContactStatus.self))
    case "delivery_acknowledged": self = .deliveryAcknowledged(try payload(MessageIDs.self))
    case "read_acknowledged": self = .readAcknowledged(try payload(ReadMark.self))
    case "error": self = .error(try payload(EventError.self))
    default: self = .unknown(type)
    }
  }

  /// Writes `{"payload": …, "type": …}`; an unknown event's payload is `{}`.
  public func encode(to encoder: any Encoder) throws {
    var envelope = encoder.container(keyedBy: EventKeys.self)
    try envelope.encode(type, forKey: .type)
    switch self {
    case .newMessage(let message): try envelope.encode(message, forKey: .payload)
    case .messageDelivered(let update), .messageRead(let update), .conversationRead(let update),
      .messageEdited(let update), .messageDeleted(let update):
      try envelope.encode(update, forKey: .payload)
    case .contactStatusUpdate(let status): try envelope.encode(status, forKey: .payload)
    case .deliveryAcknowledged(let ids): try envelope.encode(ids, forKey: .payload)
    case .readAcknowledged(let mark): try envelope.encode(mark, forKey: .payload)
    case .error(let error): try envelope.encode(error, forKey: .payload)
    case .unknown: try envelope.encode(EmptyPayload(), forKey: .payload)
    }
  }
}

/// A client → server event of `/v2/socket/updates`.
public enum ClientEvent: Sendable, Hashable, Codable {
  /// `delivery_ack`: the messages are stored on the device (at most 500 ids).
  case deliveryAck(MessageIDs)
  /// `read`: the caller read the conversation up to `upTo`.
  case read(ReadMark)
  /// `typing`: the caller is typing (or stopped) to `toUserId`.
  case typing(TypingSignal)
  /// `updates_ack`: status updates up to `upTo` are stored on this device.
  case updatesAck(UpdatesMark)
  /// `sync_ack`: this device stored its log up to both cursors (its acknowledged place,
  /// which `chat-relay device list` shows and retention 0 waits for).
  case syncAck(SyncMark)
  /// A type this side does not know; its payload is not read.
  case unknown(String)

  /// The event's `type`.
  public var type: String {
    switch self {
    case .deliveryAck: "delivery_ack"
    case .read: "read"
    case .typing: "typing"
    case .updatesAck: "updates_ack"
    case .syncAck: "sync_ack"
    case .unknown(let type): type
    }
  }

  /// Decodes `type`, then the payload that type names; an unknown type is ``unknown(_:)``.
  /// A bad payload's error has the coding path `payload.<field>`.
  public init(from decoder: any Decoder) throws {
    let envelope = try decoder.container(keyedBy: EventKeys.self)
    let type = try envelope.decode(String.self, forKey: .type)
    func payload<P: Decodable>(_: P.Type) throws -> P { try envelope.decode(P.self, forKey: .payload) }
    switch type {
    case "delivery_ack": self = .deliveryAck(try payload(MessageIDs.self))
    case "read": self = .read(try payload(ReadMark.self))
    case "typing": self = .typing(try payload(TypingSignal.self))
    case "updates_ack": self = .updatesAck(try payload(UpdatesMark.self))
    case "sync_ack": self = .syncAck(try payload(SyncMark.self))
    default: self = .unknown(type)
    }
  }

  /// Writes `{"payload": …, "type": …}`; an unknown event's payload is `{}`.
  public func encode(to encoder: any Encoder) throws {
    var envelope = encoder.container(keyedBy: EventKeys.self)
    try envelope.encode(type, forKey: .type)
    switch self {
    case .deliveryAck(let ids): try envelope.encode(ids, forKey: .payload)
    case .read(let mark): try envelope.encode(mark, forKey: .payload)
    case .typing(let signal): try envelope.encode(signal, forKey: .payload)
    case .updatesAck(let mark): try envelope.encode(mark, forKey: .payload)
    case .syncAck(let mark): try envelope.encode(mark, forKey: .payload)
    case .unknown: try envelope.encode(EmptyPayload(), forKey: .payload)
    }
  }
}

private enum EventKeys: String, CodingKey {
  case type, payload
}

private struct EmptyPayload: Codable {}

// MARK: - Payloads

/// `{"messageIds": [id, …]}`: `delivery_ack` and `delivery_acknowledged`.
public struct MessageIDs: Sendable, Hashable, Codable {
  /// The messages, in the order given.
  public var messageIds: [Int64]

  /// The payload for `messageIds`.
  public init(messageIds: [Int64]) { self.messageIds = messageIds }
}

/// `{"conversationId": 1, "upTo": id}`: `read` and `read_acknowledged`.
public struct ReadMark: Sendable, Hashable, Codable {
  /// The other user of the conversation.
  public var conversationId: Int64
  /// The highest message id read (asked for, or the relay's mark now).
  public var upTo: Int64

  /// A mark.
  public init(conversationId: Int64, upTo: Int64) {
    self.conversationId = conversationId
    self.upTo = upTo
  }
}

/// `{"toUserId": 1, "typing": true}`: `typing`.
public struct TypingSignal: Sendable, Hashable, Codable {
  /// Who the caller types to.
  public var toUserId: Int64
  /// Typing, or stopped.
  public var typing: Bool

  /// A signal.
  public init(toUserId: Int64, typing: Bool) {
    self.toUserId = toUserId
    self.typing = typing
  }
}

/// `{"upTo": seq}`: `updates_ack`.
public struct UpdatesMark: Sendable, Hashable, Codable {
  /// Status updates up to this sequence are stored by the client.
  public var upTo: Int64

  /// A mark.
  public init(upTo: Int64) { self.upTo = upTo }
}

/// `{"lastSyncedMessage": id, "lastSyncedUpdate": seq}`: `sync_ack`, named like the
/// catch-up's query parameters.
public struct SyncMark: Sendable, Hashable, Codable {
  /// The device stored every message of its user's log up to this id.
  public var lastSyncedMessage: Int64
  /// The device stored every status update up to this sequence.
  public var lastSyncedUpdate: Int64

  /// A mark.
  public init(lastSyncedMessage: Int64, lastSyncedUpdate: Int64) {
    self.lastSyncedMessage = lastSyncedMessage
    self.lastSyncedUpdate = lastSyncedUpdate
  }
}

/// `{"code", "message"}`: the `error` event; `messageIds` when it answers a
/// `delivery_ack` with ids the relay holds no message to the caller for.
public struct EventError: Sendable, Hashable, Codable {
  /// `bad_request`, `not_found`, `internal`, … (the codes of the HTTP errors).
  public var code: String
  /// For a person: what was wrong.
  public var message: String
  /// The acknowledged ids that name no message to the caller on the relay.
  public var messageIds: [Int64]?

  /// An error.
  public init(code: String, message: String, messageIds: [Int64]? = nil) {
    self.code = code
    self.message = message
    self.messageIds = messageIds
  }
}
