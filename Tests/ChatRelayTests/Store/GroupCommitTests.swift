import ChatProtocol
import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatRelay

/// The serving relay's speed-ups keep the store's promises: calls grouped into one
/// transaction commit or vanish together and a failed call inside leaves nothing; a
/// remembered token is forgotten when another connection rotates it; the plain-body
/// parser reads exactly what JSONDecoder reads.
@Suite(.ownThreads) struct GroupCommitTests {
  @Test func groupedCallsAreInvisibleToOthersUntilTheCommitAndAFailedCallLeavesNothing() throws {
    try withRelay { store, path, _ in
      store.groupsCalls = true
      let first = try store.post(
        from: 1, requestID: 1, to: 2, content: "one", createdAt: "2026-01-01T00:00:00.000Z", now: 1_800_000_000_000)
      #expect(store.openGroup != nil)
      // Refused inside the group (unknown recipient): its savepoint is undone, the group lives on.
      #expect(throws: StoreError.self) {
        try store.post(
          from: 1, requestID: 2, to: 99, content: "lost", createdAt: "2026-01-01T00:00:00.000Z", now: 1_800_000_000_000)
      }
      let other = try RelayStore(path: path)
      #expect(try other.waiting(for: 2).isEmpty)
      let group = try store.commitGroup()
      #expect(group != nil && store.openGroup == nil)
      #expect(try other.waiting(for: 2) == [first.message.messageId])
      #expect(try store.commitGroup() == nil)
    }
  }

  @Test func aTokenRotatedThroughAnotherConnectionStopsAuthenticatingAtOnce() throws {
    try withRelay { store, path, tokens in
      store.groupsCalls = true
      #expect(try store.authenticate(token: tokens[1]!)?.user == 1)
      try store.commitGroup()
      #expect(try store.authenticate(token: tokens[1]!)?.user == 1)  // remembered
      try store.commitGroup()
      let rotated = try RelayStore(path: path).rotateToken(id: 1)
      #expect(try store.authenticate(token: tokens[1]!)?.user == nil)
      #expect(try store.authenticate(token: rotated)?.user == 1)
      try store.commitGroup()
      // And through this connection.
      let again = try store.rotateToken(id: 1)
      #expect(try store.authenticate(token: rotated)?.user == nil)
      #expect(try store.authenticate(token: again)?.user == 1)
      try store.commitGroup()
    }
  }

  @Test(arguments: [
    #"{"requestId":7,"toUserId":2,"content":"Hi"}"#,
    #" { "toUserId" : 2 , "content" : "x", "requestId" : 9, "createdAt": null } "#,
    #"{"requestId":7,"toUserId":2,"content":"a\"b\\c\/d\u00e9\ud83d\ude00\n\t\b\f\r","createdAt":"2026-01-31T12:00:00.000Z"}"#,
    #"{"requestId":0,"toUserId":-2,"content":""}"#,
    #"{"requestId":9223372036854775807,"toUserId":2,"content":"é 👋"}"#,
    #"{"requestId":92233720368547758070,"toUserId":2,"content":"x"}"#,
    #"{"requestId":7.0,"toUserId":2,"content":"x"}"#, #"{"requestId":07,"toUserId":2,"content":"x"}"#,
    #"{"requestId":7,"toUserId":2,"content":"x","extra":[1]}"#, #"{"requestId":7,"toUserId":2,"content":5}"#,
    #"{"requestId":7,"toUserId":2,"content":"\ud800"}"#, #"{"requestId":7,"toUserId":2,"content":"\udc00x"}"#,
    #"{"requestId":7,"toUserId":2}"#, #"{"requestId":7,"toUserId":2,"content":"x"} x"#, "{", "", "[]",
    #"{"requestId":7,"requestId":8,"toUserId":2,"content":"x"}"#,
    "{\"requestId\":7,\"toUserId\":2,\"content\":\"a\u{1}\"}",
  ])
  func thePlainBodyParserReadsWhatJSONDecoderReads(_ text: String) throws {
    let bytes = Array(text.utf8)
    let decoded = try? JSONDecoder().decode(MessagePost.self, from: Data(bytes))
    guard let plain = MessagePost.parsePlain(bytes) else { return }  // left to JSONDecoder
    let expected = try #require(decoded)
    #expect(plain.requestId == expected.requestId && plain.toUserId == expected.toUserId)
    #expect(plain.content == expected.content && plain.createdAt == expected.createdAt)
  }

  @Test(arguments: [
    #"{"messages":[{"requestId":7,"toUserId":2,"content":"Hi"},{"requestId":8,"toUserId":2,"content":"a\"b","createdAt":null}]}"#,
    #" { "after" : 6 , "messages" : [ {"toUserId":2,"content":"x","requestId":9} ] } "#,
    #"{"messages":[],"after":null}"#, #"{"messages":[{"requestId":7,"toUserId":2}]}"#,
    #"{"messages":[{"requestId":7,"toUserId":2,"content":"x"}],"after":1.5}"#,
    #"{"messages":[{"requestId":7,"toUserId":2,"content":"x"}],"messages":[]}"#,
    #"{"messages":[{"requestId":7,"toUserId":2,"content":"x"},]}"#, #"{"after":3}"#, #"{"messages":{}}"#,
    #"{"messages":[{"requestId":7,"toUserId":2,"content":"x","extra":1}]}"#,
  ])
  func thePlainBatchParserReadsWhatJSONDecoderReads(_ text: String) throws {
    let bytes = Array(text.utf8)
    let decoded = try? JSONDecoder().decode(MessageBatchPost.self, from: Data(bytes))
    guard let plain = MessageBatchPost.parsePlain(bytes) else { return }  // left to JSONDecoder
    #expect(plain == decoded)
  }

  @Test func thePlainParsersTakeTheClientsBodies() throws {
    let batch = MessageBatchPost(
      messages: [
        MessagePost(requestId: 1, toUserId: 2, content: "one \"quoted\" é", createdAt: "2026-01-31T12:00:00.000Z"),
        MessagePost(requestId: 2, toUserId: 2, content: "two", createdAt: nil),
      ], after: 5)
    #expect(MessageBatchPost.parsePlain(WireJSON.encode(batch)) == batch)
  }

  @Test func thePlainBodyParserTakesTheBenchsBodies() {
    let body = Array(#"{"requestId": 1733000000000001, "toUserId": 102, "content": "12.5 xxxxxxxx"}"#.utf8)
    #expect(MessagePost.parsePlain(body)?.toUserId == 102)
  }
}
