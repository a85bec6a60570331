import ChatStore
import Foundation
import LWSSupport

// HTTP to the relay over libwebsockets' client (LWSSupport's ClientCore: every exchange
// lives on the client context and service thread the WebSockets use).

extension HTTPTransport {
  /// The real transport: libwebsockets' HTTP/1.1 client against `base`
  /// (`http://127.0.0.1:8080`), one connection per request (`Connection: close`),
  /// `Authorization: Bearer token` on every request.
  ///
  /// Each call ends within its `timeout` (``TransportError`` "no answer within 10 s")
  /// and as soon as the calling task is cancelled; its connection is then dropped.
  /// Error messages name the method and path, never the query or the token.
  ///
  /// See https://libwebsockets.org/lws-api-doc-v4.1-stable/html/group__client.html
  public static func libwebsockets(base: URL, token: String) -> HTTPTransport {
    let origin = Result { () throws(TransportError) in try RelayOrigin(base: base) }
    let authorization = "Bearer \(token)"
    return HTTPTransport { call in
      let name = "\(call.method) \(call.path.split(separator: "?").first ?? "")"
      do {
        let origin = try origin.get()
        let core = try ClientLoop.shared.get().core
        return try await answerWithin(call.timeout) {
          let address = try await SocketTarget.resolve(origin.host)
          let request = ExchangeRequest(
            method: call.method, address: address, port: origin.port, path: origin.prefix + call.path,
            hostHeader: origin.hostHeader, authorization: authorization, body: call.body, name: name,
            tls: origin.tls, contentType: call.contentType, headers: call.headers)
          return try await core.exchange(request)
        }
      } catch let error as TransportError {
        throw error
      } catch is CancellationError {
        throw TransportError("\(name): cancelled")
      }
    }
  }
}

/// Where the relay's HTTP API is: host and port, the path every request's path goes
/// under, and the `Host` header.
struct RelayOrigin: Sendable {
  var host: String
  var port: Int
  /// The base URL's path without its trailing `/` (usually empty).
  var prefix: String
  var hostHeader: String
  /// `https://`: over TLS.
  var tls: Bool

  /// Accepts `http://` and `https://`.
  init(base: URL) throws(TransportError) {
    guard let components = URLComponents(url: base, resolvingAgainstBaseURL: false),
      let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
      var host = components.host, !host.isEmpty
    else { throw TransportError("\(base.absoluteString): not an http:// or https:// URL with a host") }
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    self.host = host
    tls = scheme == "https"
    port = components.port ?? (tls ? 443 : 80)
    let path = components.percentEncodedPath
    prefix = path.hasSuffix("/") ? String(path.dropLast()) : path
    hostHeader = (host.contains(":") ? "[\(host)]" : host) + (components.port.map { ":\($0)" } ?? "")
  }
}
