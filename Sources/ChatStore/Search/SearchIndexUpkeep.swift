/// Keeps the search indexes (migration 0005) exact for a bulk job that turned its
/// connection's triggers off, as `ConversationSummaryUpkeep` does for the chat list.
///
/// Import and generate tell it each message and request they inserted, evict each
/// message it deleted (with its text: the word index is external content and the CJK
/// index contentless, so removing a row's entries needs the text it was indexed from).
/// Its statements run in the caller's transaction, so every commit is exact.
///
/// ```swift
/// let search = try SearchIndexUpkeep(database: db)
/// // … in the batch's transaction, for each message inserted:
/// try search.insertedMessage(id: 123, content: "你好 café")
/// ```
/// The CJK index gets the segmented text (`SearchText.segmented`) computed here, the
/// same text the triggers read from the view `MessageSearchSegments` (about a hundred
/// times faster than the view's SQL). See <https://sqlite.org/fts5.html#external_content_tables>.
public final class SearchIndexUpkeep {
  private let insertWords: Statement!
  /// `insertWords` for `rowsPerInsert` rows at once (bulk jobs insert messages so).
  private let insertWordRows: Statement!
  private let insertCJK: Statement!
  private let deleteWords: Statement!
  private let deleteCJK: Statement!
  private let indexRequest: Statement!
  private let deleteWordRange: Statement!
  private let rangeTexts: Statement!
  /// False when the file has no search index (someone dropped it): then there is
  /// nothing to keep, and `chatdb check` reports the missing tables.
  private let enabled: Bool
  private let database: Database

  /// Prepares the statements; `database` must be at schema version 5 or later.
  public init(database: Database) throws {
    self.database = database
    enabled =
      try database.int64(
        "SELECT count(*) FROM sqlite_schema WHERE name IN ('MessageSearch', 'MessageSearchCJK', 'RequestSearch', 'RequestSearchText')") == 4
    guard enabled else {
      (insertWords, insertCJK, deleteWords, deleteCJK, indexRequest) = (nil, nil, nil, nil, nil)
      (deleteWordRange, rangeTexts, insertWordRows) = (nil, nil, nil)
      return
    }
    insertWords = try database.prepare("INSERT INTO MessageSearch (rowid, content) VALUES (?1, ?2)")
    insertCJK = try database.prepare("INSERT INTO MessageSearchCJK (rowid, content) VALUES (?1, ?2)")
    insertWordRows = try database.prepare(
      "INSERT INTO MessageSearch (rowid, content) VALUES "
        + Array(repeating: "(?, ?)", count: Self.rowsPerInsert).joined(separator: ", "))
    deleteWords = try database.prepare("INSERT INTO MessageSearch (MessageSearch, rowid, content) VALUES ('delete', ?1, ?2)")
    deleteCJK = try database.prepare("INSERT INTO MessageSearchCJK (MessageSearchCJK, rowid, content) VALUES ('delete', ?1, ?2)")
    deleteWordRange = try database.prepare(
      "INSERT INTO MessageSearch (MessageSearch, rowid, content) SELECT 'delete', id, content FROM Messages WHERE id > ?1 AND id <= ?2")
    rangeTexts = try database.prepare("SELECT id, content FROM Messages WHERE id > ?1 AND id <= ?2")
    indexRequest = try database.prepare(
      "INSERT INTO RequestSearch (rowid, content) SELECT request_id, content FROM RequestSearchText WHERE request_id = ?1")
  }

  /// A message row was inserted (a new row, not one a conflict kept).
  public func insertedMessage(id: Int64, content: String) throws {
    guard enabled else { return }
    try run(insertWords, id, content)
    if SearchText.containsCJK(content) { try run(insertCJK, id, SearchText.segmented(content)) }
  }

  /// Messages per `insertedMessages` call: one statement for them all costs about a
  /// third less than one per row.
  public static let rowsPerInsert = 64

  /// `rowsPerInsert` message rows were inserted, in `messages` (new rows only).
  public func insertedMessages(_ messages: some Collection<(id: Int64, content: String)>) throws {
    guard enabled else { return }
    precondition(messages.count == Self.rowsPerInsert, "a full block of rows")
    var index: Int32 = 0
    for (id, content) in messages {
      try insertWordRows.bind(id, at: index + 1)
      try insertWordRows.bind(content, at: index + 2)
      index += 2
    }
    defer { insertWordRows.reset() }
    _ = try insertWordRows.step()
    for (id, content) in messages where SearchText.containsCJK(content) {
      try run(insertCJK, id, SearchText.segmented(content))
    }
  }

  /// A bulk job is starting (true) or ending (false). FTS5 merges an index's segments
  /// once `automerge` of them sit at one level, 4 by default; a bulk job writes a
  /// segment per batch, and merging at 16 instead does about a fifth less work (on 1M
  /// generated messages: `rebuild` 4.9 s of CPU at 16 against 6.2 s at 4) for a few
  /// more segments per query. A job killed before its end leaves 16, which only
  /// changes how often later writes merge. Runs in the caller's transaction.
  /// See <https://sqlite.org/fts5.html#the_automerge_configuration_option>.
  public func bulkLoad(_ starting: Bool) throws {
    guard enabled else { return }
    for table in ["MessageSearch", "MessageSearchCJK"] {
      try database.execute("INSERT INTO \(table) (\(table), rank) VALUES ('automerge', \(starting ? 16 : 4))")
    }
  }

  /// A message row was deleted; `content` is the text it had.
  public func deletedMessage(id: Int64, content: String) throws {
    guard enabled else { return }
    try run(deleteWords, id, content)
    if SearchText.containsCJK(content) { try run(deleteCJK, id, SearchText.segmented(content)) }
  }

  /// Every message with an id in `after + 1 ... upTo` is about to be deleted (eviction
  /// by age, before its `DELETE`): the word index drops them in one statement, the CJK
  /// index the ones with CJK text.
  public func deletingMessages(after low: Int64, upTo high: Int64) throws {
    guard enabled else { return }
    try deleteWordRange.execute([low, high])
    var cjk: [(Int64, String)] = []
    try rangeTexts.forEachRow([low, high]) { row in
      let content = row.string(1)
      if SearchText.containsCJK(content) { cjk.append((row.int64(0), content)) }
    }
    for (id, content) in cjk { try run(deleteCJK, id, SearchText.segmented(content)) }
  }

  /// A request row was inserted (the outbox is small: its text is segmented by the view).
  public func insertedRequest(id: Int64) throws {
    guard enabled else { return }
    try indexRequest.bind(id, at: 1)
    _ = try indexRequest.step()
    indexRequest.reset()
  }

  /// Merges the message indexes' segments until the entries of deleted rows are gone,
  /// so their pages become free (eviction, before it gives free pages back). Each step
  /// writes about `pages` pages in its own short `BEGIN IMMEDIATE … COMMIT`, so another
  /// writer waits at most one step. Returns the steps taken.
  /// See <https://sqlite.org/fts5.html#the_merge_command>.
  @discardableResult
  public static func compact(_ db: Database, pages: Int = 200) throws -> Int {
    var steps = 0
    for table in ["MessageSearch", "MessageSearchCJK"] {
      guard try db.int64("SELECT count(*) FROM sqlite_schema WHERE name = ?", [table]) == 1 else { continue }
      while true {
        var work: Int64 = 0
        try db.inTransaction(.immediate) { db in
          let before = try db.int64("SELECT total_changes()") ?? 0
          // A negative count merges segments whatever their level: a deletion's markers
          // meet the entries they cancel.
          try db.execute("INSERT INTO \(table) (\(table), rank) VALUES ('merge', ?)", [-pages])
          work = (try db.int64("SELECT total_changes()") ?? 0) - before
          return .commit
        }
        steps += 1
        if work < 2 { break }
      }
    }
    return steps
  }

  private func run(_ statement: Statement, _ id: Int64, _ content: String) throws {
    try statement.bind(id, at: 1)
    try statement.bind(content, at: 2)
    defer { statement.reset() }
    _ = try statement.step()
  }
}

@available(*, unavailable)
extension SearchIndexUpkeep: Sendable {}
