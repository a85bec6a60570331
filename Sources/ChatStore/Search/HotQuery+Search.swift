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
