import ChatStore
import Foundation

// What an exchange or a socket of the client context comes to: an answer, or why none
// came.

/// An HTTP answer: status, headers (names lowercased) and body.
public struct HTTPReply: Sendable, Equatable {
  public var status: Int
  public var headers: [String: String]
  public var body: [UInt8]

  public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
    self.status = status
    self.headers = headers
    self.body = body
  }
}

/// Why a request got no answer: the connection failed, broke or timed out.
public struct TransportError: Error, Sendable, CustomStringConvertible {
  public var message: String
  /// No connection to the relay could be made (refused, unreachable): the request was
  /// never sent. Such attempts do not count toward the outbox's retry limit.
  public var neverConnected: Bool
  /// The relay's TLS certificate did not verify (unknown CA, wrong host name, expired):
  /// nothing was sent, and trying again cannot help.
  public var certificate: Bool
  public init(_ message: String, neverConnected: Bool = false, certificate: Bool = false) {
    self.message = message
    self.neverConnected = neverConnected
    self.certificate = certificate
  }
  public var description: String { message }

  /// TLS refused the relay's certificate for `reason` (OpenSSL's: "unable to get local
  /// issuer certificate", "hostname mismatch", "certificate has expired", …).
  static func certificate(_ target: String, _ reason: String) -> TransportError {
    TransportError(
      "\(target): the relay's TLS certificate was refused: \(reason)", neverConnected: true, certificate: true)
  }
}

/// TLS for this process's client connections (`https://` and `wss://`): set once, before
/// the first connection, by a program that talks to such a relay. The relay's certificate
/// must chain to a CA of `caFile` (PEM), or of the system's store (OpenSSL's default file,
/// Debian's `ca-certificates`) when nil, and name the host connected to; no option turns
/// that check off.
public enum ClientTLS {
  static let settings = Locked<Settings?>(nil)

  struct Settings: Sendable {
    var caFile: String?
  }

  /// Turns TLS on for the client context, trusting `caFile`'s CAs (nil: the system's).
  public static func enable(caFile: String?) { settings.withLock { $0 = Settings(caFile: caFile) } }
}

/// The relay refused the WebSocket upgrade with an HTTP status (401 for a bad token).
public struct SocketRefused: Error, Sendable, CustomStringConvertible {
  public var status: Int
  public init(status: Int) { self.status = status }
  public var description: String { "the relay refused the socket with HTTP \(status)" }
}

/// Runs `exchange` (one request) and returns its answer, or throws
/// `TransportError` once `seconds` have passed, or `CancellationError` as soon as the
/// calling task is cancelled, whichever comes first; the exchange's task is then
/// cancelled, which drops its connection.
///
/// libwebsockets' own timeouts are not that bound: they cover the connect and the wait
/// for the answer's head (10 s each), not a body that trickles in, and a `chat-sync run`
/// told to stop must not wait for an exchange in flight (issue 14's slow exits under load).
package func answerWithin<T: Sendable>(
  _ seconds: TimeInterval, _ exchange: @escaping @Sendable () async throws -> T
) async throws -> T {
  let first = FirstOutcome<T>()
  let work = Task {
    do { first.settle(.success(try await exchange())) } catch { first.settle(.failure(error)) }
  }
  let timer = Task {
    try? await Task.sleep(for: .milliseconds(Int64(max(seconds, 0) * 1000)))
    first.settle(.failure(TransportError(String(format: "no answer within %.0f s", seconds))))
  }
  defer {
    work.cancel()
    timer.cancel()
  }
  return try await withTaskCancellationHandler {
    try await withCheckedThrowingContinuation { first.wait($0) }
  } onCancel: {
    first.settle(.failure(CancellationError()))
  }
}

/// The first of several possible outcomes, handed to one waiter; later ones are dropped.
/// Either may come first: an outcome settled before `wait` is kept for it.
private final class FirstOutcome<T: Sendable>: Sendable {
  private struct State {
    var waiter: CheckedContinuation<T, any Error>?
    var outcome: Result<T, any Error>?
  }
  private let state = Locked(State())

  func wait(_ waiter: CheckedContinuation<T, any Error>) {
    let ready = state.withLock { state -> Result<T, any Error>? in
      if state.outcome == nil { state.waiter = waiter }
      return state.outcome
    }
    if let ready { waiter.resume(with: ready) }
  }

  func settle(_ outcome: Result<T, any Error>) {
    let waiter = state.withLock { state -> CheckedContinuation<T, any Error>? in
      guard state.outcome == nil else { return nil }
      state.outcome = outcome
      defer { state.waiter = nil }
      return state.waiter
    }
    waiter?.resume(with: outcome)
  }
}
