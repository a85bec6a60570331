import CWebSockets

// MARK: - Bytes that are not an HTTP request: a JSON 400, not lws's HTML

extension ServiceCore {
  /// lws 4.1.6 parses request heads itself. An unknown method, a first line that is not
  /// HTTP at all (an HTTP/2 preface, a line of garbage) and plain HTTP to the TLS port
  /// fall back to lws's raw-socket role on the relay's protocol (`FALLBACK_TO_APPLY_
  /// LISTEN_ACCEPT_CONFIG`); without it lws answers them with an HTML 403 over HTTP/1.0.
  /// The relay answers a 400 in its JSON shape and closes.
  ///
  /// A head lws gives up on otherwise (a NUL byte, `%00`, over `max_http_header_data`)
  /// ends the connection without a callback in which to answer: lws 4.1 tells a
  /// protocol it drops a connection only once a request bound it, and its binding call
  /// is not exported. docs/protocol.md says so.
  static let notHTTP = HTTPResponse.jsonError(
    status: 400, code: "bad_request",
    message: "not an HTTP/1.1 request: the relay speaks HTTP/1.1 and WebSocket (docs/protocol.md)")
  static let plainOnTLSPort = HTTPResponse.jsonError(
    status: 400, code: "bad_request", message: "this port speaks TLS: use https:// or wss://")

  /// Bytes of a connection in the raw role. Over TLS the first call has none (lws only
  /// peeked at them); the answer waits for them, so that they are read before the close
  /// (unread bytes would turn the close into a reset, which can discard the answer).
  func rawReceived(_ wsi: OpaquePointer, length: Int) -> Int32 {
    let connection = connection(wsi)
    guard length > 0, !connection.answeredRaw else { return 0 }
    connection.answeredRaw = true
    lws_callback_on_writable(wsi)
    return 0
  }

  /// Writes the raw connection's 400; -1 closes it.
  func rawWritable(_ wsi: OpaquePointer) -> Int32 {
    let connection = connection(wsi)
    // On the TLS port lws drops TLS from a connection that did not start with a hello;
    // one that did (garbage sent inside TLS) is answered inside it, as any other.
    let plainOnTLSPort = tls && lws_is_ssl(wsi) == 0
    let response = plainOnTLSPort ? Self.plainOnTLSPort : Self.notHTTP
    let pre = Int(chat_lws_pre)
    var buffer = [UInt8](repeating: 0, count: pre) + Self.rawHead(response) + response.body
    let count = buffer.count - pre
    _ = buffer.withUnsafeMutableBufferPointer { lws_write(wsi, $0.baseAddress! + pre, count, LWS_WRITE_HTTP) }
    handlers.log("http \(connection.id): \(plainOnTLSPort ? "plain HTTP to the TLS port" : "not an HTTP request") 400")
    return -1
  }

  /// A whole response head written by hand, with `Connection: close`: for answers lws's
  /// header helpers cannot give (no request line, or not yet its HTTP version).
  static func rawHead(_ response: HTTPResponse) -> [UInt8] {
    let head =
      "HTTP/1.1 \(response.status) \(HTTPResponse.reason(response.status))\r\n"
      + "content-type: \(response.contentType)\r\ncontent-length: \(response.body.count)\r\n"
      + response.headers.map { "\($0.0.lowercased()): \($0.1)\r\n" }.joined()
      + "connection: close\r\n\r\n"
    return Array(head.utf8)
  }
}
