import ChatStore

/// Whether a file's search indexes (migration 0005) hold exactly what their rows say:
/// FTS5's own `integrity-check` on each (its b-trees and segments are consistent), then
/// each index's entries against an index built afresh from the rows in the `temp`
/// schema (`fts5vocab`): per term and row, or with `exact` per term, row and position.
///
/// SQLite 3.40's `integrity-check` does not read an external-content table's rows, so
/// the second step is what finds an index left behind by a writer that turned
/// triggers off (or dropped one). The file is never written: the fresh indexes live in
/// `temp`, and `integrity-check` writes nothing (on a connection SQLite opened read-only,
/// because another process holds the WAL, it cannot run and is skipped). See
/// <https://sqlite.org/fts5.html#the_integrity_check_command> and
/// <https://sqlite.org/fts5.html#the_fts5vocab_virtual_table_module>.
public enum SearchIndexCheck {
  /// The search tables and what each is built from.
  static let tables = ["MessageSearch", "MessageSearchCJK", "RequestSearch"]

  /// Whether the file has the search indexes (schema version 5 or later).
  public static func exists(_ db: Database) throws -> Bool {
    try db.int64(
      "SELECT count(*) FROM sqlite_schema WHERE name IN ('MessageSearch', 'MessageSearchCJK', 'RequestSearch')") == 3
  }

  /// The problems found, one line each (empty: the indexes are sound and, with
  /// `compareWithRows`, equal their rows). FTS5's integrity-check takes about 2.6 s for
  /// 1,000,000 messages; the comparison about a minute (it builds the indexes again).
  public static func problems(_ db: Database, compareWithRows: Bool = true, exact: Bool = false) throws -> [String] {
    guard try exists(db) else { return [] }
    // `Mode.readOnly` sets query_only, which refuses the integrity-check command and
    // temp tables too: lift it for this work (neither writes the file).
    let queryOnly = try db.int64("PRAGMA query_only") == 1
    if queryOnly { try db.execute("PRAGMA query_only = OFF") }
    defer { if queryOnly { try? db.execute("PRAGMA query_only = ON") } }
    var problems: [String] = []
    for table in tables {
      do { try db.execute("INSERT INTO \(table) (\(table)) VALUES ('integrity-check')") } catch let error as SQLiteError
      {
        if error.isBusy { throw error }
        // Opened with SQLITE_OPEN_READONLY (another process holds the WAL): the command
        // cannot run, and the comparison with the rows below still does.
        if error.code == SQLiteError.ResultCode.readOnly { continue }
        problems.append("\(table): integrity-check: \(error.message)")
      }
    }
    guard compareWithRows else { return problems }
    // The rows and the indexes are read in one snapshot: a writer (chat-sync) may be
    // changing both while this runs.
    if db.isInTransaction { return try problems + compare(db, exact: exact) }
    return try problems + db.read { try compare($0, exact: exact) }
  }

  /// The indexes' entries against fresh ones built from the rows; one line per index that differs.
  static func compare(_ db: Database, exact: Bool) throws -> [String] {
    var problems: [String] = []
    do {
      try buildReference(db)
    } catch let error as SQLiteError where !error.isBusy && !error.isCorruptOrNotADatabase {
      // A table or view the indexes are built from is missing: the schema checks say which.
      dropReference(db)
      return ["cannot be compared with the rows: \(error.message)"]
    }
    defer { dropReference(db) }
    let kind = exact ? "instance" : "row"
    for (live, reference) in zip(tables, ["chatdb_ref_words", "chatdb_ref_cjk", "chatdb_ref_requests"]) {
      try db.execute("CREATE VIRTUAL TABLE temp.chatdb_vocab_live USING fts5vocab(main, \(live), \(kind))")
      try db.execute("CREATE VIRTUAL TABLE temp.chatdb_vocab_ref USING fts5vocab(temp, \(reference), \(kind))")
      defer {
        try? db.execute("DROP TABLE IF EXISTS temp.chatdb_vocab_live")
        try? db.execute("DROP TABLE IF EXISTS temp.chatdb_vocab_ref")
      }
      let extra =
        try db.int64(
          "SELECT count(*) FROM (SELECT * FROM temp.chatdb_vocab_live EXCEPT SELECT * FROM temp.chatdb_vocab_ref)") ?? 0
      let missing =
        try db.int64(
          "SELECT count(*) FROM (SELECT * FROM temp.chatdb_vocab_ref EXCEPT SELECT * FROM temp.chatdb_vocab_live)") ?? 0
      if extra + missing > 0 {
        problems.append(
          "\(live): \(missing) entr\(missing == 1 ? "y" : "ies") of the text missing and \(extra) not in the text "
            + "(a writer with triggers off?); 'chatdb index apply --rebuild-search' rebuilds it")
      }
    }
    return problems
  }

  /// Fresh indexes of the rows, in `temp`, tokenized as the migration's are.
  static func buildReference(_ db: Database) throws {
    dropReference(db)
    let options = "content, columnsize = 0, tokenize = 'unicode61 remove_diacritics 2'"
    for name in ["chatdb_ref_words", "chatdb_ref_cjk", "chatdb_ref_requests"] {
      try db.execute("CREATE VIRTUAL TABLE temp.\(name) USING fts5 (\(options))")
    }
    try db.execute("INSERT INTO temp.chatdb_ref_words (rowid, content) SELECT id, content FROM Messages")
    try db.execute(
      "INSERT INTO temp.chatdb_ref_requests (rowid, content) SELECT request_id, content FROM RequestSearchText")
    let insert = try db.prepare("INSERT INTO temp.chatdb_ref_cjk (rowid, content) VALUES (?1, ?2)")
    var rows: [(Int64, String)] = []
    try db.prepare("SELECT id, content FROM Messages WHERE \(SearchIndexBuilder.cjkRows)").forEachRow {
      rows.append(($0.int64(0), $0.string(1)))
    }
    for (id, content) in rows { try insert.execute([id, SearchText.segmented(content)]) }
  }

  static func dropReference(_ db: Database) {
    for name in ["chatdb_ref_words", "chatdb_ref_cjk", "chatdb_ref_requests"] {
      try? db.execute("DROP TABLE IF EXISTS temp.\(name)")
    }
  }

  /// Rebuilds the search indexes from the rows in one `IMMEDIATE` transaction.
  public static func rebuild(_ db: Database, progress: (Int64, Int64) -> Void = { _, _ in }) throws {
    do {
      try db.inTransaction(.immediate) { db in
        try SearchIndexBuilder(database: db).rebuild(progress: progress)
        return .commit
      }
    } catch {
      throw StoreError.from(error, path: db.path, doing: "rebuild the search index of")
    }
  }
}
