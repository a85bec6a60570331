import CWebSockets
import ChatStore
import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

// A WebSocket of libwebsockets' client: every socket of the process shares one lws
// context and the one thread servicing it (ClientCore, shared with the HTTP client); the
// events are in ClientCore+WebSocket.swift.

/// One WebSocket of the client context (ChatSync's `SocketConnector.libwebsockets`
/// opens them).
///
/// ``send(_:)`` and ``close()`` may be called from any thread. Dropping the last
/// reference closes the socket as ``close()`` does, so hold the socket, not only its
/// ``messages``, for as long as it should stay open.
// @unchecked: `id` and `core` are immutable; the channel is Sendable.
public final class LWSClientSocket: @unchecked Sendable {
  let id: UInt64
  let core: ClientCore
  private let channel: SocketChannel

  init(id: UInt64, core: ClientCore, channel: SocketChannel) {
    self.id = id
    self.core = core
    self.channel = channel
  }

  /// Text messages in arrival order, fragments joined; binary frames are skipped.
  /// Finishes when the socket closes, whichever side closed it.
  public var messages: AsyncStream<String> { channel.messages }

  /// The close code once the socket is closed, when known: the relay's (1001 when it
  /// stops, 1011 on an internal error), 1000 after ``close()``, 1009 when the relay
  /// sent a message over 1 MiB. Nil while open and when the connection just died.
  public var closeCode: UInt16? { channel.closeCode }

  /// Queues `text`; written in order by the service thread. Dropped once closed.
  public func send(_ text: String) { core.send(text, to: id) }

  /// Closes normally (1000) after the messages already queued; ``messages`` finishes now.
  public func close() {
    channel.finish(code: 1000)
    core.close(id)
  }

  deinit { core.close(id) }
}

/// What the service thread and the socket's owner share: the message stream and the
/// close code.
final class SocketChannel: Sendable {
  let messages: AsyncStream<String>
  private let continuation: AsyncStream<String>.Continuation
  private let code = Locked<UInt16?>(nil)

  init() { (messages, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded) }

  var closeCode: UInt16? { code.withLock { $0 } }

  func yield(_ text: String) { continuation.yield(text) }

  /// Ends the stream; the first known close code sticks.
  func finish(code closeCode: UInt16? = nil) {
    if let closeCode { code.withLock { if $0 == nil { $0 = closeCode } } }
    continuation.finish()
  }
}

/// Where a socket connects: host and port, the request path with its query, and the
/// `Host` header.
package struct SocketTarget: Sendable {
  package var host: String
  package var port: Int
  package var path: String
  package var hostHeader: String
  package var text: String
  /// `wss://` (or `https://`): over TLS.
  package var tls: Bool

  /// Accepts `ws://` and `wss://` (and `http://`/`https://`, the same requests).
  package init(url: URL) throws(TransportError) {
    guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
      let scheme = components.scheme?.lowercased(), ["ws", "http", "wss", "https"].contains(scheme),
      var host = components.host, !host.isEmpty
    else { throw TransportError("\(url.absoluteString): not a ws:// or wss:// URL with a host") }
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    self.host = host
    tls = scheme == "wss" || scheme == "https"
    port = components.port ?? (tls ? 443 : 80)
    var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
    if let query = components.percentEncodedQuery { path += "?" + query }
    self.path = path
    hostHeader = (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
    text = "\(tls ? "wss" : "ws")://\(hostHeader)\(components.percentEncodedPath)"
  }

  /// The numeric address for `host`. A name is resolved here, on a global queue, so
  /// that the shared service thread never blocks in `getaddrinfo`; IPv4 is preferred
  /// (the relay listens on 127.0.0.1 by default).
  package static func resolve(_ host: String) async throws(TransportError) -> String {
    if isNumeric(host) { return host }
    let result: Result<String, TransportError> = await withCheckedContinuation { continuation in
      DispatchQueue.global().async { continuation.resume(returning: lookUp(host)) }
    }
    return try result.get()
  }

  private static func isNumeric(_ host: String) -> Bool {
    var buffer = in6_addr()
    return inet_pton(AF_INET, host, &buffer) == 1 || inet_pton(AF_INET6, host, &buffer) == 1
  }

  private static func lookUp(_ host: String) -> Result<String, TransportError> {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var list: UnsafeMutablePointer<addrinfo>?
    let status = getaddrinfo(host, nil, &hints, &list)
    guard status == 0, let list else {
      return .failure(TransportError("cannot resolve \(host): \(String(cString: gai_strerror(status)))"))
    }
    defer { freeaddrinfo(list) }
    var found: [(family: Int32, text: String)] = []
    var entry: UnsafeMutablePointer<addrinfo>? = list
    while let current = entry {
      var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
      let family = current.pointee.ai_family
      if family == AF_INET, let address = current.pointee.ai_addr {
        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { inet in
          var raw = inet.pointee.sin_addr
          _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
        }
        found.append((family, text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }))
      } else if family == AF_INET6, let address = current.pointee.ai_addr {
        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { inet6 in
          var raw = inet6.pointee.sin6_addr
          _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
        }
        found.append((family, text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }))
      }
      entry = current.pointee.ai_next
    }
    guard let best = found.first(where: { $0.family == AF_INET }) ?? found.first else {
      return .failure(TransportError("cannot resolve \(host): no IP address"))
    }
    return .success(best.text)
  }
}

/// One connection the service thread is asked to open.
package struct OpenRequest: Sendable {
  var target: SocketTarget
  /// Numeric IPv4 or IPv6 address.
  var address: String
  /// The `Authorization` header's value.
  var authorization: String
  var pingSeconds: Int

  /// A socket to open: `target` at `address` (numeric), pinged after `pingSeconds` idle.
  package init(target: SocketTarget, address: String, authorization: String, pingSeconds: Int) {
    self.target = target
    self.address = address
    self.authorization = authorization
    self.pingSeconds = pingSeconds
  }
}
