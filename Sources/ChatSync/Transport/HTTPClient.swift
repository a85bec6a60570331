import CWebSockets
import ChatStore
import Foundation

// HTTP to the relay over libwebsockets' client: every exchange lives on the client
// context and service thread the WebSockets use (ClientCore); the events are in
// HTTPClient+Callback.swift.

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
            hostHeader: origin.hostHeader, authorization: authorization, body: call.body, name: name)
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

  /// Accepts `http://` only: the relay serves no TLS.
  init(base: URL) throws(TransportError) {
    guard let components = URLComponents(url: base, resolvingAgainstBaseURL: false),
      components.scheme?.lowercased() == "http", var host = components.host, !host.isEmpty
    else { throw TransportError("\(base.absoluteString): not an http:// URL with a host") }
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    self.host = host
    port = components.port ?? 80
    let path = components.percentEncodedPath
    prefix = path.hasSuffix("/") ? String(path.dropLast()) : path
    hostHeader = (host.contains(":") ? "[\(host)]" : host) + (components.port.map { ":\($0)" } ?? "")
  }
}

/// One HTTP exchange the service thread is asked to run.
struct ExchangeRequest: Sendable {
  var method: String
  /// Numeric IPv4 or IPv6 address.
  var address: String
  var port: Int
  /// Path and query, already encoded, the base URL's path included.
  var path: String
  var hostHeader: String
  /// The `Authorization` header's value.
  var authorization: String
  var body: [UInt8]?
  /// `POST /v1/messages`, for error messages: no query, no token.
  var name: String
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
  func exchange(_ request: ExchangeRequest) async throws -> HTTPReply {
    let id = nextID()
    return try await withTaskCancellationHandler {
      try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<HTTPReply, any Error>) in
        let outcome = shared.withLock { state -> Result<ClientWakeHandle?, any Error> in
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
        state -> (CheckedContinuation<HTTPReply, any Error>?, ClientWakeHandle?) in
        guard let waiting = state.answering.removeValue(forKey: id) else { return (nil, nil) }
        state.abandoned.insert(id)
        return (waiting, state.requestWake())
      }
      wake?.wake()
      waiting?.resume(throwing: CancellationError())
    }
  }
}
