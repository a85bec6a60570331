import ChatStore
import Foundation

/// Seed 004's measures of one engine's life: what `run` logs every minute and on exit,
/// and `run --once --json` returns, so a test can see injected faults really happened.
public struct SyncMetrics: Sendable, Equatable, Encodable {
  /// Requests the relay acknowledged (201).
  public var sent = 0
  /// Of those, answered as a replay (`Idempotent-Replayed`): the first answer was lost.
  public var replayed = 0
  /// Attempts that failed for a passing reason (network, timeout, 5xx, 429).
  public var failedAttempts = 0
  /// Requests refused for good (other 4xx).
  public var rejected = 0
  /// Retries: attempts after the first of a request.
  public var retries = 0
  /// Messages received (socket or sync), and those already stored (dropped duplicates).
  public var received = 0
  public var duplicatesDropped = 0
  /// Socket connections made, and how many of them were reconnects.
  public var connections = 0
  public var reconnects: Int { max(0, connections - 1) }
  /// Milliseconds from a request's first attempt in this run to its acknowledgement:
  /// the latest `latencyWindow` to 2× that many, so a long `run` stays flat in memory.
  public private(set) var sendLatencies: [Double] = []
  public static let latencyWindow = 10_000

  public mutating func recordLatency(_ milliseconds: Double) {
    sendLatencies.append(milliseconds)
    if sendLatencies.count >= 2 * Self.latencyWindow { sendLatencies.removeFirst(Self.latencyWindow) }
  }

  public init() {}

  /// The `q` quantile (0...1) of the send latencies, nearest rank; nil when none.
  public func latency(quantile q: Double) -> Double? {
    guard !sendLatencies.isEmpty else { return nil }
    let sorted = sendLatencies.sorted()
    let rank = Int((q * Double(sorted.count)).rounded(.up)) - 1
    return sorted[min(max(rank, 0), sorted.count - 1)]
  }

  private enum CodingKeys: String, CodingKey {
    case sent, replayed, failedAttempts, rejected, retries, received, duplicatesDropped, connections, reconnects
    case sendLatencyMs
  }

  /// The send latency's median and 99th percentile in milliseconds (null before the first).
  public struct Latency: Encodable, Sendable {
    public var p50: Double?
    public var p99: Double?

    public func encode(to encoder: any Encoder) throws {
      var container = encoder.container(keyedBy: CodingKeys.self)
      try container.encode(p50, forKey: .p50)
      try container.encode(p99, forKey: .p99)
    }

    private enum CodingKeys: String, CodingKey { case p50, p99 }
  }

  public func encode(to encoder: any Encoder) throws {
    var container = encoder.container(keyedBy: CodingKeys.self)
    try container.encode(sent, forKey: .sent)
    try container.encode(replayed, forKey: .replayed)
    try container.encode(failedAttempts, forKey: .failedAttempts)
    try container.encode(rejected, forKey: .rejected)
    try container.encode(retries, forKey: .retries)
    try container.encode(received, forKey: .received)
    try container.encode(duplicatesDropped, forKey: .duplicatesDropped)
    try container.encode(connections, forKey: .connections)
    try container.encode(reconnects, forKey: .reconnects)
    try container.encode(
      Latency(p50: latency(quantile: 0.5), p99: latency(quantile: 0.99)), forKey: .sendLatencyMs)
  }

  /// One log line.
  public var summary: String {
    let p50 = latency(quantile: 0.5).map { String(format: "%.1f", $0) } ?? "-"
    let p99 = latency(quantile: 0.99).map { String(format: "%.1f", $0) } ?? "-"
    return
      "sent \(sent) (replayed \(replayed)), failed attempts \(failedAttempts), rejected \(rejected), retries \(retries), "
      + "received \(received), duplicates dropped \(duplicatesDropped), reconnects \(reconnects), send latency p50 \(p50) ms p99 \(p99) ms"
  }
}
