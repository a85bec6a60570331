import ChatStore
import Dispatch
import Foundation
import LWSSupport

#if canImport(Glibc)
  import Glibc
#endif

// The real-time socket over libwebsockets' client (LWSSupport's ClientCore: one lws
// context and the one thread servicing it, shared with the HTTP client).

extension SocketConnector {
  /// The real socket: a WebSocket to `url` (`ws://host:port/v2/socket/updates`) with
  /// `Authorization: Bearer <token>` on the upgrade request.
  ///
  /// `connect` returns once the socket is open. It throws ``SocketRefused`` when the
  /// relay answered the upgrade with an HTTP status other than 101 (401 for a bad
  /// token, 404 for a wrong path) and ``TransportError`` when no answer came: the name
  /// did not resolve, the connection was refused, or the handshake took over 10 s.
  ///
  /// A socket idle for `pingSeconds` is pinged; one that has had no valid traffic
  /// (a frame or a pong) for twice that is hung up, and its `messages` finish.
  public static func libwebsockets(url: URL, token: String, pingSeconds: Int = 30) -> SocketConnector {
    SocketConnector {
      let target = try SocketTarget(url: url)
      let core = try ClientLoop.shared.get().core
      let address = try await SocketTarget.resolve(target.host)
      let request = OpenRequest(
        target: target, address: address, authorization: "Bearer \(token)",
        pingSeconds: max(1, min(pingSeconds, Int(UInt16.max) / 2)))
      return try await core.open(request)
    }
  }
}

/// The relay's socket as the engine uses it.
extension LWSClientSocket: RelaySocket {}
