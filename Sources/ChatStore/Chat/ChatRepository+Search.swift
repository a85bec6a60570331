import Foundation

/// One search result: a message or an unsent request, with a snippet of its text.
public struct SearchHit: Hashable, Sendable {
  /// The message or request.
  public var item: TimelineItem
  /// The conversation (the other user's id).
  public var conversation: Int64
  /// Up to about 80 characters of the text around the first match, the match between
  /// `SearchSnippet.open` and `SearchSnippet.close`, `…` where text was cut.
  public var snippet: String
}

/// A page of search results, newest first, and the cursor of the next (older) page.
public struct SearchPage: Hashable, Sendable {
  /// The results: unsent requests first (newest created first), then messages by id, newest first.
  public var hits: [SearchHit]
  /// Pass to `before:` for the next page, or nil when this page is the last.
  public var older: TimelineCursor?
}

extension ChatRepository {
  /// Messages and unsent requests whose text matches `query`, newest first.
  ///
  /// Every word of `query` must match a whole word (case and accents ignored: `cafe`
  /// finds `café`), and a word with CJK characters matches them anywhere in a run
  /// (`你好` finds `你好世界`). The words are FTS5 strings, so syntax in them is text to
  /// find (`"`, `*`, `AND(`, `NEAR`); a query without letters or digits (`*`, `😀`)
  /// finds the literal text by a scan. Requests come first, then messages by id; pages
  /// are keyset reads from `before` (the `older` cursor of the previous page).
  ///
  /// ```swift
  /// let page = try chats.search("café 你好", conversation: 2, limit: 20)
  /// let next = try chats.search("café 你好", conversation: 2, before: page.older)
  /// ```
  /// See <https://sqlite.org/fts5.html#full_text_query_syntax>.
  public func search(
    _ query: String, conversation: Int64? = nil, before: TimelineCursor? = nil, limit: Int = 50
  ) throws -> SearchPage {
    precondition(limit > 0, "a page holds at least one result")
    let parsed = SearchQuery(query)
    guard !parsed.isEmpty else { return SearchPage(hits: [], older: nil) }
    return try database.read { db in
      var hits: [SearchHit] = []
      var messageBound = Int64.max
      switch before.backwardStart {
      case .requests(let createdAt, let requestID):
        let sql = SearchSQL.requests(literal: parsed.literal != nil, conversation: conversation != nil)
        let arguments: [any DatabaseValueConvertible] =
          [parsed.ftsQuery ?? parsed.literal!, createdAt, requestID, limit + 1] + (conversation.map { [$0] } ?? [])
        hits += try db.cachedStatement(sql).map(arguments) { row in
          let request = HotQuery.request(row)
          return SearchHit(
            item: .request(request), conversation: request.toUserID,
            snippet: SearchSnippet.make(request.content, parsed))
        }
      case .messages(let id):
        messageBound = id
      }
      if hits.count <= limit {
        let sql = SearchSQL.messages(parsed, conversation: conversation != nil)
        let arguments: [any DatabaseValueConvertible] =
          [parsed.ftsQuery ?? parsed.literal!, messageBound, limit + 1 - hits.count] + (conversation.map { [$0] } ?? [])
        hits += try db.cachedStatement(sql).map(arguments, HotQuery.messageInConversation).map {
          message, conversation in
          SearchHit(
            item: .message(message), conversation: conversation, snippet: SearchSnippet.make(message.content, parsed))
        }
      }
      let more = hits.count > limit
      hits = Array(hits.prefix(limit))
      return SearchPage(hits: hits, older: more ? hits.last?.item.cursor : nil)
    }
  }
}

/// The snippet of a search hit: the text around the first match, marked.
public enum SearchSnippet {
  /// What marks the start and the end of a match.
  public static let open = "«"
  public static let close = "»"
  /// Characters kept before a match, and in all.
  static let before = 24
  static let length = 80

  /// `content` cut to about `length` characters around the first place a word of
  /// `query` (or its literal text) occurs, that place marked.
  public static func make(_ content: String, _ query: SearchQuery) -> String {
    let needles = query.literal.map { [$0] } ?? query.words.compactMap(firstTokenRun)
    var best: Range<String.Index>?
    for needle in needles {
      guard let found = find(needle, in: content, wholeWord: query.literal == nil && !SearchText.containsCJK(needle))
      else { continue }
      if best == nil || found.lowerBound < best!.lowerBound { best = found }
    }
    guard let match = best else { return cut(content[...], leading: false) }
    let start = content.index(match.lowerBound, offsetBy: -before, limitedBy: content.startIndex) ?? content.startIndex
    let head = content[start..<match.lowerBound]
    let tail = content[match.upperBound...]
    let room = max(0, length - head.count - content[match].count)
    let end = tail.index(tail.startIndex, offsetBy: room, limitedBy: tail.endIndex) ?? tail.endIndex
    return (start > content.startIndex ? "…" : "") + head + open + content[match] + close + tail[..<end]
      + (end < tail.endIndex ? "…" : "")
  }

  private static func cut(_ text: Substring, leading: Bool) -> String {
    text.count <= length ? String(text) : String(text.prefix(length)) + "…"
  }

  /// The first run of token characters in a word (`AND(` → `AND`), or nil.
  private static func firstTokenRun(_ word: String) -> String? {
    let scalars = word.unicodeScalars
    guard let start = scalars.firstIndex(where: SearchText.isTokenCharacter) else { return nil }
    let end = scalars[start...].firstIndex(where: { !SearchText.isTokenCharacter($0) }) ?? scalars.endIndex
    return String(scalars[start..<end])
  }

  /// The first occurrence of `needle` ignoring case and accents; with `wholeWord`, one
  /// not inside a longer word.
  private static func find(_ needle: String, in text: String, wholeWord: Bool) -> Range<String.Index>? {
    var from = text.startIndex
    while let found = text.range(
      of: needle, options: [.caseInsensitive, .diacriticInsensitive], range: from..<text.endIndex)
    {
      if !wholeWord || (isBoundary(text, before: found.lowerBound) && isBoundary(text, after: found.upperBound)) {
        return found
      }
      from = text.index(after: found.lowerBound)
    }
    return nil
  }

  private static func isBoundary(_ text: String, before index: String.Index) -> Bool {
    guard index > text.startIndex, let scalar = text[..<index].unicodeScalars.last else { return true }
    return !SearchText.isTokenCharacter(scalar) || SearchText.isCJK(scalar)
  }

  private static func isBoundary(_ text: String, after index: String.Index) -> Bool {
    guard index < text.endIndex, let scalar = text[index...].unicodeScalars.first else { return true }
    return !SearchText.isTokenCharacter(scalar) || SearchText.isCJK(scalar)
  }
}
