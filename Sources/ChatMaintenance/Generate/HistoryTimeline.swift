import ChatStore

/// When each message of a synthetic history is sent, in which conversation and by
/// whom: the history's shape without its texts, one message at a time, in id order.
///
/// Messages come in sessions: a conversation picked by popularity (`ContactPopularity`),
/// about 8 messages (geometric), senders alternating with some runs by one side, seconds
/// to minutes apart. Sessions start more often in waking hours (`hourlyWeights`, UTC),
/// and the gaps between them adapt to the time and messages left, so the history fills
/// `[start, last]` whatever the message count.
///
/// It draws only from its own random stream, so the generator runs it twice: once to
/// learn what a message cannot know when it is made (the newest ones of a conversation,
/// the last reply), once to make the messages.
struct HistoryTimeline {
  /// One message's place in the history.
  struct Slot {
    var milliseconds: Int64
    /// Its index among the messages of the same millisecond (`MessageID`'s sequence).
    var sequence: Int64
    /// The contact's index (not its id).
    var contact: Int
    /// Sent by the owner.
    var outgoing: Bool
  }

  static let hour: Int64 = 3_600_000
  static let day: Int64 = 86_400_000
  /// How likely a session is to start in each UTC hour, relative to the others.
  static let hourlyWeights: [Int64] = [
    6, 3, 2, 1, 1, 1, 2, 4, 7, 9, 10, 10, 11, 10, 9, 9, 10, 11, 12, 13, 14, 14, 12, 9,
  ]
  static let meanSessionLength = 8.0
  /// The mean of `rawGap` (ms).
  static let meanRawGap = 89_775.0

  private var random: HistoryRandom
  private let popularity: ContactPopularity
  private var remaining: Int
  private let last: Int64
  /// Shrinks the gaps inside sessions so they take at most half of the history's time.
  private let gapScale: Double
  private let meanGap: Double

  private var clock: Int64
  private var lastMilliseconds: Int64 = .min
  private var sequence: Int64 = 0
  private var sessionLeft = 0
  private var contact = 0
  private var outgoing = false

  // The activity-weighted ("virtual") clock: the virtual time of an instant is the sum
  // of hour weight × milliseconds since `start`. Session gaps are drawn in virtual time,
  // so a quiet hour is crossed quickly.
  private var hourStart: Int64
  private var hourWeight: Int64
  private var hourVirtual: Int64
  private let lastVirtual: Int64

  /// A timeline of `messages` messages in `[start, last]`.
  init(seed: UInt64, messages: Int, start: Int64, last: Int64, popularity: ContactPopularity) {
    random = HistoryRandom(seed: seed, stream: .timeline)
    self.popularity = popularity
    remaining = popularity.isEmpty ? 0 : messages
    self.last = last
    clock = start
    let span = Double(last - start)
    gapScale = messages > 0 ? min(1, 0.5 * span / (Double(messages) * Self.meanRawGap)) : 1
    meanGap = Self.meanRawGap * gapScale
    hourStart = start - start % Self.hour
    hourWeight = Self.weight(at: hourStart)
    hourVirtual = -(start - hourStart) * hourWeight
    var probe = (hourStart, hourWeight, hourVirtual)
    while last >= probe.0 + Self.hour {
      probe.2 += probe.1 * Self.hour
      probe.0 += Self.hour
      probe.1 = Self.weight(at: probe.0)
    }
    lastVirtual = probe.2 + (last - probe.0) * probe.1
  }

  /// The next message, or nil after the last.
  @inline(__always)
  mutating func next() -> Slot? {
    guard remaining > 0 else { return nil }
    var t: Int64
    if sessionLeft == 0 {
      startSession()
      t = clock
    } else {
      t = clock + Int64(Double(rawGap()) * gapScale)
      if random.below(100) < 62 { outgoing.toggle() }
    }
    if t > last { t = last }
    if t > clock {
      clock = t
      moveCursor(to: t)
    }
    if t <= lastMilliseconds {
      t = lastMilliseconds
      sequence += 1
      if sequence >> MessageID.sequenceBits != 0 {  // 65,536 messages in one millisecond
        t += 1
        sequence = 0
      }
    } else {
      sequence = 0
    }
    lastMilliseconds = t
    sessionLeft -= 1
    remaining -= 1
    return Slot(milliseconds: t, sequence: sequence, contact: contact, outgoing: outgoing)
  }

  // MARK: - Sessions

  private mutating func startSession() {
    contact = popularity.pick(&random)
    outgoing = random.below(100) < 45
    sessionLeft = 1
    while sessionLeft < 400 && random.below(8) != 0 { sessionLeft += 1 }

    // Spread the sessions left evenly (on average) over the virtual time left, after
    // setting aside the real time their own gaps will take.
    let sessions = max(1, Double(remaining) / Self.meanSessionLength)
    let realLeft = Double(last - clock)
    guard realLeft > 0 else { return }
    let free = max(0.05, 1 - Double(remaining) * meanGap / realLeft)
    let virtualNow = hourVirtual + (clock - hourStart) * hourWeight
    let virtualLeft = Double(lastVirtual - virtualNow) * free
    guard virtualLeft > 0 else { return }
    // 4·u·v has mean 1: many short gaps, a few up to four times the mean.
    var gap = virtualLeft / (sessions + 0.5) * 4 * random.unit() * random.unit()
    gap = min(gap, virtualLeft * 0.9)
    clock = realTime(virtual: virtualNow + Int64(gap))
  }

  /// The gap before a reply or a follow-up, in ms, before scaling: mostly a few
  /// seconds, sometimes minutes. Its mean is `meanRawGap`.
  @inline(__always)
  private mutating func rawGap() -> Int64 {
    let kind = random.below(100)
    if kind < 70 { return random.within(1_500...30_000) }
    if kind < 95 { return random.within(30_000...300_000) }
    return random.within(300_000...1_200_000)
  }

  // MARK: - Virtual time

  static func weight(at milliseconds: Int64) -> Int64 { hourlyWeights[Int(milliseconds / hour % 24)] }

  @inline(__always)
  private mutating func moveCursor(to t: Int64) {
    while t >= hourStart + Self.hour { advanceHour() }
  }

  private mutating func realTime(virtual v: Int64) -> Int64 {
    while v >= hourVirtual + hourWeight * Self.hour { advanceHour() }
    return hourStart + (v - hourVirtual) / hourWeight
  }

  @inline(__always)
  private mutating func advanceHour() {
    hourVirtual += hourWeight * Self.hour
    hourStart += Self.hour
    hourWeight = Self.weight(at: hourStart)
  }
}

// MARK: - Popularity

/// Who the owner talks to most: contact ranks follow a Zipf law with exponent 1.25
/// (weight 1 / r^1.25), over a seeded shuffle of the contacts, so with 100 contacts the
/// top 10 hold about 70 % of the messages and the favourite is not always the first id.
struct ContactPopularity: Sendable {
  /// Cumulative weights by rank.
  private let cumulative: [Double]
  /// The contact index at each rank.
  private let contactAtRank: [Int]

  init(contacts: Int, seed: UInt64) {
    var sum = 0.0
    var cumulative: [Double] = []
    cumulative.reserveCapacity(contacts)
    for rank in 1...max(1, contacts) where contacts > 0 {
      let r = Double(rank)
      sum += 1 / (r * r.squareRoot().squareRoot())  // only IEEE-exact operations: same on every machine
      cumulative.append(sum)
    }
    var order = Array(0..<contacts)
    var random = HistoryRandom(seed: seed, streamNumber: 5)
    if contacts > 1 {
      for i in stride(from: contacts - 1, to: 0, by: -1) { order.swapAt(i, random.below(i + 1)) }
    }
    self.cumulative = cumulative
    contactAtRank = order
  }

  var isEmpty: Bool { cumulative.isEmpty }

  /// A contact index, the popular ones more often.
  @inline(__always)
  func pick(_ random: inout HistoryRandom) -> Int {
    let target = random.unit() * cumulative[cumulative.count - 1]
    var low = 0
    var high = cumulative.count - 1
    while low < high {
      let mid = (low + high) >> 1
      if cumulative[mid] > target { high = mid } else { low = mid + 1 }
    }
    return contactAtRank[low]
  }
}

// MARK: - Timestamps

/// `Timestamp.string(milliseconds:)`, faster for times that come in order: the date
/// part is formatted once per day, the time part by hand.
struct TimestampText {
  private var dayStart: Int64 = .min
  private var bytes = [UInt8](repeating: 0, count: 24)

  mutating func string(_ milliseconds: Int64) -> String {
    var dayOffset = milliseconds % HistoryTimeline.day
    if dayOffset < 0 { dayOffset += HistoryTimeline.day }
    let day = milliseconds - dayOffset
    if day != dayStart {
      dayStart = day
      bytes = Array(Timestamp.string(milliseconds: day).utf8)
      guard bytes.count == 24 else {  // a year past 9999: not worth a fast path
        dayStart = .min
        bytes = [UInt8](repeating: 0, count: 24)
        return Timestamp.string(milliseconds: milliseconds)
      }
    }
    var rest = Int(dayOffset)
    bytes.withUnsafeMutableBufferPointer { b in
      func put2(_ value: Int, _ at: Int) {
        b[at] = 0x30 &+ UInt8(truncatingIfNeeded: value / 10)
        b[at + 1] = 0x30 &+ UInt8(truncatingIfNeeded: value % 10)
      }
      let millis = rest % 1000
      rest /= 1000
      b[20] = 0x30 &+ UInt8(truncatingIfNeeded: millis / 100)
      put2(millis % 100, 21)
      put2(rest % 60, 17)
      rest /= 60
      put2(rest % 60, 14)
      put2(rest / 60, 11)
    }
    return String(decoding: bytes, as: UTF8.self)
  }
}
