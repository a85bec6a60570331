import ChatProtocol
import ChatStore

/// An error answered to a client: an HTTP status and the JSON body of
/// `docs/protocol.md` ("Errors").
struct APIError: Error {
  var status: Int
  var code: String
  var message: String
  var field: String?
  var headers: [(String, String)] = []

  static func badRequest(_ message: String, field: String?) -> APIError {
    APIError(status: 400, code: "bad_request", message: message, field: field)
  }
  static let unauthorized = APIError(
    status: 401, code: "unauthorized",
    message: "send 'Authorization: Bearer <token>' with a token from 'chat-relay user add'",
    headers: [("WWW-Authenticate", RelayServer.bearerChallenge)])
  static func forbidden(_ message: String) -> APIError { APIError(status: 403, code: "forbidden", message: message) }
  static func notFound(_ message: String) -> APIError { APIError(status: 404, code: "not_found", message: message) }
  static func tooLarge(_ message: String, field: String?) -> APIError {
    APIError(status: 413, code: "too_large", message: message, field: field)
  }
  /// Any `/v1/` path: this relay speaks version 2, which a version-1 client would
  /// misread (it keeps no per-device cursor), so it is told rather than half served.
  static let versionGone = APIError(
    status: 410, code: "version_unsupported",
    message:
      "this relay speaks protocol version 2 (paths under /v2/, a log per user with a cursor per device); update the client"
  )
  static func methodNotAllowed(_ allow: String) -> APIError {
    APIError(status: 405, code: "method_not_allowed", message: "use \(allow)", headers: [("Allow", allow)])
  }
  static func conflict(_ message: String) -> APIError { APIError(status: 409, code: "conflict", message: message) }
  static func outOfOrder(_ message: String) -> APIError {
    APIError(status: 409, code: "out_of_order", message: message, field: "after")
  }
  static func throttled(retryAfter seconds: Int) -> APIError {
    APIError(
      status: 429, code: "throttled", message: "too many requests; retry after \(seconds) s",
      headers: [("Retry-After", String(seconds))])
  }
  static func `internal`(_ message: String) -> APIError { APIError(status: 500, code: "internal", message: message) }
  static func unavailable(_ message: String) -> APIError {
    APIError(status: 503, code: "unavailable", message: message)
  }

  /// The answer for a store error: the client's fault (4xx) or the relay's (5xx).
  init(_ error: StoreError) {
    switch error.kind {
    case .badInput: self = .badRequest(error.message, field: nil)
    case .notFound: self = .notFound(error.message)
    case .schemaMismatch: self = .conflict(error.message)
    case .busy, .diskSpace: self = .unavailable(error.message)
    default: self = .internal(error.message)
    }
  }

  init(status: Int, code: String, message: String, field: String? = nil, headers: [(String, String)] = []) {
    self.status = status
    self.code = code
    self.message = message
    self.field = field
    self.headers = headers
  }

  var response: HTTPResponse {
    var response = HTTPResponse.wire(status, ErrorBody(error: .init(code: code, message: message, field: field)))
    response.headers += headers
    return response
  }
}

/// Faults a relay injects when `chat-relay serve --faults` asks for them
/// (`docs/protocol.md`, "Fault injection"), from a seeded generator so runs repeat.
/// `@unchecked Sendable`: `state` is only used from the server's service thread.
public final class Faults: @unchecked Sendable {
  public enum Kind: String, CaseIterable, Sendable {
    case dropResponse = "drop-response"
    case error503 = "error-503"
    case throttle429 = "throttle-429"
    case duplicateEvent = "duplicate-event"
    case closeSocket = "close-socket"
    /// Not a probability: every event waits this long (`delay-event=50ms`).
    case delayEvent = "delay-event"
  }

  public let probabilities: [Kind: Double]
  /// `delay-event`: how long each socket event waits before it is sent.
  public let eventDelayMilliseconds: Int
  private var state: UInt64

  /// No faults.
  public convenience init() { self.init(probabilities: [:], seed: 1) }

  public init(probabilities: [Kind: Double], seed: UInt64, eventDelayMilliseconds: Int = 0) {
    self.probabilities = probabilities
    self.eventDelayMilliseconds = eventDelayMilliseconds
    self.state = seed == 0 ? 0x9E37_79B9_7F4A_7C15 : seed
  }

  /// Parses `drop-response=0.2,error-503=0.1,delay-event=50ms`; the error names the bad part.
  public static func parse(_ text: String, seed: UInt64) throws -> Faults {
    var probabilities: [Kind: Double] = [:]
    var delay = 0
    for part in text.split(separator: ",") {
      let pair = part.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: .whitespaces) }
      guard pair.count == 2, let kind = Kind(rawValue: pair[0]) else {
        throw FaultSpecError("unknown fault '\(part)'; known: \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
      }
      if kind == .delayEvent {
        guard pair[1].hasSuffix("ms"), let ms = Int(pair[1].dropLast(2)), ms >= 0, ms <= 60_000 else {
          throw FaultSpecError("'\(part)': a delay is 0ms to 60000ms")
        }
        delay = ms
        continue
      }
      guard let p = Double(pair[1]), p >= 0, p <= 1 else {
        throw FaultSpecError("'\(part)': a probability is from 0 to 1")
      }
      probabilities[kind] = p
    }
    return Faults(probabilities: probabilities, seed: seed, eventDelayMilliseconds: delay)
  }

  /// Whether the fault happens this time.
  func fire(_ kind: Kind) -> Bool {
    guard let p = probabilities[kind], p > 0 else { return false }
    // splitmix64: small, fast and repeatable from the seed.
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    z ^= z >> 31
    return Double(z >> 11) / Double(1 << 53) < p
  }
}

/// A `--faults` value that does not parse.
public struct FaultSpecError: Error, CustomStringConvertible {
  public var description: String
  init(_ description: String) { self.description = description }
}
