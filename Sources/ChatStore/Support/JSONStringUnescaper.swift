/// Reads the body of a JSON string (RFC 8259, section 7) and writes its unescaped UTF-8:
/// the one unescaper of the hand-written JSON readers (the relay's POST body parser, the
/// import's record parser), which skip `JSONDecoder` on their hot paths.
///
/// ```swift
/// var index = 1  // after the opening quote
/// var text: [UInt8] = []
/// try JSONStringUnescaper.unescape(bytes, from: &index, into: &text)  // index: after the closing quote
/// ```
/// See https://www.rfc-editor.org/rfc/rfc8259#section-7
public enum JSONStringUnescaper {
  /// Why a string could not be read; the description is a reader's error text.
  public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes end before the closing quote.
    case notClosed
    /// A byte below 0x20, which must be escaped.
    case controlCharacter(UInt8)
    /// A backslash followed by a byte that starts no escape.
    case invalidEscape(UInt8)
    /// `\u` without four hex digits.
    case badHexDigits
    /// A high surrogate not followed by a low one, or a low one alone.
    case unpairedSurrogate

    public var description: String {
      switch self {
      case .notClosed: "a string is not closed"
      case .controlCharacter(let byte): "a control character (0x\(String(byte, radix: 16))) must be escaped in a string"
      case .invalidEscape(let byte): "invalid escape '\\\(Character(Unicode.Scalar(byte)))'"
      case .badHexDigits: "a \\u escape needs 4 hex digits"
      case .unpairedSurrogate: "an unpaired UTF-16 surrogate in a \\u escape"
      }
    }
  }

  /// Appends the unescaped bytes of the string whose body starts at `index` (just after
  /// its opening quote) to `out`, and moves `index` past its closing quote.
  ///
  /// Surrogate pairs are joined; UTF-8 is not checked here (callers check it once, when
  /// the bytes become text), so unescaped bytes pass through as they are.
  @inlinable
  public static func unescape(
    _ bytes: UnsafeBufferPointer<UInt8>, from index: inout Int, into out: inout [UInt8]
  ) throws(Failure) {
    var runStart = index
    while true {
      guard index < bytes.count else { throw .notClosed }
      let byte = bytes[index]
      if byte == UInt8(ascii: "\"") {
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
        index += 1
        return
      }
      if byte < 0x20 { throw .controlCharacter(byte) }
      guard byte == UInt8(ascii: "\\") else {
        index += 1
        continue
      }
      out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
      index += 1
      guard index < bytes.count else { throw .notClosed }
      let escape = bytes[index]
      index += 1
      switch escape {
      case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
      case UInt8(ascii: "n"): out.append(0x0A)
      case UInt8(ascii: "t"): out.append(0x09)
      case UInt8(ascii: "r"): out.append(0x0D)
      case UInt8(ascii: "b"): out.append(0x08)
      case UInt8(ascii: "f"): out.append(0x0C)
      case UInt8(ascii: "u"):
        var scalar = try hex4(bytes, &index)
        if scalar >= 0xD800 && scalar < 0xDC00 {
          guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
          else { throw .unpairedSurrogate }
          index += 2
          let low = try hex4(bytes, &index)
          guard low >= 0xDC00 && low < 0xE000 else { throw .unpairedSurrogate }
          scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if scalar >= 0xDC00 && scalar < 0xE000 {
          throw .unpairedSurrogate
        }
        appendUTF8(scalar, to: &out)
      default:
        throw .invalidEscape(escape)
      }
      runStart = index
    }
  }

  @inlinable
  static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, _ index: inout Int) throws(Failure) -> UInt32 {
    guard index + 4 <= bytes.count else { throw .badHexDigits }
    var value: UInt32 = 0
    for _ in 0..<4 {
      let byte = bytes[index]
      let digit: UInt32
      switch byte {
      case 0x30...0x39: digit = UInt32(byte - 0x30)
      case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
      case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
      default: throw .badHexDigits
      }
      value = value << 4 | digit
      index += 1
    }
    return value
  }

  @inlinable
  static func appendUTF8(_ scalar: UInt32, to out: inout [UInt8]) {
    switch scalar {
    case 0..<0x80: out.append(UInt8(scalar))
    case 0x80..<0x800:
      out.append(UInt8(0xC0 | scalar >> 6))
      out.append(UInt8(0x80 | scalar & 0x3F))
    case 0x800..<0x10000:
      out.append(UInt8(0xE0 | scalar >> 12))
      out.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
      out.append(UInt8(0x80 | scalar & 0x3F))
    default:
      out.append(UInt8(0xF0 | scalar >> 18))
      out.append(UInt8(0x80 | (scalar >> 12) & 0x3F))
      out.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
      out.append(UInt8(0x80 | scalar & 0x3F))
    }
  }
}
