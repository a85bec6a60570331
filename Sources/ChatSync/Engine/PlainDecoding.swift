import ChatProtocol
import ChatStore

// MARK: - The relay's hot answers without JSONDecoder, when they are plain
//
// A sender spends most of its decoding on batch answers and status events. Each is read
// here with `PlainJSONCursor` when it has exactly the protocol's shape; anything else
// (an error result, an unknown key, a number that is not a plain integer) returns nil
// and goes to `JSONDecoder`, which gives the same value or names what is wrong.
// `PlainDecodingTests` checks both ways agree on the relay's own renderings.

extension MessageBatchAnswer {
  /// `{"results": [{"fromMessageRequestId", "message", "replayed"}, …]}` with every result
  /// a message (no `error`), else nil.
  static func parsePlain(_ bytes: [UInt8]) -> Self? {
    bytes.withUnsafeBufferPointer { buffer in
      var cursor = PlainJSONCursor(bytes: buffer)
      var results: [MessageBatchResult]?
      let read = cursor.object { key, cursor in
        guard PlainJSONCursor.matches(key, "results"), results == nil else { return false }
        var list: [MessageBatchResult] = []
        guard
          cursor.array({ cursor in
            guard let result = MessageBatchResult.parsePlain(&cursor) else { return false }
            list.append(result)
            return true
          })
        else { return false }
        results = list
        return true
      }
      guard read, cursor.atEnd, let results else { return nil }
      return MessageBatchAnswer(results: results)
    }
  }
}

extension MessageBatchResult {
  /// One result that carries a message.
  static func parsePlain(_ cursor: inout PlainJSONCursor) -> Self? {
    var requestID: Int64?
    var message: RelayMessage?
    var replayed: Bool?
    let read = cursor.object { key, cursor in
      if PlainJSONCursor.matches(key, "fromMessageRequestId") {
        requestID = cursor.integer()
        return requestID != nil
      } else if PlainJSONCursor.matches(key, "message") {
        message = RelayMessage.parsePlain(&cursor)
        return message != nil
      } else if PlainJSONCursor.matches(key, "replayed") {
        if cursor.takeNull() { return true }
        replayed = cursor.bool()
        return replayed != nil
      }
      return false
    }
    guard read, let requestID, let message else { return nil }
    return MessageBatchResult(fromMessageRequestId: requestID, message: message, replayed: replayed, error: nil)
  }
}

extension RelayMessage {
  /// A message object of the protocol's fields; the optional ones may be absent or null.
  static func parsePlain(_ cursor: inout PlainJSONCursor) -> Self? {
    var messageId: Int64?
    var fromUserId: Int64?
    var toUserId: Int64?
    var content: String?
    var status: String?
    var createdAt: String?
    var fromDeviceId: Int64?
    var requestId: Int64?
    var previousId: Int64?
    let read = cursor.object { key, cursor in
      func optionalInteger(_ value: inout Int64?) -> Bool {
        if cursor.takeNull() { return true }
        value = cursor.integer()
        return value != nil
      }
      if PlainJSONCursor.matches(key, "content") {
        content = cursor.string()
        return content != nil
      } else if PlainJSONCursor.matches(key, "createdAt") {
        createdAt = cursor.string()
        return createdAt != nil
      } else if PlainJSONCursor.matches(key, "fromDeviceId") {
        return optionalInteger(&fromDeviceId)
      } else if PlainJSONCursor.matches(key, "fromUserId") {
        fromUserId = cursor.integer()
        return fromUserId != nil
      } else if PlainJSONCursor.matches(key, "messageId") {
        messageId = cursor.integer()
        return messageId != nil
      } else if PlainJSONCursor.matches(key, "previousId") {
        return optionalInteger(&previousId)
      } else if PlainJSONCursor.matches(key, "requestId") {
        return optionalInteger(&requestId)
      } else if PlainJSONCursor.matches(key, "status") {
        if cursor.takeNull() { return true }
        status = cursor.string()
        return status != nil
      } else if PlainJSONCursor.matches(key, "toUserId") {
        toUserId = cursor.integer()
        return toUserId != nil
      }
      return false
    }
    guard read, let messageId, let fromUserId, let toUserId, let content, let createdAt else { return nil }
    return RelayMessage(
      messageId: messageId, fromUserId: fromUserId, toUserId: toUserId, content: content,
      status: status ?? RelayMessage.syncedStatus, createdAt: createdAt, fromDeviceId: fromDeviceId,
      requestId: requestId, previousId: previousId)
  }
}

extension ServerEvent {
  /// `new_message`, `message_delivered`, `message_read` and `conversation_read`, the
  /// events that come one per message; nil for every other event.
  static func parsePlain(_ text: String) -> Self? {
    var text = text
    return text.withUTF8 { buffer in
      var cursor = PlainJSONCursor(bytes: buffer)
      var type: String?
      var update: StatusUpdate?
      var message: RelayMessage?
      let read = cursor.object { key, cursor in
        if PlainJSONCursor.matches(key, "type") {
          type = cursor.string()
          return type != nil
        } else if PlainJSONCursor.matches(key, "payload") {
          // The payload comes first (keys in order): read as either shape, the type decides.
          var asUpdate = cursor
          if let parsed = StatusUpdate.parsePlain(&asUpdate) {
            update = parsed
            cursor = asUpdate
            return true
          }
          message = RelayMessage.parsePlain(&cursor)
          return message != nil
        }
        return false
      }
      guard read, cursor.atEnd, let type else { return nil }
      switch (StatusUpdate.Kind(rawValue: type), update, message) {
      case (.messageDelivered?, let update?, nil): return .messageDelivered(update)
      case (.messageRead?, let update?, nil): return .messageRead(update)
      case (.conversationRead?, let update?, nil): return .conversationRead(update)
      case (nil, nil, let message?) where type == "new_message": return .newMessage(message)
      default: return nil
      }
    }
  }
}

extension StatusUpdate {
  /// `{"at", "conversationId", "messageId", "sequence", "type"}` (`type` optional).
  static func parsePlain(_ cursor: inout PlainJSONCursor) -> Self? {
    var sequence: Int64?
    var type: Kind?
    var messageId: Int64?
    var conversationId: Int64?
    var at: String?
    let read = cursor.object { key, cursor in
      if PlainJSONCursor.matches(key, "at") {
        at = cursor.string()
        return at != nil
      } else if PlainJSONCursor.matches(key, "conversationId") {
        conversationId = cursor.integer()
        return conversationId != nil
      } else if PlainJSONCursor.matches(key, "messageId") {
        messageId = cursor.integer()
        return messageId != nil
      } else if PlainJSONCursor.matches(key, "sequence") {
        sequence = cursor.integer()
        return sequence != nil
      } else if PlainJSONCursor.matches(key, "type") {
        type = cursor.string().flatMap(Kind.init(rawValue:))
        return type != nil
      }
      return false
    }
    guard read, let sequence, let messageId, let conversationId, let at else { return nil }
    return StatusUpdate(sequence: sequence, type: type, messageId: messageId, conversationId: conversationId, at: at)
  }
}
