import CCrypto
import ChatStore
import Foundation

/// A user's bearer token and the only trace of it the relay keeps: its SHA-256.
///
/// A token is 32 bytes from OpenSSL's CSPRNG written as base64url without padding
/// (43 characters). The store keeps `SHA-256(token)` and, as a non-secret index key,
/// the digest's first 8 bytes: a copy of `relay.db` reveals no token, and a lookup
/// never compares secrets with `==`.
///
/// See <https://docs.openssl.org/3.0/man3/RAND_bytes/> and
/// <https://docs.openssl.org/3.0/man3/CRYPTO_memcmp/>.
enum AccessToken {
  /// Bytes of randomness in a token.
  static let randomByteCount = 32
  /// The longest text `authenticate` hashes; anything longer cannot be a token.
  static let maximumLength = 256

  /// A new token, or `.internalError` when OpenSSL cannot produce randomness.
  static func generate() throws -> String {
    var bytes = [UInt8](repeating: 0, count: randomByteCount)
    guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else {
      throw StoreError(.internalError, "cannot make a token: OpenSSL's RAND_bytes failed")
    }
    return base64URL(bytes)
  }

  /// SHA-256 of the token's UTF-8 bytes.
  static func digest(_ token: String) -> [UInt8] { ChatStore.SHA256.digest(token.utf8) }

  /// The digest's first 8 bytes as a signed integer: the indexed lookup key. It is
  /// not secret: it narrows the search, and the whole digest is then compared in
  /// constant time.
  static func lookupKey(_ digest: [UInt8]) -> Int64 {
    Int64(bitPattern: digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
  }

  /// Whether two digests are equal, in time that does not depend on where they differ.
  static func digestsMatch(_ a: [UInt8], _ b: [UInt8]) -> Bool {
    guard a.count == b.count else { return false }
    return a.withUnsafeBytes { a in b.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
    }
  }

  /// Base64url (RFC 4648 §5) without `=` padding.
  static func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString()
      .replacingOccurrences(of: "+", with: "-")
      .replacingOccurrences(of: "/", with: "_")
      .replacingOccurrences(of: "=", with: "")
  }
}
