import CWebSockets
import ChatProtocol
import ChatStore

/// An HTTP + WebSocket server on one port, built on libwebsockets' event loop.
///
/// Every handler runs on the thread that called ``run()``; ``send(_:to:)``,
/// ``close(_:)`` and ``stop()`` may be called from any thread.
///
/// ```swift
/// let server = try RelayServer(port: 0, handlers: handlers)
/// let thread = Thread { server.run() }
/// thread.start()
/// // … http://127.0.0.1:\(server.port)/ …
/// server.stop()
/// ```
///
/// See https://libwebsockets.org/lws-api-doc-v4.1-stable/html/md_READMEs_README_coding.html
// @unchecked: the only state reachable from several threads is the core's outbound
// queue, behind a `Locked`; the rest is touched by the service thread alone.
public final class RelayServer: @unchecked Sendable {
  /// What the server calls, always on the service thread.
  public struct Handlers: Sendable {
    /// Answers every HTTP request except a WebSocket upgrade on the socket path; nil
    /// means the answer comes later, through ``RelayServer/answer(_:with:)`` with the
    /// request's `exchange` (the relay answers after its commit at the end of the turn).
    public var http: @Sendable (HTTPRequest) -> HTTPResponse?
    /// Returns the token's user and device for a WebSocket upgrade request (path, query and headers,
    /// no body), or nil to refuse it with 401 and a JSON error body; a throw (the store
    /// is busy or failing) answers 503, which a client retries.
    public var authorizeSocket: @Sendable (HTTPRequest) throws -> RelayCredential?
    /// A socket was accepted for the user and device `authorizeSocket` returned.
    public var socketOpened: @Sendable (SocketID, RelayCredential) -> Void
    /// One complete text message arrived (fragments already joined).
    public var socketText: @Sendable (SocketID, RelayCredential, String) -> Void
    /// The socket is gone, whichever side closed it; called once per opened socket.
    public var socketClosed: @Sendable (SocketID, RelayCredential) -> Void
    /// One line per request and per socket: method, path (no query), status,
    /// milliseconds. Never a body, a query value or the `Authorization` header.
    public var log: @Sendable (String) -> Void
    /// The end of one turn of the service loop: every event that was ready has been
    /// handled, and the loop is about to wait (also once after the last close callbacks).
    /// The relay commits the turn's writes here and then gives the turn's answers.
    public var turnEnded: @Sendable () -> Void
    /// Where a request's body goes, asked once its head is read (method, path, query,
    /// headers; `exchange` set): gathered (the default), refused, or streamed to a sink.
    public var bodyRoute: @Sendable (HTTPRequest) -> HTTPBodyRoute

    /// Creates the handlers; everything but `http` defaults to refusing sockets / doing nothing.
    public init(
      http: @escaping @Sendable (HTTPRequest) -> HTTPResponse?,
      authorizeSocket: @escaping @Sendable (HTTPRequest) throws -> RelayCredential? = { _ in nil },
      socketOpened: @escaping @Sendable (SocketID, RelayCredential) -> Void = { _, _ in },
      socketText: @escaping @Sendable (SocketID, RelayCredential, String) -> Void = { _, _, _ in },
      socketClosed: @escaping @Sendable (SocketID, RelayCredential) -> Void = { _, _ in },
      log: @escaping @Sendable (String) -> Void = { _ in },
      turnEnded: @escaping @Sendable () -> Void = {},
      bodyRoute: @escaping @Sendable (HTTPRequest) -> HTTPBodyRoute = { _ in .gather }
    ) {
      self.turnEnded = turnEnded
      self.bodyRoute = bodyRoute
      self.http = http
      self.authorizeSocket = authorizeSocket
      self.socketOpened = socketOpened
      self.socketText = socketText
      self.socketClosed = socketClosed
      self.log = log
    }
  }

  /// The largest request body accepted; a larger one gets 413.
  public static let maximumBodySize = MessageBatchPost.maximumBodyBytes
  /// The `WWW-Authenticate` challenge of every 401 (RFC 6750).
  public static let bearerChallenge = #"Bearer realm="chat-relay""#
  /// Seconds a client has to send a request's head once connected (lws's
  /// `timeout_secs_ah_idle`, not restarted by each byte): a slow head is closed.
  public static let headSeconds = 10
  /// Seconds a client has to send a request's whole body once its head is in; lws's
  /// own timeout (`timeout_secs`) only bounds the silence between two pieces.
  public static let bodySeconds = 20
  /// The slowest a streamed body (an upload) may arrive on average, in bytes a second:
  /// its deadline is ``bodySeconds`` plus its length at this rate.
  public static let minimumStreamRate = 64 * 1024
  /// Bytes the service thread reads from a connection at once (lws's `pt_serv_buf_size`).
  static let readBufferSize = 256 * 1024
  /// Seconds an idle keep-alive connection stays open between requests.
  public static let keepAliveSeconds = 5
  /// The largest WebSocket text message accepted; a larger one closes the socket (1009).
  public static let maximumMessageSize = 1 << 20

  private let core: ServiceCore

  /// The port the server listens on (the one picked when `port` was 0).
  public let port: Int

  /// Binds `host:port` (0 picks a free port) now, with TLS when `tls` is given; serving
  /// starts with ``run()``. A socket idle for `pingSeconds` is pinged and one silent for
  /// twice that is closed.
  ///
  /// Throws ``RelayServerError`` when the address cannot be bound.
  public init(
    host: String = "127.0.0.1", port: Int, tls: RelayTLS? = nil, socketPath: String = "/v2/socket/updates",
    pingSeconds: Int = 30, handlers: Handlers
  ) throws {
    core = ServiceCore(socketPath: socketPath, tls: tls != nil, handlers: handlers)
    // Unretained: the core outlives the context (deinit destroys the context first).
    let context = try LWSContext(host: host, port: port, tls: tls, handler: core, pingSeconds: pingSeconds)
    self.port = context.listenPort
    core.attach(context)
  }

  /// Serves on the calling thread until ``stop()``; then closes every connection
  /// (reporting open sockets through `socketClosed`) and returns. Runs once: a
  /// second call returns at once.
  public func run() { core.run() }

  /// Makes ``run()`` return soon; safe from any thread, also before ``run()``.
  public func stop() { core.stop() }

  /// Queues `text` for `socket`; written in order on the service thread. A socket
  /// that is closed or unknown drops it.
  public func send(_ text: String, to socket: SocketID) { core.send(text, to: socket.raw) }

  /// Answers a request whose handler returned nil, from the writable callback. Service
  /// thread only (a handler or `turnEnded`). A request whose connection is gone is
  /// dropped; a response with `dropConnection` closes the connection instead.
  public func answer(_ exchange: HTTPExchangeID, with response: HTTPResponse) { core.answer(exchange, with: response) }

  /// Closes `socket` normally (1000) once the messages queued before are written.
  public func close(_ socket: SocketID, code: UInt16 = 1000) { core.close(socket.raw, code: code) }

  deinit { core.shutdown() }
}
