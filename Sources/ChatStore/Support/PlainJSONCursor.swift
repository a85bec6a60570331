import Foundation

/// A cursor over the bytes of plain JSON, for the hot paths that read one known shape
/// without `JSONDecoder` (the relay's POST bodies, the client's batch answers and status
/// events). Every method returns nil or false at the first thing it does not take; the
/// caller then gives the same bytes to `JSONDecoder`, which reads what is valid and names
/// what is not. So the cursor only has to be right about what it accepts.
///
/// ```swift
/// var cursor = PlainJSONCursor(bytes: buffer)
/// var id: Int64?
/// let ok = cursor.object { key, cursor in
///   guard PlainJSONCursor.matches(key, "id") else { return false }
///   id = cursor.integer()
///   return id != nil
/// } && cursor.atEnd
/// ```
public struct PlainJSONCursor {
  public let bytes: UnsafeBufferPointer<UInt8>
  public private(set) var index = 0

  public init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

  /// Whether only white space is left.
  public var atEnd: Bool {
    mutating get {
      skipSpace()
      return index == bytes.count
    }
  }

  public mutating func skipSpace() {
    while index < bytes.count,
      bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09
    {
      index += 1
    }
  }

  /// Takes `byte` (after white space).
  public mutating func take(_ byte: UInt8) -> Bool {
    skipSpace()
    guard index < bytes.count, bytes[index] == byte else { return false }
    index += 1
    return true
  }

  /// Takes the literal `word` (`null`, `true`, `false`).
  public mutating func takeWord(_ word: StaticString) -> Bool {
    skipSpace()
    let count = word.utf8CodeUnitCount
    guard bytes.count - index >= count, memcmp(bytes.baseAddress! + index, word.utf8Start, count) == 0 else {
      return false
    }
    index += count
    return true
  }

  public mutating func takeNull() -> Bool { takeWord("null") }

  /// `true` or `false`.
  public mutating func bool() -> Bool? {
    if takeWord("true") { return true }
    if takeWord("false") { return false }
    return nil
  }

  /// `0` or `[1-9][0-9]*` that fits an Int64 and is not followed by a fraction or exponent.
  public mutating func integer() -> Int64? {
    skipSpace()
    let start = index
    var value: Int64 = 0
    while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
      let (times, o1) = value.multipliedReportingOverflow(by: 10)
      let (sum, o2) = times.addingReportingOverflow(Int64(bytes[index] - UInt8(ascii: "0")))
      guard !o1, !o2 else { return nil }
      value = sum
      index += 1
    }
    let count = index - start
    guard count > 0, count == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
    if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
      return nil
    }
    return value
  }

  /// A string with the escapes of RFC 8259 and valid UTF-8 (surrogate pairs joined);
  /// nil for a control character, a bad escape, a lone surrogate or invalid UTF-8.
  public mutating func string() -> String? {
    guard take(UInt8(ascii: "\"")) else { return nil }
    let start = index
    // Fast path: no escape at all.
    while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"),
      bytes[index] >= 0x20
    {
      index += 1
    }
    guard index < bytes.count else { return nil }
    if bytes[index] == UInt8(ascii: "\"") {
      let text = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
      index += 1
      return text
    }
    // An escape (or a control character, refused): the shared unescaper reads the rest.
    var out = Array(bytes[start..<index])
    do {
      try JSONStringUnescaper.unescape(bytes, from: &index, into: &out)
    } catch {
      return nil
    }
    return String(validating: out, as: UTF8.self)
  }

  /// Reads `{"key": value, …}`: `member` gets each key's bytes (a key with an escape
  /// fails the read) with the cursor at its value, which it must read; false from it
  /// fails the read. A key given twice, or more than ``maximumKeys`` keys, fails it too:
  /// which of two values counts is JSONDecoder's to say (a caller falls back to it; the
  /// `sync` fuzz target found a `new_message` with `status` twice read two ways).
  public mutating func object(_ member: (UnsafeBufferPointer<UInt8>, inout PlainJSONCursor) -> Bool) -> Bool {
    guard take(UInt8(ascii: "{")) else { return false }
    if take(UInt8(ascii: "}")) { return true }
    return withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: Self.maximumKeys) { seen in
      var keys = 0
      repeat {
        guard take(UInt8(ascii: "\"")) else { return false }
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\") {
          index += 1
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), keys < seen.count else { return false }
        let key = UnsafeBufferPointer(rebasing: bytes[start..<index])
        for earlier in seen[..<keys] where earlier.count == key.count {
          if key.isEmpty || memcmp(bytes.baseAddress! + earlier.lowerBound, key.baseAddress!, key.count) == 0 {
            return false
          }
        }
        seen.initializeElement(at: keys, to: start..<index)
        keys += 1
        index += 1
        guard take(UInt8(ascii: ":")), member(key, &self) else { return false }
      } while take(UInt8(ascii: ","))
      return take(UInt8(ascii: "}"))
    }
  }

  /// The most keys ``object(_:)`` reads in one object (the protocol's have at most 12).
  public static let maximumKeys = 32

  /// Reads `[element, …]`: `element` reads each one; false from it fails the read.
  public mutating func array(_ element: (inout PlainJSONCursor) -> Bool) -> Bool {
    guard take(UInt8(ascii: "[")) else { return false }
    if take(UInt8(ascii: "]")) { return true }
    repeat {
      guard element(&self) else { return false }
    } while take(UInt8(ascii: ","))
    return take(UInt8(ascii: "]"))
  }

  /// Whether `key` is `name`.
  public static func matches(_ key: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
    key.count == name.utf8CodeUnitCount && (key.isEmpty || memcmp(key.baseAddress!, name.utf8Start, key.count) == 0)
  }
}
