import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The text form of every time stored in a chat database: ISO 8601 in UTC with
/// milliseconds, `2026-11-29T23:41:04.123Z`. One fixed width, so text order is time order.
public enum Timestamp {
  /// Milliseconds since 1970 as stored text.
  public static func string(milliseconds ms: Int64) -> String {
    // Times outside years 1–9999 are clamped: they have no four-digit year.
    let ms = min(max(ms, representable.lowerBound), representable.upperBound)
    var seconds = time_t(ms.floorDiv(1000))
    var parts = tm()
    gmtime_r(&seconds, &parts)
    let millis = Int(ms - ms.floorDiv(1000) * 1000)
    var bytes = [UInt8](repeating: 0, count: 24)
    func put(_ value: Int, _ at: Int, _ width: Int) {
      var v = value
      for i in stride(from: at + width - 1, through: at, by: -1) {
        bytes[i] = UInt8(ascii: "0") + UInt8(v % 10)
        v /= 10
      }
    }
    put(Int(parts.tm_year) + 1900, 0, 4)
    bytes[4] = UInt8(ascii: "-")
    put(Int(parts.tm_mon) + 1, 5, 2)
    bytes[7] = UInt8(ascii: "-")
    put(Int(parts.tm_mday), 8, 2)
    bytes[10] = UInt8(ascii: "T")
    put(Int(parts.tm_hour), 11, 2)
    bytes[13] = UInt8(ascii: ":")
    put(Int(parts.tm_min), 14, 2)
    bytes[16] = UInt8(ascii: ":")
    put(Int(parts.tm_sec), 17, 2)
    bytes[19] = UInt8(ascii: ".")
    put(millis, 20, 3)
    bytes[23] = UInt8(ascii: "Z")
    return String(decoding: bytes, as: UTF8.self)
  }

  /// A date as stored text.
  public static func string(_ date: Date) -> String {
    string(milliseconds: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
  }

  /// Parses `YYYY-MM-DDTHH:MM:SS[.fff]Z` (also a plain date `YYYY-MM-DD`) into
  /// milliseconds since 1970, or nil.
  public static func milliseconds(from text: String) -> Int64? {
    var text = text
    return text.withUTF8 { milliseconds(utf8: $0) }
  }

  /// `milliseconds(from:)` over UTF-8 bytes, without making a String.
  public static func milliseconds(utf8 b: UnsafeBufferPointer<UInt8>) -> Int64? {
    func number(_ at: Int, _ width: Int) -> Int? {
      guard at + width <= b.count else { return nil }
      var v = 0
      for i in at..<(at + width) {
        guard b[i] >= 48 && b[i] <= 57 else { return nil }
        v = v * 10 + Int(b[i] - 48)
      }
      return v
    }
    guard b.count >= 10, let year = number(0, 4), b[4] == 45, let month = number(5, 2), b[7] == 45,
      let day = number(8, 2), year >= 1, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
    else { return nil }
    var hour = 0
    var minute = 0
    var second = 0
    var millis = 0
    if b.count > 10 {
      guard b.count >= 20, b[10] == 84, let h = number(11, 2), b[13] == 58, let m = number(14, 2), b[16] == 58,
        let s = number(17, 2), h < 24, m < 60, s < 61
      else { return nil }
      (hour, minute, second) = (h, m, s)
      var i = 19
      if b[i] == 46 {
        i += 1
        var digits = 0
        while i < b.count, b[i] >= 48 && b[i] <= 57 {
          if digits < 3 { millis = millis * 10 + Int(b[i] - 48) }
          digits += 1
          i += 1
        }
        guard digits > 0 else { return nil }
        if digits < 3 { for _ in digits..<3 { millis *= 10 } }
      }
      guard i == b.count - 1, b[i] == 90 else { return nil }
    }
    let days = daysFromCivil(year, month, day)
    return ((Int64(days) * 24 + Int64(hour)) * 60 + Int64(minute)) * 60_000 + Int64(second) * 1000 + Int64(millis)
  }

  static func daysIn(month: Int, year: Int) -> Int {
    switch month {
    case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
    case 4, 6, 9, 11: 30
    default: 31
    }
  }

  /// The earliest and latest times the text form can hold (years 0001 to 9999).
  public static let representable: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999

  /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
  static func daysFromCivil(_ year: Int, _ month: Int, _ day: Int) -> Int {
    let y = month <= 2 ? year - 1 : year
    let era = (y >= 0 ? y : y - 399) / 400
    let yoe = y - era * 400
    let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    return era * 146_097 + doe - 719_468
  }

  /// Now, as stored text.
  public static func now() -> String { string(Date()) }
}

extension Int64 {
  fileprivate func floorDiv(_ d: Int64) -> Int64 {
    let q = self / d
    return (self % d != 0 && (self < 0) != (d < 0)) ? q - 1 : q
  }
}

/// The relay's time-sortable 64-bit message ids: milliseconds since 2020-01-01 in the
/// high bits, a 16-bit sequence in the low bits, so ids rise with time and two
/// messages in one millisecond still differ.
public enum MessageID {
  /// 2020-01-01T00:00:00Z in milliseconds since 1970.
  public static let epochMilliseconds: Int64 = 1_577_836_800_000
  /// Bits of the per-millisecond sequence.
  public static let sequenceBits: Int64 = 16

  /// The latest millisecond an id can hold: 2^47 − 1 ms after the epoch (in the year
  /// 6479), where the time bits of a positive `Int64` run out.
  public static let maximumMilliseconds: Int64 = epochMilliseconds + (Int64.max >> sequenceBits)

  /// The milliseconds (since 1970) an id can hold: from the epoch to `maximumMilliseconds`.
  public static let representable: ClosedRange<Int64> = epochMilliseconds...maximumMilliseconds

  /// The id for the `sequence`-th message of the millisecond `milliseconds` (since 1970).
  ///
  /// A time outside `representable` or a sequence outside 0..<65,536 stops the
  /// program with a message naming it: a shift would silently wrap the id instead.
  /// Callers with times from outside check `representable` first.
  public static func make(milliseconds: Int64, sequence: Int64 = 0) -> Int64 {
    precondition(
      sequence >= 0 && sequence < 1 << sequenceBits, "message id sequence \(sequence) is out of range 0..<65536")
    precondition(
      representable.contains(milliseconds),
      "message id time \(milliseconds) ms is outside \(representable.lowerBound)...\(representable.upperBound) (2020 to 6479)"
    )
    return (milliseconds - epochMilliseconds) << sequenceBits | sequence
  }

  /// When the relay made `id`, in milliseconds since 1970.
  public static func milliseconds(of id: Int64) -> Int64 { (id >> sequenceBits) + epochMilliseconds }

  /// The smallest id made at or after `milliseconds`: every older message's id is below it.
  public static func lowerBound(milliseconds: Int64) -> Int64 {
    make(milliseconds: max(milliseconds, epochMilliseconds))
  }
}
