import ChatStore
import Foundation
import LWSSupport

// The engine's two ways to the relay, as values: the real ones (libwebsockets' client for both,
// HTTPClient.swift and WebSocketClient.swift over LWSSupport) in production and integration
// tests, scripted ones in unit tests that inject faults.

/// The relay's answer (LWSSupport's, which the relay's webhook shares).
public typealias HTTPReply = LWSSupport.HTTPReply
/// Why a request got no answer (LWSSupport's).
public typealias TransportError = LWSSupport.TransportError
/// TLS for the client connections of this process (LWSSupport's).
public typealias ClientTLS = LWSSupport.ClientTLS
/// The relay refused the WebSocket upgrade (LWSSupport's).
public typealias SocketRefused = LWSSupport.SocketRefused
/// One WebSocket of libwebsockets' client (LWSSupport's).
public typealias LWSClientSocket = LWSSupport.LWSClientSocket

/// One HTTP request to the relay: a path under the base URL (with its query), a
/// method, and a JSON body.
public struct HTTPCall: Sendable, Equatable {
  public var method: String
  /// `/v2/messages?lastSyncedMessage=0`: path and query, already encoded.
  public var path: String
  public var body: [UInt8]?
  /// How long to wait for the whole answer.
  public var timeout: TimeInterval
  /// The body's `Content-Type`.
  public var contentType = "application/json"
  /// More headers, by name (`Tus-Resumable`, `Range`, …).
  public var headers: [(String, String)] = []

  public init(
    method: String, path: String, body: [UInt8]? = nil, timeout: TimeInterval = 10,
    contentType: String = "application/json", headers: [(String, String)] = []
  ) {
    self.method = method
    self.path = path
    self.body = body
    self.timeout = timeout
    self.contentType = contentType
    self.headers = headers
  }

  public static func == (a: HTTPCall, b: HTTPCall) -> Bool {
    a.method == b.method && a.path == b.path && a.body == b.body && a.timeout == b.timeout
      && a.contentType == b.contentType && a.headers.map { "\($0.0): \($0.1)" } == b.headers.map { "\($0.0): \($0.1)" }
  }
}

/// Sends one request with the bearer token; throws `TransportError` when no answer came.
public struct HTTPTransport: Sendable {
  public var send: @Sendable (HTTPCall) async throws -> HTTPReply

  public init(send: @escaping @Sendable (HTTPCall) async throws -> HTTPReply) { self.send = send }
}

/// One open WebSocket to the relay.
public protocol RelaySocket: AnyObject, Sendable {
  /// Text messages in arrival order; finishes when the socket closes, either side.
  var messages: AsyncStream<String> { get }
  /// Queues a text message; dropped once the socket is closed.
  func send(_ text: String)
  /// Closes the socket normally (1000); `messages` then finishes.
  func close()
}

/// Opens the real-time socket; throws `TransportError` (or `SocketRefused` when the
/// relay answered the upgrade with an HTTP error such as 401).
public struct SocketConnector: Sendable {
  public var connect: @Sendable () async throws -> any RelaySocket

  public init(connect: @escaping @Sendable () async throws -> any RelaySocket) { self.connect = connect }
}
