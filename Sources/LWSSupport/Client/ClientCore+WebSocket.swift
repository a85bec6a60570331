import CWebSockets

/// The largest text message accepted from the relay; a larger one closes the socket (1009).
let maximumIncomingMessage = 1 << 20

// MARK: - Events, on the service thread

extension ClientCore {
  package func handle(
    _ wsi: OpaquePointer, _ reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
    input: UnsafeMutableRawPointer?, length: Int
  ) -> Int32 {
    if reason == LWS_CALLBACK_EVENT_WAIT_CANCELLED {
      serviceRequests()
      return 0
    }
    if reason == LWS_CALLBACK_OPENSSL_PERFORM_SERVER_CERT_VERIFICATION {
      // `user` is OpenSSL's X509_STORE_CTX and `length` its verdict. A refusal's reason is
      // kept for the connection's error, where lws says only "connect SSL err 1"; the
      // verdict itself stands whatever this returns.
      if length == 0, let user {
        let code = X509_STORE_CTX_get_error(OpaquePointer(user))
        certificateRefusals[wsi] = String(cString: X509_verify_cert_error_string(Int(code)))
      }
      return 0
    }
    // HTTP exchanges (ClientCore+HTTP.swift) share the context and this callback.
    if let exchange = existingExchange(wsi) {
      return handle(exchange, wsi, reason, user: user, input: input, length: length)
    }
    if existing(wsi) == nil, let answer = handleSettledHTTP(reason) { return answer }
    switch reason {
    case LWS_CALLBACK_CLIENT_APPEND_HANDSHAKE_HEADER:
      return appendAuthorization(wsi, input, length)
    case LWS_CALLBACK_ESTABLISHED_CLIENT_HTTP:
      // The upgrade's answer was read; a status other than 101 fails it next.
      if let connection = existing(wsi) { connection.status = Int(lws_http_client_http_response(wsi)) }
      return 0
    case LWS_CALLBACK_CLIENT_ESTABLISHED:
      return established(wsi)
    case LWS_CALLBACK_CLIENT_CONNECTION_ERROR:
      connectionFailed(wsi, input.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) })
      return 0
    case LWS_CALLBACK_CLIENT_RECEIVE:
      return receive(wsi, UnsafeRawBufferPointer(start: input, count: input == nil ? 0 : length))
    case LWS_CALLBACK_CLIENT_WRITEABLE:
      return write(wsi)
    case LWS_CALLBACK_WS_PEER_INITIATED_CLOSE:
      // The payload starts with the close code, network order.
      if length >= 2, let input, let connection = existing(wsi) {
        let bytes = input.assumingMemoryBound(to: UInt8.self)
        connection.channel.finish(code: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
      }
      return 0
    case LWS_CALLBACK_CLIENT_CLOSED, LWS_CALLBACK_WSI_DESTROY:
      if let connection = existing(wsi) {
        end(connection, failure: TransportError("\(connection.request.target.text): closed before the upgrade"))
      }
      return 0
    default:
      return lws_callback_http_dummy(wsi, reason, user, input, length)
    }
  }

  /// The connection of `wsi`, through the id in its opaque user data.
  func existing(_ wsi: OpaquePointer) -> ClientConnection? {
    guard let raw = lws_get_opaque_user_data(wsi) else { return nil }
    return connections[UInt64(UInt(bitPattern: raw))]
  }

  /// Starts the connections and HTTP exchanges asked for, drops the exchanges whose
  /// callers stopped waiting, and asks for a writable callback on each socket `send` or
  /// `close` touched.
  func serviceRequests() {
    let (opens, requests, abandoned, wake) = shared.withLock { state in
      state.wakePending = false
      let opens = state.opens.filter { state.connecting[$0.id] != nil }
      state.opens = []
      let requests = state.requests.filter { state.answering[$0.id] != nil }
      state.requests = []
      let abandoned = state.abandoned
      state.abandoned = []
      let wake = state.wake
      state.wake = []
      return (opens, requests, abandoned, wake)
    }
    for open in opens { connect(ClientConnection(id: open.id, channel: open.channel, request: open.request)) }
    for id in abandoned { abandon(id) }
    for request in requests { start(HTTPExchange(id: request.id, request: request.request)) }
    for id in wake {
      if let wsi = connections[id]?.wsi { lws_callback_on_writable(wsi) }
    }
  }

  private func connect(_ connection: ClientConnection) {
    guard let context else { return }
    connections[connection.id] = connection
    let request = connection.request
    var info = lws_client_connect_info()
    info.context = context
    info.address = connection.cString(request.address)
    info.port = Int32(request.target.port)
    info.path = connection.cString(request.target.path)
    info.host = connection.cString(request.target.hostHeader)
    info.ietf_version_or_minus_one = -1
    info.opaque_user_data = UnsafeMutableRawPointer(bitPattern: UInt(connection.id))
    info.retry_and_idle_policy = policy(pingSeconds: request.pingSeconds)
    if request.target.tls, let refused = Self.useTLS(&info, for: request.target.text) {
      end(connection, failure: refused)
      return
    }
    // A failure inside this call is reported by its nil result, not by a callback.
    if let wsi = lws_client_connect_via_info(&info) {
      if connections[connection.id] != nil { connection.wsi = wsi }
    } else {
      end(connection, failure: TransportError("\(request.target.text): could not start the connection"))
    }
  }

  private func appendAuthorization(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
    guard let connection = existing(wsi), let input else { return -1 }
    // `input` is the `unsigned char **` write position, `length` the room left.
    let position = input.assumingMemoryBound(to: UnsafeMutablePointer<UInt8>?.self)
    guard let start = position.pointee else { return -1 }
    let value = Array(connection.request.authorization.utf8)
    let failed = value.withUnsafeBufferPointer { bytes in
      lws_add_http_header_by_token(
        wsi, WSI_TOKEN_HTTP_AUTHORIZATION, bytes.baseAddress, Int32(bytes.count), position, start + length)
    }
    return failed == 0 ? 0 : -1
  }

  private func established(_ wsi: OpaquePointer) -> Int32 {
    guard let connection = existing(wsi) else { return -1 }
    connection.wsi = wsi
    let id = connection.id
    let waiting = shared.withLock { state in
      let waiting = state.connecting.removeValue(forKey: id)
      if waiting != nil { state.live.insert(id) }
      return waiting
    }
    // Nobody waits any more (the caller was cancelled): hang up.
    guard let waiting else { return -1 }
    waiting.resume(returning: LWSClientSocket(id: id, core: self, channel: connection.channel))
    return 0
  }

  private func connectionFailed(_ wsi: OpaquePointer, _ why: String?) {
    guard let connection = existing(wsi) else { return }
    // The status was kept when the answer's head was read; asked again in case this
    // lws reports the failure without that callback.
    let status = connection.status != 0 ? connection.status : Int(lws_http_client_http_response(wsi))
    let failure: any Error =
      if status != 0 && status != 101 {
        SocketRefused(status: status)
      } else if let refusal = certificateRefusals.removeValue(forKey: wsi) {
        TransportError.certificate(connection.request.target.text, refusal)
      } else {
        TransportError("\(connection.request.target.text): \(why ?? "connection failed")")
      }
    end(connection, failure: failure)
  }

  private func receive(_ wsi: OpaquePointer, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    guard let connection = existing(wsi) else { return -1 }
    // Binary frames are not part of the protocol: their bytes are skipped.
    if lws_frame_is_binary(wsi) != 0 { return 0 }
    guard connection.incoming.count + bytes.count <= maximumIncomingMessage else {
      connection.channel.finish(code: UInt16(LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE.rawValue))
      lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, nil, 0)
      return -1
    }
    connection.incoming.append(contentsOf: bytes)
    guard lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0 else { return 0 }
    let text = String(decoding: connection.incoming, as: UTF8.self)
    connection.incoming = []
    connection.channel.yield(text)
    return 0
  }

  private enum NextWrite {
    case message(String, more: Bool)
    case close
    case nothing
  }

  /// Writes one queued message, or the close frame once the queue is empty.
  private func write(_ wsi: OpaquePointer) -> Int32 {
    guard let connection = existing(wsi) else { return 0 }
    let id = connection.id
    let next = shared.withLock { state -> NextWrite in
      if connection.outgoing.isEmpty, let queue = state.queues.removeValue(forKey: id) {
        connection.outgoing = queue.reversed()
      }
      guard let text = connection.outgoing.popLast() else {
        return state.closing.contains(id) ? .close : .nothing
      }
      // After the last message a closing socket needs one more turn to close.
      return .message(text, more: !connection.outgoing.isEmpty || state.queues[id] != nil || state.closing.contains(id))
    }
    switch next {
    case .nothing:
      return 0
    case .close:
      lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, nil, 0)
      return -1
    case .message(let text, let more):
      let pre = Int(chat_lws_pre)
      let count = text.utf8.count
      var buffer = [UInt8](repeating: 0, count: pre + count)
      buffer.withUnsafeMutableBufferPointer { buffer in
        _ = UnsafeMutableBufferPointer(rebasing: buffer[pre...]).initialize(from: text.utf8)
      }
      let written = buffer.withUnsafeMutableBufferPointer {
        lws_write(wsi, $0.baseAddress! + pre, count, LWS_WRITE_TEXT)
      }
      guard written >= count else { return -1 }
      if more { lws_callback_on_writable(wsi) }
      return 0
    }
  }

  /// Forgets a connection once, whichever callback sees its end first: its stream
  /// finishes, and a caller still waiting in `open` gets `failure`.
  func end(_ connection: ClientConnection, failure: any Error) {
    let id = connection.id
    guard connections.removeValue(forKey: id) != nil else { return }
    let waiting = shared.withLock { state in
      state.live.remove(id)
      state.queues[id] = nil
      state.closing.remove(id)
      state.wake.remove(id)
      return state.connecting.removeValue(forKey: id)
    }
    connection.channel.finish()
    waiting?.resume(throwing: failure)
  }
}
