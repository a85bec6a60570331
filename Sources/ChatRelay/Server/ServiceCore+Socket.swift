import CWebSockets

// MARK: - WebSockets: authorize the upgrade, join fragments, write queued text in order

extension ServiceCore {
  func filterUpgrade(_ wsi: OpaquePointer) -> Int32 {
    let started = ContinuousClock.now
    let connection = connection(wsi)
    guard let request = RequestHead.read(wsi) else { return -1 }
    guard request.path == socketPath else {
      // A version-1 client's socket gets the same answer as its HTTP requests (410).
      let answer: HTTPResponse =
        request.path.hasPrefix("/v1/")
        ? APIError.versionGone.response
        : .jsonError(status: 404, code: "not_found", message: "No WebSocket at this path.")
      refuse(wsi, connection, request, answer, started: started)
      return -1
    }
    let authorized: RelayCredential?
    do {
      authorized = try handlers.authorizeSocket(request)
    } catch {
      // A valid token must not read as a bad one because relay.db is locked: 503 is retried.
      refuse(
        wsi, connection, request,
        .jsonError(status: 503, code: "unavailable", message: "The relay cannot check the token now; try again."),
        started: started)
      return -1
    }
    guard let owner = authorized else {
      refuse(
        wsi, connection, request,
        .jsonError(
          status: 401, code: "unauthorized", message: "A valid bearer token is required.",
          headers: [("WWW-Authenticate", RelayServer.bearerChallenge)]),
        started: started)
      return -1
    }
    connection.socket = SocketState(owner: owner)
    return 0
  }

  func socketEstablished(_ wsi: OpaquePointer) -> Int32 {
    let connection = connection(wsi)
    guard var socket = connection.socket else { return -1 }
    let id = connection.id
    socket.opened = .now
    connection.socket = socket
    sockets[id] = wsi
    outbound.withLock { _ = $0.live.insert(id) }
    handlers.log("socket \(id) opened for user \(socket.owner.user) device \(socket.owner.device)")
    handlers.socketOpened(SocketID(raw: id), socket.owner)
    return 0
  }

  func receive(_ wsi: OpaquePointer, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    guard let id = existingID(wsi), let connection = connections[id], var socket = connection.socket else { return -1 }
    if lws_frame_is_binary(wsi) != 0 {
      lws_close_reason(wsi, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, nil, 0)
      return -1
    }
    guard socket.incoming.count + bytes.count <= RelayServer.maximumMessageSize else {
      lws_close_reason(wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, nil, 0)
      return -1
    }
    socket.incoming.append(contentsOf: bytes)
    let complete = lws_is_final_fragment(wsi) != 0 && lws_remaining_packet_payload(wsi) == 0
    let text = complete ? String(decoding: socket.incoming, as: UTF8.self) : nil
    if complete { socket.incoming = [] }
    connection.socket = socket
    if let text { handlers.socketText(SocketID(raw: id), socket.owner, text) }
    return 0
  }

  /// Frames written in one writable callback at most, while the socket takes them
  /// without blocking (`lws_send_pipe_choked`). One a callback made a burst of events
  /// (a batch of 100 messages, its delivery receipts) reach a client one per turn of the
  /// loop, each handled alone; written together, the client stores them together.
  static let framesPerWrite = 64

  /// Writes what is queued for a socket: up to ``framesPerWrite`` frames taken in one
  /// go, with the TCP socket corked meanwhile so a burst leaves in full segments (one
  /// read for the client, not one per frame), then its close once nothing is left.
  func writeSocket(_ wsi: OpaquePointer) -> Int32 {
    guard let id = existingID(wsi), sockets[id] != nil else { return 0 }
    let (frames, more, closeCode) = outbound.withLock { state -> ([String], Bool, UInt16?) in
      var frames: [String] = []
      if let queue = state.queues[id] {
        frames = Array(queue.prefix(Self.framesPerWrite))
        state.queues[id] = queue.count > frames.count ? Array(queue.dropFirst(frames.count)) : nil
      }
      let closing = state.closing.contains(id)
      // After the last message a closing socket needs one more turn to close.
      return (
        frames, state.queues[id] != nil || (closing && !frames.isEmpty), closing ? state.closeCodes[id] ?? 1000 : nil
      )
    }
    if frames.isEmpty {
      guard let closeCode else { return 0 }
      lws_close_reason(wsi, lws_close_status(rawValue: UInt32(closeCode)), nil, 0)
      return -1
    }
    let fd = lws_get_socket_fd(wsi)
    Self.cork(fd, true)
    defer { Self.cork(fd, false) }
    let pre = Int(chat_lws_pre)
    var buffer: [UInt8] = []
    for (index, text) in frames.enumerated() {
      buffer.removeAll(keepingCapacity: true)
      buffer.append(contentsOf: repeatElement(0, count: pre))
      buffer.append(contentsOf: text.utf8)
      let count = buffer.count - pre
      let sent = buffer.withUnsafeMutableBufferPointer {
        lws_write(wsi, $0.baseAddress! + pre, count, LWS_WRITE_TEXT)
      }
      guard sent >= count else { return -1 }
      if index < frames.count - 1, lws_send_pipe_choked(wsi) != 0 {
        // The rest goes back to the front of the queue, for the next writable turn.
        outbound.withLock { state in
          state.queues[id] = Array(frames[(index + 1)...]) + (state.queues[id] ?? [])
        }
        lws_callback_on_writable(wsi)
        return 0
      }
    }
    if more { lws_callback_on_writable(wsi) }
    return 0
  }

  /// TCP_CORK on a plain TCP socket (a no-op elsewhere): while corked, the kernel sends
  /// only full segments; uncorking sends the rest at once.
  private static func cork(_ fd: Int32, _ on: Bool) {
    guard fd >= 0 else { return }
    var value: Int32 = on ? 1 : 0
    _ = setsockopt(fd, Int32(IPPROTO_TCP), chat_tcp_cork, &value, socklen_t(MemoryLayout<Int32>.size))
  }

  /// Reports a socket's end once, whichever callback sees it first.
  func socketClosed(_ wsi: OpaquePointer) {
    guard let id = existingID(wsi), let connection = connections[id], var socket = connection.socket,
      let opened = socket.opened, !socket.reportedClosed
    else { return }
    socket.reportedClosed = true
    connection.socket = socket
    sockets[id] = nil
    outbound.withLock { state in
      state.live.remove(id)
      state.queues[id] = nil
      state.closing.remove(id)
      state.closeCodes[id] = nil
      state.wake.remove(id)
    }
    handlers.log("socket \(id) closed after \(milliseconds(since: opened))ms")
    handlers.socketClosed(SocketID(raw: id), socket.owner)
  }

  /// Asks for a writable callback on each socket `send` or `close` touched.
  func wakeSockets() {
    let ids = outbound.withLock { state -> Set<UInt64> in
      let ids = state.wake
      state.wake = []
      return ids
    }
    for id in ids {
      if let wsi = sockets[id] { lws_callback_on_writable(wsi) }
    }
  }
}
