import ChatStore

/// How close the disk that holds the data folder is to full.
///
/// ```swift
/// let level = DiskThresholds.default.level(for: try DiskSpace.of(dataDirectory))
/// ```
public enum DiskLevel: String, Sendable, Comparable, CaseIterable {
  /// Enough room.
  case ok
  /// Below the warning threshold: time to clean up.
  case low
  /// Below the critical threshold: writes may soon fail.
  case critical

  private var rank: Int {
    switch self {
    case .ok: 0
    case .low: 1
    case .critical: 2
    }
  }

  public static func < (a: DiskLevel, b: DiskLevel) -> Bool { a.rank < b.rank }
}

/// A free-space threshold: an absolute size or a share of the file system.
public enum DiskThreshold: Sendable, Equatable, CustomStringConvertible {
  /// Bytes available to this user.
  case bytes(Int64)
  /// Percent (0–100) of the file system's total size.
  case percent(Double)

  /// The threshold in bytes for a file system of `total` bytes.
  public func bytes(ofTotal total: Int64) -> Int64 {
    switch self {
    case .bytes(let n): n
    case .percent(let p): Int64((Double(total) * p / 100).rounded(.up))
    }
  }

  public var description: String {
    switch self {
    case .bytes(let n): "\(n) bytes"
    case .percent(let p): "\(p)%"
    }
  }
}

/// When the disk counts as low or critical. A level applies when the available bytes
/// fall below ANY of its thresholds (the larger of the two figures wins), so a small
/// disk is judged by its share and a big one by the absolute room.
///
/// Defaults: `low` below 10% of the disk or 1 GiB, `critical` below 2% or 200 MiB.
public struct DiskThresholds: Sendable, Equatable {
  /// Thresholds for `low`.
  public var low: [DiskThreshold]
  /// Thresholds for `critical`.
  public var critical: [DiskThreshold]

  public init(low: [DiskThreshold], critical: [DiskThreshold]) {
    self.low = low
    self.critical = critical
  }

  /// Low below 10% or 1 GiB free; critical below 2% or 200 MiB free.
  public static let `default` = DiskThresholds(
    low: [.percent(10), .bytes(1 << 30)], critical: [.percent(2), .bytes(200 << 20)])

  /// The free bytes below which `low` applies on this disk.
  public func lowBytes(for disk: DiskSpace) -> Int64 { low.map { $0.bytes(ofTotal: disk.total) }.max() ?? 0 }
  /// The free bytes below which `critical` applies on this disk.
  public func criticalBytes(for disk: DiskSpace) -> Int64 { critical.map { $0.bytes(ofTotal: disk.total) }.max() ?? 0 }

  /// The level of a disk.
  public func level(for disk: DiskSpace) -> DiskLevel {
    if disk.available < criticalBytes(for: disk) { return .critical }
    if disk.available < lowBytes(for: disk) { return .low }
    return .ok
  }
}
