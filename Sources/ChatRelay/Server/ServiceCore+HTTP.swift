import CWebSockets

// MARK: - HTTP requests: read the head, gather the body, answer, keep the connection alive

extension ServiceCore {
  /// Bodies declared this much over the limit are refused at once and the connection
  /// closed; smaller excess is read and dropped so the client sees its 413.
  private static let drainLimit = 16 * RelayServer.maximumBodySize
  static let lengthRequired = HTTPResponse.jsonError(
    status: 411, code: "length_required",
    message: "send the body with Content-Length (chunked request bodies are not accepted)")
  static let expectationFailed = HTTPResponse.jsonError(
    status: 417, code: "expectation_failed", message: "the only expectation the relay meets is 100-continue")
  /// Bytes handed to one `lws_write` of a response body.
  private static let writeChunk = 16 * 1024

  // Keep-alive and pipelining with lws 4.1.6
  //
  // A connection carries one request at a time. Bytes the client sends behind a request
  // before its answer (HTTP/1.1 pipelining) end up in lws's per-connection buffer, and
  // lws 4.1.6 cannot serve a request out of that buffer: for one with a body,
  // `lws_http_action` re-reads the buffer from the start of the request's own head as
  // its body and then, finding bytes it can never consume, calls HTTP_BODY_COMPLETION
  // in an endless loop inside one `lws_service` call (the relay spun and ignored
  // SIGTERM). So the relay never lets lws parse a buffered request: it notices the
  // extra bytes while the current answer is still unwritten, stops lws reading that
  // connection (rx flow control), and answers with `Connection: close`, then closes.
  //
  // Noticing: behind a request with a body, lws's end-of-turn pass over buffered
  // connections calls HTTP_BODY_COMPLETION a second time (it runs within the
  // `lws_service` call that read the request, before any writable callback). Behind a
  // request without one lws keeps the bytes silently; `holdsBufferedInput` asks it
  // right before the answer is written. Either way every answer is written from a
  // writable callback, never from the callback that read the request: an answer
  // written there would complete the transaction before lws showed the extra bytes.

  func beginRequest(_ wsi: OpaquePointer) -> Int32 {
    let connection = connection(wsi)
    // Never seen with lws 4.1.6 (see above); a new head before the answer could only
    // come from bytes pipelined behind the pending request.
    if connection.exchange != nil { return markPipelined(wsi, connection) }
    guard let request = RequestHead.read(wsi) else { return -1 }
    connection.requests += 1
    var exchange = Exchange(request: request, started: .now)
    exchange.request.exchange = HTTPExchangeID(connection: connection.id, sequence: connection.requests)
    let declared = RequestHead.contentLength(wsi) ?? 0
    let route = handlers.bodyRoute(exchange.request)
    var limit = RelayServer.maximumBodySize
    if case .stream(let sink, let most) = route {
      exchange.sink = sink
      exchange.limit = most
      limit = most
      exchange.bodyDeadline = .seconds(RelayServer.bodySeconds + max(0, declared) / RelayServer.minimumStreamRate)
    }
    if RequestHead.header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) != nil
      && (RequestHead.contentLength(wsi) == nil || declared < 0)
    {
      // Not a byte count (too many digits for 64 bits, a sign, a letter): lws reads it
      // its own way (and waited for a body of 2^63 bytes, or spun when held back), so
      // the connection is closed at once, unanswered and unread.
      handlers.log(
        "http \(connection.id): \(request.method) \(request.path) Content-Length is not a byte count: closing")
      return -1
    } else if RequestHead.header(wsi, WSI_TOKEN_HTTP_TRANSFER_ENCODING) != nil
      || (Self.methodsWithBody.contains(request.method)
        && RequestHead.header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) == nil)
    {
      // lws 4.1 reads no chunked request body, and none without a length: the body's
      // bytes would be parsed as the next request. Refused, and the connection closed.
      exchange.refusal = Self.lengthRequired
      exchange.closeAfter = true
    } else if let expect = RequestHead.header(wsi, WSI_TOKEN_HTTP_EXPECT),
      expect.trimmingSpaces.lowercased() != "100-continue"
    {
      exchange.refusal = Self.expectationFailed
      exchange.closeAfter = true
    } else if case .refuse(let response) = route {
      exchange.refusal = response
      exchange.closeAfter = true
    } else if declared > limit {
      exchange.tooLarge = true
      // A client waiting for "100 Continue" sends no body after a refusal.
      exchange.closeAfter = declared > Self.drainLimit || RequestHead.header(wsi, WSI_TOKEN_HTTP_EXPECT) != nil
    }
    connection.exchange = exchange
    if exchange.closeAfter {
      // Refused without reading the body: nothing more is read from this client.
      return answer(wsi, connection)
    }
    if declared > 0 && RequestHead.header(wsi, WSI_TOKEN_HTTP_EXPECT) != nil {
      // `Expect: 100-continue` (RFC 9110 10.1.1): the interim answer now, so that the
      // client sends the body at once instead of after its own timeout (curl: 1 s).
      var continuation = [UInt8](repeating: 0, count: Int(chat_lws_pre)) + Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
      let count = continuation.count - Int(chat_lws_pre)
      _ = continuation.withUnsafeMutableBufferPointer {
        lws_write(wsi, $0.baseAddress! + Int(chat_lws_pre), count, LWS_WRITE_HTTP)
      }
    }
    // lws reports a body's completion (or an empty one) when the request declares a
    // length, and a POST with `Content-Length: 0` (or one it reads as 0) too.
    let header = RequestHead.header(wsi, WSI_TOKEN_HTTP_CONTENT_LENGTH) != nil
    if declared > 0 || (header && declared == 0 && request.method == "POST") { return 0 }  // the body follows
    return answer(wsi, connection)
  }

  /// Gathers a piece of the body; returns -1 (close) when the body is still incomplete
  /// `RelayServer.bodySeconds` after its head: lws restarts its own timeout at every
  /// piece, so a client dribbling a byte a second (slowloris on the body) would
  /// otherwise hold the connection for as long as it likes.
  func appendBody(_ wsi: OpaquePointer, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    guard let id = existingID(wsi), let connection = connections[id], var exchange = connection.exchange,
      !exchange.handedOver
    else { return 0 }
    if exchange.started.duration(to: .now) > exchange.bodyDeadline {
      handlers.log(
        "http \(id): \(exchange.request.method) \(exchange.request.path) body not complete after \(exchange.bodyDeadline.components.seconds) s: closing"
      )
      abandonBody(connection)
      return -1
    }
    guard !exchange.tooLarge else { return 0 }
    if let sink = exchange.sink {
      sink.write(bytes)
      return 0
    }
    if exchange.request.body.count + bytes.count > RelayServer.maximumBodySize {
      exchange.tooLarge = true
      exchange.request.body = []
    } else {
      exchange.request.body.append(contentsOf: bytes)
    }
    connection.exchange = exchange
    return 0
  }

  func finishBody(_ wsi: OpaquePointer) -> Int32 {
    guard let id = existingID(wsi), let connection = connections[id], let exchange = connection.exchange else {
      return 0
    }
    if exchange.handedOver {
      // The body was complete already: lws holds bytes sent behind it.
      return exchange.closeAfter ? 0 : markPipelined(wsi, connection)
    }
    return answer(wsi, connection)
  }

  /// A streamed body that will not complete: its sink is told, once.
  /// A file body being written is closed.
  func abandonBody(_ connection: Connection) {
    if var exchange = connection.exchange {
      if !exchange.handedOver, let sink = exchange.sink { sink.abandon() }
      exchange.closeFile()
    }
    connection.exchange = nil
  }

  /// Methods whose requests carry a body, which must have a `Content-Length`.
  private static let methodsWithBody: Set<String> = ["POST", "PATCH", "PUT"]

  /// Calls the handler (or refuses an oversized body); the answer is written from the
  /// writable callback, now or when the handler gives it (``answer(_:with:)``).
  private func answer(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
    guard var exchange = connection.exchange else { return -1 }
    let response =
      exchange.refusal
      ?? (exchange.tooLarge
        ? HTTPResponse.jsonError(
          status: 413, code: "too_large",
          message: "The request body is over \(exchange.limit) bytes.")
        : handlers.http(exchange.request))
    // A body refused unread never reaches its sink: the handler is not asked either.
    if exchange.tooLarge || exchange.refusal != nil, let sink = exchange.sink { sink.abandon() }
    exchange.sink = nil
    exchange.request.body = []
    exchange.handedOver = true
    exchange.awaitingAnswer = response == nil
    exchange.held = response
    connection.exchange = exchange
    if response != nil { lws_callback_on_writable(wsi) }
    return 0
  }

  /// A later answer to `id`: kept on its exchange and written from the writable callback,
  /// or at once on a pipelined connection (its writable callback may never come).
  func answer(_ id: HTTPExchangeID, with response: HTTPResponse) {
    guard let connection = connections[id.connection], let wsi = connection.wsi, var exchange = connection.exchange,
      exchange.awaitingAnswer, exchange.request.exchange == id
    else { return }
    exchange.awaitingAnswer = false
    exchange.held = response
    connection.exchange = exchange
    if connection.pipelined {
      // Outside any callback: lws closes the connection at its next service, after
      // flushing what the write left over.
      _ = answerAndClose(wsi, connection)
      lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, chat_lws_to_kill_async)
      return
    }
    lws_callback_on_writable(wsi)
  }

  /// Whether lws holds input it read from this connection and has not handed over yet.
  ///
  /// lws 4.1 has no per-connection accessor for it; `lws_service_adjust_timeout` tells
  /// whether any connection that is not flow-controlled holds such input (lws then polls
  /// without waiting). Asked with this connection's input held back and then allowed, it
  /// answers for this connection; when another connection holds input too it cannot
  /// tell, and the answer is yes (the connection then closes after its answer: safe).
  /// A request without a body gives no other sign of bytes sent behind it: lws keeps
  /// them while the request is being answered (state "doing transaction") and would
  /// parse them once the transaction completes. The relay has no TLS and no WebSocket
  /// extensions, the other reasons that query would answer 0.
  static func holdsBufferedInput(_ wsi: OpaquePointer) -> Bool {
    guard let context = lws_get_context(wsi) else { return true }
    let tsi = lws_get_tsi(wsi)
    lws_rx_flow_control(wsi, 0)
    let others = lws_service_adjust_timeout(context, 1, tsi) == 0
    lws_rx_flow_control(wsi, 1)
    return others || lws_service_adjust_timeout(context, 1, tsi) == 0
  }

  /// The client pipelined a request behind the pending one. lws must not read on (it
  /// would spin on the buffered bytes, or serve them wrongly), so reading stops; the
  /// pending answer, once there, goes out with `Connection: close` and the connection
  /// ends. Returns the callback's result: -1 (close) when the answer was written now.
  private func markPipelined(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
    if !connection.pipelined {
      connection.pipelined = true
      lws_rx_flow_control(wsi, 0)
    }
    guard let exchange = connection.exchange else { return 0 }
    if exchange.held != nil { return answerAndClose(wsi, connection) }
    guard let body = exchange.response else { return 0 }  // written by answer(_:with:)
    // A long answer is being written in pieces: the rest goes now, in one write (lws
    // keeps what the socket does not take and flushes it before closing).
    connection.exchange = nil
    let rest = Array(body[exchange.written...])
    let pre = Int(chat_lws_pre)
    var buffer = [UInt8](repeating: 0, count: pre) + rest
    _ = buffer.withUnsafeMutableBufferPointer {
      lws_write(wsi, $0.baseAddress! + pre, rest.count, LWS_WRITE_HTTP_FINAL)
    }
    handlers.log(
      "http \(connection.id): \(exchange.request.method) \(exchange.request.path) \(exchange.status) \(milliseconds(since: exchange.started))ms (pipelined request behind it: closing)"
    )
    return -1
  }

  /// Writes the held answer whole with `Connection: close` (or nothing, for a dropped
  /// one) and logs it; returns -1 for the caller to close the connection.
  private func answerAndClose(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
    guard var exchange = connection.exchange, var response = exchange.held else { return -1 }
    connection.exchange = nil
    if response.dropConnection {
      handlers.log("http: \(exchange.request.method) \(exchange.request.path) dropped without an answer (fault)")
      return -1
    }
    if response.file != nil {
      // A file body is written in pieces over several turns, which a pipelined
      // connection does not get: dropped, the client asks again on a new connection.
      handlers.log("http: \(exchange.request.method) \(exchange.request.path) dropped (pipelined behind a file body)")
      return -1
    }
    exchange.status = response.status
    response.headers.removeAll { $0.0.lowercased() == "connection" }
    response.headers.append(("Connection", "close"))
    let body = exchange.request.method == "HEAD" ? [] : response.body
    _ = writeHead(wsi, response, body: body)
    handlers.log(
      "http \(connection.id): \(exchange.request.method) \(exchange.request.path) \(exchange.status) \(milliseconds(since: exchange.started))ms (pipelined request behind it: closing)"
    )
    return -1
  }

  /// Writes the head, with the body when it fits one write, else schedules the body;
  /// a response with `dropConnection` closes the connection instead.
  private func start(_ response: HTTPResponse, _ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
    guard var exchange = connection.exchange else { return -1 }
    if !exchange.closeAfter && Self.holdsBufferedInput(wsi) {
      // Pipelined behind a request without a body: lws gave no sign (see above).
      connection.pipelined = true
      lws_rx_flow_control(wsi, 0)
      exchange.held = response
      connection.exchange = exchange
      return answerAndClose(wsi, connection)
    }
    if response.dropConnection {
      handlers.log("http: \(exchange.request.method) \(exchange.request.path) dropped without an answer (fault)")
      return -1
    }
    exchange.status = response.status
    var response = response
    if exchange.closeAfter { response.headers.append(("Connection", "close")) }
    if let file = response.file {
      // Opened now, read a piece per writable turn: a file gone already drops the connection.
      guard exchange.request.method == "HEAD" || file.length == 0 || exchange.openFile(file) else {
        handlers.log(
          "http \(connection.id): \(exchange.request.method) \(exchange.request.path) cannot open the body's file")
        return -1
      }
      connection.exchange = exchange
      guard writeHead(wsi, response, contentLength: file.length) else { return -1 }
      if exchange.fileBody == nil { return complete(wsi, connection) }
      lws_callback_on_writable(wsi)
      return 0
    }
    let body = exchange.request.method == "HEAD" ? [] : response.body
    // A body that fits one write goes out with the head: one send and no extra trip
    // through the service loop (the relay's answers are small).
    let inline = body.count <= Self.writeChunk
    exchange.response = inline ? [] : body
    connection.exchange = exchange
    guard writeHead(wsi, response, body: inline ? body : []) else { return -1 }
    if inline { return complete(wsi, connection) }
    lws_callback_on_writable(wsi)
    return 0
  }

  func writeResponseBody(_ wsi: OpaquePointer) -> Int32 {
    guard let id = existingID(wsi), let connection = connections[id], var exchange = connection.exchange else {
      return 0
    }
    if let held = exchange.held {
      if connection.pipelined { return answerAndClose(wsi, connection) }
      exchange.held = nil
      connection.exchange = exchange
      return start(held, wsi, connection)
    }
    if exchange.fileBody != nil { return writeFilePiece(wsi, connection) }
    guard let body = exchange.response else { return 0 }
    let count = min(body.count - exchange.written, Self.writeChunk)
    let isFinal = exchange.written + count == body.count
    let pre = Int(chat_lws_pre)
    var buffer = [UInt8](repeating: 0, count: pre + count)
    buffer.replaceSubrange(pre..<(pre + count), with: body[exchange.written..<(exchange.written + count)])
    let written = buffer.withUnsafeMutableBufferPointer {
      lws_write(wsi, $0.baseAddress! + pre, count, isFinal ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
    }
    guard written >= 0 else { return -1 }
    exchange.written += count
    connection.exchange = exchange
    if isFinal { return complete(wsi, connection) }
    lws_callback_on_writable(wsi)
    return 0
  }

  /// Bytes of a file body read and written in one writable turn.
  private static let fileChunk = 512 * 1024

  /// Writes the next piece of a file body; the last one completes the exchange.
  private func writeFilePiece(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
    guard var exchange = connection.exchange, let file = exchange.fileBody else { return -1 }
    let count = Int(min(Int64(Self.fileChunk), file.remaining))
    let pre = Int(chat_lws_pre)
    if fileBuffer.count < pre + count { fileBuffer = [UInt8](repeating: 0, count: pre + Self.fileChunk) }
    var buffer = fileBuffer
    fileBuffer = []  // one owner while in use: no copy on write
    defer { fileBuffer = buffer }
    let read = buffer.withUnsafeMutableBytes {
      pread(file.descriptor, $0.baseAddress! + pre, count, off_t(file.position))
    }
    // A file cut short under the answer: the connection ends, as the length promised more.
    guard read == count else { return -1 }
    let isFinal = file.remaining == Int64(count)
    let written = buffer.withUnsafeMutableBufferPointer {
      lws_write(wsi, $0.baseAddress! + pre, count, isFinal ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP)
    }
    guard written >= 0 else { return -1 }
    exchange.fileBody?.advance(by: count)
    if isFinal { exchange.closeFile() }
    connection.exchange = exchange
    if isFinal { return complete(wsi, connection) }
    lws_callback_on_writable(wsi)
    return 0
  }

  /// Logs the request and readies the connection for the next one (or closes it).
  private func complete(_ wsi: OpaquePointer, _ connection: Connection) -> Int32 {
    guard let exchange = connection.exchange else { return -1 }
    connection.exchange = nil
    handlers.log(
      "http \(connection.id): \(exchange.request.method) \(exchange.request.path) \(exchange.status) \(milliseconds(since: exchange.started))ms"
    )
    if exchange.closeAfter || connection.pipelined { return -1 }
    return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
  }

  /// Writes status, `Content-Type`, `Content-Length` and the extra headers, followed
  /// in the same write by `body` (the whole body, or none of it).
  func writeHead(_ wsi: OpaquePointer, _ response: HTTPResponse, body: [UInt8] = [], contentLength: Int64? = nil)
    -> Bool
  {
    let extras = response.headers.filter { name, value in
      !name.isEmpty && !(name + value).contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\r\n" })
    }
    let capacity = extras.reduce(1024 + response.contentType.utf8.count + body.count) {
      $0 + $1.0.utf8.count + $1.1.utf8.count + 4
    }
    let pre = Int(chat_lws_pre)
    var buffer = [UInt8](repeating: 0, count: pre + capacity)
    return buffer.withUnsafeMutableBufferPointer { raw -> Bool in
      let start = raw.baseAddress! + pre
      let end = raw.baseAddress! + raw.count
      var cursor: UnsafeMutablePointer<UInt8>? = start
      guard
        lws_add_http_common_headers(
          wsi, UInt32(clamping: response.status), response.contentType,
          lws_filepos_t(contentLength ?? Int64(response.body.count)),
          &cursor, end) == 0, let written = cursor
      else { return false }
      // lws 4.1 has reason phrases for 100, 200, 304 and the errors only ("HTTP/1.1 201 \r\n").
      let line = UnsafeMutableBufferPointer(start: start, count: written - start)
      if let cr = line.firstIndex(of: 13), cr > 0, line[cr - 1] == UInt8(ascii: " ") {
        let phrase = Array(HTTPResponse.reason(response.status).utf8)
        guard end - written >= phrase.count else { return false }
        UnsafeMutableRawPointer(start + cr + phrase.count).copyMemory(from: start + cr, byteCount: line.count - cr)
        (start + cr).update(from: phrase, count: phrase.count)
        cursor = written + phrase.count
      }
      for (name, value) in extras {
        let nameBytes = Array((name.lowercased() + ":").utf8) + [0]
        let valueBytes = Array(value.utf8)
        guard lws_add_http_header_by_name(wsi, nameBytes, valueBytes, Int32(valueBytes.count), &cursor, end) == 0
        else { return false }
      }
      if body.isEmpty { return lws_finalize_write_http_header(wsi, start, &cursor, end) == 0 }
      guard lws_finalize_http_header(wsi, &cursor, end) == 0, let head = cursor, end - head >= body.count else {
        return false
      }
      body.withUnsafeBufferPointer { head.update(from: $0.baseAddress!, count: body.count) }
      // Head and body as one HTTP_HEADERS write: lws sends it as it is (its
      // Content-Length bookkeeping is reset by lws_http_transaction_completed).
      let count = head - start + body.count
      return lws_write(wsi, start, count, LWS_WRITE_HTTP_HEADERS) >= 0
    }
  }

  /// Answers an upgrade request on the spot with `response` and `Connection: close`;
  /// the caller then returns nonzero so lws closes the connection.
  ///
  /// The head is written by hand: at the upgrade filter lws has not read the request's
  /// HTTP version yet, so `lws_add_http_header_status` would answer `HTTP/1.0`, which
  /// WebSocket clients (Python's `websockets`) reject as a malformed answer.
  func refuse(
    _ wsi: OpaquePointer, _ connection: Connection, _ request: HTTPRequest, _ response: HTTPResponse,
    started: ContinuousClock.Instant
  ) {
    let pre = Int(chat_lws_pre)
    var buffer = [UInt8](repeating: 0, count: pre) + Self.rawHead(response) + response.body
    let count = buffer.count - pre
    _ = buffer.withUnsafeMutableBufferPointer { lws_write(wsi, $0.baseAddress! + pre, count, LWS_WRITE_HTTP) }
    handlers.log(
      "http \(connection.id): \(request.method) \(request.path) \(response.status) \(milliseconds(since: started))ms")
  }
}
