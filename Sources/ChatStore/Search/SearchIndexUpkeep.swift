/// Keeps the search indexes (migration 0005) exact for a bulk job that turned its
/// connection's triggers off, as `ConversationSummaryUpkeep` does for the chat list.
///
/// Import and generate tell it each message and request they inserted, evict each
/// message it deleted (with its text: the word index is external content and the CJK
/// index contentless, so removing a row's entries needs the text it was indexed from).
/// It notes them (the ids of added messages in memory, the rest in temporary tables)
/// and `flush()`, called in the same transaction before its commit, applies them to the
/// indexes in one statement per index:
///
/// ```swift
/// let search = try SearchIndexUpkeep(database: db)
/// // … in the batch's transaction, for each message inserted:
/// try search.insertedMessage(id: 123, content: "你好 café")
/// // … then, before COMMIT:
/// try search.flush()
/// ```
/// One statement per batch, not per row, because this SQLite's FTS5 writes its pending
/// terms out as a new segment at every statement savepoint, and a statement that writes
/// to a virtual table inside a transaction opens one: row by row, every message became
/// a segment of its own for the automatic merges to fold together (on 200,000 generated
/// messages, 40% of generate's instructions under callgrind went to those flushes).
///
/// The CJK index gets the segmented text (`SearchText.segmented`) computed here, the
/// same text the triggers read from the view `MessageSearchSegments` (about a hundred
/// times faster than the view's SQL). See <https://sqlite.org/fts5.html#external_content_tables>.
public final class SearchIndexUpkeep {
  private let noteAdded: Statement!
  private let noteRemoved: Statement!
  private let noteRequest: Statement!
  private let deleteWordRange: Statement!
  private let rangeTexts: Statement!
  private let countRange: Statement!
  private let addWordRange: Statement!
  private let deleteRequestEntries: Statement!
  /// The statements `flush()` runs, in order, each when its kind of note was taken.
  private let applyRemoved: [Statement]
  private let applyAdded: [Statement]
  private let applyRequests: [Statement]
  private var removed = 0
  private var requests = 0
  /// The ids of the messages added since the last flush, in order, and their count
  /// with CJK text (noted in `chatdb_search_added` with their segmented text).
  private var addedIDs: [Int64] = []
  private var addedCJK = 0
  /// `addedIDs` as the JSON array `applyAdded` reads with `json_each`.
  private var idList: [UInt8] = []
  /// False when the file has no search index (someone dropped it): then there is
  /// nothing to keep, and `chatdb check` reports the missing tables.
  private let enabled: Bool
  private let database: Database

  /// Prepares the statements; `database` must be at schema version 5 or later.
  public init(database: Database) throws {
    self.database = database
    enabled =
      try database.int64(
        "SELECT count(*) FROM sqlite_schema WHERE name IN ('MessageSearch', 'MessageSearchCJK', 'RequestSearch', 'RequestSearchText')"
      ) == 4
    guard enabled else {
      (noteAdded, noteRemoved, noteRequest, deleteWordRange, rangeTexts) = (nil, nil, nil, nil, nil)
      (countRange, addWordRange, deleteRequestEntries) = (nil, nil, nil)
      (applyRemoved, applyAdded, applyRequests) = ([], [], [])
      return
    }
    // Rows noted since the last flush: added messages with CJK text (with the text
    // the CJK index gets), removed messages (with the text they were indexed from;
    // NULL when the word index already dropped them), added requests.
    try database.execute(
      """
      CREATE TEMP TABLE IF NOT EXISTS chatdb_search_added (id INTEGER PRIMARY KEY, segments TEXT);
      CREATE TEMP TABLE IF NOT EXISTS chatdb_search_removed (id INTEGER PRIMARY KEY, content TEXT, segments TEXT);
      CREATE TEMP TABLE IF NOT EXISTS chatdb_search_requests (id INTEGER PRIMARY KEY);
      DELETE FROM temp.chatdb_search_added; DELETE FROM temp.chatdb_search_removed; DELETE FROM temp.chatdb_search_requests;
      """)
    noteAdded = try database.prepare("INSERT OR REPLACE INTO temp.chatdb_search_added (id, segments) VALUES (?1, ?2)")
    noteRemoved = try database.prepare(
      "INSERT OR REPLACE INTO temp.chatdb_search_removed (id, content, segments) VALUES (?1, ?2, ?3)")
    noteRequest = try database.prepare("INSERT OR IGNORE INTO temp.chatdb_search_requests (id) VALUES (?1)")
    deleteWordRange = try database.prepare(
      "INSERT INTO MessageSearch (MessageSearch, rowid, content) SELECT 'delete', id, content FROM Messages WHERE id > ?1 AND id <= ?2"
    )
    rangeTexts = try database.prepare("SELECT id, content FROM Messages WHERE id > ?1 AND id <= ?2")
    countRange = try database.prepare("SELECT count(*) FROM Messages WHERE id BETWEEN ?1 AND ?2")
    addWordRange = try database.prepare(
      "INSERT INTO MessageSearch (rowid, content) SELECT id, content FROM Messages WHERE id BETWEEN ?1 AND ?2")
    deleteRequestEntries = try database.prepare(
      """
      INSERT INTO RequestSearch (RequestSearch, rowid, content)
      SELECT 'delete', t.request_id, t.content
      FROM json_each(?1) j CROSS JOIN RequestSearchText t ON t.request_id = j.value
      """)  // CROSS JOIN: the list outside, one seek per id, whatever the statistics say
    applyRemoved = try [
      """
      INSERT INTO MessageSearch (MessageSearch, rowid, content)
      SELECT 'delete', id, content FROM temp.chatdb_search_removed WHERE content IS NOT NULL
      """,
      """
      INSERT INTO MessageSearchCJK (MessageSearchCJK, rowid, content)
      SELECT 'delete', id, segments FROM temp.chatdb_search_removed WHERE segments IS NOT NULL
      """,
      "DELETE FROM temp.chatdb_search_removed",
    ].map(database.prepare)
    // The added ids come as one JSON array: a temporary table row per message cost
    // 6% of generate's instructions, json_each a fiftieth of that.
    applyAdded = try [
      "INSERT INTO MessageSearch (rowid, content) SELECT m.id, m.content FROM json_each(?1) j JOIN Messages m ON m.id = j.value",
      "INSERT INTO MessageSearchCJK (rowid, content) SELECT id, segments FROM temp.chatdb_search_added",
      "DELETE FROM temp.chatdb_search_added",
    ].map(database.prepare)
    applyRequests = try [
      """
      INSERT INTO RequestSearch (rowid, content)
      SELECT t.request_id, t.content FROM temp.chatdb_search_requests r JOIN RequestSearchText t ON t.request_id = r.id
      """,
      "DELETE FROM temp.chatdb_search_requests",
    ].map(database.prepare)
  }

  /// A message row was inserted (a new row, not one a conflict kept).
  public func insertedMessage(id: Int64, content: String) throws {
    try insertedMessage(id: id, segments: Self.segments(content))
  }

  /// A message row was inserted, its CJK index text already made (`cjkSegments(of:)`,
  /// on another thread): nil when it has no CJK.
  public func insertedMessage(id: Int64, segments: String?) throws {
    guard enabled else { return }
    addedIDs.append(id)
    if let segments {
      try noteAdded.execute([id, segments])
      addedCJK += 1
    }
  }

  /// A message row was deleted; `content` is the text it had.
  public func deletedMessage(id: Int64, content: String) throws {
    guard enabled else { return }
    try noteRemoved.execute([id, content, Self.segments(content)])
    removed += 1
  }

  /// Every message with an id in `after + 1 ... upTo` is about to be deleted (eviction
  /// by age, before its `DELETE`): the word index drops them in one statement now, the
  /// CJK index the ones with CJK text at the next `flush()`.
  public func deletingMessages(after low: Int64, upTo high: Int64) throws {
    guard enabled else { return }
    try deleteWordRange.execute([low, high])
    var cjk: [(Int64, String)] = []
    try rangeTexts.forEachRow([low, high]) { row in
      guard row.withUTF8(1, SearchText.containsCJK(utf8:)) else { return }
      let content = row.string(1)
      if SearchText.containsCJK(content) { cjk.append((row.int64(0), content)) }
    }
    for (id, content) in cjk {
      try noteRemoved.execute([id, DatabaseValue.null, SearchText.segmented(content)])
      removed += 1
    }
  }

  /// A request row was inserted (the outbox is small: its text is segmented by the view).
  public func insertedRequest(id: Int64) throws {
    guard enabled else { return }
    try noteRequest.execute([id])
    requests += 1
  }

  /// These requests are about to be deleted (the relay acknowledged them): their index
  /// entries go now, in one statement, while their text is still there to say which.
  public func deletingRequests(_ ids: [Int64]) throws {
    guard enabled, !ids.isEmpty else { return }
    try deleteRequestEntries.execute([DatabaseValue.text(Self.jsonList(ids))])
  }

  /// Applies what was noted since the last flush to the indexes; call it in the same
  /// transaction, before its commit (a rolled-back transaction takes the notes with it:
  /// call `discard()` then).
  public func flush() throws {
    guard enabled else { return }
    if removed > 0 { for statement in applyRemoved { try statement.execute() } }
    if !addedIDs.isEmpty {
      if try addedIDsFillTheirRange() {
        try addWordRange.execute([addedIDs.first!, addedIDs.last!])
      } else {
        try applyAdded[0].execute([DatabaseValue.text(idListJSON())])
      }
      if addedCJK > 0 { for statement in applyAdded.dropFirst() { try statement.execute() } }
    }
    if requests > 0 { for statement in applyRequests { try statement.execute() } }
    discard()
  }

  /// Whether the added messages are every row from the first added id to the last
  /// (a batch of an import or a generate into a file without messages in between):
  /// then the word index reads them as one range of the table, at half the cost of
  /// looking up each id of a `json_each` list (3.2 ms against 7.5 ms for 10,000 rows).
  private func addedIDsFillTheirRange() throws -> Bool {
    var previous = Int64.min
    for id in addedIDs {
      guard id > previous else { return false }
      previous = id
    }
    return try countRange.first([addedIDs.first!, addedIDs.last!]) { $0.int64(0) } == Int64(addedIDs.count)
  }

  /// `addedIDs` as a JSON array of numbers.
  private func idListJSON() -> String { Self.jsonList(addedIDs, into: &idList) }

  /// `ids` as a JSON array of numbers, built in `buffer`.
  static func jsonList(_ ids: [Int64]) -> String {
    var buffer: [UInt8] = []
    return jsonList(ids, into: &buffer)
  }

  private static func jsonList(_ ids: [Int64], into idList: inout [UInt8]) -> String {
    idList.removeAll(keepingCapacity: true)
    idList.append(UInt8(ascii: "["))
    var digits = [UInt8](repeating: 0, count: 20)
    for id in ids {
      if idList.count > 1 { idList.append(UInt8(ascii: ",")) }
      if id < 0 { idList.append(UInt8(ascii: "-")) }
      // The digits from the last, without a String per id (ids have 17 digits: past
      // a small string's 15 bytes, `String(id)` allocates).
      var rest = id.magnitude
      var count = 0
      repeat {
        digits[count] = UInt8(ascii: "0") + UInt8(rest % 10)
        rest /= 10
        count += 1
      } while rest > 0
      for i in stride(from: count - 1, through: 0, by: -1) { idList.append(digits[i]) }
    }
    idList.append(UInt8(ascii: "]"))
    return String(decoding: idList, as: UTF8.self)
  }

  /// Drops the temporary tables of the notes (the job is over: it leaves its caller's
  /// connection as it found it). Outside a transaction, or after its commit.
  public func close() {
    guard enabled else { return }
    discard()
    try? database.execute(
      "DROP TABLE IF EXISTS temp.chatdb_search_added; DROP TABLE IF EXISTS temp.chatdb_search_removed; DROP TABLE IF EXISTS temp.chatdb_search_requests"
    )
  }

  /// What the CJK index holds for a message with this text, or nil (no CJK in it).
  public static func segments(_ content: String) -> String? {
    SearchText.containsCJK(content) ? SearchText.segmented(content) : nil
  }

  /// Forgets the notes (their transaction was rolled back, which emptied the tables).
  public func discard() {
    (removed, requests, addedCJK) = (0, 0, 0)
    addedIDs.removeAll(keepingCapacity: true)
  }

  /// How often FTS5 merges the message indexes' segments while a job writes them.
  /// See <https://sqlite.org/fts5.html#the_automerge_configuration_option>.
  public enum Merging: Sendable {
    /// FTS5's defaults: merge once 4 segments sit at one level (`automerge`), and at
    /// once, whatever it costs, at 16 (`crisismerge`).
    case normal
    /// Import and generate: a segment per batch, merged at 16 a level, which does
    /// about a fifth less work than at 4 (on 1M generated messages: `rebuild` 4.9 s of
    /// CPU at 16 against 6.2 s at 4) for a few more segments per query.
    case bulkLoad
    /// Eviction: no automatic merging while it deletes (FTS5 would merge each chunk's
    /// small segment of deletion markers into the large old segments, chunk after
    /// chunk: three times the CPU of one pass, 7.6 s against 2.6 s for half of 1M);
    /// the evictor merges the markers' segments among themselves, at least 16 at a
    /// time (`usermerge`), in short steps of their own (`Evictor`), and everything once
    /// at the end to drop the deleted entries. `crisismerge` 128 is never reached, so
    /// no chunk starts a large merge.
    case deferred

    var settings: (automerge: Int, crisismerge: Int, usermerge: Int) {
      switch self {
      case .normal: (4, 16, 4)
      case .bulkLoad: (16, 16, 4)
      case .deferred: (0, 128, 16)
      }
    }
  }

  /// Sets how the message indexes merge (a job sets `.bulkLoad` or `.deferred` when it
  /// starts and `.normal` when it ends). The setting is kept in the file: a job killed
  /// before its end leaves its own, which only changes how often later writes merge,
  /// until the next job ends. Runs in the caller's transaction.
  public func setMerging(_ merging: Merging) throws {
    guard enabled else { return }
    let (automerge, crisismerge, usermerge) = merging.settings
    for table in ["MessageSearch", "MessageSearchCJK"] {
      for (name, value) in [("automerge", automerge), ("crisismerge", crisismerge), ("usermerge", usermerge)] {
        try database.execute("INSERT INTO \(table) (\(table), rank) VALUES ('\(name)', \(value))")
      }
    }
  }

  /// The message indexes this file has (both, unless someone dropped them).
  public static func messageIndexes(in db: Database) throws -> [String] {
    try db.query(
      "SELECT name FROM sqlite_schema WHERE name IN ('MessageSearch', 'MessageSearchCJK') ORDER BY name DESC"
    ) { $0.string(0) }
  }

  /// One level of an FTS5 index's segments: how many it holds, and how many of them
  /// an unfinished incremental merge is reading (0: none).
  public struct Level: Equatable, Sendable {
    public var segments: Int
    public var merging: Int
    public init(segments: Int, merging: Int) { (self.segments, self.merging) = (segments, merging) }
  }

  /// `table`'s levels, from level 0 (where each transaction's new segment lands), read
  /// from its structure record (row 10 of `%_data`, in the format described at the top
  /// of SQLite's `ext/fts5/fts5_index.c`); nil when the record is missing, damaged or
  /// in the V2 format (`contentless_delete` tables, SQLite 3.43 and later).
  public static func levels(_ db: Database, _ table: String) throws -> [Level]? {
    precondition(["MessageSearch", "MessageSearchCJK"].contains(table), "a message index")
    guard
      case .blob(let record)? = try db.query("SELECT block FROM \(table)_data WHERE id = 10", [], { $0.value(0) }).first,
      record.count >= 7, record.count < 8 || record[4..<8] != [0xFF, 0x00, 0x00, 0x01]
    else { return nil }
    var offset = 4  // after the configuration cookie
    // An SQLite varint: 7 bits a byte, big-endian, the ninth byte whole.
    func varint() -> Int? {
      var value: UInt64 = 0
      for index in 0..<9 {
        guard offset < record.count else { return nil }
        let byte = record[offset]
        offset += 1
        if index == 8 { return Int(truncatingIfNeeded: value << 8 | UInt64(byte)) }
        value = value << 7 | UInt64(byte & 0x7F)
        if byte < 0x80 { break }
      }
      return Int(truncatingIfNeeded: value)
    }
    guard let count = varint(), (0...64).contains(count), varint() != nil, varint() != nil else { return nil }
    var levels: [Level] = []
    for _ in 0..<count {
      guard let merging = varint(), let segments = varint(), (0...2_000).contains(segments), merging >= 0 else {
        return nil
      }
      for _ in 0..<segments * 3 { guard varint() != nil else { return nil } }  // id, first and last leaf
      levels.append(Level(segments: segments, merging: merging))
    }
    return levels
  }

  /// The level FTS5's next `'merge'` step (a positive page count) works on, as
  /// `fts5IndexMerge` in SQLite's `ext/fts5/fts5_index.c` picks it, or nil when the step
  /// would do nothing: the lowest level with an unfinished merge, unless a level below
  /// it holds more segments than that merge reads; otherwise the level holding the most
  /// segments (the lowest on a tie) if they are at least `usermerge`.
  public static func nextMergeLevel(_ levels: [Level], usermerge: Int) -> Int? {
    var (best, most) = (0, 0)
    for (index, level) in levels.enumerated() {
      if level.merging > 0 {
        if level.merging > most { return index }
        break
      }
      if level.segments > most { (best, most) = (index, level.segments) }
    }
    return most >= usermerge ? best : nil
  }

  /// Removes every entry from `table`, in the caller's transaction: right only when
  /// `Messages` is empty (eviction took every message). See
  /// <https://sqlite.org/fts5.html#the_delete_all_command>.
  public static func deleteAll(_ db: Database, _ table: String) throws {
    precondition(["MessageSearch", "MessageSearchCJK"].contains(table), "a message index")
    try db.execute("INSERT INTO \(table) (\(table)) VALUES ('delete-all')")
  }

  /// One step of merging `table`'s segments, about `pages` pages, in the caller's
  /// transaction; returns the rows it wrote (under 2: nothing left to merge). With
  /// `anyLevel` it merges wherever a level holds two segments, so deletion markers
  /// meet the entries they cancel and their pages become free (the end of an
  /// eviction); without, only a level holding `usermerge` segments (during one).
  /// Eviction repeats it, each step a short transaction of its own.
  /// See <https://sqlite.org/fts5.html#the_merge_command>.
  public static func mergeStep(_ db: Database, _ table: String, pages: Int, anyLevel: Bool) throws -> Int64 {
    precondition(["MessageSearch", "MessageSearchCJK", "RequestSearch"].contains(table), "a search index")
    let before = try db.int64("SELECT total_changes()") ?? 0
    try db.execute("INSERT INTO \(table) (\(table), rank) VALUES ('merge', ?)", [anyLevel ? -pages : pages])
    return (try db.int64("SELECT total_changes()") ?? 0) - before
  }
}

@available(*, unavailable)
extension SearchIndexUpkeep: Sendable {}
