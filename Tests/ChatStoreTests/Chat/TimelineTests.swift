import Foundation
import TestSupport
import Testing

@testable import ChatStore

@Suite(.ownThreads) struct TimelineTests {
  /// 23 messages in conversation 2 (and noise in 3), then 3 requests.
  func history() throws -> (ChatFixture, [TimelineItem]) {
    let f = try ChatFixture()
    var messages: [Message] = []
    for i in 0..<23 {
      messages.append(
        i % 3 == 0
          ? f.outgoing(f.relayID(Int64(i) * 10), to: 2, "m\(i)")
          : f.incoming(f.relayID(Int64(i) * 10), from: 2, "m\(i)"))
      try f.chats.receive(f.incoming(f.relayID(Int64(i) * 10 + 1), from: 3, "noise"))
    }
    try f.chats.receive(messages.shuffled())
    var requests: [MessageRequest] = []
    for i in 0..<3 {
      f.tick()
      requests.append(try f.chats.send(to: 2, content: "r\(i)"))
    }
    try f.chats.markFailed(requests[1].requestID, reason: "x", retryAt: nil)
    requests[1] = try #require(try f.chats.request(requests[1].requestID))
    return (f, messages.sorted { $0.id < $1.id }.map(TimelineItem.message) + requests.map(TimelineItem.request))
  }

  @Test(arguments: [1, 4, 7, 50])
  func pagingBackwardsThenForwardsVisitsEveryItemOnceInOrder(limit: Int) throws {
    let (f, expected) = try history()
    var pages: [[TimelineItem]] = []
    var page = try f.chats.timeline(conversation: 2, limit: limit)
    #expect(page.newer == nil)
    pages.append(page.items)
    while let older = page.older {
      page = try f.chats.timeline(conversation: 2, before: older, limit: limit)
      pages.insert(page.items, at: 0)
    }
    #expect(pages.flatMap { $0 } == expected)
    #expect(pages.allSatisfy { $0.count <= limit })

    var forward: [TimelineItem] = page.items
    while let newer = page.newer {
      page = try f.chats.timeline(conversation: 2, after: newer, limit: limit)
      forward += page.items
    }
    #expect(forward == expected)
  }

  @Test func pendingRequestsStayAtTheEndUntilAcknowledgedThenSlotIntoIDOrder() throws {
    let f = try ChatFixture()
    try f.chats.receive(f.incoming(f.relayID(100), from: 2, "before"))
    let request = try f.chats.send(to: 2, content: "mine")
    try f.chats.receive(f.incoming(f.relayID(300), from: 2, "after, still acknowledged first"))
    var items = try f.chats.timeline(conversation: 2).items.map(\.content)
    #expect(items == ["before", "after, still acknowledged first", "mine"])

    try f.chats.acknowledge(f.outgoing(f.relayID(200), to: 2, "mine"), requestID: request.requestID)
    items = try f.chats.timeline(conversation: 2).items.map(\.content)
    #expect(items == ["before", "mine", "after, still acknowledged first"])
  }

  @Test(arguments: [-86_400_000 * 365, -60_000, 60_000, 86_400_000 * 365] as [Int64])
  func deviceClockSkewDoesNotReorderAcknowledgedMessages(skew: Int64) throws {
    let f = try ChatFixture()
    f.clock += skew
    let ids = (1...5).map { f.relayID(Int64($0) * 1000) }
    for (i, id) in ids.enumerated() {
      let request = try f.chats.send(to: 2, content: "m\(i)")
      f.clock -= 7_000 * Int64(i)  // a clock that jumps around
      var message = f.outgoing(id, to: 2, "m\(i)")
      message.createdAt = request.createdAt  // the sender's skewed time
      try f.chats.acknowledge(message, requestID: request.requestID)
    }
    let page = try f.chats.timeline(conversation: 2)
    #expect(page.items.map(\.cursor) == ids.map { .message(id: $0) })
  }

  @Test func cursorsRoundTripThroughText() {
    let cursors: [TimelineCursor] = [.message(id: 42), .request(createdAt: "2026-01-01T00:00:00.000Z", requestID: 7)]
    for cursor in cursors { #expect(TimelineCursor(cursor.description) == cursor) }
    #expect(TimelineCursor("x1") == nil)
    #expect(TimelineCursor("r12") == nil)
  }
}
