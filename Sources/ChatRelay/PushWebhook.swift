import ChatProtocol
import Foundation
import LWSSupport

/// Where the relay also POSTs each push notice (`chat-relay serve --push-webhook URL`),
/// the stand-in for FCM/APNs: ids and the badge count, never the content.
///
/// Sent over libwebsockets' HTTP client (LWSSupport's client context, whose one service
/// thread starts with the first notice), not URLSession, which architecture.md keeps off
/// Linux. An `https://` receiver's certificate is checked as `chat-sync` checks the
/// relay's: against the system's CAs, or only those of `caFile`.
struct PushWebhook: Sendable {
  /// The longest a notice may take; then its connection is dropped.
  static let timeoutSeconds: TimeInterval = 10

  private let target: SocketTarget

  /// Refuses a URL that is not `http://` or `https://` with a host. An `https://` one
  /// turns TLS on for this process's client connections (`ClientTLS`), before the first.
  init(url: URL, caFile: String? = nil) throws(TransportError) {
    guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
      throw TransportError("--push-webhook \(url.absoluteString): expected an http:// or https:// URL")
    }
    target = try SocketTarget(url: url)
    if target.tls { ClientTLS.enable(caFile: caFile) }
  }

  /// POSTs `notice` as JSON and returns at once. Fire and forget, as the push it stands
  /// in for: an unreachable or failing receiver changes nothing for the relay.
  func post(_ notice: PushNotice) {
    let target = self.target
    let body = WireJSON.encode(notice)
    Task.detached {
      guard let core = try? ClientLoop.shared.get().core else { return }
      _ = try? await answerWithin(Self.timeoutSeconds) {
        let address = try await SocketTarget.resolve(target.host)
        return try await core.exchange(
          ExchangeRequest(
            method: "POST", address: address, port: target.port, path: target.path, hostHeader: target.hostHeader,
            authorization: nil, body: body, name: "POST \(target.text)", tls: target.tls))
      }
    }
  }
}
