import ChatProtocol
import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatRelay

/// `serve --push-webhook URL`: a message to a user without an open socket is also POSTed
/// there as a `PushNotice` (ids and the badge count, never the content), through the
/// shared libwebsockets HTTP client. The receiver is a `RelayServer` of its own.
@Suite(.serialized, .ownThreads) struct PushWebhookTests {
  @Test func aMessageToAnOfflineUserIsPostedToTheWebhookWithoutItsContent() async throws {
    let received = Locked<[HTTPRequest]>([])
    let receiver = try RelayServer(
      port: 0,
      handlers: RelayServer.Handlers(http: { request in
        received.withLock { $0.append(request) }
        return HTTPResponse(status: 204)
      }))
    let thread = Thread { receiver.run() }
    thread.start()
    defer { receiver.stop() }

    let folder = try Folder()
    let relay = try Relay(
      databasePath: folder.path + "/relay.db", pushWebhook: URL(string: "http://127.0.0.1:\(receiver.port)/push?k=1"))
    let token = try relay.store.addUser(id: 1, name: "Ada", avatarURL: nil)
    _ = try relay.store.addUser(id: 2, name: "Bob", avatarURL: nil)
    let response = relay.respond(
      to: HTTPRequest(
        method: "POST", path: "/v2/messages", headers: ["authorization": "Bearer \(token)"],
        body: WireJSON.encode(MessagePost(requestId: 7, toUserId: 2, content: "secret", createdAt: nil))))
    #expect(response.status == 201)
    let message = try WireJSON.decode(MessagePostAnswer.self, from: response.body).message

    let deadline = ContinuousClock.now.advanced(by: .seconds(20))
    while received.withLock({ $0.isEmpty }) && ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    let request = try #require(received.withLock { $0.first }, "nothing reached the webhook")
    #expect(request.method == "POST" && request.path == "/push" && request.query["k"] == "1")
    #expect(request.headers["content-type"] == "application/json")
    #expect(request.headers["authorization"] == nil)
    #expect(
      try WireJSON.decode(PushNotice.self, from: request.body)
        == PushNotice(toUserId: 2, messageId: message.messageId, fromUserId: 1, unread: 1))
    #expect(!String(decoding: request.body, as: UTF8.self).contains("secret"))
  }

  @Test func aWebhookThatIsNotHTTPIsRefused() throws {
    let folder = try Folder()
    #expect(throws: (any Error).self) {
      _ = try Relay(databasePath: folder.path + "/relay.db", pushWebhook: URL(string: "ftp://example.com/push"))
    }
  }
}
