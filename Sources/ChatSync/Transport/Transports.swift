import Foundation

#if canImport(FoundationNetworking)
  import FoundationNetworking
#endif

// The engine's two ways to the relay, as values: the real ones (URLSession for HTTP,
// libwebsockets' client for the socket) in production and integration tests, scripted
// ones in unit tests that inject faults.

/// One HTTP request to the relay: a path under the base URL (with its query), a
/// method, and a JSON body.
public struct HTTPCall: Sendable, Equatable {
  public var method: String
  /// `/v1/messages?lastSyncedMessage=0`: path and query, already encoded.
  public var path: String
  public var body: [UInt8]?
  /// How long to wait for the whole answer.
  public var timeout: TimeInterval

  public init(method: String, path: String, body: [UInt8]? = nil, timeout: TimeInterval = 10) {
    self.method = method
    self.path = path
    self.body = body
    self.timeout = timeout
  }
}

/// The relay's answer: status, headers (names lowercased) and body.
public struct HTTPReply: Sendable, Equatable {
  public var status: Int
  public var headers: [String: String]
  public var body: [UInt8]

  public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
    self.status = status
    self.headers = headers
    self.body = body
  }
}

/// Why a request got no answer: the connection failed, broke or timed out.
public struct TransportError: Error, Sendable, CustomStringConvertible {
  public var message: String
  public init(_ message: String) { self.message = message }
  public var description: String { message }
}

/// Sends one request with the bearer token; throws `TransportError` when no answer came.
public struct HTTPTransport: Sendable {
  public var send: @Sendable (HTTPCall) async throws -> HTTPReply

  public init(send: @escaping @Sendable (HTTPCall) async throws -> HTTPReply) { self.send = send }

  /// The real transport: URLSession (libcurl underneath) against `base`
  /// (`http://127.0.0.1:8080`), `Authorization: Bearer token` on every request.
  public static func urlSession(base: URL, token: String) -> HTTPTransport {
    let configuration = URLSessionConfiguration.ephemeral
    configuration.httpMaximumConnectionsPerHost = 8
    configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
    let session = URLSession(configuration: configuration)
    let baseText = base.absoluteString.hasSuffix("/") ? String(base.absoluteString.dropLast()) : base.absoluteString
    return HTTPTransport { call in
      guard let url = URL(string: baseText + call.path) else { throw TransportError("bad URL \(baseText + call.path)") }
      var request = URLRequest(url: url, timeoutInterval: call.timeout)
      request.httpMethod = call.method
      request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
      if let body = call.body {
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body)
      }
      // Each request gets a connection of its own. When a kept-alive connection closes
      // without an answer (the relay's lost-ack fault, a restart), libcurl replays the
      // next request on a fresh connection without its body, and the relay waits 5 s
      // for bytes that never come: every lost answer cost 5 s (measured).
      request.setValue("close", forHTTPHeaderField: "Connection")
      do {
        let (data, response) = try await session.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw TransportError("not an HTTP answer") }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
          if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return HTTPReply(status: http.statusCode, headers: headers, body: Array(data))
      } catch let error as TransportError {
        throw error
      } catch {
        throw TransportError("\(call.method) \(call.path.split(separator: "?").first ?? ""): \(error.localizedDescription)")
      }
    }
  }
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

/// The relay refused the WebSocket upgrade with an HTTP status (401 for a bad token).
public struct SocketRefused: Error, Sendable, CustomStringConvertible {
  public var status: Int
  public init(status: Int) { self.status = status }
  public var description: String { "the relay refused the socket with HTTP \(status)" }
}
