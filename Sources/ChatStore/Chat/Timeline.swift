/// One row of a conversation screen: an acknowledged message, or an unsent request
/// shown after all of them.
public enum TimelineItem: Hashable, Sendable {
  case message(Message)
  case request(MessageRequest)

  /// The position of this item, to page from.
  public var cursor: TimelineCursor {
    switch self {
    case .message(let m): .message(id: m.id)
    case .request(let r): .request(createdAt: r.createdAt, requestID: r.requestID)
    }
  }

  /// The text of the message or request.
  public var content: String {
    switch self {
    case .message(let m): m.content
    case .request(let r): r.content
    }
  }
}

/// A position in a conversation's timeline: acknowledged messages by id, then
/// requests by (creation time, request id). Pages are read by keyset from a cursor.
public enum TimelineCursor: Hashable, Sendable, CustomStringConvertible {
  case message(id: Int64)
  case request(createdAt: String, requestID: Int64)

  /// `m<id>` or `r<requestID>@<createdAt>`, for command lines and JSON.
  public var description: String {
    switch self {
    case .message(let id): "m\(id)"
    case .request(let createdAt, let requestID): "r\(requestID)@\(createdAt)"
    }
  }

  /// Parses `description`'s form.
  public init?(_ text: String) {
    if text.hasPrefix("m"), let id = Int64(text.dropFirst()) {
      self = .message(id: id)
    } else if text.hasPrefix("r"), let at = text.firstIndex(of: "@"),
      let id = Int64(text[text.index(after: text.startIndex)..<at])
    {
      self = .request(createdAt: String(text[text.index(after: at)...]), requestID: id)
    } else {
      return nil
    }
  }
}

extension Optional where Wrapped == TimelineCursor {
  /// Where a newest-first walk from this cursor starts: below a request cursor's
  /// (created_at, request_id) in the requests and every message (`.requests`), or below
  /// a message id, requests done (`.messages`); from nil, everything.
  var backwardStart: TimelineWalkStart {
    switch self {
    case nil: .requests(createdAt: "\u{10FFFF}", requestID: Int64.max)
    case .request(let createdAt, let requestID)?: .requests(createdAt: createdAt, requestID: requestID)
    case .message(let id)?: .messages(below: id)
    }
  }
}

/// See `Optional<TimelineCursor>.backwardStart`.
enum TimelineWalkStart {
  case requests(createdAt: String, requestID: Int64)
  case messages(below: Int64)
}

/// A page of a timeline, oldest first, with the cursors to read on in each direction.
public struct TimelinePage: Hashable, Sendable {
  /// The items, in display order (oldest first).
  public var items: [TimelineItem]
  /// Pass to `before:` for the page above, or nil when this page starts the conversation.
  public var older: TimelineCursor?
  /// Pass to `after:` for the page below, or nil when this page ends the conversation.
  public var newer: TimelineCursor?
}
