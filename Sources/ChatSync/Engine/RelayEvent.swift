import ChatProtocol
import ChatStore

/// A server → client socket event of `docs/protocol.md`, as the engine uses it: the
/// wire's ``ServerEvent`` with the message in the file's model.
enum RelayEvent: Sendable, Equatable {
  case newMessage(RelayMessage)
  case delivered(StatusUpdate)
  case read(StatusUpdate)
  /// The owner read a conversation on one of their devices.
  case readElsewhere(StatusUpdate)
  /// A message of a conversation has a new version (`message_edited`).
  case edited(StatusUpdate)
  /// A message of a conversation was deleted for everyone (`message_deleted`).
  case deleted(StatusUpdate)
  case contactStatus(ContactStatus)
  case deliveryAcknowledged([Int64])
  /// The relay's read mark for a conversation after a `read` receipt.
  case readAcknowledged(conversation: Int64, upTo: Int64)
  /// `messageIds`: acknowledged ids the relay holds no message to the owner for.
  case error(code: String, message: String, messageIds: [Int64])
  /// An event this client does not know (a newer relay): ignored.
  case unknown(String)

  /// Parses one text frame; nil when it is not an event at all, or a known event whose
  /// payload does not decode.
  static func parse(_ text: String) -> RelayEvent? {
    guard let event = ServerEvent.parsePlain(text) ?? (try? WireJSON.decode(ServerEvent.self, from: text))
    else { return nil }
    return switch event {
    case .newMessage(let message): .newMessage(message)
    case .messageDelivered(let update): .delivered(update)
    case .messageRead(let update): .read(update)
    case .conversationRead(let update): .readElsewhere(update)
    case .messageEdited(var update):
      .edited(
        {
          update.type = .messageEdited
          return update
        }())
    case .messageDeleted(var update):
      .deleted(
        {
          update.type = .messageDeleted
          return update
        }())
    case .contactStatusUpdate(let status): .contactStatus(status)
    case .deliveryAcknowledged(let ids): .deliveryAcknowledged(ids.messageIds)
    case .readAcknowledged(let mark): .readAcknowledged(conversation: mark.conversationId, upTo: mark.upTo)
    case .error(let error): .error(code: error.code, message: error.message, messageIds: error.messageIds ?? [])
    case .unknown(let type): .unknown(type)
    }
  }
}

extension RelayEvent {
  /// A status update and the status it brings (nil: a conversation read on another device).
  var statusUpdate: (StatusUpdate, MessageStatus?)? {
    switch self {
    case .delivered(let update): (update, .delivered)
    case .read(let update): (update, .read)
    case .readElsewhere(let update): (update, nil)
    case .edited(let update), .deleted(let update): (update, nil)
    default: nil
    }
  }
}

extension RelaySocket {
  /// Sends a client → server event, encoded by `WireJSON`.
  func send(_ event: ClientEvent) { send(WireJSON.string(event)) }
}
