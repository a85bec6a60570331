import Foundation
import ChatStore

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - HTTP/1.1 over one plain socket per request

/// One request, one connection: the head and the body leave in one write, the answer
/// is read to the end of the connection (`Connection: close`).
///
/// Why not URLSession: on Linux (swift-corelibs-foundation driving libcurl 7.88 through
/// Dispatch sources) a POST sometimes wrote its head and never its body. Seen with `ss`
/// on a stuck exchange: the client socket had sent 322 bytes (the head), had nothing
/// queued, and the relay had read all of it and waited for the body until the client's
/// timeout. The relay is `http://` only, so a plain socket is all it needs.
enum PlainHTTP {
  /// Sends `request` (head and body, already encoded) to `host:port` and reads the
  /// answer; each connect, write and read may wait up to `seconds`.
  static func exchange(host: String, port: Int, request: [UInt8], seconds: TimeInterval) throws -> HTTPReply {
    let descriptor = try connect(host: host, port: port, seconds: seconds)
    defer { Glibc.close(descriptor) }
    try write(descriptor, request)
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 64 * 1024)
    while true {
      let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
      if count == 0 { break }
      if count < 0 {
        if errno == EINTR { continue }
        let reason = errno == EAGAIN || errno == EWOULDBLOCK ? "no answer within \(Int(seconds)) s" : String(cString: strerror(errno))
        throw TransportError("\(method(request)): \(reason)")
      }
      answer.append(contentsOf: buffer[0..<count])
      if let reply = complete(answer) { return reply }
    }
    guard let reply = parse(answer, atEnd: true) else {
      throw TransportError("\(method(request)): " + (answer.isEmpty ? "the relay closed the connection without an answer" : "a malformed or cut answer"))
    }
    return reply
  }

  /// The request's bytes: `method path HTTP/1.1`, `headers`, then the body.
  static func encode(method: String, path: String, host: String, headers: [(String, String)], body: [UInt8]?) -> [UInt8] {
    var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    if let body { head += "Content-Length: \(body.count)\r\n" }
    head += "Connection: close\r\n\r\n"
    return Array(head.utf8) + (body ?? [])
  }

  /// `POST /v1/messages` from a request's bytes, for error messages (no query, no token).
  private static func method(_ request: [UInt8]) -> String {
    let line = request.prefix { $0 != 13 }
    let parts = String(decoding: line, as: UTF8.self).split(separator: " ")
    guard parts.count >= 2 else { return "request" }
    return "\(parts[0]) \(parts[1].split(separator: "?").first ?? "")"
  }

  // MARK: - Socket

  private static func connect(host: String, port: Int, seconds: TimeInterval) throws -> Int32 {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, String(port), &hints, &list)
    guard status == 0, let list else { throw TransportError("cannot resolve \(host): \(String(cString: gai_strerror(status)))") }
    defer { freeaddrinfo(list) }
    var failure = "no address for \(host)"
    var entry: UnsafeMutablePointer<addrinfo>? = list
    while let current = entry {
      entry = current.pointee.ai_next
      let descriptor = socket(current.pointee.ai_family, current.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), current.pointee.ai_protocol)
      guard descriptor >= 0 else { continue }
      // Blocking connect, send and recv each give up after `seconds` (SO_SNDTIMEO bounds connect on Linux).
      var limit = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
      setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
      setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
      var one: Int32 = 1
      setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
      if Glibc.connect(descriptor, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 { return descriptor }
      failure = "cannot connect to \(host):\(port): \(String(cString: strerror(errno)))"
      Glibc.close(descriptor)
    }
    throw TransportError(failure)
  }

  private static func write(_ descriptor: Int32, _ bytes: [UInt8]) throws {
    var sent = 0
    while sent < bytes.count {
      let count = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
      if count < 0 {
        if errno == EINTR { continue }
        throw TransportError("\(method(bytes)): cannot send: \(String(cString: strerror(errno)))")
      }
      sent += count
    }
  }

  // MARK: - Answer

  /// The reply once `bytes` hold a whole answer with a `Content-Length`; nil while more may come.
  private static func complete(_ bytes: [UInt8]) -> HTTPReply? {
    parse(bytes, atEnd: false)
  }

  /// Status, headers (names lowercased) and body; the body runs to `Content-Length`, or
  /// to the end of the connection when there is none (`atEnd`). Chunked bodies are decoded.
  static func parse(_ bytes: [UInt8], atEnd: Bool) -> HTTPReply? {
    let separator: [UInt8] = [13, 10, 13, 10]
    guard let end = bytes.firstRange(of: separator) else { return nil }
    let lines = String(decoding: bytes[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
    let statusParts = lines[0].split(separator: " ", maxSplits: 2)
    guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/"), let status = Int(statusParts[1]) else { return nil }
    var headers: [String: String] = [:]
    for line in lines.dropFirst() {
      guard let colon = line.firstIndex(of: ":") else { continue }
      headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }
    let rest = Array(bytes[end.upperBound...])
    if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
      guard let body = dechunk(rest) else { return nil }
      return HTTPReply(status: status, headers: headers, body: body)
    }
    if let text = headers["content-length"] {
      guard let length = Int(text), length >= 0 else { return nil }
      guard rest.count >= length else { return nil }
      return HTTPReply(status: status, headers: headers, body: Array(rest.prefix(length)))
    }
    return atEnd ? HTTPReply(status: status, headers: headers, body: rest) : nil
  }

  /// The body of a complete chunked encoding; nil while incomplete.
  private static func dechunk(_ bytes: [UInt8]) -> [UInt8]? {
    var body: [UInt8] = []
    var index = 0
    while true {
      guard let lineEnd = bytes[index...].firstRange(of: [13, 10]) else { return nil }
      let sizeText = String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
      guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16) else { return nil }
      index = lineEnd.upperBound
      if size == 0 { return body }
      guard bytes.count >= index + size + 2 else { return nil }
      body.append(contentsOf: bytes[index..<(index + size)])
      index += size + 2
    }
  }
}
