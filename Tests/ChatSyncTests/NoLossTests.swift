import ChatStore
import Foundation
import Testing

@testable import ChatSync

/// Issue 25: what a history checker found losing or misattributing messages, each
/// reproduced against the engine with the fault that caused it.
@Suite struct NoLossTests {
  /// Each connect gets a fresh socket the test can drive; `sockets` are in connect order.
  final class Sockets: @unchecked Sendable {
    // @unchecked: `made` is behind a `Locked`.
    let made = Locked<[FakeSocket]>([])
    var connector: SocketConnector {
      SocketConnector { [self] in
        let socket = FakeSocket()
        made.withLock { $0.append(socket) }
        return socket
      }
    }
    var all: [FakeSocket] { made.withLock { $0 } }
    var last: FakeSocket? { all.last }
  }

  /// `relay` with some GETs of `path` answered by `fault` instead (n = the GET's 0-based number).
  static func failing(
    _ path: String, _ relay: ScriptedRelay, _ fault: @escaping @Sendable (Int) -> HTTPReply?
  ) -> HTTPTransport {
    let count = Locked(0)
    return HTTPTransport { call in
      if call.method == "GET", call.path.hasPrefix(path) {
        let n = count.withLock { n -> Int in
          defer { n += 1 }
          return n
        }
        if let reply = fault(n) { return reply }
      }
      return try await relay.transport.send(call)
    }
  }

  static func message(_ id: Int64, from: Int64 = 2) -> String {
    #"{"messageId":\#(id),"fromUserId":\#(from),"toUserId":1,"content":"m\#(id)","status":"SYNCED","createdAt":"2026-01-01T00:00:00.000Z"}"#
  }

  /// Bug 1: the catch-up after a connect failed once (503) and the client went on reading
  /// events: what arrived while it was away was never fetched. Now it reconnects and syncs
  /// again before it trusts the socket.
  @Test func aFailedCatchUpIsRetriedBeforeEventsAreTrusted() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let relay = ScriptedRelay()
      relay.state.withLock {
        $0.syncPages = [#"{"messages":[\#(Self.message(10))],"hasMore":false,"statusUpdates":[]}"#]
      }
      let http = Self.failing("/v2/messages", relay) { $0 == 0 ? HTTPReply(status: 503) : nil }
      let sockets = Sockets()
      let engine = SyncEngine(repository: repository, http: http, socket: sockets.connector, options: .test)
      let run = Task { await engine.run() }
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try await eventually { try check.hasMessage(10) }, "the message sent while away arrives")
      #expect(try check.syncCursor().messages == 10)
      #expect(await eventually { await engine.isSynced })
      #expect(sockets.all.count == 2, "the socket of the failed catch-up was dropped, a new one synced")
      await engine.stop()
      await run.value
    }
  }

  /// Bug 2: a receipt handed to a closing socket was cleared from the file at once and
  /// lost. It now stays until the relay's `read_acknowledged` reaches it, goes again on
  /// the next socket, and the delivery acknowledgement of what was read goes before it.
  @Test func aReadReceiptStaysUntilTheRelayConfirmsIt() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let sockets = Sockets()
      let engine = SyncEngine(
        repository: repository, http: ScriptedRelay().transport, socket: sockets.connector, options: .test)
      let run = Task { await engine.run() }
      #expect(await eventually { await engine.isSynced })
      let first = try #require(sockets.last)
      first.deliver(#"{"type":"new_message","payload":\#(Self.message(99))}"#)
      let check = try ChatRepository.open(user: 1, in: folder)
      #expect(try await eventually { try check.hasMessage(99) })
      // Read before the relay confirmed the delivery; then the socket goes.
      #expect(try await engine.markRead(conversation: 2) == 99)
      #expect(await eventually { first.sent.contains { $0.contains(#""type":"read""#) } })
      let sent = first.sent
      let ack = try #require(sent.firstIndex { $0.contains("delivery_ack") && $0.contains("99") })
      let read = try #require(sent.firstIndex { $0.contains(#""type":"read""#) })
      #expect(
        ack < read, "the acknowledgement goes first: the relay's mark stops below what it has not seen acknowledged")
      #expect(try check.pendingReadReceipts().map(\.upTo) == [99], "kept until confirmed")
      first.close()
      #expect(
        await eventually {
          sockets.all.count == 2 && (sockets.last?.sent.contains { $0.contains(#""type":"read""#) } ?? false)
        })
      let second = try #require(sockets.last)
      #expect(
        second.sent.contains { $0.contains("delivery_ack") && $0.contains("99") }, "read here, still acknowledged again"
      )
      second.deliver(#"{"type":"delivery_acknowledged","payload":{"messageIds":[99]}}"#)
      second.deliver(#"{"type":"read_acknowledged","payload":{"conversationId":2,"upTo":99}}"#)
      #expect(
        try await eventually { try check.pendingReadReceipts().isEmpty && check.unacknowledgedIncoming().isEmpty })
      await engine.stop()
      await run.value
    }
  }

  /// A user's action (`send`, `read` from another process nudges the run) cuts a long
  /// reconnect backoff short: after the failed catch-ups of a bad hour the client does
  /// not sit out a 45 s backoff once the relay is fine again.
  @Test func aNudgeCutsTheReconnectBackoffShort() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let relay = ScriptedRelay()
      let http = Self.failing("/v2/messages", relay) { $0 == 0 ? HTTPReply(status: 503) : nil }
      let sockets = Sockets()
      var options = SyncEngine.Options.test
      options.reconnectBackoff = Backoff(base: 3_600, cap: 3_600, jitter: .none)
      let lines = Locked<[String]>([])
      options.log = { line in lines.withLock { $0.append(line) } }
      let engine = SyncEngine(repository: repository, http: http, socket: sockets.connector, options: options)
      let run = Task { await engine.run() }
      #expect(await eventually { lines.withLock { $0.contains { $0.hasPrefix("socket: reconnecting in 3600") } } })
      #expect(await !engine.isSynced, "the catch-up failed; the next connect is an hour away")
      await engine.nudge()
      #expect(await eventually { await engine.isSynced }, "reconnected and caught up without waiting the hour")
      #expect(sockets.all.count == 2)
      await engine.stop()
      await run.value
    }
  }

  /// Bug 4: a token of another user sent this file's outbox under that user's name.
  @Test func aTokenOfAnotherUserSendsNothing() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      try repository.send(to: 2, content: "mine")
      let relay = ScriptedRelay()
      let http = HTTPTransport { call in
        if call.path == "/v2/me" {
          return HTTPReply(
            status: 200, body: Array(#"{"user":{"id":3,"name":"Cy","avatarUrl":null,"lastConnectedAt":null}}"#.utf8))
        }
        return try await relay.transport.send(call)
      }
      let engine = SyncEngine(repository: repository, http: http, socket: connector(FakeSocket()), options: .test)
      guard case .unauthorized(let reason) = await engine.runOnce(deadline: 5) else {
        Issue.record("expected the run to be refused")
        return
      }
      #expect(reason.contains("user 3") && reason.contains("user 1"), "\(reason)")
      #expect(relay.posts.isEmpty, "nothing was sent")
      #expect(relay.state.withLock { $0.calls.isEmpty }, "nothing but /v2/me was asked")
      #expect(try ChatRepository.open(user: 1, in: folder).outboxCounts()["PENDING"] == 1)
    }
  }

  /// Seed 000's retry limit: a send failing again and again fails for good, with its reason.
  @Test func aSendThatKeepsFailingFailsForGoodAfterTheLimit() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      let request = try repository.send(to: 2, content: "never")
      let relay = ScriptedRelay { _, _ in HTTPReply(status: 503) }
      var options = SyncEngine.Options.test
      options.maxAttempts = 3
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: options)
      #expect(await engine.runOnce(deadline: 30) == .unsent(waiting: 0, permanent: 1))
      #expect(relay.posts.count == 3)
      let failed = try #require(try ChatRepository.open(user: 1, in: folder).request(request.requestID))
      #expect(failed.isPermanentlyFailed && failed.failReason == "gave up after 3 attempts: HTTP 503", "\(failed)")
    }
  }

  /// A device offline is not a failing message: sends that never connected count toward
  /// the age limit only, and the message goes once the relay can be reached.
  @Test func attemptsThatCouldNotConnectDoNotCountTowardTheLimit() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      try repository.send(to: 2, content: "offline for a while")
      let relay = ScriptedRelay { attempt, _ in
        if attempt < 5 { throw TransportError("connection refused", neverConnected: true) }
        return nil
      }
      var options = SyncEngine.Options.test
      options.maxAttempts = 3
      let engine = SyncEngine(repository: repository, http: relay.transport, socket: connector(nil), options: options)
      #expect(await engine.runOnce(deadline: 30) == .done)
      #expect(relay.posts.count == 6)
    }
  }

  /// A contact first stored by its stand-in name gets its real profile at the next sync.
  @Test func aStandInProfileIsReplacedOnceTheRelayShowsIt() async throws {
    try await withDataFolder { folder in
      let repository = try ownerRepository(in: folder)
      try repository.addPlaceholder(User(id: 9, name: "user 9"))
      let engine = SyncEngine(
        repository: repository, http: ScriptedRelay().transport, socket: connector(nil), options: .test)
      #expect(await engine.runOnce(deadline: 5) == .done)
      #expect(try ChatRepository.open(user: 1, in: folder).user(9)?.name == "Nine")
    }
  }
}
