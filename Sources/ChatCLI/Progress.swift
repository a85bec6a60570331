#if canImport(Glibc)
  import Glibc
#endif

/// Reports long work as one redrawn line on a terminal: label, count/total, percent, rate and
/// time left. Completely silent when `output` is not a terminal (pipes, files, CI logs).
///
/// Used from one thread only (the one doing the work), hence a non-`Sendable` class.
/// `update` is cheap enough to call once per row: it reads the clock only every `stride`
/// calls, and `stride` adapts so that checks happen a few times per redraw interval.
public final class Progress {
  /// Seconds of work before a rate is shown.
  static let settleSeconds = 0.5
  /// Minimum time between redraws (10 per second).
  private static let redrawInterval: UInt64 = 100_000_000
  private let label: String
  private let total: Int64?
  private let unit: String
  private let output: TextOutput
  private let enabled: Bool
  private let start: UInt64
  private var lastDraw: UInt64 = 0
  private var hasDrawn = false
  private var callsUntilCheck = 0
  private var stride = 1

  /// Creates a reporter; nothing is drawn until the first `update`.
  public init(label: String, total: Int64? = nil, unit: String = "", output: TextOutput = .standardError) {
    self.label = label
    self.total = total
    self.unit = unit
    self.output = output
    self.enabled = output.isTerminal
    self.start = Progress.now()
  }

  /// Reports `completed` units (and optionally `bytes` processed) so far; redraws at most ~10 times/s.
  public func update(completed: Int64, bytes: Int64? = nil) {
    guard enabled else { return }
    callsUntilCheck -= 1
    guard callsUntilCheck <= 0 else { return }
    let now = Progress.now()
    let sinceDraw = now &- lastDraw
    if hasDrawn && sinceDraw < Progress.redrawInterval {
      stride = min(stride * 2, 65_536)  // calls are fast: check the clock less often
      callsUntilCheck = stride
      return
    }
    if hasDrawn && sinceDraw > 2 * Progress.redrawInterval { stride = max(stride / 2, 1) }
    callsUntilCheck = stride
    lastDraw = now
    hasDrawn = true
    output.write("\r\u{1B}[K" + line(completed: completed, bytes: bytes, elapsed: now &- start))
  }

  /// Clears the progress line (if anything was drawn).
  public func finish() {
    guard enabled, hasDrawn else { return }
    output.write("\r\u{1B}[K")
    hasDrawn = false
  }

  /// The status text, e.g. `Importing 1,200/5,000 records 24% 3,000 records/s 0:02 left`.
  func line(completed: Int64, bytes: Int64?, elapsed: UInt64) -> String {
    let seconds = max(Double(elapsed) / 1e9, 0.001)
    let unitSuffix = unit.isEmpty ? "" : " \(unit)"
    var parts = [label]
    if let total, total > 0 {
      parts.append("\(grouped(completed))/\(grouped(total))\(unitSuffix)")
      parts.append("\(Int(min(Double(completed) * 100 / Double(total), 100)))%")
    } else {
      parts.append("\(grouped(completed))\(unitSuffix)")
    }
    // Rates and the time left only once there is half a second to measure: the first
    // redraw after a quick start would show absurd figures ("10,000,000 records/s").
    guard seconds >= Progress.settleSeconds else {
      if let bytes { parts.append(ByteCount.format(bytes)) }
      return parts.joined(separator: " ")
    }
    let rate = Double(completed) / seconds
    parts.append("\(grouped(Int64(rate)))\(unitSuffix)/s")
    if let bytes { parts.append("\(ByteCount.format(bytes)) (\(ByteCount.format(Int64(Double(bytes) / seconds)))/s)") }
    if let total, rate > 0, completed < total {
      parts.append(Progress.duration(Double(total - completed) / rate) + " left")
    }
    return parts.joined(separator: " ")
  }

  /// `1:05` or `1:02:03`.
  static func duration(_ seconds: Double) -> String {
    let whole = Int(min(seconds, 359_999).rounded(.up))
    let (hours, minutes, secs) = (whole / 3600, whole / 60 % 60, whole % 60)
    let twoDigits = { (value: Int) in value < 10 ? "0\(value)" : "\(value)" }
    return hours > 0 ? "\(hours):\(twoDigits(minutes)):\(twoDigits(secs))" : "\(minutes):\(twoDigits(secs))"
  }

  func grouped(_ value: Int64) -> String { value.grouped }

  /// Monotonic nanoseconds.
  private static func now() -> UInt64 {
    var spec = timespec()
    clock_gettime(CLOCK_MONOTONIC, &spec)
    return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
  }
}

extension BinaryInteger {
  /// With thousands separators, as progress lines and summaries show counts:
  /// `1234567` → `1,234,567`.
  public var grouped: String {
    var digits = String(magnitude)
    var index = digits.endIndex
    while digits.distance(from: digits.startIndex, to: index) > 3 {
      index = digits.index(index, offsetBy: -3)
      digits.insert(",", at: index)
    }
    return (self < 0 ? "-" : "") + digits
  }
}
