import ChatProtocol
import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatRelay

/// The relay's hand-written renderings (RelayJSON.swift, the POST answer, the event
/// envelope) write the bytes the protocol's Codable types encode to, so the fast paths
/// cannot drift from ChatProtocol.
@Suite(.ownThreads) struct RelayWireTests {
  /// Text that needs every kind of escape, and some that needs none.
  static let texts = ["Hi 👋", "a\"b\\c/d\u{1}\u{1f}\n\t\u{8}\u{c}\r é", ""]

  @Test(arguments: texts)
  func theHandWrittenRenderingsAreTheCodableBytes(_ text: String) throws {
    let message = RelayMessage(
      messageId: 10_916_218_899_464_192, fromUserId: 1, toUserId: 2, content: text,
      createdAt: "2026-01-31T12:00:00.000Z")
    #expect(message.json == WireJSON.encode(message))
    var mine = message
    (mine.fromDeviceId, mine.requestId, mine.previousId) = (3, 77, 10_916_218_899_464_191)
    #expect(mine.json == WireJSON.encode(mine))
    var edited = message
    (edited.version, edited.editedAt) = (2, "2026-01-31T12:05:00.000Z")
    edited.edits = [
      RelayMessageVersion(version: 0, content: text, editedAt: message.createdAt),
      RelayMessageVersion(version: 1, content: "b", editedAt: "2026-01-31T12:01:00.000Z"),
    ]
    #expect(edited.json == WireJSON.encode(edited))
    #expect(try WireJSON.decode(RelayMessage.self, from: edited.json) == edited)
    var carrying = message
    carrying.attachments = [
      RelayAttachment(mediaId: 7, mime: "image/jpeg", size: 1_234_567, sha256: String(repeating: "ab", count: 32)),
      RelayAttachment(
        mediaId: 8, mime: "video/mp4", size: 9, sha256: String(repeating: "0f", count: 32), width: 1920, height: 1080,
        durationMs: 61_000, thumbnail: "/9j/4AAQSkZJRgABAQ=="),
    ]
    #expect(carrying.json == WireJSON.encode(carrying))
    #expect(try WireJSON.decode(RelayMessage.self, from: carrying.json) == carrying)
    for user in [
      RelayUser(id: 2, name: text, avatarURL: nil, lastConnectedAt: nil),
      RelayUser(id: 2, name: "Bob", avatarURL: text, lastConnectedAt: "2026-01-31T11:59:00.000Z"),
    ] {
      #expect(Self.rendered(user.json) == WireJSON.encode(user))
      #expect(try WireJSON.decode(RelayUser.self, from: Self.rendered(user.json)) == user)
    }
    for kind in StatusUpdate.Kind.allCases {
      let update = RelayStatusUpdate(
        sequence: 12, userId: 1, type: kind, messageId: 9, conversationId: 2, at: "2026-01-31T12:00:01.000Z",
        version: kind == .messageEdited ? 3 : nil, content: kind == .messageEdited ? text : nil)
      #expect(update.json == WireJSON.encode(update.update))
      let event: ServerEvent =
        switch kind {
        case .messageRead: .messageRead(update.update)
        case .messageDelivered: .messageDelivered(update.update)
        case .conversationRead: .conversationRead(update.update)
        case .messageEdited: .messageEdited(update.update)
        case .messageDeleted: .messageDeleted(update.update)
        }
      #expect(Array(Relay.event(update.kind.rawValue, update.json).utf8) == WireJSON.encode(event))
      let page = MessagesPage(messages: [message, message], hasMore: true, statusUpdates: [update.update])
      #expect(page.json == WireJSON.encode(page))
      let last = MessagesPage(messages: [], hasMore: false, statusUpdates: [update.update], cursor: 12)
      #expect(last.json == WireJSON.encode(last))
    }
    #expect(
      Array(Relay.event("new_message", message.json).utf8)
        == WireJSON.encode(ServerEvent.newMessage(message)))
  }

  @Test func aPostIsAnsweredAndAnnouncedInTheCodableBytes() throws {
    let folder = try Folder()
    let relay = try Relay(databasePath: folder.path + "/relay.db")
    let token = try relay.store.addUser(id: 1, name: "Ada", avatarURL: nil)
    _ = try relay.store.addUser(id: 2, name: "Bob", avatarURL: nil)
    let body = WireJSON.encode(
      MessagePost(requestId: 7, toUserId: 2, content: Self.texts[1], createdAt: "2026-01-31T12:00:00.000Z"))
    let response = relay.respond(
      to: HTTPRequest(method: "POST", path: "/v2/messages", headers: ["authorization": "Bearer \(token)"], body: body))
    #expect(response.status == 201)
    let answer = try WireJSON.decode(MessagePostAnswer.self, from: response.body)
    #expect(answer.message.content == Self.texts[1] && answer.fromMessageRequestId == 7)
    #expect(response.body == WireJSON.encode(answer))
    // A batch: one stored, one replayed, one refused with a field, one not tried.
    let batch = WireJSON.encode(
      MessageBatchPost(messages: [
        MessagePost(requestId: 8, toUserId: 2, content: Self.texts[0], createdAt: "2026-01-31T12:00:01.000Z"),
        MessagePost(requestId: 7, toUserId: 2, content: Self.texts[1], createdAt: "2026-01-31T12:00:00.000Z"),
        MessagePost(requestId: 9, toUserId: 0, content: "x", createdAt: "2026-01-31T12:00:02.000Z"),
      ]))
    let batchResponse = relay.respond(
      to: HTTPRequest(
        method: "POST", path: "/v2/messages/batch", headers: ["authorization": "Bearer \(token)"], body: batch))
    #expect(batchResponse.status == 200)
    let batchAnswer = try WireJSON.decode(MessageBatchAnswer.self, from: batchResponse.body)
    #expect(batchAnswer.results.map(\.replayed) == [false, true, nil])
    #expect(batchAnswer.results[2].error?.field == "messages[2].toUserId")
    #expect(batchResponse.body == WireJSON.encode(batchAnswer))
  }

  @Test func errorsAndTheOtherAnswersAreTheProtocolTypes() throws {
    let error = APIError.badRequest("field 'toUserId': expected a positive integer", field: "toUserId").response
    #expect(
      try WireJSON.decode(ErrorBody.self, from: error.body)
        == ErrorBody(
          error: .init(
            code: "bad_request", message: "field 'toUserId': expected a positive integer",
            field: "toUserId")))
    // Without a field, the key is left out, as before.
    #expect(String(decoding: APIError.unauthorized.response.body, as: UTF8.self).contains("\"field\"") == false)
    let push = PushRecord(id: 1, toUserId: 2, messageId: 9, createdAt: "2026-01-31T12:00:00.000Z", unread: 3)
    #expect(Self.rendered(push.json) == WireJSON.encode(push))
  }

  static func rendered(_ value: JSONValue) -> [UInt8] { Array(value.render(pretty: false).utf8) }
}
