/// How long to wait before attempt `n` after `n - 1` failures.
///
/// The outbox uses *full jitter* (a uniform draw from zero to the capped exponential),
/// which spreads retries of many clients best; reconnects use the capped exponential
/// ±50%, so a client comes back about when expected but 500 clients after a relay
/// restart do not come back at the same instant.
/// See <https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/>.
public struct Backoff: Sendable, Equatable {
  public enum Jitter: Sendable, Equatable {
    /// No randomness: exactly the capped exponential.
    case none
    /// Uniform in `0 ... capped`.
    case full
    /// Uniform in `capped × (1 - f) ... capped × (1 + f)`.
    case proportional(Double)
  }

  /// The first delay, in seconds.
  public var base: Double
  /// The largest capped exponential, in seconds.
  public var cap: Double
  public var jitter: Jitter

  public init(base: Double, cap: Double, jitter: Jitter) {
    self.base = base
    self.cap = cap
    self.jitter = jitter
  }

  /// The outbox's retries: 0.1 s doubling up to 60 s, full jitter.
  public static let outbox = Backoff(base: 0.1, cap: 60, jitter: .full)
  /// Reconnects: 1 s doubling up to 30 s, ±50%.
  public static let reconnect = Backoff(base: 1, cap: 30, jitter: .proportional(0.5))

  /// The capped exponential before jitter for `attempt` (1 = the first retry).
  public func ceiling(attempt: Int) -> Double {
    let exponent = Double(max(0, min(attempt - 1, 62)))
    return min(cap, base * Double.pow2(exponent))
  }

  /// The delay before `attempt`, drawing from `random` (a uniform value in 0..<1).
  public func delay(attempt: Int, random: () -> Double = { Double.random(in: 0..<1) }) -> Double {
    let ceiling = ceiling(attempt: attempt)
    switch jitter {
    case .none: return ceiling
    case .full: return ceiling * random()
    case .proportional(let f): return ceiling * (1 - f + 2 * f * random())
    }
  }
}

extension Double {
  fileprivate static func pow2(_ exponent: Double) -> Double {
    var value = 1.0
    for _ in 0..<Int(exponent) {
      value *= 2
      if value > 1e12 { break }
    }
    return value
  }
}
