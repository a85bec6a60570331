import CWebSockets
import Foundation

/// One HTTP exchange the service thread is asked to run.
package struct ExchangeRequest: Sendable {
  var method: String
  /// Numeric IPv4 or IPv6 address.
  var address: String
  var port: Int
  /// Path and query, already encoded, the base URL's path included.
  var path: String
  var hostHeader: String
  /// The `Authorization` header's value, if one is sent.
  var authorization: String?
  var body: [UInt8]?
  /// The body's `Content-Type`.
  var contentType: String
  /// More headers, by name (`Tus-Resumable`, `Range`, …).
  var headers: [(String, String)]
  /// `POST /v2/messages`, for error messages: no query, no token.
  var name: String
  /// Over TLS (`https://`; ``ClientTLS`` enabled), the certificate checked against the
  /// `Host` header's name.
  var tls: Bool

  /// A request to `address:port` (numeric) for `path` (encoded, with its query).
  package init(
    method: String, address: String, port: Int, path: String, hostHeader: String, authorization: String?,
    body: [UInt8]?, name: String, tls: Bool = false, contentType: String = "application/json",
    headers: [(String, String)] = []
  ) {
    self.tls = tls
    self.contentType = contentType
    self.headers = headers
    self.method = method
    self.address = address
    self.port = port
    self.path = path
    self.hostHeader = hostHeader
    self.authorization = authorization
    self.body = body
    self.name = name
  }
}

/// One exchange's state on the service thread, from the request until its connection
/// is gone.
final class HTTPExchange {
  let id: UInt64
  let request: ExchangeRequest
  var wsi: OpaquePointer?
  /// Set once the answer's head was read.
  var status = 0
  var headers: [String: String] = [:]
  /// The answer has neither `Content-Length` nor chunks: its body runs to the end of
  /// the connection.
  var bodyToEndOfConnection = false
  var body: [UInt8] = []
  /// Bytes of the request's body written so far.
  var sent = 0
  /// The connect info's strings, kept until the exchange is gone.
  private var strings: [UnsafeMutablePointer<CChar>] = []

  init(id: UInt64, request: ExchangeRequest) {
    self.id = id
    self.request = request
  }

  var reply: HTTPReply { HTTPReply(status: status, headers: headers, body: body) }

  /// A C copy of `text` that lives as long as this exchange.
  func cString(_ text: String) -> UnsafePointer<CChar> {
    let copy = strdup(text)!
    strings.append(copy)
    return UnsafePointer(copy)
  }

  deinit { strings.forEach { free($0) } }
}

// MARK: - Thread-safe requests

extension ClientCore {
  /// Asks the service thread to run `request`; returns its answer. Cancelling the
  /// calling task throws `CancellationError` at once and drops the connection.
  package func exchange(_ request: ExchangeRequest) async throws -> HTTPReply {
    let id = nextID()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPReply, any Error>) in
        let outcome = shared.withLock { state -> Result<LWSWakeHandle?, any Error> in
          // Checked under the lock: a cancellation handler that ran before this found nothing to cancel.
          if Task.isCancelled { return .failure(CancellationError()) }
          if state.dead { return .failure(TransportError("the HTTP service thread stopped")) }
          state.answering[id] = continuation
          state.requests.append((id, request))
          return .success(state.requestWake())
        }
        switch outcome {
        case .failure(let error): continuation.resume(throwing: error)
        case .success(let wake): wake?.wake()
        }
      }
    } onCancel: {
      let (waiting, wake) = shared.withLock {
        state -> (CheckedContinuation<HTTPReply, any Error>?, LWSWakeHandle?) in
        guard let waiting = state.answering.removeValue(forKey: id) else { return (nil, nil) }
        state.abandoned.insert(id)
        return (waiting, state.requestWake())
      }
      wake?.wake()
      waiting?.resume(throwing: CancellationError())
    }
  }
}

/// Headers the relay sends that libwebsockets has no token for. lws keeps such a
/// header by name (`lws_hdr_custom_copy`), but the installed 4.1 has no call that lists
/// those names, so the ones the protocol defines are asked for one by one.
let relayCustomHeaders = [
  "idempotent-replayed", "tus-resumable", "tus-version", "upload-offset", "upload-length", "upload-expires",
  "chat-media-id",
]

/// The request body leaves in writes of at most this many bytes, one per writable
/// callback (a media chunk is megabytes: 16 KiB a turn made 65,536 turns a GiB).
private let bodyWriteSize = 256 * 1024

// MARK: - Events of HTTP exchanges, on the service thread

extension ClientCore {
  /// The exchange of `wsi`, through the id in its opaque user data.
  func existingExchange(_ wsi: OpaquePointer) -> HTTPExchange? {
    guard let raw = lws_get_opaque_user_data(wsi) else { return nil }
    return exchanges[UInt64(UInt(bitPattern: raw))]
  }

  func handle(
    _ exchange: HTTPExchange, _ wsi: OpaquePointer, _ reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
    input: UnsafeMutableRawPointer?, length: Int
  ) -> Int32 {
    switch reason {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
      return appendHeaders(exchange, wsi, input, length)
    case LWS_CALLBACK_CLIENT_HTTP_WRITEABLE:
      return writeBody(exchange, wsi)
    case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
      readHead(exchange, wsi)
      if exchange.request.method == "HEAD" {
        // The answer to a HEAD is its head: lws 4.1 would wait for a body as long as its
        // Content-Length (an error's JSON) and call it cut when none comes.
        settle(exchange, .success(exchange.reply))
        return -1
      }
      return 0
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
      // lws says so for HTTP connections too, after the answer's head.
      return 0
    case LWS_CALLBACK_RECEIVE_CLIENT_HTTP:
      // Drains what arrived; lws strips any chunking and hands the payload to
      // RECEIVE_CLIENT_HTTP_READ before this returns.
      // Into one buffer, kept from call to call (a media chunk arrives in many reads).
      let pre = Int(chat_lws_pre)
      if receiveBuffer.isEmpty { receiveBuffer = [CChar](repeating: 0, count: pre + 256 * 1024) }
      var buffer = receiveBuffer
      receiveBuffer = []  // one owner while in use: no copy on write
      defer { receiveBuffer = buffer }
      return buffer.withUnsafeMutableBufferPointer { raw in
        var start: UnsafeMutablePointer<CChar>? = raw.baseAddress! + pre
        var count = Int32(raw.count - pre)
        return lws_http_client_read(wsi, &start, &count) < 0 ? -1 : 0
      }
    case LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
      if let input, length > 0 { exchange.body.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length)) }
      return 0
    case LWS_CALLBACK_COMPLETED_CLIENT_HTTP:
      settle(exchange, .success(exchange.reply))
      // One request per connection: nonzero closes it now rather than keeping it for another.
      return -1
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
      let why = input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) }
      var failure = TransportError(
        "\(exchange.request.name): \(why ?? "connection failed")", neverConnected: exchange.status == 0)
      if let refusal = certificateRefusals.removeValue(forKey: wsi) {
        failure = .certificate(exchange.request.name, refusal)
      }
      settle(exchange, .failure(failure))
      return 0
    case LWS_CALLBACK_CLOSED_CLIENT_HTTP, LWS_CALLBACK_WSI_DESTROY:
      if exchange.status != 0 && exchange.bodyToEndOfConnection {
        settle(exchange, .success(exchange.reply))
      } else {
        let what = exchange.status == 0 ? "the relay closed the connection without an answer" : "a cut answer"
        settle(exchange, .failure(TransportError("\(exchange.request.name): \(what)")))
      }
      return 0
    default:
      return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
  }

  /// Events for an exchange already settled (its caller answered or gone) while lws
  /// closes its connection: anything still arriving is refused.
  func handleSettledHTTP(_ reason: lws_callback_reasons) -> Int32? {
    switch reason {
    case LWS_CALLBACK_RECEIVE_CLIENT_HTTP, LWS_CALLBACK_CLIENT_HTTP_WRITEABLE, LWS_CALLBACK_RECEIVE_CLIENT_HTTP_READ:
      return -1
    case LWS_CALLBACK_COMPLETED_CLIENT_HTTP, LWS_CALLBACK_CLOSED_CLIENT_HTTP:
      return 0
    default:
      return nil
    }
  }

  /// Starts an exchange asked for by `exchange(_:)`.
  func start(_ exchange: HTTPExchange) {
    guard let context else { return }
    exchanges[exchange.id] = exchange
    let request = exchange.request
    var info = lws_client_connect_info()
    info.context = context
    info.address = exchange.cString(request.address)
    info.port = Int32(request.port)
    info.path = exchange.cString(request.path)
    info.host = exchange.cString(request.hostHeader)
    info.method = exchange.cString(request.method)
    // Bound by name: lws hands an HTTP answer's body (RECEIVE_CLIENT_HTTP_READ) only to a
    // protocol bound to the connection; the default protocols[0] is not bound.
    info.local_protocol_name = exchange.cString(clientProtocolName)
    // A 3xx is the caller's answer, as any other status.
    info.ssl_connection = Int32(LCCSCF_HTTP_NO_FOLLOW_REDIRECT.rawValue)
    if request.tls, let refused = Self.useTLS(&info, for: request.name) {
      settle(exchange, .failure(refused))
      return
    }
    info.opaque_user_data = UnsafeMutableRawPointer(bitPattern: UInt(exchange.id))
    // A failure inside this call is reported by its nil result, and maybe by a callback first.
    if let wsi = lws_client_connect_via_info(&info) {
      if exchanges[exchange.id] != nil { exchange.wsi = wsi }
    } else {
      settle(exchange, .failure(TransportError("\(request.name): could not start the connection")))
    }
  }

  /// Drops the connection of an exchange whose caller stopped waiting.
  func abandon(_ id: UInt64) {
    guard let exchange = exchanges.removeValue(forKey: id), let wsi = exchange.wsi else { return }
    // Closed at the next turn of the service loop, not inside this callback.
    lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, chat_lws_to_kill_async)
  }

  /// `Authorization` (when given), `Connection: close` and, with a body, its type and length; a body
  /// to send asks for writable callbacks.
  private func appendHeaders(
    _ exchange: HTTPExchange, _ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int
  ) -> Int32 {
    guard let input else { return -1 }
    // `input` is the `unsigned char **` write position, `length` the room left.
    let position = input.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
    guard let start = position.pointee else { return -1 }
    let end = start + length
    var headers = [(WSI_TOKEN_CONNECTION, "close")]
    if let authorization = exchange.request.authorization {
      headers.insert((WSI_TOKEN_HTTP_AUTHORIZATION, authorization), at: 0)
    }
    if let body = exchange.request.body {
      headers.append((WSI_TOKEN_HTTP_CONTENT_TYPE, exchange.request.contentType))
      headers.append((WSI_TOKEN_HTTP_CONTENT_LENGTH, String(body.count)))
    }
    for (token, value) in headers {
      let bytes = Array(value.utf8)
      let failed = bytes.withUnsafeBufferPointer {
        lws_add_http_header_by_token(wsi, token, $0.baseAddress, Int32($0.count), position, end)
      }
      if failed != 0 { return -1 }
    }
    for (name, value) in exchange.request.headers {
      let key = Array((name.lowercased() + ":").utf8) + [0]
      let bytes = Array(value.utf8)
      let failed = bytes.withUnsafeBufferPointer {
        lws_add_http_header_by_name(wsi, key, $0.baseAddress, Int32($0.count), position, end)
      }
      if failed != 0 { return -1 }
    }
    if let body = exchange.request.body, !body.isEmpty {
      lws_client_http_body_pending(wsi, 1)
      lws_callback_on_writable(wsi)
    }
    return 0
  }

  /// Writes the next part of the body; the last part tells lws the body is complete.
  private func writeBody(_ exchange: HTTPExchange, _ wsi: OpaquePointer) -> Int32 {
    guard let body = exchange.request.body, exchange.sent < body.count else { return 0 }
    let count = min(bodyWriteSize, body.count - exchange.sent)
    let last = exchange.sent + count == body.count
    let pre = Int(chat_lws_pre)
    var buffer = [UInt8](repeating: 0, count: pre + count)
    buffer.withUnsafeMutableBufferPointer { buffer in
      _ = UnsafeMutableBufferPointer(rebasing: buffer[pre...]).initialize(
        from: body[exchange.sent..<(exchange.sent + count)])
    }
    let written = buffer.withUnsafeMutableBufferPointer {
      lws_write(wsi, $0.baseAddress! + pre, count, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
    }
    guard written >= count else { return -1 }
    exchange.sent += count
    if last {
      lws_client_http_body_pending(wsi, 0)
    } else {
      lws_callback_on_writable(wsi)
    }
    return 0
  }

  /// Keeps the status and the headers: lws frees its copy of the head after this callback.
  private func readHead(_ exchange: HTTPExchange, _ wsi: OpaquePointer) {
    exchange.status = Int(lws_http_client_http_response(wsi))
    for raw in 0..<WSI_TOKEN_COUNT.rawValue {
      let token = lws_token_indexes(rawValue: raw)
      // Header names end in ':'; the other tokens are request lines and HTTP/2 pseudo-headers.
      guard let cName = lws_token_to_string(token) else { continue }
      let name = String(cString: cName)
      guard name.count > 1, name.hasSuffix(":"), !name.hasPrefix(":") else { continue }
      let length = lws_hdr_total_length(wsi, token)
      guard length > 0 else { continue }
      var value = [CChar](repeating: 0, count: Int(length) + 1)
      guard lws_hdr_copy(wsi, &value, Int32(value.count), token) >= 0 else { continue }
      exchange.headers[String(name.dropLast()).lowercased()] = String(cStringBuffer: value)
    }
    for name in relayCustomHeaders {
      let key = Array((name + ":").utf8CString)
      let length = lws_hdr_custom_length(wsi, key, Int32(key.count - 1))
      guard length >= 0 else { continue }
      var value = [CChar](repeating: 0, count: Int(length) + 1)
      guard lws_hdr_custom_copy(wsi, &value, Int32(value.count), key, Int32(key.count - 1)) >= 0 else { continue }
      exchange.headers[name] = String(cStringBuffer: value)
    }
    let chunked = exchange.headers["transfer-encoding"]?.lowercased().contains("chunked") == true
    exchange.bodyToEndOfConnection = exchange.headers["content-length"] == nil && !chunked
    // The body's room at once (a media chunk is megabytes), not by doubling as it comes.
    if let length = exchange.headers["content-length"].flatMap({ Int($0) }), length > 0, length <= 64 << 20 {
      exchange.body.reserveCapacity(length)
    }
  }

  /// Ends an exchange once, whichever callback sees its end first: the caller, if still
  /// waiting, gets `outcome`.
  func settle(_ exchange: HTTPExchange, _ outcome: Result<HTTPReply, any Error>) {
    let id = exchange.id
    guard exchanges.removeValue(forKey: id) != nil else { return }
    let waiting = shared.withLock { state in
      state.abandoned.remove(id)
      return state.answering.removeValue(forKey: id)
    }
    waiting?.resume(with: outcome)
  }
}

extension String {
  /// The text of a NUL-terminated buffer lws filled (up to its first NUL), as UTF-8.
  fileprivate init(cStringBuffer buffer: [CChar]) {
    self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
