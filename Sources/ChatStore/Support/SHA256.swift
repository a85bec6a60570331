import CCrypto
import Glibc

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
    hex(digest: digest(message))
  }

  /// Bytes (a digest) as lowercase hex digits.
  public static func hex(digest: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var text: [UInt8] = []
    text.reserveCapacity(digest.count * 2)
    for byte in digest {
      text.append(digits[Int(byte >> 4)])
      text.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: text, as: UTF8.self)
  }

  /// Lowercase hex digits (as ``hex(digest:)`` writes them) as bytes; nil for an odd
  /// count or any other character.
  public static func bytes(hex: String) -> [UInt8]? {
    func value(_ d: UInt8) -> UInt8? {
      switch d {
      case UInt8(ascii: "0")...UInt8(ascii: "9"): d - UInt8(ascii: "0")
      case UInt8(ascii: "a")...UInt8(ascii: "f"): d - UInt8(ascii: "a") + 10
      default: nil
      }
    }
    let digits = Array(hex.utf8)
    guard digits.count % 2 == 0 else { return nil }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(digits.count / 2)
    for index in stride(from: 0, to: digits.count, by: 2) {
      guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
      bytes.append(high << 4 | low)
    }
    return bytes
  }

  /// The digest of `length` bytes of a file from `offset`, read in pieces (memory
  /// stays flat); nil when the file cannot be read that far.
  public static func digest(ofFile path: String, offset: Int64 = 0, length: Int64) -> [UInt8]? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    let hasher = Hasher()
    guard hasher.update(file: descriptor, offset: offset, length: length) else { return nil }
    return hasher.finish()
  }

  /// SHA-256 over bytes given in pieces (OpenSSL's EVP digest).
  ///
  /// ```swift
  /// let hasher = SHA256.Hasher()
  /// hasher.update(piece)
  /// let digest = hasher.finish()  // 32 bytes
  /// ```
  /// See <https://docs.openssl.org/3.0/man3/EVP_DigestInit/>.
  public final class Hasher {
    private let context: OpaquePointer

    public init() {
      // Only fails when out of memory.
      context = EVP_MD_CTX_new()!
      EVP_DigestInit_ex(context, EVP_sha256(), nil)
    }

    deinit { EVP_MD_CTX_free(context) }

    public func update(_ bytes: UnsafeRawBufferPointer) {
      guard bytes.count > 0 else { return }
      EVP_DigestUpdate(context, bytes.baseAddress, bytes.count)
    }

    /// Hashes `length` bytes of an open file from `offset`, read in pieces of 1 MiB;
    /// false when the file ends before.
    public func update(file descriptor: Int32, offset: Int64, length: Int64) -> Bool {
      var buffer = [UInt8](repeating: 0, count: 1 << 20)
      var position = offset
      var left = length
      while left > 0 {
        let want = Int(min(Int64(buffer.count), left))
        let read = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, want, off_t(position)) }
        if read < 0 && errno == EINTR { continue }
        guard read > 0 else { return false }
        buffer.withUnsafeBytes { update(UnsafeRawBufferPointer(rebasing: $0[0..<read])) }
        position += Int64(read)
        left -= Int64(read)
      }
      return true
    }

    /// The digest; the hasher is spent.
    public func finish() -> [UInt8] {
      var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
      var size: UInt32 = 0
      EVP_DigestFinal_ex(context, &digest, &size)
      return digest
    }
  }
}
