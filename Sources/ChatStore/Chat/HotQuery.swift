/// The queries the app runs all the time, in one catalog: the repository runs exactly
/// this SQL, tests check each plan with `EXPLAIN QUERY PLAN`, and the index tools use
/// the catalog as the truth of what the app asks of the file.
///
/// See <https://sqlite.org/eqp.html>.
public struct HotQuery: Sendable, Hashable {
  /// A short name, for reports.
  public var name: String
  /// The SQL, with `?NNN` parameters.
  public var sql: String
  /// Sample arguments that make the statement runnable for `EXPLAIN QUERY PLAN`.
  public var sampleArguments: [DatabaseValue]

  static let messageColumns = "id, from_user_id, to_user_id, content, status, created_at, request_id"
  static let requestColumns =
    "request_id, to_user_id, content, status, created_at, last_modified_at, last_sent_at, fail_count, next_attempt_at, fail_reason"
  static let visibleRequests = "status IN ('PENDING', 'SENT', 'FAILED')"
  static let sample = "2026-01-01T00:00:00.000Z"

  // MARK: - Timeline

  /// Messages of a conversation older than a cursor id, newest first.
  public static let messagesBefore = HotQuery(
    name: "timeline: messages before a cursor",
    sql: "SELECT \(messageColumns) FROM Messages WHERE conversation_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
    sampleArguments: [.integer(2), .integer(Int64.max), .integer(50)])

  /// Messages of a conversation newer than a cursor id, oldest first.
  public static let messagesAfter = HotQuery(
    name: "timeline: messages after a cursor",
    sql: "SELECT \(messageColumns) FROM Messages WHERE conversation_id = ?1 AND id > ?2 ORDER BY id ASC LIMIT ?3",
    sampleArguments: [.integer(2), .integer(0), .integer(50)])

  /// Visible requests of a conversation before a (created_at, request_id) cursor, newest first.
  public static let requestsBefore = HotQuery(
    name: "timeline: requests before a cursor",
    sql: """
      SELECT \(requestColumns) FROM MessageRequests
      WHERE to_user_id = ?1 AND \(visibleRequests) AND (created_at, request_id) < (?2, ?3)
      ORDER BY created_at DESC, request_id DESC LIMIT ?4
      """,
    sampleArguments: [.integer(2), .text("9999"), .integer(Int64.max), .integer(50)])

  /// Visible requests of a conversation after a (created_at, request_id) cursor, oldest first.
  public static let requestsAfter = HotQuery(
    name: "timeline: requests after a cursor",
    sql: """
      SELECT \(requestColumns) FROM MessageRequests
      WHERE to_user_id = ?1 AND \(visibleRequests) AND (created_at, request_id) > (?2, ?3)
      ORDER BY created_at ASC, request_id ASC LIMIT ?4
      """,
    sampleArguments: [.integer(2), .text(""), .integer(0), .integer(50)])

  // MARK: - Conversation list

  /// Every contact with a message or a visible request: the newest message, the
  /// newest request and the unread count, newest activity first.
  public static let conversationList = HotQuery(
    name: "conversation list",
    sql: """
      SELECT u.id, u.name, u.avatar_url, u.last_connected_at,
        m.id, m.from_user_id, m.to_user_id, m.content, m.status, m.created_at, m.request_id,
        r.request_id, r.to_user_id, r.content, r.status, r.created_at, r.last_modified_at, r.last_sent_at,
        r.fail_count, r.next_attempt_at, r.fail_reason,
        (SELECT count(*) FROM Messages
          WHERE conversation_id = u.id AND from_user_id = conversation_id AND status <> 'READ') AS unread,
        max(coalesce(m.created_at, ''), coalesce(r.created_at, '')) AS last_activity
      FROM Users u
      LEFT JOIN Messages m ON m.id = (SELECT max(id) FROM Messages WHERE conversation_id = u.id)
      LEFT JOIN MessageRequests r ON r.request_id = (
        SELECT request_id FROM MessageRequests
        WHERE to_user_id = u.id AND \(visibleRequests)
        ORDER BY created_at DESC, request_id DESC LIMIT 1)
      WHERE m.id IS NOT NULL OR r.request_id IS NOT NULL
      ORDER BY last_activity DESC, u.id
      LIMIT ?1
      """,
    sampleArguments: [.integer(100)])

  /// Incoming messages of one conversation not yet read.
  public static let unreadCount = HotQuery(
    name: "unread count of a conversation",
    sql: "SELECT count(*) FROM Messages WHERE conversation_id = ?1 AND from_user_id = conversation_id AND status <> 'READ'",
    sampleArguments: [.integer(2)])

  // MARK: - Receipts

  /// Marks a conversation's incoming messages read; returns their ids.
  public static let markConversationRead = HotQuery(
    name: "mark a conversation read",
    sql: """
      UPDATE Messages SET status = 'READ'
      WHERE conversation_id = ?1 AND from_user_id = conversation_id AND status <> 'READ'
      RETURNING id
      """,
    sampleArguments: [.integer(2)])

  /// Moves the owner's messages in a conversation up to an id forward to a status.
  /// `?3` is the new status; the statuses it may replace are spelled out per status.
  static func statusUpTo(_ status: MessageStatus) -> HotQuery {
    HotQuery(
      name: "status up to an id (\(status.rawValue))",
      sql: """
        UPDATE Messages SET status = '\(status.rawValue)'
        WHERE conversation_id = ?1 AND id <= ?2 AND from_user_id <> conversation_id
          AND status IN (\(status.earlierStatusesSQL))
        """,
      sampleArguments: [.integer(2), .integer(Int64.max)])
  }

  // MARK: - Outbox

  /// Requests due for sending at a time, whose retry budget is not spent, oldest
  /// first per conversation.
  public static let dueRequests = HotQuery(
    name: "outbox: due requests",
    sql: """
      SELECT \(requestColumns) FROM MessageRequests
      WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?1 AND \(visibleRequests) AND coalesce(fail_count, 0) < ?2
      ORDER BY to_user_id, created_at, request_id LIMIT ?3
      """,
    sampleArguments: [.text(sample), .integer(10), .integer(100)])

  /// The request an acknowledged message came from (dedupe of acknowledgements).
  public static let messageByRequest = HotQuery(
    name: "message by request id",
    sql: "SELECT id FROM Messages WHERE from_user_id = ?1 AND request_id = ?2",
    sampleArguments: [.integer(1), .integer(1)])

  // MARK: - Maintenance

  /// Messages created before a time (eviction by age).
  public static let messagesOlderThan = HotQuery(
    name: "eviction: messages older than a time",
    sql: "SELECT count(*) FROM Messages WHERE created_at < ?1",
    sampleArguments: [.text(sample)])

  /// The first message at or after a time: eviction by age deletes the ids below it.
  public static let firstMessageAtOrAfter = HotQuery(
    name: "eviction: first message at or after a time",
    sql: "SELECT min(id) FROM Messages WHERE created_at >= ?",
    sampleArguments: [.text(sample)])

  /// Messages of a conversation in an id range (the eviction plan, per conversation).
  public static let conversationRange = HotQuery(
    name: "eviction: a conversation's messages in an id range",
    sql: "SELECT count(*), max(id), 0 FROM Messages WHERE conversation_id = ?1 AND id > ?2 AND id <= ?3",
    sampleArguments: [.integer(2), .integer(0), .integer(Int64.max)])

  /// The whole catalog.
  public static let all: [HotQuery] =
    [
      messagesBefore, messagesAfter, requestsBefore, requestsAfter, conversationList, unreadCount,
      markConversationRead, dueRequests, messageByRequest, messagesOlderThan, firstMessageAtOrAfter,
      conversationRange,
    ] + MessageStatus.allCases.dropFirst().map(statusUpTo)
}

// MARK: - Plans

extension HotQuery {
  /// Tables a hot query must never read in full.
  public static let protectedTables: Set<String> = ["Messages", "MessageRequests"]

  /// The `EXPLAIN QUERY PLAN` lines of this query on `db`, one per step.
  public func plan(in db: Database) throws -> [String] {
    try db.prepare("EXPLAIN QUERY PLAN " + sql).map(sampleArguments) { $0.string(3) }
  }

  /// The protected tables the plan reads in full: `SCAN Messages` (also through an
  /// alias), or a rowid range with no other constraint (`SEARCH Messages USING
  /// INTEGER PRIMARY KEY (rowid<?)`), which is what SQLite falls back to when the
  /// index a keyset page needs is gone and visits the whole table just the same.
  public func fullScans(in db: Database) throws -> [String] {
    let aliases = tableAliases
    return try plan(in: db).compactMap { line -> String? in
      let words = line.split(separator: " ").map(String.init)
      guard words.count >= 2 else { return nil }
      let isScan =
        words[0] == "SCAN"
        || (words[0] == "SEARCH" && (line.hasSuffix("PRIMARY KEY (rowid<?)") || line.hasSuffix("PRIMARY KEY (rowid>?)")))
      let table = aliases[words[1]] ?? words[1]
      return isScan && Self.protectedTables.contains(table) ? table : nil
    }
  }

  /// `alias → table` for every `FROM`/`JOIN <table> <alias>` in the SQL.
  var tableAliases: [String: String] {
    let words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "(" || $0 == ")" || $0 == "," }).map(String.init)
    var aliases: [String: String] = [:]
    for i in words.indices.dropLast(2) where ["FROM", "JOIN"].contains(words[i].uppercased()) {
      let alias = words[i + 2]
      if alias.uppercased() != "WHERE" && alias.uppercased() != "ON" && alias.uppercased() != "LEFT" { aliases[alias] = words[i + 1] }
    }
    return aliases
  }
}
