import Foundation

/// How text becomes what the search indexes hold (migration 0005), and how a person's
/// query becomes an FTS5 query that can never be a syntax error.
///
/// The word index (`MessageSearch`) holds `Messages.content` as written, tokenized by
/// unicode61 with diacritics removed. CJK text has no spaces, so unicode61 would keep
/// `你好世界` as one token; the CJK index (`MessageSearchCJK`) holds the messages that
/// contain CJK characters with a zero width space (U+200B, a separator for unicode61)
/// on each side of each CJK character, and a CJK query is a phrase of single characters:
/// `你好` matches inside `你好世界`.
///
/// ```swift
/// SearchText.segmented("hi你好")        // "hi\u{200B}你\u{200B}\u{200B}好\u{200B}"
/// SearchQuery("AND( \"x\"").ftsQuery   // "\"AND\" \"x\"" (each word an FTS5 string)
/// ```
/// See <https://sqlite.org/fts5.html#unicode61_tokenizer> and
/// <https://sqlite.org/fts5.html#fts5_strings>.
public enum SearchText {
  /// The separator put around each CJK character.
  public static let separator: Unicode.Scalar = "\u{200B}"

  /// Whether `scalar` is one of the characters the CJK index splits one by one: kana,
  /// CJK ideographs (with extension A, the compatibility block and the supplementary
  /// planes) and Hangul syllables. Exactly the GLOB class in migration 0005.
  @inline(__always)
  public static func isCJK(_ scalar: Unicode.Scalar) -> Bool { isCJK(value: scalar.value) }

  @inline(__always)
  static func isCJK(value: UInt32) -> Bool {
    switch value {
    case 0x3040...0x30FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0xAC00...0xD7AF, 0x20000...0x2FFFF: true
    default: false
    }
  }

  /// Whether `text` holds a CJK character (a row of the CJK index).
  public static func containsCJK(_ text: String) -> Bool {
    var text = text
    return text.withUTF8 { bytes in
      var i = 0
      while i < bytes.count {
        let (length, value) = decode(bytes, at: i)
        if isCJK(value: value) { return true }
        i += length
      }
      return false
    }
  }

  /// Whether these bytes, as stored (not necessarily valid UTF-8), hold a well-formed
  /// CJK sequence: true for every text whose `String` (invalid bytes repaired)
  /// `containsCJK`, and false for most others without making a `String` (eviction reads
  /// each evicted message's text for this).
  public static func containsCJK(utf8 bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    var i = 0
    while i < bytes.count {
      let lead = bytes[i]
      let length = lead < 0xE0 ? 1 : lead < 0xF0 ? 3 : 4
      guard length > 1, i + length <= bytes.count,
        (1..<length).allSatisfy({ bytes[i + $0] & 0xC0 == 0x80 })
      else {
        i += 1
        continue
      }
      if isCJK(value: decode(bytes, at: i).1) { return true }
      i += length
    }
    return false
  }

  /// `text` with U+200B on each side of every CJK character: what the CJK index
  /// tokenizes (the same text as the view `MessageSearchSegments` gives). Works on the
  /// UTF-8 bytes: bulk jobs segment every CJK message they write.
  public static func segmented(_ text: String) -> String {
    var text = text
    return text.withUTF8 { bytes in
      // At most three times as long: a three-byte CJK character becomes nine bytes.
      String(unsafeUninitializedCapacity: bytes.count * 3) { out in
        var o = 0
        var i = 0
        while i < bytes.count {
          let (length, value) = decode(bytes, at: i)
          let cjk = isCJK(value: value)
          if cjk { (out[o], out[o + 1], out[o + 2], o) = (0xE2, 0x80, 0x8B, o + 3) }  // U+200B
          for k in i..<(i + length) {
            out[o] = bytes[k]
            o += 1
          }
          if cjk { (out[o], out[o + 1], out[o + 2], o) = (0xE2, 0x80, 0x8B, o + 3) }  // U+200B
          i += length
        }
        return o
      }
    }
  }

  /// The length and scalar value of the UTF-8 sequence at `i` (a String's bytes are
  /// valid UTF-8); only three- and four-byte sequences, where CJK lives, are decoded.
  @inline(__always)
  static func decode(_ bytes: UnsafeBufferPointer<UInt8>, at i: Int) -> (Int, UInt32) {
    let lead = bytes[i]
    if lead < 0xE0 { return (lead < 0x80 ? 1 : 2, 0) }
    if lead < 0xF0 {
      return (3, UInt32(lead & 0x0F) << 12 | UInt32(bytes[i + 1] & 0x3F) << 6 | UInt32(bytes[i + 2] & 0x3F))
    }
    return (
      4,
      UInt32(lead & 0x07) << 18 | UInt32(bytes[i + 1] & 0x3F) << 12 | UInt32(bytes[i + 2] & 0x3F) << 6
        | UInt32(bytes[i + 3] & 0x3F)
    )
  }

  /// Whether unicode61 (default categories) makes a token of this character: letters,
  /// numbers, private-use characters and combining marks (diacritics, removed); spaces,
  /// punctuation and symbols separate tokens. Its tables are Unicode 6.1's: a character
  /// added later (the skin-tone modifiers, most newer emoji such as 🫠 or 🥲) is a token
  /// character, so `👍🏽` is the token `🏽` while `😀` (6.0) is a separator.
  @inline(__always)
  public static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
    if scalar.isASCII {
      let v = scalar.value
      return (v >= 0x30 && v <= 0x39) || (v >= 0x41 && v <= 0x5A) || (v >= 0x61 && v <= 0x7A)
    }
    guard let age = scalar.properties.age, age.major < 6 || (age.major == 6 && age.minor <= 1) else { return true }
    switch scalar.properties.generalCategory {
    case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter,
      .decimalNumber, .letterNumber, .otherNumber, .privateUse, .nonspacingMark:
      return true
    default:
      return false
    }
  }
}

/// A person's search text as FTS5 queries: each whitespace-separated word is matched as
/// an FTS5 string (quoted, its `"` doubled), so operators and syntax characters in it
/// (`AND`, `NEAR`, `*`, `(`, `"`) are text to find, never syntax; all words must match.
///
/// A word with no letter or digit (`*`, `"`, an emoji) has nothing the word index could
/// find: it is left out, and a query made only of such words is searched as the literal
/// text instead (`literal`), by a scan.
public struct SearchQuery: Hashable, Sendable {
  /// The words that have tokens, as typed.
  public var words: [String]
  /// The FTS5 query for the word index and the CJK index (words segmented), or nil
  /// when no word has tokens.
  public var ftsQuery: String?
  /// Whether a word holds a CJK character: only the CJK index can match it.
  public var hasCJK: Bool
  /// The text to find by a scan when no word has tokens (trimmed), else nil.
  public var literal: String?

  public init(_ text: String) {
    let split = text.split(whereSeparator: { $0.isWhitespace }).map(String.init)
    words = split.filter { $0.unicodeScalars.contains(where: SearchText.isTokenCharacter) }
    hasCJK = words.contains(where: SearchText.containsCJK)
    if words.isEmpty {
      ftsQuery = nil
      let trimmed = split.joined(separator: " ")
      literal = trimmed.isEmpty ? nil : trimmed
    } else {
      ftsQuery = words.map { "\"" + SearchText.segmented($0).replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        .joined(separator: " ")
      literal = nil
    }
  }

  /// Whether the query can match anything at all (it is not empty or blank).
  public var isEmpty: Bool { ftsQuery == nil && literal == nil }
}
