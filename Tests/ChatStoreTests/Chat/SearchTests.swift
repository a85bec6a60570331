import Foundation
import TestSupport
import Testing

@testable import ChatStore

/// `ChatRepository.search` against a brute-force scan of the same rows: the index must
/// find exactly what reading every row finds, in the same order, page by page.
@Suite(.ownThreads) struct SearchTests {
  /// What messages are made of: ASCII, accents (precomposed and combining), CJK with and
  /// without spaces, emoji, and FTS5 syntax.
  static let vocabulary = [
    "hello", "world", "Hello", "cafe", "café", "CAFÉ", "cafe\u{301}", "naïve", "naive", "résumé", "the", "there",
    "zebra",
    "你好", "你好世界", "世界", "好的", "你", "ありがとう", "안녕하세요", "好abc", "x你好y", "东京",
    "😀", "👍🏽", "🇯🇵", "\"", "\"quoted\"", "*", "star*", "AND(", "AND", "NEAR", "NEAR(a b)", "OR", "NOT", "(", ")", "-",
    "^", ":", "col:x",
    "a-b", "x.y", "100", "3rd",
  ]

  /// Queries: single words of every kind, pairs, CJK inside runs, and syntax.
  static let queries = [
    "hello", "HELLO", "world hello", "cafe", "café", "CAFE", "naive", "resume", "résumé", "the", "zebra", "absent",
    "你好", "世界", "你", "好", "你好世界", "界", "ありがとう", "あり", "안녕", "abc", "好abc", "x", "东京",
    "😀", "👍🏽", "\"", "\"\"", "*", "star", "star*", "AND(", "AND", "and", "NEAR", "NEAR(a", "OR", "NOT", "(", ")", "-",
    "^",
    ":", "col:x", "a-b", "x.y", "100", "3rd", "hello 你好", "cafe 世界 the", "😀 hello", "  ", "",
  ]

  /// A file with seeded messages in three conversations and a few outbox requests.
  static func fixture(seed: UInt64) throws -> (ChatFixture, [Message], [MessageRequest]) {
    let f = try ChatFixture()
    var rng = SplitMix64(state: seed)
    var messages: [Message] = []
    for n in 0..<300 {
      let words = (0..<Int.random(in: 1...7, using: &rng)).map { _ in vocabulary.randomElement(using: &rng)! }
      let text = words.joined(separator: Bool.random(using: &rng) ? " " : "")
      let contact = Int64.random(in: 2...4, using: &rng)
      let id = f.relayID(Int64(n) * 10)
      messages.append(
        Bool.random(using: &rng) ? f.incoming(id, from: contact, text) : f.outgoing(id, to: contact, text))
    }
    try f.chats.receive(messages)
    var requests: [MessageRequest] = []
    for _ in 0..<12 {
      f.tick()
      let text = (0..<Int.random(in: 1...4, using: &rng)).map { _ in vocabulary.randomElement(using: &rng)! }.joined(
        separator: " ")
      requests.append(try f.chats.send(to: Int64.random(in: 2...4, using: &rng), content: text))
    }
    return (f, messages, requests)
  }

  @Test(
    "Search equals a brute-force scan: every query, every conversation, page by page", arguments: [1, 2, 3] as [UInt64])
  func searchEqualsBruteForce(seed: UInt64) throws {
    let (f, messages, requests) = try Self.fixture(seed: seed)
    for query in Self.queries {
      for conversation in [nil, 2, 3] as [Int64?] {
        let expected =
          requests.filter { conversation == nil || $0.toUserID == conversation }
          .filter { Oracle.matches($0.content, query) }
          .sorted { ($0.createdAt, $0.requestID) > ($1.createdAt, $1.requestID) }.map { "r\($0.requestID)" }
          + messages.filter { conversation == nil || $0.conversationID(owner: ChatFixture.owner) == conversation }
          .filter { Oracle.matches($0.content, query) }.map(\.id).sorted(by: >).map { "m\($0)" }
        var found: [String] = []
        var cursor: TimelineCursor?
        repeat {
          let page = try f.chats.search(query, conversation: conversation, before: cursor, limit: 7)
          #expect(page.hits.count <= 7)
          for hit in page.hits {
            switch hit.item {
            case .message(let m): found.append("m\(m.id)")
            case .request(let r): found.append("r\(r.requestID)")
            }
            #expect(conversation == nil || hit.conversation == conversation)
          }
          cursor = page.older
        } while cursor != nil
        let differing = Set(found).symmetricDifference(expected).sorted().map { key in
          (messages.first { "m\($0.id)" == key }?.content ?? requests.first { "r\($0.requestID)" == key }?.content
            ?? "?").debugDescription
        }
        #expect(
          found == expected,
          "query \(query.debugDescription) in conversation \(conversation.map(String.init) ?? "all"): differing rows \(differing)"
        )
      }
    }
  }

  @Test("A snippet marks the match and keeps the text around it")
  func snippets() throws {
    let f = try ChatFixture()
    let long = String(repeating: "filler ", count: 30) + "the Café in 東京 你好世界 " + String(repeating: "more ", count: 30)
    try f.chats.receive([f.incoming(f.relayID(1), from: 2, long), f.incoming(f.relayID(2), from: 3, "AND( this")])
    let cafe = try #require(try f.chats.search("cafe").hits.first)
    #expect(cafe.snippet.contains("«Café»"))
    #expect(cafe.snippet.hasPrefix("…") && cafe.snippet.hasSuffix("…"))
    #expect(cafe.snippet.count <= SearchSnippet.length + 4)
    #expect(try f.chats.search("世界").hits.first?.snippet.contains("你好«世界»") == true)
    #expect(try f.chats.search("AND(").hits.first?.snippet == "«AND»( this")
  }

  @Test("The Swift segmentation equals the migration's view, character for character")
  func segmentationMatchesTheView() throws {
    let f = try ChatFixture()
    let texts = Self.vocabulary + ["你好世界abc", "한국어 텍스트", "カタカナ ひらがな", "𠀀𠀁", "mixed你a好b", "", "é\u{301}你"]
    try f.chats.receive(texts.enumerated().map { f.incoming(f.relayID(Int64($0.offset)), from: 2, $0.element) })
    let rows = try f.chats.database.query(
      "SELECT m.content, s.content FROM Messages m JOIN MessageSearchSegments s USING (id)"
    ) {
      ($0.string(0), $0.string(1))
    }
    #expect(rows.count == texts.filter(SearchText.containsCJK).count)
    for (content, segmented) in rows { #expect(SearchText.segmented(content) == segmented, "\(content)") }
  }

  @Test("The byte check finds CJK wherever the String check does, in valid and damaged UTF-8")
  func byteCheckNeverMissesCJK() {
    var rng = SplitMix64(state: 7)
    let pieces: [[UInt8]] =
      Self.vocabulary.map { Array($0.utf8) } + [[0xE4], [0xE4, 0xBD], [0xF0, 0x80], [0xFF], [0xBD, 0xA0], [0xC3]]
    for _ in 0..<5_000 {
      let bytes = (0..<Int(rng.next() % 6)).flatMap { _ in pieces[Int(rng.next() % UInt64(pieces.count))] }
      let text = String(decoding: bytes, as: UTF8.self)
      let found = bytes.withUnsafeBufferPointer(SearchText.containsCJK(utf8:))
      if SearchText.containsCJK(text) { #expect(found, "\(bytes)") }
      if bytes.allSatisfy({ $0 < 0x80 }) { #expect(!found) }
    }
    // An invalid lead right before a real character does not hide it.
    #expect([0xE4, 0xE4, 0xBD, 0xA0].withUnsafeBufferPointer(SearchText.containsCJK(utf8:)))
  }

  @Test(
    "FTS5 syntax in a query is text to find, never an error",
    arguments: ["\"", "*", "AND(", "NEAR", "\"a", "a\"b", "(", "^x", "-x", "x:y", "NEAR(", "OR OR", "{a b}"])
  func syntaxIsText(query: String) throws {
    let f = try ChatFixture()
    try f.chats.receive([f.incoming(f.relayID(1), from: 2, "find \(query) here")])
    let hits = try f.chats.search(query).hits
    #expect(hits.count == 1, "\(query)")
  }
}

/// The brute-force matcher the index is compared with: unicode61's rules written out
/// (`SearchText.isTokenCharacter`: letters, digits, combining marks and characters newer
/// than Unicode 6.1 make tokens; case and diacritics folded), CJK characters one token
/// each; every word of the query must occur as consecutive tokens; a query without
/// letters or digits is a byte substring.
enum Oracle {
  static func matches(_ content: String, _ query: String) -> Bool {
    let parsed = SearchQuery(query)
    if let literal = parsed.literal { return contains(Array(content.utf8), Array(literal.utf8)) }
    guard !parsed.words.isEmpty else { return false }
    let tokens = self.tokens(content)
    return parsed.words.allSatisfy { contains(tokens, self.tokens($0)) }
  }

  static func tokens(_ text: String) -> [String] {
    var tokens: [String] = []
    var current = String.UnicodeScalarView()
    func flush() {
      if !current.isEmpty {
        tokens.append(String(current).folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil))
      }
      current = String.UnicodeScalarView()
    }
    for scalar in text.unicodeScalars {
      if SearchText.isCJK(scalar) {
        flush()
        current.append(scalar)
        flush()
      } else if SearchText.isTokenCharacter(scalar) {
        current.append(scalar)  // a combining mark too: folding removes it
      } else {
        flush()
      }
    }
    flush()
    return tokens
  }

  static func contains<T: Equatable>(_ haystack: [T], _ needle: [T]) -> Bool {
    guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
    return (0...(haystack.count - needle.count)).contains { Array(haystack[$0..<($0 + needle.count)]) == needle }
  }
}
