import ChatProtocol

// MARK: - Requests and responses the relay's HTTP handler sees

/// One HTTP request as the relay's handler receives it, body complete.
///
/// ```swift
/// if request.method == "POST", request.path == "/v2/messages" { … }
/// ```
public struct HTTPRequest: Sendable {
  /// The request method in upper case, e.g. `GET`, `POST`.
  public var method: String
  /// The path without the query string, percent-decoded by libwebsockets.
  public var path: String
  /// Query parameters, names and values percent-decoded (`+` is a space); the last one wins.
  public var query: [String: String]
  /// Request headers libwebsockets knows by name (`authorization`, `content-type`,
  /// `content-length`, `host`, …), keyed by the lowercased name without the colon.
  public var headers: [String: String]
  /// The whole request body (at most ``RelayServer/maximumBodySize`` bytes).
  public var body: [UInt8]
  /// Names this request for ``RelayServer/answer(_:with:)`` (a handler that answers
  /// later); set by the server.
  public var exchange = HTTPExchangeID(connection: 0, sequence: 0)

  /// Creates a request, e.g. to call a handler directly in a test.
  public init(
    method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
    body: [UInt8] = []
  ) {
    self.method = method
    self.path = path
    self.query = query
    self.headers = headers
    self.body = body
  }
}

/// One HTTP response: status, content type, body and any extra headers.
///
/// The server adds `Content-Type` and `Content-Length` itself.
public struct HTTPResponse: Sendable {
  /// The status code, e.g. 200 or 404.
  public var status: Int
  /// The `Content-Type` header's value.
  public var contentType: String
  /// The whole response body.
  public var body: [UInt8]
  /// Extra headers, e.g. `("Retry-After", "2")`; a name or value with CR or LF is dropped.
  public var headers: [(String, String)]
  /// Close the connection without answering (the relay's `drop-response` fault: the
  /// work is done, the client never hears of it and must retry).
  public var dropConnection = false
  /// A body read from a file instead of ``body`` (a media download): written in pieces
  /// from the file, so memory does not grow with its size.
  public var file: HTTPFileBody?

  /// Creates a response.
  public init(
    status: Int, contentType: String = "application/json", body: [UInt8] = [], headers: [(String, String)] = []
  ) {
    self.status = status
    self.contentType = contentType
    self.body = body
    self.headers = headers
  }

  /// The reason phrase of a status the relay answers with ("Created" for 201).
  public static func reason(_ status: Int) -> String {
    switch status {
    case 100: "Continue"
    case 200: "OK"
    case 201: "Created"
    case 400: "Bad Request"
    case 401: "Unauthorized"
    case 403: "Forbidden"
    case 404: "Not Found"
    case 405: "Method Not Allowed"
    case 408: "Request Timeout"
    case 204: "No Content"
    case 206: "Partial Content"
    case 409: "Conflict"
    case 410: "Gone"
    case 411: "Length Required"
    case 412: "Precondition Failed"
    case 413: "Content Too Large"
    case 415: "Unsupported Media Type"
    case 416: "Range Not Satisfiable"
    case 417: "Expectation Failed"
    case 460: "Checksum Mismatch"
    case 429: "Too Many Requests"
    case 500: "Internal Server Error"
    case 503: "Service Unavailable"
    default: "Status \(status)"
    }
  }

  /// A JSON error body in the relay's shape: `{"error": {"code": …, "message": …}}`.
  public static func jsonError(status: Int, code: String, message: String, headers: [(String, String)] = [])
    -> HTTPResponse
  {
    HTTPResponse(
      status: status, contentType: "application/json",
      body: WireJSON.encode(ErrorBody(error: .init(code: code, message: message))), headers: headers)
  }
}

/// A response body taken from part of a file: `length` bytes from `offset`.
public struct HTTPFileBody: Sendable {
  /// The file's path; opened when the answer is written (a file gone by then drops
  /// the connection, as a body cut short would).
  public var path: String
  public var offset: Int64
  public var length: Int64

  public init(path: String, offset: Int64, length: Int64) {
    self.path = path
    self.offset = offset
    self.length = length
  }
}

/// Where a request's body goes, decided from its head (``RelayServer/Handlers/bodyRoute``).
public enum HTTPBodyRoute {
  /// Gathered in memory up to ``RelayServer/maximumBodySize``, then the request goes to
  /// the `http` handler (every request but an upload's).
  case gather
  /// Answered at once without reading the body; the connection closes after the answer.
  case refuse(HTTPResponse)
  /// Handed to `sink` piece by piece as it arrives (up to `limit` bytes declared, else
  /// 413), then the request goes to the `http` handler with an empty body.
  case stream(any HTTPBodySink, limit: Int)
}

/// Takes a streamed request body on the service thread.
public protocol HTTPBodySink: AnyObject {
  /// The next piece of the body, in order.
  func write(_ bytes: UnsafeRawBufferPointer)
  /// The connection ended (or timed out) before the body was complete; nothing more
  /// comes and the `http` handler is not called.
  func abandon()
}

/// One request on one connection, for an answer given after the handler returned.
public struct HTTPExchangeID: Hashable, Sendable {
  /// The server's number for the TCP connection.
  public let connection: UInt64
  /// The request's place on that connection (1 for the first).
  public let sequence: Int

  /// Wraps the two numbers.
  public init(connection: UInt64, sequence: Int) {
    self.connection = connection
    self.sequence = sequence
  }
}

/// Identifies one open WebSocket connection for the lifetime of the server.
public struct SocketID: Hashable, Sendable, CustomStringConvertible {
  /// The number the server gave this connection; never reused within one server.
  public let raw: UInt64

  /// Wraps a raw connection number.
  public init(raw: UInt64) { self.raw = raw }

  /// `socket 7`.
  public var description: String { "socket \(raw)" }
}
