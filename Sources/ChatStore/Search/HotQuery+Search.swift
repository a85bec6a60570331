extension HotQuery {
  /// The search statements (`ChatRepository.search`), planned with sample queries: the
  /// FTS5 tables are read through their own index (a `SCAN … VIRTUAL TABLE` step with a
  /// MATCH), the rows they name by key (or, once `ANALYZE` has run, through the
  /// conversation index that also holds the key).
  static let search: [HotQuery] = [
    HotQuery(
      name: "search: messages by words, in a conversation",
      sql: SearchSQL.messages(SearchQuery("hello"), conversation: true),
      sampleArguments: [.text("\"hello\""), .integer(Int64.max), .integer(50), .integer(2)],
      access: [.scan("MessageSearch"), .scan("MessageSearchCJK"), .primaryKey, byConversation]),
    HotQuery(
      name: "search: messages by CJK characters",
      sql: SearchSQL.messages(SearchQuery("你好"), conversation: false),
      sampleArguments: [.text(SearchQuery("你好").ftsQuery!), .integer(Int64.max), .integer(50)],
      access: [.scan("MessageSearchCJK"), .primaryKey]),
    HotQuery(
      name: "search: unsent requests by words",
      sql: SearchSQL.requests(literal: false, conversation: false),
      sampleArguments: [.text("\"hello\""), .text("\u{10FFFF}"), .integer(Int64.max), .integer(50)],
      // The outbox is small: with statistics SQLite may read it whole and test each
      // request against the MATCH's list, which is as good.
      access: [
        .scan("RequestSearch"), .primaryKey, .index("MessageRequests_by_conversation"), .scan("MessageRequests"),
      ]),
  ]
}

/// The search statements (see `ChatRepository.search`); `?1` is the FTS5 query (or
/// the literal text), `?2`/`?3` the cursor, then the limit and the conversation.
enum SearchSQL {
  /// Requests: `?1` query, `?2`/`?3` the (created_at, request_id) cursor, `?4` limit, `?5` conversation.
  static func requests(literal: Bool, conversation: Bool) -> String {
    let match =
      literal
      ? "instr(content, ?1) > 0" : "request_id IN (SELECT rowid FROM RequestSearch WHERE RequestSearch MATCH ?1)"
    return """
      SELECT \(HotQuery.requestColumns) FROM MessageRequests
      WHERE \(match) AND (created_at, request_id) < (?2, ?3)\(conversation ? " AND to_user_id = ?5" : "")
      ORDER BY created_at DESC, request_id DESC LIMIT ?4
      """
  }

  /// Messages: `?1` query, `?2` the id cursor, `?3` limit, `?4` conversation.
  ///
  /// A query without CJK is matched in the word index and in the CJK index (whose rows
  /// also hold their words, split from the CJK characters next to them: `好abc` is one
  /// unicode61 token but two there); a query with CJK only in the CJK index. Each index
  /// reads its newest matches by rowid, descending, from the cursor: a page costs its
  /// matches, not the history's size.
  static func messages(_ query: SearchQuery, conversation: Bool) -> String {
    let columns = HotQuery.messageColumns + ", conversation_id"  // read by `HotQuery.messageInConversation`
    let scope = conversation ? " AND conversation_id = ?4" : ""
    guard query.literal == nil else {
      return """
        SELECT \(columns) FROM Messages WHERE instr(content, ?1) > 0 AND id < ?2\(scope) ORDER BY id DESC LIMIT ?3
        """
    }
    let arms = (query.hasCJK ? ["MessageSearchCJK"] : ["MessageSearch", "MessageSearchCJK"]).map { table in
      let join = conversation ? " JOIN Messages m ON m.id = \(table).rowid AND m.conversation_id = ?4" : ""
      return """
        SELECT id FROM (SELECT \(table).rowid AS id FROM \(table)\(join)
          WHERE \(table) MATCH ?1 AND \(table).rowid < ?2 ORDER BY \(table).rowid DESC LIMIT ?3)
        """
    }
    return """
      SELECT \(columns) FROM Messages WHERE id IN (\(arms.joined(separator: " UNION ALL ")))
      ORDER BY id DESC LIMIT ?3
      """
  }
}
