import ChatCLI
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
  public struct Result: CommandResult {
    /// A message (`kind` `message`) or an unsent request (`kind` `request`).
    public struct Hit: Encodable, Sendable {
      var kind: String
      var messageId: Int64?
      var requestId: Int64?
      var conversation: Int64
      var fromUserId: Int64?
      var toUserId: Int64
      var status: String
      var createdAt: String
      var content: String
      var snippet: String

      /// A request has no `messageId` or `fromUserId`, a message no `requestId`: those
      /// keys are absent, not null.
      public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        if let messageId { try container.encode(messageId, forKey: .messageId) }
        if let requestId { try container.encode(requestId, forKey: .requestId) }
        try container.encode(conversation, forKey: .conversation)
        if let fromUserId { try container.encode(fromUserId, forKey: .fromUserId) }
        try container.encode(toUserId, forKey: .toUserId)
        try container.encode(status, forKey: .status)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(content, forKey: .content)
        try container.encode(snippet, forKey: .snippet)
      }

      enum CodingKeys: String, CodingKey {
        case kind, messageId, requestId, conversation, fromUserId, toUserId, status, createdAt, content, snippet
      }

      init(_ hit: SearchHit) {
        switch hit.item {
        case .message(let m):
          self.init(
            kind: "message", messageId: m.id, conversation: hit.conversation, fromUserId: m.fromUserID,
            toUserId: m.toUserID, status: m.status.rawValue, createdAt: m.createdAt, content: m.content,
            snippet: hit.snippet)
        case .request(let r):
          self.init(
            kind: "request", requestId: r.requestID, conversation: hit.conversation, toUserId: r.toUserID,
            status: r.status.rawValue, createdAt: r.createdAt, content: r.content, snippet: hit.snippet)
        }
      }

      init(
        kind: String, messageId: Int64? = nil, requestId: Int64? = nil, conversation: Int64, fromUserId: Int64? = nil,
        toUserId: Int64, status: String, createdAt: String, content: String, snippet: String
      ) {
        self.kind = kind
        self.messageId = messageId
        self.requestId = requestId
        self.conversation = conversation
        self.fromUserId = fromUserId
        self.toUserId = toUserId
        self.status = status
        self.createdAt = createdAt
        self.content = content
        self.snippet = snippet
      }
    }

    /// An integer (a message id) or a string (a request cursor): what `--before` takes.
    public enum Cursor: Encodable, Sendable {
      case message(Int64)
      case text(String)

      public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .message(let id): try container.encode(id)
        case .text(let text): try container.encode(text)
        }
      }
    }

    var query: String
    var hits: [Hit]
    /// The cursor of the next (older) page as printed, or null on the last page.
    var older: String?
    /// The next page's `--before`: a message id, or the cursor text for a request.
    var olderBefore: Cursor?

    public init(_ page: SearchPage, query: String) {
      self.query = query
      hits = page.hits.map(Hit.init)
      older = page.older?.description
      olderBefore = page.older.map { cursor in
        if case .message(let id) = cursor { .message(id) } else { .text(cursor.description) }
      }
    }

    init(query: String, hits: [Hit], older: String?, olderBefore: Cursor?) {
      self.query = query
      self.hits = hits
      self.older = older
      self.olderBefore = olderBefore
    }

    public static var example: Result {
      Result(
        query: "lunch friday",
        hits: [
          Hit(
            kind: "request", requestId: 18, conversation: 7, toUserId: 7, status: "PENDING",
            createdAt: "2026-12-01T12:02:41.180Z", content: "Lunch on Friday at noon?",
            snippet: "«Lunch» on Friday at noon?"),
          Hit(
            kind: "message", messageId: 7_337_265_813_504_001, conversation: 7, fromUserId: 7, toUserId: 42,
            status: "READ", createdAt: "2026-11-28T09:30:00.000Z", content: "Friday lunch works for me",
            snippet: "«Friday» lunch works for me"),
        ],
        older: "m7337265813504001", olderBefore: .message(7_337_265_813_504_001))
    }
  }

  /// One line a hit, newest first, then where the next page starts; the text escaped
  /// for a terminal when `terminal` (TerminalText).
  public static func text(_ page: SearchPage, owner: Int64, query: String, terminal: Bool = false) -> String {
    guard !page.hits.isEmpty else { return "No messages match '\(TerminalText.shown(query, terminal: terminal))'." }
    var lines = page.hits.map { hit -> String in
      let snippet = TerminalText.shown(hit.snippet, terminal: terminal)
      switch hit.item {
      case .message(let m):
        let arrow = m.fromUserID == owner ? "→" : "←"
        return "\(m.createdAt) \(arrow) \(hit.conversation)  \(snippet)  [#\(m.id)]"
      case .request(let r):
        return "\(r.createdAt) → \(hit.conversation)  \(snippet)  [\(r.status.rawValue) request \(r.requestID)]"
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
