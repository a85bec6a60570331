/// The generator's own random numbers: xoshiro256** seeded through SplitMix64, so a
/// seed gives the same sequence on every machine, every run and every Swift version
/// (the standard library's `random(in:using:)` algorithms are not promised to stay
/// the same, so they are not used either).
///
/// Each part of a history draws from its own stream (`HistoryRandom(seed:stream:)`), so
/// the timeline can be replayed without the message texts, and adding a draw to one
/// part never shifts the others.
///
/// See <https://prng.di.unimi.it> for both algorithms.
struct HistoryRandom: Sendable {
  private var s0: UInt64
  private var s1: UInt64
  private var s2: UInt64
  private var s3: UInt64

  /// The independent streams a history uses.
  enum Stream: UInt64 {
    case timeline = 1
    case text = 2
    case contacts = 3
    case outbox = 4
    case changes = 5
    /// The media of `--media-rate` (``GeneratedMedia``).
    case media = 6
  }

  init(seed: UInt64, stream: Stream) { self.init(seed: seed, streamNumber: stream.rawValue) }

  init(seed: UInt64, streamNumber: UInt64) {
    var state = seed ^ (streamNumber &* 0xD1B5_4A32_D192_ED03)
    func splitMix() -> UInt64 {
      state &+= 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      return z ^ (z >> 31)
    }
    s0 = splitMix()
    s1 = splitMix()
    s2 = splitMix()
    s3 = splitMix()
  }

  /// The next 64 random bits.
  @inline(__always)
  mutating func next() -> UInt64 {
    let result = rotate(s1 &* 5, 7) &* 9
    let t = s1 << 17
    s2 ^= s0
    s3 ^= s1
    s1 ^= s2
    s0 ^= s3
    s2 ^= t
    s3 = rotate(s3, 45)
    return result
  }

  /// A number in `0..<bound` (Lemire's multiply-high; the bias, below bound / 2⁶⁴, is
  /// irrelevant here). `bound` must be positive.
  @inline(__always)
  mutating func below(_ bound: Int) -> Int {
    Int(truncatingIfNeeded: UInt64(bound).multipliedFullWidth(by: next()).high)
  }

  /// A number in `range`.
  @inline(__always)
  mutating func within(_ range: ClosedRange<Int64>) -> Int64 {
    let width = UInt64(bitPattern: range.upperBound &- range.lowerBound) &+ 1
    if width == 0 { return Int64(bitPattern: next()) }  // the whole Int64 range
    return range.lowerBound &+ Int64(bitPattern: width.multipliedFullWidth(by: next()).high)
  }

  /// True with probability `numerator / denominator`.
  @inline(__always)
  mutating func chance(_ numerator: Int, in denominator: Int) -> Bool { below(denominator) < numerator }

  /// A double in `[0, 1)` with 53 random bits.
  @inline(__always)
  mutating func unit() -> Double { Double(next() >> 11) * 0x1p-53 }

  @inline(__always)
  private func rotate(_ x: UInt64, _ k: UInt64) -> UInt64 { (x << k) | (x >> (64 - k)) }
}
