import ChatStore
import Foundation

/// A server → client socket event of `docs/protocol.md`.
enum RelayEvent: Sendable, Equatable {
  case newMessage(Message)
  case delivered(StatusUpdate)
  case read(StatusUpdate)
  case contactStatus(ContactStatus)
  case deliveryAcknowledged([Int64])
  /// The relay's read mark for a conversation after a `read` receipt.
  case readAcknowledged(conversation: Int64, upTo: Int64)
  case error(code: String, message: String)
  /// An event this client does not know (a newer relay): ignored.
  case unknown(String)

  /// Parses one text frame; nil when it is not an event at all.
  static func parse(_ text: String) -> RelayEvent? {
    let data = Data(text.utf8)
    guard let head = try? JSONDecoder().decode(Head.self, from: data) else { return nil }
    func payload<P: Decodable>(_: P.Type) -> P? { try? JSONDecoder().decode(Wrapped<P>.self, from: data).payload }
    switch head.type {
    case "new_message": return payload(WireMessage.self).map { .newMessage($0.model) }
    case "message_delivered": return payload(StatusUpdate.self).map { .delivered($0) }
    case "message_read": return payload(StatusUpdate.self).map { .read($0) }
    case "contact_status_update": return payload(ContactStatus.self).map { .contactStatus($0) }
    case "delivery_acknowledged": return payload(IDs.self).map { .deliveryAcknowledged($0.messageIds) }
    case "read_acknowledged":
      return payload(ReadMark.self).map { .readAcknowledged(conversation: $0.conversationId, upTo: $0.upTo) }
    case "error": return payload(ErrorDetail.self).map { .error(code: $0.code, message: $0.message) }
    default: return .unknown(head.type)
    }
  }

  private struct Head: Decodable { var type: String }
  private struct Wrapped<P: Decodable>: Decodable { var payload: P }
  private struct IDs: Decodable { var messageIds: [Int64] }
  private struct ReadMark: Decodable {
    var conversationId: Int64
    var upTo: Int64
  }
  private struct ErrorDetail: Decodable {
    var code: String
    var message: String
  }
}

/// A contact's presence and typing, as the relay reports it.
public struct ContactStatus: Codable, Sendable, Equatable {
  public var userId: Int64
  public var online: Bool
  public var lastSeenAt: String?
  public var typing: Bool?
  public var typingExpiresInMs: Int64?
}

/// Client → server events.
enum ClientEvent {
  static func deliveryAck(_ ids: [Int64]) -> String {
    event("delivery_ack", ["messageIds": .array(ids.map { .int($0) })])
  }
  static func read(conversation: Int64, upTo: Int64) -> String {
    event("read", ["conversationId": .int(conversation), "upTo": .int(upTo)])
  }
  static func typing(to user: Int64, _ typing: Bool) -> String {
    event("typing", ["toUserId": .int(user), "typing": .bool(typing)])
  }
  static func updatesAck(upTo: Int64) -> String { event("updates_ack", ["upTo": .int(upTo)]) }

  private static func event(_ type: String, _ payload: JSONValue) -> String {
    JSONValue.object(["type": .string(type), "payload": payload]).render(pretty: false)
  }
}
