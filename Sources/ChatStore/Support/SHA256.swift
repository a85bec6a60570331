import CCrypto

/// SHA-256 through libcrypto (OpenSSL, Debian's libssl-dev): migration checksums, token
/// digests, and later content addresses. Foundation on Linux has no CryptoKit.
///
/// ```swift
/// SHA256.hex(Array("abc".utf8))  // "ba7816bf…"
/// ```
/// See <https://www.openssl.org/docs/man3.0/man3/SHA256.html>.
public enum SHA256 {
  /// The 32-byte digest of `message`.
  public static func digest<Bytes: Collection>(_ message: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
    var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
    let bytes = Array(message)
    bytes.withUnsafeBufferPointer { input in
      _ = digest.withUnsafeMutableBufferPointer { CCrypto.SHA256(input.baseAddress, input.count, $0.baseAddress) }
    }
    return digest
  }

  /// The digest of `message` as 64 lowercase hex digits.
  public static func hex<Bytes: Collection>(_ message: Bytes) -> String where Bytes.Element == UInt8 {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(64)
    for byte in digest(message) {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
  }
}
