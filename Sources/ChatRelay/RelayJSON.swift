import ChatProtocol
import ChatStore

// The relay's hand-written renderings of the protocol's types, for its hot paths (every
// POST renders a message, every delivery a status update) and `chat-relay --json`:
// `JSONValue` renders in about a fifth of JSONEncoder's time. The field names and the
// bytes are the Codable types' (ChatProtocol); RelayWireTests checks each rendering
// against `WireJSON.encode` of the same value.

extension RelayMessage {
  /// `{messageId, fromUserId, toUserId, content, status, createdAt}`, and `fromDeviceId`,
  /// `requestId` and `previousId` when set.
  public var json: JSONValue {
    var fields: [String: JSONValue] = [
      "messageId": .int(messageId), "fromUserId": .int(fromUserId), "toUserId": .int(toUserId),
      "content": .string(content),
      "status": .string(status), "createdAt": .string(createdAt),
    ]
    if let fromDeviceId { fields["fromDeviceId"] = .int(fromDeviceId) }
    if let requestId { fields["requestId"] = .int(requestId) }
    if let previousId { fields["previousId"] = .int(previousId) }
    return .object(fields)
  }
}

extension RelayUser {
  /// `{id, name, avatarUrl, lastConnectedAt}` (nulls kept: a client stores them as such).
  public var json: JSONValue {
    .object([
      "id": .int(id), "name": .string(name), "avatarUrl": avatarURL.map { .string($0) } ?? .null,
      "lastConnectedAt": lastConnectedAt.map { .string($0) } ?? .null,
    ])
  }
}

extension StatusUpdate {
  /// `{sequence, type, messageId, conversationId, at}`: the event payload and the sync entry.
  public var json: JSONValue {
    var fields: [String: JSONValue] = [
      "sequence": .int(sequence), "messageId": .int(messageId), "conversationId": .int(conversationId),
      "at": .string(at),
    ]
    if let type { fields["type"] = .string(type.rawValue) }
    return .object(fields)
  }
}

extension MessagesPage {
  /// `{messages, hasMore, statusUpdates, cursor}`: the catch-up page, the relay's largest answer.
  public var json: JSONValue {
    var fields: [String: JSONValue] = [
      "messages": .array(messages.map(\.json)), "hasMore": .bool(hasMore),
      "statusUpdates": .array((statusUpdates ?? []).map(\.json)),
    ]
    if let cursor { fields["cursor"] = .int(cursor) }
    return .object(fields)
  }
}

extension PushRecord {
  /// `{id, toUserId, messageId, unread, createdAt}`: ids and the badge count, never content.
  public var json: JSONValue {
    .object([
      "id": .int(id), "toUserId": .int(toUserId), "messageId": .int(messageId), "unread": .int(unread),
      "createdAt": .string(createdAt),
    ])
  }
}
