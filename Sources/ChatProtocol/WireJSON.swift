import Foundation

/// Encodes and decodes the relay protocol's JSON (`docs/protocol.md`): the one place
/// where its values become bytes and back, for the relay and the client alike.
///
/// The encoding is compact with sorted keys, slashes unescaped, control characters as
/// `\n`, `\t`, `\u001f`…, everything else raw UTF-8: the bytes `JSONValue` renders, so
/// the relay's hand-written fast paths can be checked against it byte for byte.
///
/// ```swift
/// let bytes = WireJSON.encode(RelayUser(id: 2, name: "Bob", avatarURL: nil, lastConnectedAt: nil))
/// let user = try WireJSON.decode(RelayUser.self, from: bytes)
/// ```
public enum WireJSON {
  /// The bytes of `value`.
  ///
  /// Never fails for the protocol's types: they hold only strings, integers, booleans and
  /// nulls, which always encode (only non-finite floating-point numbers cannot).
  public static func encode(_ value: some Encodable) -> [UInt8] {
    do {
      return Array(try encoder().encode(value))
    } catch {
      preconditionFailure("a protocol value did not encode: \(error)")
    }
  }

  /// The text of `value` (see ``encode(_:)``).
  public static func string(_ value: some Encodable) -> String {
    String(decoding: encode(value), as: UTF8.self)
  }

  /// Decodes `type` from `bytes`; throws Foundation's `DecodingError`, whose coding path
  /// names the field.
  public static func decode<T: Decodable>(_ type: T.Type, from bytes: some Sequence<UInt8>) throws -> T {
    try JSONDecoder().decode(type, from: Data(bytes))
  }

  /// Decodes `type` from the UTF-8 of `text`.
  public static func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
    try JSONDecoder().decode(type, from: Data(text.utf8))
  }

  // A new encoder per call: JSONEncoder is a class with settable options, not Sendable.
  private static func encoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
  }
}
