import Foundation
import TestSupport
import Testing

@testable import ChatStore

@Suite(.ownThreads) struct SendAndAcknowledgeTests {
  @Test func sendStoresAPendingRequestThatShowsAtOnce() throws {
    let f = try ChatFixture()
    let request = try f.chats.send(to: 2, content: "Hello 👋")
    #expect(request.status == .pending)
    #expect(try f.chats.request(request.requestID) == request)
    let page = try f.chats.timeline(conversation: 2)
    #expect(page.items == [.request(request)])
    let list = try f.chats.conversations()
    #expect(list.map(\.contact.id) == [2])
    #expect(list.first?.summary == "Hello 👋")
  }

  @Test func requestIDsAreNeverReusedEvenAfterTheNewestIsAcknowledged() throws {
    let f = try ChatFixture()
    let first = try f.chats.send(to: 2, content: "a")
    try f.chats.acknowledge(f.outgoing(f.relayID(1), to: 2, "a"), requestID: first.requestID)
    let second = try f.chats.send(to: 2, content: "b")
    #expect(second.requestID > first.requestID)

    // …and across a restart (a new repository over the same file).
    let reopened = try ChatRepository.open(user: ChatFixture.owner, in: f.folder)
    try reopened.acknowledge(f.outgoing(f.relayID(2), to: 2, "b"), requestID: second.requestID)
    let third = try reopened.send(to: 2, content: "c")
    #expect(third.requestID > second.requestID)
  }

  @Test func sendingToAnUnknownUserIsRefusedAndStoresNothing() throws {
    let f = try ChatFixture()
    #expect(throws: StoreError.self) { try f.chats.send(to: 99, content: "x") }
    #expect(try f.contents().isEmpty)
  }

  @Test func acknowledgeDeletesTheRequestAndStoresTheMessageOnce() throws {
    let f = try ChatFixture()
    let request = try f.chats.send(to: 2, content: "Hello")
    let message = f.outgoing(f.relayID(5), to: 2, "Hello")
    try f.chats.acknowledge(message, requestID: request.requestID)
    try f.chats.acknowledge(message, requestID: request.requestID)
    #expect(try f.chats.request(request.requestID) == nil)
    let rows = try f.contents()
    #expect(rows.count == 1)
    #expect(rows[0].hasPrefix("M \(message.id)|1|2|'Hello'|'SYNCED'"))
    #expect(rows[0].hasSuffix("|2|\(request.requestID)"))
  }

  @Test func acknowledgeAfterTheSameMessageArrivedThroughSync() throws {
    let f = try ChatFixture()
    let request = try f.chats.send(to: 2, content: "Hello")
    let message = f.outgoing(f.relayID(5), to: 2, "Hello")
    try f.chats.receive(message)  // sync got there first, without the request id
    try f.chats.apply(.delivered, toMessage: message.id)
    try f.chats.acknowledge(message, requestID: request.requestID)
    let rows = try f.contents()
    #expect(rows.count == 1)
    #expect(rows[0].contains("'DELIVERED'"))  // the ack does not move the status back
  }

  @Test func syncOfTheOwnersMessageWithItsRequestIDSettlesTheRequest() throws {
    let f = try ChatFixture()
    let request = try f.chats.send(to: 3, content: "lost reply")
    try f.chats.receive(f.outgoing(f.relayID(9), to: 3, "lost reply", requestID: request.requestID))
    #expect(try f.chats.request(request.requestID) == nil)
    #expect(try f.contents().count == 1)
  }

  @Test func receivingAMessageThatIsNotTheOwnersIsRefused() throws {
    let f = try ChatFixture()
    let stranger = Message(id: 1, fromUserID: 2, toUserID: 3, content: "x", createdAt: "2026-01-01T00:00:00.000Z")
    #expect(throws: StoreError.self) { try f.chats.receive(stranger) }
  }
}

@Suite(.ownThreads) struct OutboxTests {
  @Test func dueRequestsFollowTheirSchedule() throws {
    let f = try ChatFixture()
    let a = try f.chats.send(to: 2, content: "a")
    f.tick()
    let b = try f.chats.send(to: 3, content: "b")
    #expect(try f.chats.dueRequests().map(\.requestID) == [a.requestID, b.requestID])

    try f.chats.markSent(a.requestID, replyTimeout: 30)
    #expect(try f.chats.request(a.requestID)?.lastSentAt != nil)
    #expect(try f.chats.dueRequests().map(\.requestID) == [b.requestID])
    f.tick(31_000)
    #expect(
      try f.chats.dueRequests().map(\.requestID) == [a.requestID, b.requestID], "an unanswered send is due again")

    let retryAt = Date(timeIntervalSince1970: Double(f.clock + 10_000) / 1000)
    try f.chats.markFailed(b.requestID, reason: "HTTP 503", retryAt: retryAt)
    let failed = try #require(try f.chats.request(b.requestID))
    #expect(failed.status == .failed && failed.failCount == 1 && failed.failReason == "HTTP 503")
    #expect(try f.chats.dueRequests().map(\.requestID) == [a.requestID])
    f.tick(10_000)
    #expect(try f.chats.dueRequests().map(\.requestID).contains(b.requestID))
    #expect(try f.chats.dueRequests(maxAttempts: 1).map(\.requestID) == [a.requestID], "retry budget spent")
  }

  @Test func oldestFirstPerConversation() throws {
    let f = try ChatFixture()
    var sent: [(Int64, Int64)] = []
    for contact: Int64 in [3, 2, 3, 2] {
      sent.append((contact, try f.chats.send(to: contact, content: "x").requestID))
      f.tick()
    }
    let due = try f.chats.dueRequests()
    #expect(due.map(\.toUserID) == [2, 2, 3, 3])
    #expect(due.map(\.requestID) == sent.sorted { ($0.0, $0.1) < ($1.0, $1.1) }.map(\.1))
  }

  @Test func permanentFailureIsNotRetriedUntilTheUserAsks() throws {
    let f = try ChatFixture()
    let r = try f.chats.send(to: 2, content: "blocked")
    try f.chats.markFailed(r.requestID, reason: "HTTP 403", retryAt: nil)
    #expect(try f.chats.request(r.requestID)?.isPermanentlyFailed == true)
    f.tick(86_400_000)
    #expect(try f.chats.dueRequests().isEmpty)
    #expect(try f.chats.retry(r.requestID))
    #expect(try f.chats.dueRequests().map(\.requestID) == [r.requestID])
  }

  @Test func onlyAFailedRequestCanBeDeleted() throws {
    let f = try ChatFixture()
    let pending = try f.chats.send(to: 2, content: "keep me")
    #expect(try !f.chats.deleteFailedRequest(pending.requestID))
    #expect(try f.chats.request(pending.requestID) != nil)
    try f.chats.markFailed(pending.requestID, reason: "x", retryAt: nil)
    #expect(try f.chats.deleteFailedRequest(pending.requestID))
    #expect(try f.chats.request(pending.requestID) == nil)
  }

  @Test func markingAnAcknowledgedRequestChangesNothing() throws {
    let f = try ChatFixture()
    let r = try f.chats.send(to: 2, content: "a")
    try f.chats.acknowledge(f.outgoing(f.relayID(1), to: 2, "a"), requestID: r.requestID)
    #expect(try !f.chats.markSent(r.requestID))
    #expect(try !f.chats.markFailed(r.requestID, reason: "late", retryAt: nil))
    #expect(try f.contents().count == 1)
  }
}

@Suite(.ownThreads) struct StatusTransitionTests {
  static let all = MessageStatus.allCases

  /// Every (stored, event) pair: the result is the later of the two, never earlier.
  @Test(arguments: all, all)
  func singleMessageEvent(stored: MessageStatus, event: MessageStatus) throws {
    let f = try ChatFixture()
    var message = f.outgoing(f.relayID(1), to: 2)
    message.status = stored
    try f.chats.receive(message)
    let changed = try f.chats.apply(event, toMessage: message.id)
    #expect(changed == (event > stored))
    #expect(try f.status(of: message.id) == max(stored, event).rawValue)
  }

  @Test(arguments: all, all)
  func duplicateDeliveryNeverMovesBack(stored: MessageStatus, again: MessageStatus) throws {
    let f = try ChatFixture()
    var message = f.incoming(f.relayID(1), from: 2)
    message.status = stored
    try f.chats.receive(message)
    message.status = again
    try f.chats.receive(message)
    #expect(try f.status(of: message.id) == max(stored, again).rawValue)
  }

  @Test(arguments: all, all)
  func upToEvent(stored: MessageStatus, event: MessageStatus) throws {
    let f = try ChatFixture()
    var mine = f.outgoing(f.relayID(1), to: 2)
    mine.status = stored
    let later = f.outgoing(f.relayID(9), to: 2)
    let theirs = f.incoming(f.relayID(2), from: 2)
    try f.chats.receive([mine, later, theirs])
    try f.chats.apply(event, upTo: f.relayID(5), inConversation: 2)
    #expect(try f.status(of: mine.id) == max(stored, event).rawValue)
    #expect(try f.status(of: later.id) == "SYNCED", "beyond the mark")
    #expect(try f.status(of: theirs.id) == "SYNCED", "receipts are about the owner's messages")
  }

  @Test func receiptsBeforeTheMessageAreAppliedWhenItArrives() throws {
    let f = try ChatFixture()
    let a = f.outgoing(f.relayID(1), to: 2)
    let b = f.outgoing(f.relayID(2), to: 3)
    try f.chats.apply(.read, upTo: a.id, inConversation: 2)
    try f.chats.apply(.delivered, toMessage: b.id)
    try f.chats.receive([a, b])
    #expect(try f.status(of: a.id) == "READ")
    #expect(try f.status(of: b.id) == "DELIVERED")
  }
}

@Suite(.ownThreads) struct ReadAndUnreadTests {
  @Test func markReadReturnsTheHighestIDAndClearsTheCount() throws {
    let f = try ChatFixture()
    try f.chats.receive([
      f.incoming(f.relayID(1), from: 2), f.incoming(f.relayID(3), from: 2), f.outgoing(f.relayID(4), to: 2),
    ])
    try f.chats.receive(f.incoming(f.relayID(2), from: 3))
    #expect(try f.chats.unreadCount(conversation: 2) == 2)
    #expect(try f.chats.conversations().first { $0.contact.id == 2 }?.unreadCount == 2)
    #expect(try f.chats.markRead(conversation: 2) == f.relayID(3))
    #expect(try f.chats.unreadCount(conversation: 2) == 0)
    #expect(try f.chats.markRead(conversation: 2) == nil, "nothing new to read")
    #expect(try f.status(of: f.relayID(4)) == "SYNCED", "the owner's own message is not 'read' by the owner")
    #expect(try f.chats.unreadCount(conversation: 3) == 1)
  }
}

/// `unacknowledgedIncoming` (what chat-sync acknowledges on every connect) lists the
/// incoming messages whose delivery the relay has not confirmed, whatever their status.
@Suite(.ownThreads) struct UnacknowledgedIncomingTests {
  @Test func theListIsReadByPrimaryKey() throws {
    let f = try ChatFixture()
    let plan = try f.chats.database.prepare("EXPLAIN QUERY PLAN " + HotQuery.unconfirmedDeliveryAcks.sql).map([
      Int64(0), Int64(500),
    ]) {
      $0.string(3)
    }
    #expect(plan.allSatisfy { $0.contains("PRIMARY KEY") || $0.contains("INTEGER PRIMARY KEY") }, "\(plan)")
  }

  /// Issue 25: a message read before its delivery was confirmed stayed on the relay for
  /// good (only SYNCED messages were acknowledged again).
  @Test func aMessageReadBeforeItsConfirmationIsStillAcknowledged() throws {
    let f = try ChatFixture()
    try f.chats.receive([
      f.incoming(f.relayID(1), from: 2), f.incoming(f.relayID(2), from: 3), f.outgoing(f.relayID(3), to: 2),
      f.incoming(f.relayID(4), from: 2, status: .delivered), f.incoming(f.relayID(5), from: 4),
    ])
    let expected = [f.relayID(1), f.relayID(2), f.relayID(5)]
    #expect(try f.chats.unacknowledgedIncoming() == expected)
    #expect(try f.chats.markRead(conversation: 2) != nil)
    #expect(try f.chats.unacknowledgedIncoming() == expected, "read, but the relay has not confirmed it")
    #expect(try f.chats.unacknowledgedIncoming(after: f.relayID(1), limit: 1) == [f.relayID(2)])
    try f.chats.confirmDelivered(expected)
    #expect(try f.chats.unacknowledgedIncoming().isEmpty)
    #expect(try f.status(of: f.relayID(1)) == "READ", "confirmation never lowers a status")
    #expect(try f.status(of: f.relayID(2)) == "DELIVERED")
  }

  /// A receipt says only what was read: it stops below an unread message that arrived
  /// after the conversation was read, and stays queued until the relay's mark reaches it.
  @Test func aReceiptStopsBelowTheFirstUnreadMessageAndStaysUntilConfirmed() throws {
    let f = try ChatFixture()
    try f.chats.receive([f.incoming(f.relayID(1), from: 2), f.incoming(f.relayID(5), from: 2)])
    let highest = try #require(try f.chats.markRead(conversation: 2))
    try f.chats.queueReadReceipt(conversation: 2, upTo: highest)
    try f.chats.receive([f.incoming(f.relayID(3), from: 2)])
    let pending = try f.chats.pendingReadReceipts()
    #expect(pending.count == 1 && pending[0].upTo == f.relayID(5) && pending[0].sendable == f.relayID(3) - 1)
    try f.chats.clearReadReceipt(conversation: 2, upTo: f.relayID(3) - 1)
    #expect(try f.chats.pendingReadReceipts().count == 1, "the relay's mark is below the receipt")
    _ = try f.chats.markRead(conversation: 2)
    #expect(try f.chats.pendingReadReceipts().first?.sendable == f.relayID(5))
    try f.chats.clearReadReceipt(conversation: 2, upTo: f.relayID(5))
    #expect(try f.chats.pendingReadReceipts().isEmpty)
  }
}

@Suite(.ownThreads) struct ConversationListTests {
  @Test func orderedByLastActivityWithPendingRequestsCounting() throws {
    let f = try ChatFixture()
    try f.chats.receive(f.incoming(f.relayID(1_000), from: 2, "old"))
    try f.chats.receive(f.incoming(f.relayID(2_000), from: 3, "newer"))
    f.clock += 5_000  // the device clock is now after both messages
    try f.chats.send(to: 2, content: "pending reply")
    let list = try f.chats.conversations()
    #expect(list.map(\.contact.id) == [2, 3])
    #expect(list[0].summary == "pending reply")
    #expect(list[0].lastMessage?.content == "old")
    #expect(list[1].summary == "newer")
    #expect(list.allSatisfy { $0.contact.id != 4 }, "a contact without messages has no conversation")
  }

  @Test func summaryIsCut() throws {
    let f = try ChatFixture()
    try f.chats.receive(f.incoming(f.relayID(1), from: 2, String(repeating: "字", count: 500)))
    let summary = try #require(try f.chats.conversations().first?.summary)
    #expect(summary.count == ConversationPreview.summaryLength)
    #expect(summary.hasSuffix("…"))
  }

  /// A sender's run meets its own messages in a catch-up page before their batch's
  /// answer: a page long enough for the bulk path settles each request as the answer
  /// would, keeps the request id of one it does not match, and the chat list and the
  /// search index stay exact.
  @Test func aPageOfThisDevicesOwnMessagesSettlesTheirRequestsInBulk() throws {
    let f = try ChatFixture()
    let requests = try (0..<40).map { try f.chats.send(to: 2, content: "queued \($0) zqbulkword") }
    let other = try f.chats.send(to: 3, content: "not in the page")
    var page = requests.enumerated().map { index, request in
      f.outgoing(f.relayID(Int64(index + 1)), to: 2, request.content, requestID: request.requestID)
    }
    // One whose request id matches no queued text (another device's numbering).
    page.append(f.outgoing(f.relayID(50), to: 3, "sent elsewhere", requestID: other.requestID))
    #expect(page.count >= ChatRepository.bulkReceiveThreshold)
    _ = try f.chats.receive(page, users: [], messageCursor: nil)
    #expect(try f.chats.database.int64("SELECT count(*) FROM MessageRequests") == 1)
    #expect(try f.chats.request(other.requestID)?.content == "not in the page")
    #expect(try f.chats.database.int64("SELECT count(*) FROM Messages") == 41)
    #expect(try f.chats.search("zqbulkword", limit: 100).hits.count == 40)
    let list = try f.chats.database.query(HotQuery.conversationList.sql, [50]) { $0.values.map(\.description) }
    let computed = try f.chats.database.query(HotQuery.conversationListFromTables.sql, [50]) {
      $0.values.map(\.description)
    }
    #expect(list == computed)
  }
}
