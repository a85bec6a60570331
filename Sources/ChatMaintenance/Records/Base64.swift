/// Base64 with the standard alphabet and padding (RFC 4648, section 4), for thumbnails
/// and media bytes in a history (format 3): encoded straight into a line's buffer and
/// decoded from the parser's, with no `Data` in between.
///
/// ```swift
/// var text: [UInt8] = []
/// Base64.encode(bytes, into: &text)  // "AAEC" for [0, 1, 2]
/// Base64.decode(text)  // [0, 1, 2]; nil for anything that is not base64
/// ```
/// See <https://www.rfc-editor.org/rfc/rfc4648#section-4>.
enum Base64 {
  private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  /// Each byte's value in the alphabet; 0xFF for a byte that is not in it.
  private static let values: [UInt8] = {
    var table = [UInt8](repeating: 0xFF, count: 256)
    for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
    return table
  }()

  /// The length of the encoding of `count` bytes.
  static func encodedCount(_ count: Int) -> Int { (count + 2) / 3 * 4 }

  /// Appends the encoding of `bytes` to `output`, a few KiB at a time through a buffer
  /// on the stack.
  static func encode(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { chunk in
      var start = 0
      repeat {
        let end = min(bytes.count, start + 3072)
        let count = encode(UnsafeRawBufferPointer(rebasing: bytes[start..<end]), into: chunk.baseAddress!)
        output.append(contentsOf: UnsafeBufferPointer(rebasing: chunk[0..<count]))
        start = end
      } while start < bytes.count
    }
  }

  /// Writes the encoding of `bytes` at `out`, which has room for it; its length.
  private static func encode(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutablePointer<UInt8>) -> Int {
    alphabet.withUnsafeBufferPointer { digits in
      let full = bytes.count / 3 * 3
      var o = 0
      var i = 0
      while i < full {
        let group = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out[o] = digits[Int(group >> 18)]
        out[o + 1] = digits[Int(group >> 12 & 0x3F)]
        out[o + 2] = digits[Int(group >> 6 & 0x3F)]
        out[o + 3] = digits[Int(group & 0x3F)]
        i += 3
        o += 4
      }
      // One or two bytes left: two or three digits, then padding.
      guard i < bytes.count else { return o }
      let two = i + 1 < bytes.count
      let group = UInt32(bytes[i]) << 16 | (two ? UInt32(bytes[i + 1]) << 8 : 0)
      out[o] = digits[Int(group >> 18)]
      out[o + 1] = digits[Int(group >> 12 & 0x3F)]
      out[o + 2] = two ? digits[Int(group >> 6 & 0x3F)] : UInt8(ascii: "=")
      out[o + 3] = UInt8(ascii: "=")
      return o + 4
    }
  }

  /// The bytes `text` encodes; nil unless it is whole groups of four alphabet
  /// characters, with `=` padding only at the end.
  static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
    guard text.count % 4 == 0 else { return nil }
    guard !text.isEmpty else { return [] }
    let padding = text[text.count - 1] == UInt8(ascii: "=") ? (text[text.count - 2] == UInt8(ascii: "=") ? 2 : 1) : 0
    var output = [UInt8](repeating: 0, count: text.count / 4 * 3 - padding)
    let valid = values.withUnsafeBufferPointer { table in
      output.withUnsafeMutableBufferPointer { out -> Bool in
        var o = 0
        var i = 0
        while i < text.count {
          let last = i + 4 == text.count
          let a = table[Int(text[i])]
          let b = table[Int(text[i + 1])]
          let c = last && padding == 2 ? 0 : table[Int(text[i + 2])]
          let d = last && padding >= 1 ? 0 : table[Int(text[i + 3])]
          // An alphabet value is below 64; 0xFF marks any other byte.
          guard (a | b | c | d) & 0xC0 == 0 else { return false }
          let group = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
          out[o] = UInt8(group >> 16)
          if o + 1 < out.count { out[o + 1] = UInt8(truncatingIfNeeded: group >> 8) }
          if o + 2 < out.count { out[o + 2] = UInt8(truncatingIfNeeded: group) }
          i += 4
          o += 3
        }
        return true
      }
    }
    return valid ? output : nil
  }

  /// `decode` of an array.
  static func decode(_ text: [UInt8]) -> [UInt8]? { text.withUnsafeBufferPointer(decode) }
}
