import ChatStore

// The models as the protocol writes them (`docs/protocol.md`): one place for the field
// names, so the HTTP answers, the socket events and `chat-relay --json` agree.

extension RelayMessage {
  /// `{messageId, fromUserId, toUserId, content, status, createdAt}`.
  public var json: JSONValue {
    .object([
      "messageId": .int(messageId), "fromUserId": .int(fromUserId), "toUserId": .int(toUserId),
      "content": .string(content),
      "status": .string(status), "createdAt": .string(createdAt),
    ])
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
    .object([
      "sequence": .int(sequence), "type": .string(type.rawValue), "messageId": .int(messageId),
      "conversationId": .int(conversationId), "at": .string(at),
    ])
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
