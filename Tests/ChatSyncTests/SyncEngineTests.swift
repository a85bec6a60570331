import ChatProtocol
import ChatStore
import Foundation
import Testing

@testable import ChatSync

@Suite struct SyncEngineTests {
  /// Messages stored together move the cursor along the log as far as it is whole; a
  /// gap after a move keeps the move, and what follows the gap waits ahead of it.
  @Test func aBatchMovesTheCursorAsFarAsTheLogIsWhole() {
    let moved = SyncEngine.advance(cursor: 10, ahead: [:], storing: [(11, 10), (12, 11), (20, 15), (21, 20)])
    #expect(moved.cursor == 12)
    #expect(moved.ahead == [15: 20, 20: 21])
    let filled = SyncEngine.advance(cursor: 12, ahead: moved.ahead, storing: [(13, 12), (15, 13)])
    #expect(filled.cursor == 21)
    #expect(filled.ahead.isEmpty)
    #expect(SyncEngine.advance(cursor: 10, ahead: [:], storing: [(30, 25)]).cursor == nil)
  }

  @Test func theOutboxSendsEachConversationInOrderAndAcknowledges() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      for i in 1...5 { try repository.send(to: 2, content: "to bob \(i)") }
      for i in 1...3 { try repository.send(to: 3, content: "to cy \(i)") }
      let relay = ScriptedRelay()
      let engine = SyncEngine(
        repository: repository, http: relay.transport, socket: connector(FakeSocket()), options: .test)
      #expect(await engine.runOnce(deadline: 30) == .done)
      let posts = relay.posts.map { String(decoding: $0.body ?? [], as: UTF8.self) }
      let bob = posts.filter { $0.contains("to bob") }.map {
        $0.contains("to bob 1")
          ? 1 : $0.contains("to bob 2") ? 2 : $0.contains("to bob 3") ? 3 : $0.contains("to bob 4") ? 4 : 5
      }
      #expect(bob == [1, 2, 3, 4, 5])
      #expect(relay.posts.allSatisfy { $0.timeout == 2 }, "each POST carries the reply timeout")
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try check.outboxCounts().isEmpty)
      let page = try check.timeline(conversation: 2)
      #expect(page.items.map(\.content) == (1...5).map { "to bob \($0)" })
      #expect(await engine.metrics.sent == 8)
    }
  }

  @Test func aFailingHeadHoldsItsConversationAndRetriesWithBackoff() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      try repository.send(to: 2, content: "first")
      try repository.send(to: 2, content: "second")
      // The first two POSTs fail (a 503, then no answer at all); then the relay works.
      let relay = ScriptedRelay { attempt, _ in
        if attempt == 0 { return HTTPReply(status: 503) }
        if attempt == 1 { throw TransportError("connection reset") }
        return nil
      }
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: .test)
      #expect(await engine.runOnce(deadline: 30) == .done)
      let bodies = relay.posts.map { String(decoding: $0.body ?? [], as: UTF8.self) }
      try #require(bodies.count == 4)
      #expect(
        bodies[0].contains("first") && bodies[1].contains("first") && bodies[2].contains("first")
          && bodies[3].contains("second"))
      let metrics = await engine.metrics
      #expect(metrics.failedAttempts == 2 && metrics.retries == 2 && metrics.sent == 2)
    }
  }

  /// Protocol version 2: a conversation's queued messages go together, in order, up to
  /// `batchSize` a request; a batch that fails as a whole is sent again as a whole, and a
  /// message refused inside a batch fails alone.
  /// The batches of one conversation's backlog, as sent: each one's contents and `after`.
  struct SentBatch: Decodable {
    struct Post: Decodable { var content: String }
    var messages: [Post]
    var after: Int64?
  }

  /// Whether `flag` was still down (it is up from now on).
  static func firstTime(_ flag: Locked<Bool>) -> Bool {
    flag.withLock { raised in
      defer { raised = true }
      return !raised
    }
  }

  static func batches(_ relay: ScriptedRelay) throws -> [SentBatch] {
    try relay.posts.map { try JSONDecoder().decode(SentBatch.self, from: Data($0.body ?? [])) }
  }

  @Test func aBacklogGoesInBatchesInOrder() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let requests = try (1...25).map { try repository.send(to: 2, content: "to bob \($0)") }
      let refused = requests[6].requestID
      let inner = ScriptedRelay()
      let failed = Locked(false)
      let refusedOnce = Locked(false)
      // The first batch with message 1 fails whole (503); in the first answered batch with
      // message 7, message 7 is refused. Whatever order the two batches in flight arrive in.
      let relay = ScriptedRelay { _, call in
        let body = String(decoding: call.body ?? [], as: UTF8.self)
        if body.contains(#""to bob 1""#), Self.firstTime(failed) {
          return HTTPReply(status: 503)
        }
        var reply = inner.answer(call)
        let needle = #"{"fromMessageRequestId":\#(refused),"message""#
        let text = String(decoding: reply.body, as: UTF8.self)
        guard text.contains(needle), Self.firstTime(refusedOnce) else {
          return reply
        }
        reply.body = Array(
          text.replacingOccurrences(
            of: needle, with: #"{"fromMessageRequestId":\#(refused),"error":{"code":"conflict","message":"reused"},"x""#
          ).utf8)
        return reply
      }
      var options = SyncEngine.Options.test
      options.batchSize = 10
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: options)
      #expect(await engine.runOnce(deadline: 30) == .unsent(waiting: 0, permanent: 1))
      #expect(relay.posts.allSatisfy { $0.path == "/v2/messages/batch" }, "\(relay.posts.map(\.path))")
      let sent = try Self.batches(relay)
      #expect(sent.allSatisfy { $0.messages.count <= 10 })
      #expect(sent.filter { $0.messages.first?.content == "to bob 1" }.count >= 2, "the failed batch again whole")
      // A second batch went while the first was in flight, naming the first's last request.
      #expect(sent.contains { $0.after == requests[9].requestID })
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try check.request(refused)?.failReason == "conflict: reused")
      // Stored in the order written: the relay's ids follow it.
      #expect(
        try check.timeline(conversation: 2).items.compactMap { if case .message(let m) = $0 { m.content } else { nil } }
          == (1...25).filter { $0 != 7 }.map { "to bob \($0)" })
      let metrics = await engine.metrics
      #expect(metrics.sent == 24 && metrics.rejected == 1 && metrics.failedAttempts == 10)
    }
  }

  /// Long messages go in fewer a batch: a body over the relay's limit gets 413, which
  /// would fail every message of it for good, so none is sent.
  @Test func aBacklogOfLongMessagesFitsTheRelaysBodyLimit() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      // Every byte escaped in JSON: 64 KiB of text is 128 KiB on the wire.
      let long = String(repeating: #""\"#, count: 32_000)
      for n in 1...30 { _ = try repository.send(to: 2, content: "\(n) \(long)") }
      let inner = ScriptedRelay()
      let relay = ScriptedRelay { _, call in
        (call.body?.count ?? 0) > MessageBatchPost.maximumBodyBytes ? HTTPReply(status: 413) : inner.answer(call)
      }
      var options = SyncEngine.Options.test
      options.batchSize = 300
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: options)
      #expect(await engine.runOnce(deadline: 30) == .done)
      let sizes = relay.posts.map { $0.body?.count ?? 0 }
      #expect(sizes.count >= 4 && sizes.allSatisfy { $0 <= MessageBatchPost.maximumBodyBytes }, "\(sizes)")
      let check = try ChatRepository.open(user: 1, in: folder)
      let stored = try check.timeline(conversation: 2).items.compactMap {
        if case .message(let m) = $0 { m.content.split(separator: " ").first.map(String.init) } else { nil }
      }
      #expect(stored == (1...30).map(String.init))
    }
  }

  /// One message's edits reach the relay in the order queued: a later edit waits for an
  /// earlier one's retry (503 here), and for one a killed run left SENT, so the relay
  /// numbers them in that order.
  @Test func aMessagesEditsKeepTheirOrderThroughRetries() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let id: Int64 = 1 << 40
      _ = try repository.receive(
        [Message(id: id, fromUserID: 1, toUserID: 2, content: "v0", createdAt: "2026-01-31T12:00:00.000Z")],
        users: [User(id: 1, name: "Ann")], messageCursor: nil)
      let first = try repository.queueEdit(of: id, content: "v1")
      _ = try repository.queueEdit(of: id, content: "v2")
      // A killed run left the first SENT, due only after its reply timeout.
      try repository.markChangeSent(first.requestID, replyTimeout: 3_600)
      let seen = Locked<[String]>([])
      let relay = ScriptedRelay { attempt, call in
        guard call.path.hasSuffix("/edit") else { return nil }
        let body = try JSONDecoder().decode(MessageEditPost.self, from: Data(call.body ?? []))
        let fail = seen.withLock { texts in
          texts.append(body.content)
          return texts.count == 1
        }
        if fail { return HTTPReply(status: 503) }
        let version = Int64(seen.withLock { Set($0).count })
        let update = StatusUpdate(
          sequence: version, type: .messageEdited, messageId: id, conversationId: 2,
          at: "2026-01-31T12:0\(version):00.000Z",
          version: version, content: body.content)
        return HTTPReply(
          status: 200,
          body: WireJSON.encode(
            MessageChangeAnswer(fromMessageRequestId: body.requestId, update: update, replayed: false)))
      }
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: .test)
      #expect(await engine.runOnce(deadline: 30) == .done)
      #expect(seen.withLock { $0 } == ["v1", "v1", "v2"])
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try check.editHistory(of: id).map(\.content) == ["v0", "v1"])
      #expect(try check.messageChanges().isEmpty)
    }
  }

  /// The second batch in flight can reach the relay before the first: the relay does not
  /// try it (409 out_of_order), and it goes again after the first without counting an attempt.
  @Test func aBatchThatOvertakesTheOneBeforeItWaitsForIt() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let requests = try (1...30).map { try repository.send(to: 2, content: "to bob \($0)") }
      let inner = ScriptedRelay()
      let slowed = Locked(false)
      // The first batch is held until a batch behind it has been answered.
      let relay = ScriptedRelay { _, call in
        let body = String(decoding: call.body ?? [], as: UTF8.self)
        if body.contains(#""to bob 1""#), Self.firstTime(slowed) {
          while inner.posts.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        }
        inner.state.withLock { $0.calls.append(call) }
        return inner.answer(call)
      }
      var options = SyncEngine.Options.test
      options.batchSize = 10
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: options)
      #expect(await engine.runOnce(deadline: 30) == .done)
      let sent = try Self.batches(relay)
      #expect(sent.count >= 4, "a batch was sent twice")
      #expect(sent[1].after == requests[9].requestID && sent[1].messages.first?.content == "to bob 11")
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(
        try check.timeline(conversation: 2).items.compactMap { if case .message(let m) = $0 { m.content } else { nil } }
          == (1...30).map { "to bob \($0)" })
      let metrics = await engine.metrics
      #expect(metrics.sent == 30 && metrics.failedAttempts == 0 && metrics.rejected == 0)
    }
  }

  @Test func aLostAnswerIsRetriedWithTheSameRequestID() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let request = try repository.send(to: 2, content: "once")
      let inner = ScriptedRelay()
      // The relay stores the message, then the answer is lost.
      let relay = ScriptedRelay { attempt, call in
        if attempt == 0 {
          _ = inner.answer(call)
          throw TransportError("the connection closed before the answer")
        }
        return inner.answer(call)
      }
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: .test)
      #expect(await engine.runOnce(deadline: 30) == .done)
      let ids = relay.posts.map { String(decoding: $0.body ?? [], as: UTF8.self) }
      try #require(ids.count == 2)
      #expect(ids.allSatisfy { $0.contains(#""requestId":\#(request.requestID)"#) })
      #expect(await engine.metrics.replayed == 1)
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try check.timeline(conversation: 2).items.count == 1)
    }
  }

  @Test func throttlingWaitsForRetryAfter() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      try repository.send(to: 2, content: "slow down")
      let relay = ScriptedRelay { attempt, _ in
        attempt == 0 ? HTTPReply(status: 429, headers: ["retry-after": "30"]) : nil
      }
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: .test)
      // Within a 1 s deadline the retry (due in 30 s) does not happen.
      #expect(await engine.runOnce(deadline: 1) == .unsent(waiting: 1, permanent: 0))
      let check = try ChatRepository.open(user: 1, in: folder)
      let head = try #require(try check.outboxHeads().first)
      let due = try #require(head.nextAttemptAt.flatMap(Timestamp.milliseconds(from:)))
      let wait = Double(due) / 1000 - Date().timeIntervalSince1970
      #expect(wait > 25 && wait <= 30.5, "next attempt honours Retry-After: \(wait) s")
      #expect(head.failCount == 1 && head.status == .failed)
    }
  }

  @Test func aRefusedRequestFailsForGoodAndOthersGoOn() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let bad = try repository.send(to: 2, content: "refused")
      try repository.send(to: 2, content: "fine")
      let relay = ScriptedRelay { attempt, _ in
        attempt == 0
          ? HTTPReply(status: 409, body: Array(#"{"error":{"code":"conflict","message":"requestId reused"}}"#.utf8))
          : nil
      }
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: .test)
      #expect(await engine.runOnce(deadline: 30) == .unsent(waiting: 0, permanent: 1))
      let check = try ChatRepository.open(user: 1, in: folder)
      let failed = try #require(try check.request(bad.requestID))
      #expect(failed.isPermanentlyFailed && failed.failReason == "HTTP 409 conflict: requestId reused")
      #expect(
        try check.timeline(conversation: 2).items.compactMap { if case .message(let m) = $0 { m.content } else { nil } }
          == ["fine"])
    }
  }

  @Test func aRequestLeftSentByAKilledProcessIsRetried() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let request = try repository.send(to: 2, content: "in flight when killed")
      try repository.markSent(request.requestID, replyTimeout: 3_600)
      let relay = ScriptedRelay()
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: .test)
      #expect(await engine.runOnce(deadline: 30) == .done)
      #expect(relay.posts.count == 1)
    }
  }

  /// Issue 14: `chat-sync run` took over 15 s to exit after SIGTERM, waiting for a POST
  /// whose answer never came. `stop()` cancels it; the request stays SENT and the next
  /// run sends it again with the same request id, so the relay's copy is not lost.
  @Test(.timeLimit(.minutes(1))) func stopDoesNotWaitForAnUnansweredPost() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let request = try repository.send(to: 2, content: "answer lost")
      let inner = ScriptedRelay()
      // The relay stores the first POST and never answers it (until cancelled).
      let relay = ScriptedRelay { attempt, call in
        guard attempt == 0 else { return nil }
        _ = inner.answer(call)
        try await Task.sleep(for: .seconds(3_600))
        return nil
      }
      var options = SyncEngine.Options.test
      options.replyTimeout = 3_600
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: options)
      let run = Task { await engine.run() }
      #expect(await eventually { relay.posts.count == 1 })
      await engine.stop()
      await run.value
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try check.request(request.requestID)?.status == .sent, "left for the next run")

      let next = SyncEngine(repository: check, http: inner.transport, socket: connector(nil), options: .test)
      #expect(await next.runOnce(deadline: 30) == .done)
      #expect(await next.metrics.replayed == 1, "the same request id: the relay answered with the message it kept")
    }
  }

  @Test func duplicateAndOutOfOrderEventsChangeNothing() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let request = try repository.send(to: 2, content: "hello")
      let socket = FakeSocket()
      let engine = SyncEngine(
        repository: repository, http: ScriptedRelay().transport, socket: connector(socket), options: .test)
      let run = Task { await engine.run() }
      #expect(await eventually { await engine.metrics.sent == 1 })
      let check = try ChatRepository.open(user: 1, in: folder)
      let sentID = try #require(
        try check.timeline(conversation: 2).items.compactMap { if case .message(let m) = $0 { m.id } else { nil } }
          .first)
      _ = request
      // Read before delivered, twice; then a late delivered: status stays READ.
      let read =
        #"{"type":"message_read","payload":{"sequence":2,"messageId":\#(sentID),"conversationId":2,"at":"2026-01-01T00:00:00.000Z"}}"#
      let delivered =
        #"{"type":"message_delivered","payload":{"sequence":1,"messageId":\#(sentID),"conversationId":2,"at":"2026-01-01T00:00:00.000Z"}}"#
      socket.deliver(read)
      socket.deliver(read)
      socket.deliver(delivered)
      // An incoming message twice, and one from a stranger (profile fetched first).
      let incoming =
        #"{"type":"new_message","payload":{"messageId":99,"fromUserId":2,"toUserId":1,"content":"hi","status":"SYNCED","createdAt":"2026-01-01T00:00:01.000Z"}}"#
      socket.deliver(incoming)
      socket.deliver(incoming)
      socket.deliver(
        #"{"type":"new_message","payload":{"messageId":100,"fromUserId":9,"toUserId":1,"content":"who?","status":"SYNCED","createdAt":"2026-01-01T00:00:02.000Z"}}"#
      )
      socket.deliver("garbage")
      // Typing for a minute, then again for 0.3 s: the second window replaces the first
      // and ends on its own (no deadline for the test to catch inside a short window).
      socket.deliver(
        #"{"type":"contact_status_update","payload":{"userId":2,"online":true,"lastSeenAt":null,"typing":true,"typingExpiresInMs":60000}}"#
      )
      #expect(await eventually { await engine.typingContacts() == [2] })
      socket.deliver(
        #"{"type":"contact_status_update","payload":{"userId":2,"online":true,"lastSeenAt":null,"typing":true,"typingExpiresInMs":300}}"#
      )
      #expect(await eventually { await engine.typingContacts().isEmpty }, "typing expires after typingExpiresInMs")
      #expect(await eventually { await engine.metrics.received == 3 })
      #expect(await eventually { socket.sent.contains { $0.contains("delivery_ack") } })
      // 99 is confirmed; the relay holds no message 100 any more (an error naming it):
      // not acknowledged again, and its status stays SYNCED.
      socket.deliver(#"{"type":"delivery_acknowledged","payload":{"messageIds":[99]}}"#)
      socket.deliver(
        #"{"type":"error","payload":{"code":"not_found","message":"field 'payload.messageIds': no message to you with id 100 on the relay","messageIds":[100]}}"#
      )
      #expect(try await eventually { try check.unacknowledgedIncoming().isEmpty })
      await engine.stop()
      await run.value
      let mine = try #require(
        try check.timeline(conversation: 2).items.compactMap {
          if case .message(let m) = $0, m.id == sentID { m } else { nil }
        }.first)
      #expect(mine.status == .read)
      #expect(await engine.metrics.duplicatesDropped == 1)
      #expect(try check.user(9)?.name == "Nine")
      #expect(
        try check.timeline(conversation: 2).items.filter { if case .message(let m) = $0 { m.id == 99 } else { false } }
          .count == 1)
      #expect(try check.syncCursor().updates == 2, "updates 1 and 2 both stored: the cursor moved once 1 arrived")
    }
  }

  @Test func syncPagesAdvanceTheStoredCursorAndAcknowledge() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let relay = ScriptedRelay()
      func message(_ id: Int) -> String {
        #"{"messageId":\#(id),"fromUserId":2,"toUserId":1,"content":"m\#(id)","status":"SYNCED","createdAt":"2026-01-01T00:00:00.000Z"}"#
      }
      relay.state.withLock {
        $0.syncPages = [
          #"{"messages":[\#(message(10)),\#(message(11))],"hasMore":true,"statusUpdates":[]}"#,
          #"{"messages":[\#(message(12))],"hasMore":false,"statusUpdates":[]}"#,
        ]
      }
      let socket = FakeSocket()
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(socket), options: .test)
      let run = Task { await engine.run() }
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try await eventually { try check.syncCursor().messages == 12 })
      #expect(await eventually { socket.sent.contains { $0.contains("[10,11,12]") } })
      await engine.stop()
      await run.value
      let gets = relay.state.withLock {
        $0.calls.filter { $0.method == "GET" && $0.path.hasPrefix("/v2/messages") }.map(\.path)
      }
      #expect(gets.first == "/v2/messages?lastSyncedMessage=0&limit=500&lastSyncedUpdate=0")
      // The second page is fetched while the first is stored: it says only what is stored.
      #expect(gets.dropFirst().first == "/v2/messages?lastSyncedMessage=0&limit=500&lastSyncedUpdate=0&after=11")
    }
  }
}
