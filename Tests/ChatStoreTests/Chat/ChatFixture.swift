import Foundation
import Testing

@testable import ChatStore

/// A fresh `chats-1.db` at the latest version with contacts 2, 3 and 4, and a clock
/// the test moves by hand.
final class ChatFixture {
  let folder: String
  let chats: ChatRepository
  var clock: Int64 = 1_780_000_000_000  // milliseconds since 1970
  /// The request ids `send` gave, in order (set by the property tests).
  var requestIDs: [Int64] = []

  static let owner: Int64 = 1

  init(contacts: [Int64] = [2, 3, 4]) throws {
    folder = FileManager.default.temporaryDirectory.appendingPathComponent("chat-\(UUID().uuidString)").path
    chats = try ChatRepository.open(user: Self.owner, in: folder)
    chats.now = { [unowned self] in Date(timeIntervalSince1970: Double(self.clock) / 1000) }
    try chats.upsert(User(id: Self.owner, name: "Me"))
    for id in contacts { try chats.upsert(User(id: id, name: "Contact \(id)")) }
  }

  deinit { try? FileManager.default.removeItem(atPath: folder) }

  /// Moves the clock forward and returns the new time as text.
  @discardableResult
  func tick(_ milliseconds: Int64 = 1000) -> String {
    clock += milliseconds
    return Timestamp.string(milliseconds: clock)
  }

  /// A relay id made `offset` ms after the fixture's start.
  func relayID(_ offset: Int64, sequence: Int64 = 0) -> Int64 {
    MessageID.make(milliseconds: 1_780_000_000_000 + offset, sequence: sequence)
  }

  func incoming(_ id: Int64, from contact: Int64, _ content: String = "hi", status: MessageStatus = .synced) -> Message
  {
    Message(
      id: id, fromUserID: contact, toUserID: Self.owner, content: content, status: status,
      createdAt: Timestamp.string(milliseconds: MessageID.milliseconds(of: id)))
  }

  func outgoing(_ id: Int64, to contact: Int64, _ content: String = "hello", requestID: Int64? = nil) -> Message {
    Message(
      id: id, fromUserID: Self.owner, toUserID: contact, content: content, status: .synced,
      createdAt: Timestamp.string(milliseconds: MessageID.milliseconds(of: id)), requestID: requestID)
  }

  /// Every row of Messages and MessageRequests, for comparing whole contents.
  func contents() throws -> [String] {
    let db = chats.database
    let messages = try db.query(
      "SELECT id, from_user_id, to_user_id, content, status, created_at, conversation_id, request_id FROM Messages ORDER BY id"
    ) {
      $0.values.map(\.description).joined(separator: "|")
    }
    let requests = try db.query(
      "SELECT request_id, to_user_id, content, status FROM MessageRequests ORDER BY request_id"
    ) {
      $0.values.map(\.description).joined(separator: "|")
    }
    return messages.map { "M " + $0 } + requests.map { "R " + $0 }
  }

  func status(of id: Int64) throws -> String? {
    try chats.database.string("SELECT status FROM Messages WHERE id = ?", [id])
  }
}
