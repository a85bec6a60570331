import CWebSockets
import ChatStore
import Dispatch
import Glibc
import LWSSupport

/// The server's state and its answers to libwebsockets events.
///
/// Connections are found through a number stored in each `lws` as its opaque user
/// data: lws frees and re-zeroes per-session data whenever it rebinds a protocol
/// (every HTTP transaction, every upgrade), the opaque pointer survives that.
// @unchecked: `outbound` is `Locked`; every other property is touched only on the
// service thread (callbacks, run(), and shutdown() after run() returned or never ran).
final class ServiceCore: LWSEventHandler, @unchecked Sendable {
  let socketPath: String
  let handlers: RelayServer.Handlers
  /// The port serves TLS.
  let tls: Bool

  private var context: LWSContext?
  var connections: [UInt64: Connection] = [:]
  /// Open sockets by id, for the wake-ups `send` and `close` leave in `outbound`.
  var sockets: [UInt64: OpaquePointer] = [:]
  /// The buffer file bodies are read into, reused from turn to turn.
  var fileBuffer: [UInt8] = []
  private var nextID: UInt64 = 0
  private var ran = false
  let outbound: Locked<Outbound>

  /// What other threads hand the service thread.
  struct Outbound: ~Copyable {
    /// Nil once the context is being destroyed: nothing may wake it any more.
    var context: LWSWakeHandle?
    /// The thread in `run()`: a send from there asks for a writable callback directly
    /// instead of waking the loop through its pipe.
    var serviceThread: pthread_t?
    var stopping = false
    var live: Set<UInt64> = []
    var queues: [UInt64: [String]] = [:]
    var closing: Set<UInt64> = []
    /// The close code of a closing socket, when not 1000 (normal).
    var closeCodes: [UInt64: UInt16] = [:]
    /// Sockets with something new to write or to close.
    var wake: Set<UInt64> = []

    /// Whether the caller is the service thread itself, which then asks for the
    /// writable callback at once (the bench's relay spent a pipe write and a loop turn
    /// per event otherwise); any other thread leaves `socket` in `wake` and wakes the loop.
    mutating func wakeService(for socket: UInt64) -> Bool {
      if let serviceThread, pthread_equal(serviceThread, pthread_self()) != 0 { return true }
      wake.insert(socket)
      context?.wake()
      return false
    }
  }

  init(socketPath: String, tls: Bool, handlers: RelayServer.Handlers) {
    self.socketPath = socketPath
    self.tls = tls
    self.handlers = handlers
    outbound = Locked(Outbound())
  }

  func attach(_ context: LWSContext) {
    self.context = context
    let pointer = context.pointer
    outbound.withLock { $0.context = LWSWakeHandle(context: pointer) }
  }

  // MARK: - Lifecycle

  func run() {
    guard !ran, let context else { return }
    ran = true
    outbound.withLock { $0.serviceThread = pthread_self() }
    while !outbound.withLock({ $0.stopping }) {
      if lws_service(context.pointer, 0) < 0 { return shutdown() }
      handlers.turnEnded()
    }
    // Stopping: every socket gets a close frame with 1001 "going away" before the
    // context goes; a client that does not answer within a second is simply dropped.
    let wake = outbound.withLock { state -> LWSWakeHandle? in
      for socket in state.live {
        state.closing.insert(socket)
        state.closeCodes[socket] = 1001
        state.wake.insert(socket)
      }
      return state.context
    }
    // lws_service blocks until an event: the cancel now starts the close frames, the
    // one after the deadline ends the wait for clients that never answer.
    wake?.wake()
    // Through `outbound`: once shutdown() has run the context is nil and nothing is woken.
    DispatchQueue.global().asyncAfter(deadline: .now() + 1.05) { [self] in outbound.withLock { $0.context?.wake() } }
    let deadline = ContinuousClock.now.advanced(by: .seconds(1))
    while !outbound.withLock({ $0.live.isEmpty }) && ContinuousClock.now < deadline {
      if lws_service(context.pointer, 0) < 0 { break }
      handlers.turnEnded()
    }
    shutdown()
  }

  func stop() {
    outbound.withLock { state in
      state.stopping = true
      if let context = state.context { context.wake() }
    }
  }

  /// Destroys the context on the calling thread; close callbacks run during it.
  func shutdown() {
    outbound.withLock { $0.context = nil }
    let owner = context
    context = nil
    guard let owner else { return }
    owner.destroy()
    // The close callbacks of the destruction are a turn of their own.
    handlers.turnEnded()
  }

  // MARK: - Thread-safe requests

  func send(_ text: String, to socket: UInt64) {
    let direct = outbound.withLock { state -> Bool in
      guard state.live.contains(socket), !state.closing.contains(socket) else { return false }
      state.queues[socket, default: []].append(text)
      return state.wakeService(for: socket)
    }
    if direct, let wsi = sockets[socket] { lws_callback_on_writable(wsi) }
  }

  func close(_ socket: UInt64, code: UInt16 = 1000) {
    let direct = outbound.withLock { state -> Bool in
      guard state.live.contains(socket) else { return false }
      state.closing.insert(socket)
      if code != 1000 { state.closeCodes[socket] = code }
      return state.wakeService(for: socket)
    }
    if direct, let wsi = sockets[socket] { lws_callback_on_writable(wsi) }
  }

  // MARK: - Events

  func handle(
    _ wsi: OpaquePointer, _ reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
    input: UnsafeMutableRawPointer?, length: Int
  ) -> Int32 {
    switch reason {
    case LWS_CALLBACK_OPENSSL_LOAD_EXTRA_SERVER_VERIFY_CERTS:
      // Once, while the TLS vhost is made: `user` is its SSL_CTX.
      if let user { chat_ssl_ctx_release_buffers(user) }
      return 0
    case LWS_CALLBACK_RAW_RX:
      return rawReceived(wsi, length: input == nil ? 0 : length)
    case LWS_CALLBACK_RAW_WRITEABLE:
      return rawWritable(wsi)
    case LWS_CALLBACK_HTTP:
      return beginRequest(wsi)
    case LWS_CALLBACK_HTTP_BODY:
      return appendBody(wsi, UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length))
    case LWS_CALLBACK_HTTP_BODY_COMPLETION:
      return finishBody(wsi)
    case LWS_CALLBACK_HTTP_WRITEABLE:
      return writeResponseBody(wsi)
    case LWS_CALLBACK_CLOSED_HTTP:
      if let id = existingID(wsi), let connection = connections[id], connection.socket == nil {
        handlers.log("http connection \(id) closed after \(connection.requests) requests")
        abandonBody(connection)
      }
      return 0
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION:
      return filterUpgrade(wsi)
    case LWS_CALLBACK_ESTABLISHED:
      return socketEstablished(wsi)
    case LWS_CALLBACK_RECEIVE:
      return receive(wsi, UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length))
    case LWS_CALLBACK_SERVER_WRITEABLE:
      return writeSocket(wsi)
    case LWS_CALLBACK_CLOSED:
      socketClosed(wsi)
      return 0
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED:
      wakeSockets()
      return 0
    case LWS_CALLBACK_WSI_DESTROY:
      if let id = existingID(wsi) {
        socketClosed(wsi)
        if let connection = connections[id] { abandonBody(connection) }
        connections[id]?.wsi = nil
        connections[id] = nil
      }
      return 0
    default:
      return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
  }

  // MARK: - Connections

  func existingID(_ wsi: OpaquePointer) -> UInt64? {
    guard let raw = lws_get_opaque_user_data(wsi) else { return nil }
    return UInt64(UInt(bitPattern: raw))
  }

  func connection(_ wsi: OpaquePointer) -> Connection {
    if let id = existingID(wsi), let connection = connections[id] { return connection }
    nextID += 1
    lws_set_opaque_user_data(wsi, UnsafeMutableRawPointer(bitPattern: UInt(nextID)))
    let connection = Connection(id: nextID, wsi: wsi)
    connections[nextID] = connection
    return connection
  }
}

/// One TCP connection's state on the service thread.
final class Connection {
  let id: UInt64
  /// The connection's lws; nil once lws destroyed it.
  var wsi: OpaquePointer?
  var requests = 0
  var exchange: Exchange?
  /// The client sent more bytes behind the pending request (HTTP/1.1 pipelining):
  /// lws holds them and is no longer allowed to read; the pending answer goes out with
  /// `Connection: close` and the connection ends (see `markPipelined`).
  var pipelined = false
  var socket: SocketState?
  /// lws gave the connection to the raw role (not HTTP) and its 400 is on its way.
  var answeredRaw = false

  init(id: UInt64, wsi: OpaquePointer) {
    self.id = id
    self.wsi = wsi
  }
}

/// One HTTP request and, once answered, the response being written.
struct Exchange {
  var request: HTTPRequest
  let started: ContinuousClock.Instant
  /// The body is over the limit: its bytes are read and dropped, the answer is 413.
  var tooLarge = false
  /// The answer, given without asking the handler (411, 417).
  var refusal: HTTPResponse?
  /// The request went to the handler (its body, if any, complete): a further body
  /// completion or request head lws reports on this connection before the answer is
  /// written means the client pipelined another request behind this one.
  var handedOver = false
  /// The handler answers later (``ServiceCore/answer(_:with:)``).
  var awaitingAnswer = false
  /// The answer, waiting for the writable callback: every answer goes out from there,
  /// never from the callback that read the request (see `answer(_:_:)`).
  var held: HTTPResponse?
  /// Set once the head is written: the body still to write and the status to log.
  var response: [UInt8]?
  var written = 0
  var status = 0
  /// Close the connection after the response instead of keeping it alive.
  var closeAfter = false
  /// Where a streamed body goes (``HTTPBodyRoute/stream(_:limit:)``), until it is complete.
  var sink: (any HTTPBodySink)?
  /// The most bytes the body may have: ``RelayServer/maximumBodySize``, or a stream's own.
  var limit = RelayServer.maximumBodySize
  /// How long the whole body may take once the head is in.
  var bodyDeadline: Duration = .seconds(RelayServer.bodySeconds)
  /// A file body being written: its open descriptor and what is left of it.
  var fileBody: FileBodyState?

  /// Opens a file body; false when the file cannot be opened.
  mutating func openFile(_ file: HTTPFileBody) -> Bool {
    let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return false }
    fileBody = FileBodyState(descriptor: descriptor, position: file.offset, remaining: file.length)
    return true
  }

  mutating func closeFile() {
    if let file = fileBody { Glibc.close(file.descriptor) }
    fileBody = nil
  }
}

/// An open file body: the next byte to send and how many are left.
struct FileBodyState {
  let descriptor: Int32
  var position: Int64
  var remaining: Int64

  mutating func advance(by count: Int) {
    position += Int64(count)
    remaining -= Int64(count)
  }
}

/// One open WebSocket.
struct SocketState {
  let owner: RelayCredential
  var opened: ContinuousClock.Instant?
  var incoming: [UInt8] = []
  var reportedClosed = false
}

/// `12.3` for a duration in milliseconds.
func milliseconds(since start: ContinuousClock.Instant) -> String {
  let duration = start.duration(to: .now)
  let tenths = duration.components.seconds * 10_000 + duration.components.attoseconds / 100_000_000_000_000
  return "\(tenths / 10).\(tenths % 10)"
}
