import CWebSockets
import ChatStore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The process's one libwebsockets client context and the one thread servicing it,
/// created on first use and kept for the life of the process.
///
/// Every WebSocket and every HTTP exchange lives on that context: a process with 500
/// sockets and requests in flight has one extra thread, blocked in `lws_service` while
/// nothing happens.
///
/// See https://libwebsockets.org/lws-api-doc-v4.1-stable/html/md_READMEs_README_coding.html
// @unchecked: both properties are immutable after init; the context's C memory (the
// protocol table, its name) is never freed since the context is never destroyed.
package final class ClientLoop: @unchecked Sendable {
  /// Created on first access (Swift runs a static's initializer once, thread-safely).
  package static let shared: Result<ClientLoop, TransportError> = Result { () throws(TransportError) in try ClientLoop()
  }

  package let core: ClientCore
  let context: OpaquePointer
  /// The context's user pointer: `core`, the handler of its events.
  private let user: LWSContextUser

  private init() throws(TransportError) {
    // Nothing from lws itself: every failure reaches the caller, named and with its
    // reason (lws would add a line of its own to stderr, e.g. for a refused certificate).
    lws_set_log_level(0, nil)

    let protocols = UnsafeMutablePointer<lws_protocols>.allocate(capacity: 2)
    protocols.initialize(repeating: lws_protocols(), count: 2)
    protocols[0].name = UnsafePointer(strdup(clientProtocolName))
    protocols[0].callback = lwsContextCallback
    protocols[0].per_session_data_size = 0
    protocols[0].rx_buffer_size = 64 * 1024

    let core = ClientCore()
    var info = lws_context_creation_info()
    info.port = CONTEXT_PORT_NO_LISTEN
    info.protocols = UnsafePointer(protocols)
    // The core lives as long as this loop, which is never released.
    let user = LWSContextUser(core)
    info.user = user.pointer
    info.gid = -1
    info.uid = -1
    // The bound on a connection attempt: TCP connect, and the answer's head (the
    // upgrade's, or an HTTP request's once it is sent).
    info.timeout_secs = 10
    info.connect_timeout_secs = 10
    // The service thread's read buffer: an answer's body (a media chunk) arrives in
    // pieces of this size at most (lws's default is 4 KiB).
    info.pt_serv_buf_size = 256 * 1024
    if let tls = ClientTLS.settings.withLock({ $0 }) {
      // Never freed, as the protocol table: the context lives as long as the process.
      info.options |= chat_lws_option_ssl_global_init
      info.client_ssl_ca_filepath = UnsafePointer(strdup(tls.caFile ?? String(cString: X509_get_default_cert_file())))
      info.ssl_options_set = chat_ssl_op_below_tls_1_2
    }
    guard let context = lws_create_context(&info) else {
      throw TransportError("libwebsockets could not create its client context")
    }
    self.core = core
    self.context = context
    self.user = user
    core.attach(context)
    Thread { [core] in
      // Named from inside: Foundation on Linux leaves the creator's name on the thread.
      chat_name_this_thread("lws-client")
      core.run()
    }.start()
  }
}

/// The name of the context's one protocol, whose callback (`lwsContextCallback`) sees
/// every event of every connection.
let clientProtocolName = "chat-sync-client"

/// The client connections' state (WebSockets, and HTTP exchanges in
/// ClientCore+HTTP.swift) and its answers to libwebsockets events.
///
/// A connection is found through its id, stored in its `lws` as the opaque user data
/// (set through the connect info, so it is there from the first callback). Sockets and
/// exchanges draw their ids from one counter, so an id names one or the other.
// @unchecked: `shared` is `Locked`; every other property is touched only on the
// service thread (the callbacks and run()).
package final class ClientCore: LWSEventHandler, @unchecked Sendable {
  let shared = Locked(Shared())
  var context: OpaquePointer?
  var connections: [UInt64: ClientConnection] = [:]
  var exchanges: [UInt64: HTTPExchange] = [:]
  /// Where answers' bodies are read into (service thread only).
  var receiveBuffer: [CChar] = []
  /// Why TLS refused a connection's certificate, until its connection error reports it.
  var certificateRefusals: [OpaquePointer: String] = [:]

  /// Puts a connection (HTTP or WebSocket) on TLS; the error when this process never
  /// enabled ``ClientTLS`` (its context has no TLS to give).
  static func useTLS(_ info: inout lws_client_connect_info, for target: String) -> TransportError? {
    guard ClientTLS.settings.withLock({ $0 }) != nil else {
      return TransportError("\(target): TLS was not set up for this process")
    }
    info.ssl_connection |= Int32(LCCSCF_USE_SSL.rawValue)
    return nil
  }
  /// Ping policies by `pingSeconds`; lws keeps pointing at a connection's policy, so
  /// they are never freed (one per distinct value used in the process).
  private var policies: [Int: UnsafeMutablePointer<lws_retry_bo_t>] = [:]

  /// What other threads hand the service thread.
  struct Shared: ~Copyable {
    /// Nil until the context exists.
    var context: LWSWakeHandle?
    /// The service loop ended (lws_service failed): nothing more will open.
    var dead = false
    /// A wake is already on its way: further requests need not wake again.
    var wakePending = false
    var nextID: UInt64 = 0
    /// Connections to start, in request order.
    var opens: [(id: UInt64, request: OpenRequest, channel: SocketChannel)] = []
    /// Callers of `open` still waiting, by id; whoever removes an entry resumes it.
    var connecting: [UInt64: CheckedContinuation<LWSClientSocket, any Error>] = [:]
    /// Open sockets, which accept `send` and `close`.
    var live: Set<UInt64> = []
    var queues: [UInt64: [String]] = [:]
    var closing: Set<UInt64> = []
    /// Sockets with something new to write or to close.
    var wake: Set<UInt64> = []
    /// HTTP exchanges to start, in request order.
    var requests: [(id: UInt64, request: ExchangeRequest)] = []
    /// Callers of `exchange` still waiting, by id; whoever removes an entry resumes it.
    var answering: [UInt64: CheckedContinuation<HTTPReply, any Error>] = [:]
    /// Exchanges whose caller stopped waiting: their connections are to be dropped.
    var abandoned: Set<UInt64> = []

    /// The handle to wake the service thread with, unless a wake is already pending.
    mutating func requestWake() -> LWSWakeHandle? {
      guard !wakePending, let context else { return nil }
      wakePending = true
      return context
    }
  }

  func attach(_ context: OpaquePointer) {
    self.context = context
    shared.withLock { $0.context = LWSWakeHandle(context: context) }
  }

  /// Services the context on the calling thread, for the life of the process.
  func run() {
    guard let context else { return }
    // Blocks until a socket event, a timer (pings, timeouts) or lws_cancel_service.
    while lws_service(context, 0) >= 0 {}
    // Not expected: lws could not service its context. Fail everything still waiting.
    let (waiting, answering) = shared.withLock { state in
      state.dead = true
      state.context = nil
      state.opens = []
      state.requests = []
      let waiting = state.connecting
      let answering = state.answering
      state.connecting = [:]
      state.answering = [:]
      state.live = []
      return (waiting, answering)
    }
    for (_, continuation) in waiting {
      continuation.resume(throwing: TransportError("the WebSocket service thread stopped"))
    }
    for (_, continuation) in answering {
      continuation.resume(throwing: TransportError("the HTTP service thread stopped"))
    }
    for (_, connection) in connections { connection.channel.finish() }
    connections = [:]
  }

  // MARK: - Thread-safe requests

  /// Asks the service thread to connect; returns once the socket is established.
  package func open(_ request: OpenRequest) async throws -> LWSClientSocket {
    let id = nextID()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<LWSClientSocket, any Error>) in
        let outcome = shared.withLock { state -> Result<LWSWakeHandle?, any Error> in
          // Checked under the lock: a cancellation handler that ran before this found nothing to cancel.
          if Task.isCancelled { return .failure(CancellationError()) }
          if state.dead { return .failure(TransportError("the WebSocket service thread stopped")) }
          state.connecting[id] = continuation
          state.opens.append((id, request, SocketChannel()))
          return .success(state.requestWake())
        }
        switch outcome {
        case .failure(let error): continuation.resume(throwing: error)
        case .success(let wake): wake?.wake()
        }
      }
    } onCancel: {
      // The connection, if lws already started it, is dropped when it opens or fails.
      shared.withLock { $0.connecting.removeValue(forKey: id) }?.resume(throwing: CancellationError())
    }
  }

  /// A new id for a socket or an exchange.
  func nextID() -> UInt64 {
    shared.withLock { state -> UInt64 in
      state.nextID += 1
      return state.nextID
    }
  }

  func send(_ text: String, to socket: UInt64) {
    let wake = shared.withLock { state -> LWSWakeHandle? in
      guard state.live.contains(socket), !state.closing.contains(socket) else { return nil }
      state.queues[socket, default: []].append(text)
      state.wake.insert(socket)
      return state.requestWake()
    }
    wake?.wake()
  }

  func close(_ socket: UInt64) {
    let wake = shared.withLock { state -> LWSWakeHandle? in
      guard state.live.contains(socket), !state.closing.contains(socket) else { return nil }
      state.closing.insert(socket)
      state.wake.insert(socket)
      return state.requestWake()
    }
    wake?.wake()
  }

  // MARK: - Service thread

  /// The policy lws applies to a connection: a ping after `seconds` without valid
  /// traffic, a hang-up after twice that.
  func policy(pingSeconds seconds: Int) -> UnsafePointer<lws_retry_bo_t> {
    if let policy = policies[seconds] { return UnsafePointer(policy) }
    let policy = UnsafeMutablePointer<lws_retry_bo_t>.allocate(capacity: 1)
    policy.initialize(to: lws_retry_bo_t())
    policy.pointee.secs_since_valid_ping = UInt16(clamping: seconds)
    policy.pointee.secs_since_valid_hangup = UInt16(clamping: 2 * seconds)
    policies[seconds] = policy
    return UnsafePointer(policy)
  }
}

/// One connection's state on the service thread, from the connect request until
/// lws destroys its `lws`.
final class ClientConnection {
  let id: UInt64
  let channel: SocketChannel
  let request: OpenRequest
  var wsi: OpaquePointer?
  /// The upgrade's HTTP status, once the answer's head was read.
  var status = 0
  /// The text message being joined from fragments.
  var incoming: [UInt8] = []
  /// Messages taken from the shared queue, last one first.
  var outgoing: [String] = []
  /// The connect info's strings, kept until the connection is gone.
  private var strings: [UnsafeMutablePointer<CChar>] = []

  init(id: UInt64, channel: SocketChannel, request: OpenRequest) {
    self.id = id
    self.channel = channel
    self.request = request
  }

  /// A C copy of `text` that lives as long as this connection.
  func cString(_ text: String) -> UnsafePointer<CChar> {
    let copy = strdup(text)!
    strings.append(copy)
    return UnsafePointer(copy)
  }

  deinit { strings.forEach { free($0) } }
}
