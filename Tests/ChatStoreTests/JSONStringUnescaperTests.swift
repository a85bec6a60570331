import ChatStore
import TestSupport
import Testing

/// The one JSON string unescaper (the relay's POST body parser and the import's record
/// parser both read strings through it): RFC 8259's escapes, surrogate pairs, and the
/// refusals each reader reports.
@Suite(.ownThreads) struct JSONStringUnescaperTests {
  /// The body after the opening quote → the bytes, and where reading stopped.
  static func unescape(_ body: String) throws(JSONStringUnescaper.Failure) -> (text: String, end: Int) {
    let bytes = Array(body.utf8)
    var index = 0
    var out: [UInt8] = []
    try bytes.withUnsafeBufferPointer { (buffer) throws(JSONStringUnescaper.Failure) in
      try JSONStringUnescaper.unescape(buffer, from: &index, into: &out)
    }
    return (String(decoding: out, as: UTF8.self), index)
  }

  @Test(arguments: [
    (#"plain" rest"#, "plain", 6),
    (#"a\"b\\c\/d\n\t\r\b\f" "#, "a\"b\\c/d\n\t\r\u{8}\u{c}", 21),
    (#"\u00e9\u4e2d\ud83d\ude00""#, "é中😀", 25),
    (#"é 👋""#, "é 👋", 8),
  ])
  func readsEscapesAndStopsAfterTheClosingQuote(_ body: String, _ text: String, _ end: Int) throws {
    let read = try Self.unescape(body)
    #expect(read.text == text)
    #expect(read.end == end)
  }

  @Test(arguments: [
    (#"no end"#, JSONStringUnescaper.Failure.notClosed),
    ("tab\there\"", .controlCharacter(0x09)),
    (#"\x""#, .invalidEscape(UInt8(ascii: "x"))),
    (#"\u12""#, .badHexDigits),
    (#"\ud800""#, .unpairedSurrogate),
    (#"\ud800\u0041""#, .unpairedSurrogate),
    (#"\udc00""#, .unpairedSurrogate),
  ])
  func refusesWhatRFC8259Refuses(_ body: String, _ failure: JSONStringUnescaper.Failure) {
    #expect(throws: failure) { _ = try Self.unescape(body) }
  }
}
