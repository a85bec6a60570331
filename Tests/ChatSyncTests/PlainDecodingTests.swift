import ChatProtocol
import Foundation
import Testing

@testable import ChatSync

/// The client's fast readers of batch answers and status events agree with
/// `JSONDecoder` on every value they accept, and leave everything else to it.
@Suite struct PlainDecodingTests {
  static let messages = [
    RelayMessage(
      messageId: 14_319_891_952_959_488, fromUserId: 1, toUserId: 2, content: "plain",
      createdAt: "2026-12-03T23:36:50.708Z",
      fromDeviceId: 1, requestId: 7, previousId: 0),
    RelayMessage(
      messageId: 2, fromUserId: 1, toUserId: 2, content: "quote \" backslash \\ newline \n tab \t nul \u{0} é 👋 ‮",
      status: "DELIVERED", createdAt: "2026-01-01T00:00:00.000Z"),
    RelayMessage(messageId: 3, fromUserId: 9, toUserId: 1, content: "", createdAt: "x", requestId: 1),
  ]

  @Test func batchBodiesAreTheBytesJSONEncoderWrites() throws {
    let posts = Self.messages.enumerated().map {
      MessagePost(
        requestId: Int64($0.offset + 1), toUserId: $0.element.toUserId, content: $0.element.content + " / \u{1f}",
        createdAt: $0.offset == 1 ? nil : $0.element.createdAt)
    }
    for body in [MessageBatchPost(messages: posts), MessageBatchPost(messages: posts, after: 42)] {
      #expect(body.json == WireJSON.encode(body), "\(String(decoding: body.json, as: UTF8.self))")
    }
  }

  @Test func batchAnswersReadAsJSONDecoderReadsThem() throws {
    let answer = MessageBatchAnswer(
      results: Self.messages.enumerated().map {
        MessageBatchResult(
          fromMessageRequestId: Int64($0.offset + 1), message: $0.element, replayed: $0.offset == 1, error: nil)
      })
    let bytes = WireJSON.encode(answer)
    let plain = try #require(MessageBatchAnswer.parsePlain(bytes))
    #expect(plain == (try WireJSON.decode(MessageBatchAnswer.self, from: bytes)))
    #expect(plain == answer)
    // Spaces and nulls for the optional fields read the same too.
    let spaced = Array(
      #"{ "results" : [ { "replayed" : null , "message" : {"messageId": 5, "fromUserId": 1, "toUserId": 2, "content": "a", "createdAt": "t", "status": null, "previousId": null}, "fromMessageRequestId": 4 } ] }"#
        .utf8)
    let loose = try #require(MessageBatchAnswer.parsePlain(spaced))
    #expect(loose == (try WireJSON.decode(MessageBatchAnswer.self, from: spaced)))
  }

  @Test(arguments: [
    #"{"results":[{"error":{"code":"not_found","message":"m"},"fromMessageRequestId":1}]}"#,  // an error result
    #"{"results":[],"extra":1}"#,  // an unknown key
    #"{"results":[{"fromMessageRequestId":1.5,"message":{"content":"a","createdAt":"t","fromUserId":1,"messageId":1,"toUserId":2}}]}"#,
    #"{"results":[{"fromMessageRequestId":1,"message":{"content":"\ud800","createdAt":"t","fromUserId":1,"messageId":1,"toUserId":2}}]}"#,
    #"{"results":[]} x"#, "[]", "",
  ])
  func anythingElseIsLeftToJSONDecoder(_ text: String) {
    #expect(MessageBatchAnswer.parsePlain(Array(text.utf8)) == nil)
  }

  /// A key given twice is JSONDecoder's to read (the `sync` fuzz target's finding: the
  /// fast reader kept the second `status`, JSONDecoder another).
  @Test func anObjectWithAKeyTwiceIsLeftToJSONDecoder() throws {
    let text =
      #"{"type":"new_message","payload":{"messageId":70000,"fromUserId":6,"toUserId":1,"content":"hi","status":"SYNCED","createdAt":"2026-01-31T12:00:00.000Z","status":"READ"}}"#
    #expect(ServerEvent.parsePlain(text) == nil)
    #expect(MessageBatchAnswer.parsePlain(Array(#"{"results":[],"results":[]}"#.utf8)) == nil)
    let decoded = try? WireJSON.decode(ServerEvent.self, from: text)
    if case .newMessage(let message)? = decoded {
      #expect(RelayEvent.parse(text) == .newMessage(message))
    } else {
      #expect(RelayEvent.parse(text) == nil)
    }
  }

  @Test func perMessageEventsReadAsJSONDecoderReadsThem() throws {
    // Edits and deletes are rare: JSONDecoder reads them (RelayEvent.parse falls back to it).
    for kind in [StatusUpdate.Kind.messageEdited, .messageDeleted] {
      let update = StatusUpdate(
        sequence: 42, type: kind, messageId: 9, conversationId: 2, at: "2026-01-01T00:00:00.000Z", version: 2,
        content: "new text")
      let event: ServerEvent = kind == .messageEdited ? .messageEdited(update) : .messageDeleted(update)
      let parsed = try #require(RelayEvent.parse(WireJSON.string(event)))
      #expect(parsed == (kind == .messageEdited ? .edited(update) : .deleted(update)))
    }
    for kind in [StatusUpdate.Kind.messageDelivered, .messageRead, .conversationRead] {
      for type in [kind, nil] {
        let update = StatusUpdate(
          sequence: 42, type: type, messageId: 9, conversationId: 2, at: "2026-01-01T00:00:00.000Z")
        let event: ServerEvent =
          switch kind {
          case .messageDelivered: .messageDelivered(update)
          case .messageRead: .messageRead(update)
          default: .conversationRead(update)
          }
        let text = WireJSON.string(event)
        let plain = try #require(ServerEvent.parsePlain(text))
        #expect(plain == (try WireJSON.decode(ServerEvent.self, from: text)))
        #expect(plain == event)
      }
    }
    for message in Self.messages {
      let text = WireJSON.string(ServerEvent.newMessage(message))
      let plain = try #require(ServerEvent.parsePlain(text))
      #expect(plain == (try WireJSON.decode(ServerEvent.self, from: text)))
    }
    for other in [
      WireJSON.string(ServerEvent.deliveryAcknowledged(MessageIDs(messageIds: [1]))),
      #"{"payload":{"at":"t","conversationId":2,"messageId":9,"sequence":1},"type":"new_message"}"#,
      #"{"payload":{"at":"t","conversationId":2,"messageId":9,"sequence":1},"type":"message_edited"}"#,
    ] {
      #expect(ServerEvent.parsePlain(other) == nil, "\(other)")
    }
  }
}
