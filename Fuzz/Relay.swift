// Fuzz target `relay`: the relay's HTTP handling (the request as libwebsockets hands it
// over: method, percent-decoded path and query, headers, body; then authentication,
// routing, query parameters and the JSON bodies) and its WebSocket message handling,
// against a relay database with three users.
//
// Input: byte 0 picks the mode (0, 1: an HTTP request `METHOD /path?query` + headers +
// blank line + body; 2: a WebSocket text message; 3: the wire); byte 1 the user and
// whether a valid token is added when the request has no Authorization header.
// Invariants: nothing traps; every answer is a status of docs/protocol.md (never 500)
// with a JSON body (an upload's answers and a media's bytes aside); the fast POST body parser agrees with JSONDecoder whenever it
// accepts a body.
// The wire (mode 3): the rest of the input is sent as it is to a real relay server in
// this process (its own database) on a loopback port, then the client's half of the
// connection is shut: libwebsockets' head parser, the relay's head reading, body
// gathering and answers. Whatever comes back is nothing (the documented closes) or
// answers whose status lines are documented ones with a reason phrase.

import ChatProtocol
import ChatStore
import Foundation

@testable import ChatRelay

#if canImport(Glibc)
  import Glibc
#endif

private let database = ScratchFile("relay.db")
private let setup: (relay: Relay, tokens: [String]) = {
  database.remove()
  let relay = try! Relay(databasePath: database.path, now: { 1_767_225_600_000 })
  let tokens = (1...3).map { id in try! relay.store.addUser(id: Int64(id), name: "user \(id)", avatarURL: nil) }
  atexit {
    database.remove()
    unlink(database.path + "-wal")
    unlink(database.path + "-shm")
    try? FileManager.default.removeItem(atPath: database.path + ".media")
  }
  return (relay, tokens)
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRelay(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = input(data, size)
  guard size >= 2 else { return 0 }
  let user = Int64(data[1] >> 1) % 3 + 1
  let rest = Array(bytes[2...])
  if data[0] % 4 == 3 { return wire(rest) }
  if data[0] % 4 == 2 {
    setup.relay.received(
      String(decoding: rest, as: UTF8.self), on: SocketID(raw: 1), from: RelayCredential(user: user, device: user))
    return 0
  }
  var request = head(rest)
  if data[1] & 1 == 1 && request.headers["authorization"] == nil {
    request.headers["authorization"] = "Bearer " + setup.tokens[Int(user) - 1]
  }
  checkPostBody(request.body)
  // An upload's PATCH streams its body to the upload's file, as the server does.
  if request.method == "PATCH" && request.path.hasPrefix("/v2/uploads/"),
    case .stream(let sink, let limit) = setup.relay.uploadPatchRoute(request)
  {
    request.body.prefix(limit).withUnsafeBytes { sink.write($0) }
  }
  let response = setup.relay.respond(to: request)
  setup.relay.endTurn(log: { _ in })
  let media = request.path.hasPrefix("/v2/uploads") || request.path.hasPrefix("/v2/media/")
  require(
    [200, 201, 400, 401, 403, 404, 405, 409, 413, 429, 503].contains(response.status)
      || (response.status == 410 && request.path.hasPrefix("/v1/"))
      || (media && [204, 206, 412, 415, 416, 460].contains(response.status)),
    "status \(response.status) for \(request.method) \(request.path): \(String(decoding: response.body, as: UTF8.self))"
  )
  // Every answer is JSON but a tus answer (its headers say it all) and a media's bytes.
  let bare = media && (response.file != nil || [200, 201, 204].contains(response.status) && response.body.isEmpty)
  require(
    bare || (try? JSONSerialization.jsonObject(with: Data(response.body))) != nil,
    "the answer is not JSON: \(String(decoding: response.body, as: UTF8.self))")
  return 0
}

/// The fast parser of POST bodies and JSONDecoder: when the first accepts a body, the
/// second must read the same four fields from it.
private func checkPostBody(_ body: [UInt8]) {
  if let batch = MessageBatchPost.parsePlain(body) {
    let decoded = try? decode(body) as MessageBatchPost
    require(batch == decoded, "the plain batch parser read \(batch), JSONDecoder \(String(describing: decoded))")
  }
  guard let plain = MessagePost.parsePlain(body) else { return }
  let decoded: MessagePost
  do { decoded = try decode(body) } catch {
    require(
      false, "parsePlain accepted a body JSONDecoder refuses (\(error)): \(String(decoding: body, as: UTF8.self))")
    return
  }
  require(
    plain.requestId == decoded.requestId && plain.toUserId == decoded.toUserId && plain.content == decoded.content
      && plain.createdAt == decoded.createdAt,
    "parsePlain read \(plain), JSONDecoder \(decoded)")
}

/// The request as `RequestHead.read` builds it from what lws parsed: the request line's
/// method and path (percent-decoded), the query cut at `&` and each part decoded (`+` is
/// a space) and cut at its first `=`, headers by lowercased name (the last one wins).
private func head(_ bytes: [UInt8]) -> HTTPRequest {
  let text = String(decoding: bytes, as: UTF8.self)
  let (headText, body): (Substring, [UInt8]) = {
    guard let end = text.range(of: "\r\n\r\n") else { return (text[...], []) }
    return (text[..<end.lowerBound], Array(text[end.upperBound...].utf8))
  }()
  var lines = headText.components(separatedBy: "\r\n")
  let requestLine = lines.isEmpty ? [] : lines.removeFirst().split(separator: " ", maxSplits: 2).map(String.init)
  let method = requestLine.first ?? "GET"
  let target = requestLine.count > 1 ? requestLine[1] : "/"
  let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
  var query: [String: String] = [:]
  if parts.count > 1 {
    for fragment in parts[1].split(separator: "&") {
      let decoded = percentDecoded(fragment.replacingOccurrences(of: "+", with: " "))
      if let equals = decoded.firstIndex(of: "=") {
        query[String(decoded[..<equals])] = String(decoded[decoded.index(after: equals)...])
      } else {
        query[decoded] = ""
      }
    }
  }
  var headers: [String: String] = [:]
  for line in lines {
    guard let colon = line.firstIndex(of: ":") else { continue }
    headers[line[..<colon].lowercased()] = String(line[line.index(after: colon)...].drop { $0 == " " })
  }
  _ = headers["content-length"].flatMap { Int($0.trimmingSpaces) }  // as RequestHead.contentLength reads it
  return HTTPRequest(method: method, path: percentDecoded(String(parts[0])), query: query, headers: headers, body: body)
}

/// `%xx` escapes undone, bytes that are not UTF-8 repaired (as `String(decoding:)`).
private func percentDecoded(_ text: String) -> String {
  var out: [UInt8] = []
  var bytes = text.utf8[...]
  while let byte = bytes.popFirst() {
    if byte == UInt8(ascii: "%"), bytes.count >= 2,
      let value = UInt8(String(decoding: bytes.prefix(2), as: UTF8.self), radix: 16)
    {
      out.append(value)
      bytes = bytes.dropFirst(2)
    } else {
      out.append(byte)
    }
  }
  return String(decoding: out, as: UTF8.self)
}

// MARK: - The wire

private let wireDatabase = ScratchFile("wire-relay.db")
/// A relay served on a thread of its own for the whole run; its port.
private let wirePort: UInt16 = {
  wireDatabase.remove()
  let relay = try! Relay(databasePath: wireDatabase.path, now: { 1_767_225_600_000 })
  _ = try! relay.store.addUser(id: 1, name: "user 1", avatarURL: nil)
  let server = try! RelayServer(port: 0, handlers: relay.handlers())
  relay.attach(server)
  Thread { server.run() }.start()
  atexit {
    wireDatabase.remove()
    unlink(wireDatabase.path + "-wal")
    unlink(wireDatabase.path + "-shm")
    try? FileManager.default.removeItem(atPath: wireDatabase.path + ".media")
  }
  return UInt16(server.port)
}()

/// The statuses docs/protocol.md lists, and lws's own 403 for a bad `%` escape.
private let wireStatuses: Set<Substring> = [
  "100", "200", "201", "204", "206", "400", "401", "403", "404", "405", "408", "409", "410", "411", "412", "413",
  "415", "416", "417", "429", "460", "503",
]

private func wire(_ bytes: [UInt8]) -> CInt {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = wirePort.bigEndian
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var timeout = timeval(tv_sec: 5, tv_usec: 0)
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
  connectInterruptible(fd, &address)
  var sent = 0
  while sent < bytes.count {
    let count = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
    if count < 0 && errno == EINTR { continue }
    if count <= 0 { break }
    sent += count
  }
  shutdown(fd, Int32(SHUT_WR))
  var answer: [UInt8] = []
  var buffer = [UInt8](repeating: 0, count: 65536)
  while true {
    let count = recv(fd, &buffer, buffer.count, 0)
    if count < 0 && errno == EINTR { continue }
    if count < 0 && errno == EAGAIN {
      require(
        false,
        "no answer and no close within 5 s for \(String(decoding: bytes.prefix(200), as: UTF8.self).debugDescription)")
    }
    if count <= 0 { break }
    answer += buffer[0..<count]
  }
  let text = String(decoding: answer, as: UTF8.self)
  for line in text.components(separatedBy: "\r\n") where line.hasPrefix("HTTP/1.") {
    let parts = line.split(separator: " ", maxSplits: 2)
    require(
      parts.count == 3 && wireStatuses.contains(parts[1]) && !parts[2].isEmpty,
      "status line \(line.debugDescription) for \(String(decoding: bytes.prefix(200), as: UTF8.self).debugDescription)")
  }
  return 0
}

/// `connect(2)` to the loopback relay. libFuzzer's timers interrupt system calls: an
/// interrupted `connect` goes on in the kernel (calling it again answers `EALREADY`), so
/// the connection is awaited with `poll` and its outcome read from `SO_ERROR`.
private func connectInterruptible(_ fd: Int32, _ address: inout sockaddr_in) {
  let connected = withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
  }
  if connected == 0 { return }
  require(errno == EINTR, "cannot connect to the relay: errno \(errno)")
  var ready = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
  var polled: Int32
  repeat { polled = poll(&ready, 1, 5_000) } while polled < 0 && errno == EINTR
  require(polled == 1, "cannot connect to the relay: poll answered \(polled), errno \(errno)")
  var failure: Int32 = 0
  var length = socklen_t(MemoryLayout<Int32>.size)
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length)
  require(failure == 0, "cannot connect to the relay: errno \(failure)")
}
