import ChatRelay
import ChatStore
import ChatSync
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

/// The libwebsockets client against an in-process ``RelayServer``. Every wait is a
/// poll with a generous deadline (a loaded 2-core machine can be slow), never a sleep
/// that correctness depends on.
@Suite struct WebSocketClientTests {
  @Test func goodTokenOpensAndReceivesTheServersMessage() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let socket = try await relay.connect()
    let inbox = Inbox(socket)
    #expect(await eventually { inbox.messages == ["hello 7"] })
    #expect(relay.events.contains { $0 == .opened(user: 7) })
    socket.close()
  }

  @Test func twoHundredSendsArriveInOrderAndTheirEchoesToo() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let socket = try await relay.connect()
    let inbox = Inbox(socket)
    let sent = (0..<200).map { "message \($0)" }
    for text in sent { socket.send(text) }
    #expect(await eventually { relay.texts.count == 200 })
    #expect(relay.texts == sent)
    #expect(await eventually { inbox.messages.count == 201 })
    #expect(inbox.messages == ["hello 7"] + sent.map { "echo:" + $0 })
    socket.close()
  }

  @Test func a300KiBMessageGoesBothWays() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let socket = try await relay.connect()
    let inbox = Inbox(socket)
    // Multi-byte characters too, so a fragment or chunk boundary can fall inside one.
    let unit = "0123456789abcdef-é-ü-€-"
    let big = String(repeating: unit, count: 300 * 1024 / unit.utf8.count)
    #expect(big.utf8.count > 290 * 1024)
    socket.send(big)
    socket.send("after")
    #expect(await eventually { relay.texts.count == 2 })
    #expect(relay.texts.first == big)
    #expect(relay.texts.last == "after")
    #expect(await eventually { inbox.messages.count == 3 })
    #expect(inbox.messages.dropFirst().first == "echo:" + big)
    #expect(inbox.messages.last == "echo:after")
    socket.close()
  }

  @Test func aMessageOver1MiBClosesWith1009() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let socket = try await relay.connect()
    let inbox = Inbox(socket)
    socket.send("too big please")
    #expect(await eventually { inbox.finished })
    #expect(inbox.messages == ["hello 7"])
    #expect((socket as? LWSClientSocket)?.closeCode == 1009)
    #expect(await eventually { relay.events.contains { $0 == .closed(user: 7) } })
  }

  @Test func aBadTokenIsRefusedWith401() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    await #expect { _ = try await relay.connect(token: "bad") } throws: { ($0 as? SocketRefused)?.status == 401 }
    #expect(!relay.events.contains { if case .opened = $0 { true } else { false } })
  }

  @Test func aWrongPathIsRefusedWith404() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    await #expect { _ = try await relay.connect(path: "/v2/nowhere") } throws: { ($0 as? SocketRefused)?.status == 404 }
  }

  @Test func nothingListeningFailsQuicklyWithATransportError() async throws {
    let port = try freePort()
    let url = try #require(URL(string: "ws://127.0.0.1:\(port)/v2/socket/updates"))
    let start = ContinuousClock.now
    await #expect(throws: TransportError.self) {
      _ = try await SocketConnector.libwebsockets(url: url, token: "good").connect()
    }
    #expect(start.duration(to: .now) < .seconds(5))
  }

  @Test func cancellingAPendingConnectThrowsCancellation() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    // The proxy takes the TCP connection but the upgrade never gets an answer.
    let proxy = try FreezingProxy(target: relay.port)
    defer { proxy.stop() }
    proxy.freeze()
    let url = try #require(URL(string: "ws://127.0.0.1:\(proxy.port)/v2/socket/updates"))
    let attempt = Task { try await SocketConnector.libwebsockets(url: url, token: "good").connect() }
    try await Task.sleep(for: .milliseconds(200))
    let start = ContinuousClock.now
    attempt.cancel()
    await #expect(throws: CancellationError.self) { _ = try await attempt.value }
    #expect(start.duration(to: .now) < .seconds(5))
  }

  @Test func anUnsupportedSchemeIsATransportError() async throws {
    let url = try #require(URL(string: "wss://127.0.0.1:1/v2/socket/updates"))
    await #expect(throws: TransportError.self) {
      _ = try await SocketConnector.libwebsockets(url: url, token: "good").connect()
    }
  }

  @Test func serverStopFinishesMessagesWithGoingAway() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let socket = try await relay.connect()
    let inbox = Inbox(socket)
    #expect(await eventually { inbox.messages == ["hello 7"] })
    relay.stop()
    #expect(await eventually { inbox.finished })
    #expect((socket as? LWSClientSocket)?.closeCode == 1001)
  }

  @Test func clientCloseIsSeenByTheServer() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let socket = try await relay.connect()
    let inbox = Inbox(socket)
    #expect(await eventually { inbox.messages == ["hello 7"] })
    socket.send("last")
    socket.close()
    socket.send("dropped")
    #expect(await eventually { inbox.finished })
    #expect((socket as? LWSClientSocket)?.closeCode == 1000)
    #expect(await eventually { relay.events.contains { $0 == .closed(user: 7) } })
    // What was queued before the close went out first; nothing after it.
    #expect(relay.texts == ["last"])
  }

  @Test func fiftyConcurrentSocketsFromOneProcess() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let sockets = try await withThrowingTaskGroup(of: (any RelaySocket).self) { group in
      for _ in 0..<50 { group.addTask { try await relay.connect() } }
      return try await group.reduce(into: []) { $0.append($1) }
    }
    #expect(sockets.count == 50)
    let inboxes = sockets.map(Inbox.init)
    for (index, socket) in sockets.enumerated() { socket.send("from \(index)") }
    for (index, inbox) in inboxes.enumerated() {
      #expect(await eventually { inbox.messages == ["hello 7", "echo:from \(index)"] })
    }
    for socket in sockets { socket.close() }
    #expect(await eventually { relay.events.filter { $0 == .closed(user: 7) }.count == 50 })
  }

  @Test func pingsKeepAQuietSocketOpen() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let socket = try await relay.connect(pingSeconds: 1)
    let inbox = Inbox(socket)
    #expect(await eventually { inbox.messages == ["hello 7"] })
    // Quiet for longer than the 2 s hang-up: only the pings' pongs keep it valid.
    try await Task.sleep(for: .seconds(3.5))
    #expect(!inbox.finished)
    socket.send("still there")
    #expect(await eventually { inbox.messages.last == "echo:still there" })
    socket.close()
  }

  @Test func aSilentPeerIsHungUpAfterTwicePingSeconds() async throws {
    let relay = try TestRelay()
    defer { relay.stop() }
    let proxy = try FreezingProxy(target: relay.port)
    defer { proxy.stop() }
    let url = try #require(URL(string: "ws://127.0.0.1:\(proxy.port)/v2/socket/updates"))
    let socket = try await SocketConnector.libwebsockets(url: url, token: "good", pingSeconds: 1).connect()
    let inbox = Inbox(socket)
    #expect(await eventually { inbox.messages == ["hello 7"] })
    // The TCP connection stays up but nothing comes back: no pong, no close.
    proxy.freeze()
    let frozen = ContinuousClock.now
    #expect(await eventually(15) { inbox.finished })
    #expect(frozen.duration(to: .now) >= .seconds(1))
    #expect((socket as? LWSClientSocket)?.closeCode == nil)
  }
}

// MARK: - Helpers

/// Polls `condition` until it holds or `seconds` pass.
func eventually(_ seconds: Double = 10, _ condition: () -> Bool) async -> Bool {
  let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
  while ContinuousClock.now < deadline {
    if condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return condition()
}

/// Everything a socket received, collected by a task.
final class Inbox: Sendable {
  private let state = Locked<(messages: [String], finished: Bool)>(([], false))

  init(_ socket: any RelaySocket) {
    let stream = socket.messages
    Task { [self] in
      for await message in stream { state.withLock { $0.messages.append(message) } }
      state.withLock { $0.finished = true }
    }
  }

  var messages: [String] { state.withLock { $0.messages } }
  var finished: Bool { state.withLock { $0.finished } }
}

/// A relay on a free loopback port served by its own thread: `Bearer good` is user 7,
/// who gets `hello 7` on open and `echo:<text>` for each message (`too big please`
/// gets 1 MiB + 1 byte instead).
final class TestRelay: Sendable {
  enum Event: Equatable, Sendable {
    case opened(user: Int64)
    case text(String)
    case closed(user: Int64)
  }

  /// The handlers' record, shared with their closures.
  final class Recorder: Sendable {
    let events = Locked<[Event]>([])
    let server = Locked<RelayServer?>(nil)
    func append(_ event: Event) { events.withLock { $0.append(event) } }
  }

  let server: RelayServer
  private let recorded: Recorder

  var port: Int { server.port }
  var events: [Event] { recorded.events.withLock { $0 } }
  /// The texts the server received, in order.
  var texts: [String] { events.compactMap { if case .text(let text) = $0 { text } else { nil } } }

  init() throws {
    let recorded = Recorder()
    let handlers = RelayServer.Handlers(
      http: { _ in HTTPResponse(status: 404, contentType: "text/plain", body: Array("no".utf8)) },
      authorizeSocket: { request in
        request.headers["authorization"] == "Bearer good" ? RelayCredential(user: 7, device: 1) : nil
      },
      socketOpened: { socket, owner in
        let user = owner.user
        recorded.append(.opened(user: user))
        recorded.server.withLock { $0 }?.send("hello \(user)", to: socket)
      },
      socketText: { socket, _, text in
        recorded.append(.text(text))
        let reply = text == "too big please" ? String(repeating: "x", count: (1 << 20) + 1) : "echo:" + text
        recorded.server.withLock { $0 }?.send(reply, to: socket)
      },
      socketClosed: { _, owner in recorded.append(.closed(user: owner.user)) }
    )
    let server = try RelayServer(port: 0, handlers: handlers)
    recorded.server.withLock { $0 = server }
    self.server = server
    self.recorded = recorded
    Thread { server.run() }.start()
  }

  /// Makes the server close every socket (1001) and stop; does not wait.
  func stop() { server.stop() }

  func connect(token: String = "good", path: String = "/v2/socket/updates", pingSeconds: Int = 30) async throws
    -> any RelaySocket
  {
    let url = try #require(URL(string: "ws://127.0.0.1:\(port)\(path)"))
    return try await SocketConnector.libwebsockets(url: url, token: token, pingSeconds: pingSeconds).connect()
  }
}

/// A loopback port nobody listens on (bound, read, released).
func freePort() throws -> Int {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { Glibc.close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
    }
  }
  try #require(bound)
  return Int(UInt16(bigEndian: address.sin_port))
}

/// A TCP proxy to a loopback port that can go silent: once frozen it keeps every
/// connection open but drops the bytes both ways, like a peer gone without a FIN.
final class FreezingProxy: Sendable {
  let port: Int
  private let listener: Int32
  private let frozen = Atomic<Bool>(false)
  private let sockets = Locked<[Int32]>([])

  init(target: Int) throws {
    listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let listening = withUnsafeMutablePointer(to: &address) { [listener] in
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 && listen(listener, 16) == 0
      }
    }
    try #require(listening)
    port = Int(UInt16(bigEndian: address.sin_port))
    Thread { [self] in acceptLoop(target: target) }.start()
  }

  func freeze() { frozen.store(true, ordering: .sequentiallyConsistent) }

  /// Ends the accept loop and every pump (shutdown wakes their blocked calls).
  func stop() {
    shutdown(listener, Int32(SHUT_RDWR))
    for fd in sockets.withLock({ $0 }) { shutdown(fd, Int32(SHUT_RDWR)) }
  }

  private func acceptLoop(target: Int) {
    defer { Glibc.close(listener) }
    while true {
      let client = accept(listener, nil, nil)
      guard client >= 0 else { return }
      let upstream = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
      var address = sockaddr_in()
      address.sin_family = sa_family_t(AF_INET)
      address.sin_addr.s_addr = inet_addr("127.0.0.1")
      address.sin_port = UInt16(target).bigEndian
      let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
          connect(upstream, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
      }
      guard connected else {
        Glibc.close(client)
        Glibc.close(upstream)
        continue
      }
      sockets.withLock { $0 += [client, upstream] }
      Thread { [self] in pump(from: client, to: upstream) }.start()
      Thread { [self] in pump(from: upstream, to: client) }.start()
    }
  }

  private func pump(from source: Int32, to destination: Int32) {
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
      guard count > 0 else { break }
      if frozen.load(ordering: .sequentiallyConsistent) { continue }
      var offset = 0
      while offset < count {
        let written = buffer.withUnsafeBytes { write(destination, $0.baseAddress! + offset, count - offset) }
        guard written > 0 else { break }
        offset += written
      }
    }
    shutdown(destination, Int32(SHUT_WR))
  }
}
