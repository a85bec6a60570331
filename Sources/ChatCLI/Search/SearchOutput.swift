import ChatStore

/// How `chatdb search` and `chat-sync search` show a page of results: the same text
/// and JSON from the same `ChatRepository.search` call.
public enum SearchOutput {
  /// The options both commands share: the text, `--with`, `--before`, `--limit`.
  public struct Options: Sendable {
    public var text: String
    public var with: Int64?
    public var before: TimelineCursor?
    public var limit: Int

    public init(_ o: inout OptionReader) {
      with = o.option("--with", valueName: "id", help: "Only the conversation with this user.", parse: Parse.userID)
      before = o.option(
        "--before", valueName: "id",
        help:
          "Only results older than this message id (or the 'older' cursor a page printed, such as r12@2026-01-01T00:00:00.000Z).",
        parse: Parse.searchCursor)
      limit =
        o.option(
          "--limit", valueName: "n", help: "At most this many results (default 50).",
          parse: Parse.count(from: 1, to: 10_000)) ?? 50
      text =
        o.argument(
          "text", help: "What to find: every word must match (case and accents ignored; CJK anywhere in a run).") ?? ""
    }

    /// TEXT is required and must hold more than spaces.
    public func validate() throws {
      if text.allSatisfy(\.isWhitespace) { throw ValidationError("'<text>' is empty: give the words to search for") }
    }

    /// Runs the search on `repository`.
    public func search(_ repository: ChatRepository) throws -> SearchPage {
      try repository.search(text, conversation: with, before: before, limit: limit)
    }
  }

  /// The command's `result`: the hits and the cursor of the next page.
  public static func json(_ page: SearchPage, query: String) -> JSONValue {
    .object([
      "query": .string(query),
      "hits": .array(page.hits.map(json)),
      "older": page.older.map { .string($0.description) } ?? .null,
      "olderBefore": page.older.map { cursor in
        if case .message(let id) = cursor { return .int(id) } else { return .string(cursor.description) }
      } ?? .null,
    ])
  }

  static func json(_ hit: SearchHit) -> JSONValue {
    switch hit.item {
    case .message(let m):
      return .object([
        "kind": .string("message"), "messageId": .int(m.id), "conversation": .int(hit.conversation),
        "fromUserId": .int(m.fromUserID), "toUserId": .int(m.toUserID), "status": .string(m.status.rawValue),
        "createdAt": .string(m.createdAt), "content": .string(m.content), "snippet": .string(hit.snippet),
      ])
    case .request(let r):
      return .object([
        "kind": .string("request"), "requestId": .int(r.requestID), "conversation": .int(hit.conversation),
        "toUserId": .int(r.toUserID), "status": .string(r.status.rawValue), "createdAt": .string(r.createdAt),
        "content": .string(r.content), "snippet": .string(hit.snippet),
      ])
    }
  }

  /// One line a hit, newest first, then where the next page starts.
  public static func text(_ page: SearchPage, owner: Int64, query: String) -> String {
    guard !page.hits.isEmpty else { return "No messages match '\(query)'." }
    var lines = page.hits.map { hit -> String in
      switch hit.item {
      case .message(let m):
        let arrow = m.fromUserID == owner ? "→" : "←"
        return "\(m.createdAt) \(arrow) \(hit.conversation)  \(hit.snippet)  [#\(m.id)]"
      case .request(let r):
        return "\(r.createdAt) → \(hit.conversation)  \(hit.snippet)  [\(r.status.rawValue) request \(r.requestID)]"
      }
    }
    if let older = page.older {
      if case .message(let id) = older {
        lines.append("(older: --before \(id))")
      } else {
        lines.append("(older: --before \(older))")
      }
    }
    return lines.joined(separator: "\n")
  }
}

extension Parse {
  /// A search cursor: a message id in plain digits, or a cursor as a page prints it
  /// (`m<id>`, `r<requestId>@<createdAt>`).
  public static func searchCursor(_ text: String) throws -> TimelineCursor? {
    if let id = StoreLocation.parseUserID(text) { return .message(id: id) }
    guard let cursor = TimelineCursor(text) else {
      throw InvalidValue("a message id (plain digits) or a cursor a page printed (r<requestId>@<time>)")
    }
    return cursor
  }
}
