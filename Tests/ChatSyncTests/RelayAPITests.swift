import ChatProtocol
import ChatStore
import Testing

@testable import ChatSync

@Suite struct RelayAPITests {
  let message =
    #"{"message":{"messageId":77,"fromUserId":1,"toUserId":2,"content":"hi","status":"SYNCED","createdAt":"2026-01-01T00:00:00.000Z"},"fromMessageRequestId":5}"#
  let error =
    #"{"error":{"code":"bad_request","message":"field 'content': a message needs some text","field":"content"}}"#

  @Test func createdIsAccepted() {
    let outcome = RelayAPI.outcome(of: HTTPReply(status: 201, body: Array(message.utf8)))
    guard case .accepted(let m, let previousId, let replayed) = outcome else {
      Issue.record("\(outcome)")
      return
    }
    #expect(m.id == 77 && m.toUserID == 2 && m.content == "hi" && m.status == .synced && !replayed)
    #expect(previousId == nil)
    let again = RelayAPI.outcome(
      of: HTTPReply(status: 201, headers: ["idempotent-replayed": "true"], body: Array(message.utf8)))
    #expect(again == .accepted(m, previousId: nil, replayed: true))
  }

  @Test func serverErrorsAndTimeoutsAreRetried() {
    for status in [500, 502, 503, 504, 408] {
      guard case .retryable(let reason, nil) = RelayAPI.outcome(of: HTTPReply(status: status)) else {
        Issue.record("HTTP \(status) should be retried")
        continue
      }
      #expect(reason.contains("\(status)"))
    }
    #expect(
      RelayAPI.outcome(of: HTTPReply(status: 201, body: Array("not json".utf8)))
        == .retryable("HTTP 201 with a body that is not a message", retryAfter: nil))
  }

  @Test func throttlingHonoursRetryAfter() {
    #expect(
      RelayAPI.outcome(of: HTTPReply(status: 429, headers: ["retry-after": "7"]))
        == .retryable("HTTP 429", retryAfter: 7))
    #expect(
      RelayAPI.outcome(of: HTTPReply(status: 429, headers: ["retry-after": "soon"]))
        == .retryable("HTTP 429", retryAfter: nil))
    #expect(
      RelayAPI.outcome(of: HTTPReply(status: 429, headers: ["retry-after": "999999"]))
        == .retryable("HTTP 429", retryAfter: 3_600))
  }

  @Test func otherClientErrorsAreFinalAndNamed() {
    for status in [400, 403, 404, 409, 413] {
      let outcome = RelayAPI.outcome(of: HTTPReply(status: status, body: Array(error.utf8)))
      #expect(outcome == .rejected("HTTP \(status) bad_request: field 'content': a message needs some text"))
    }
    #expect(RelayAPI.outcome(of: HTTPReply(status: 401)) == .unauthorized("HTTP 401"))
  }

  @Test func eventsParse() {
    let m =
      #"{"type":"new_message","payload":{"messageId":9,"fromUserId":2,"toUserId":1,"content":"yo","status":"SYNCED","createdAt":"2026-01-01T00:00:00.000Z"}}"#
    guard case .newMessage(let message)? = RelayEvent.parse(m) else {
      Issue.record("new_message")
      return
    }
    #expect(message.messageId == 9 && message.fromUserId == 2)
    let read =
      #"{"type":"message_read","payload":{"sequence":4,"messageId":9,"conversationId":2,"at":"2026-01-01T00:00:00.000Z"}}"#
    #expect(
      RelayEvent.parse(read)
        == .read(StatusUpdate(sequence: 4, type: nil, messageId: 9, conversationId: 2, at: "2026-01-01T00:00:00.000Z")))
    #expect(
      RelayEvent.parse(#"{"type":"delivery_acknowledged","payload":{"messageIds":[1,2]}}"#)
        == .deliveryAcknowledged([1, 2]))
    #expect(RelayEvent.parse(#"{"type":"future_thing","payload":{}}"#) == .unknown("future_thing"))
    #expect(RelayEvent.parse("not json") == nil)
    #expect(RelayEvent.parse(#"{"type":"new_message","payload":{"messageId":"x"}}"#) == nil)
  }
}
