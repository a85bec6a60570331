import Foundation

/// Base64 with the standard alphabet and padding (RFC 4648, section 4), for thumbnails
/// and media bytes in a history (format 3), through Foundation's codec: strict (a byte
/// outside the alphabet, padding before the end, a count that is not whole groups of
/// four: nil) and, measured on 64 MiB, faster than a hand-written loop (encode 0.15 s
/// against 0.27 s, decode 0.08 s against 0.12 s).
///
/// ```swift
/// var text: [UInt8] = []
/// Base64.encode(bytes, into: &text)  // "AAEC" for [0, 1, 2]
/// Base64.decode(text)  // [0, 1, 2]; nil for anything that is not base64
/// ```
/// See <https://www.rfc-editor.org/rfc/rfc4648#section-4>.
enum Base64 {
  /// The length of the encoding of `count` bytes.
  static func encodedCount(_ count: Int) -> Int { (count + 2) / 3 * 4 }

  /// Appends the encoding of `bytes` to `output`.
  static func encode(_ bytes: UnsafeRawBufferPointer, into output: inout [UInt8]) {
    guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
    output.append(
      contentsOf: Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: bytes.count, deallocator: .none)
        .base64EncodedData())
  }

  /// The bytes `text` encodes; nil unless it is base64 with its padding.
  static func decode(_ text: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
    // Foundation's decoder takes `=` inside the text ("AB=C", "===="): padding only at the end.
    let count = text.count
    guard count % 4 == 0 else { return nil }
    guard let base = text.baseAddress, count > 0 else { return [] }
    let padding = text[count - 1] == UInt8(ascii: "=") ? (text[count - 2] == UInt8(ascii: "=") ? 2 : 1) : 0
    guard memchr(base, Int32(UInt8(ascii: "=")), count - padding) == nil else { return nil }
    return Data(base64Encoded: Data(buffer: text)).map { Array($0) }
  }

  /// `decode` of an array.
  static func decode(_ text: [UInt8]) -> [UInt8]? { text.withUnsafeBufferPointer(decode) }
}
