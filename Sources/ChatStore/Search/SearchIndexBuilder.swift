/// Fills the message search indexes of a file made before migration 0005, in the
/// migration's transaction: the word index by id ranges (`INSERT … SELECT`, SQLite
/// tokenizing), then the CJK index from the messages that hold CJK, segmented in Swift.
///
/// ```swift
/// try SearchIndexBuilder(database: db).build { done, total in print(done, "/", total) }
/// ```
/// See <https://sqlite.org/fts5.html#the_optimize_command>.
public struct SearchIndexBuilder {
  /// The migration that adds the indexes; `Migrator` runs the builder after its SQL.
  public static let migrationVersion = 5
  /// That migration's file: a relay file's migration 5 is another one.
  public static let migrationFileName = "0005_search.sql"

  /// Whether `migration` is the one that creates the indexes.
  public static func builds(_ migration: Migration) -> Bool {
    migration.version == migrationVersion && migration.fileName == migrationFileName
  }
  /// Messages per step between progress reports.
  static let chunkRows: Int64 = 50_000

  let db: Database

  public init(database: Database) { db = database }

  /// The rows that hold a CJK character, as the migration's views select them.
  public static let cjkRows = "content GLOB '*[぀-ヿ㐀-䶿一-鿿豈-﫿가-힯𠀀-𯿿]*'"

  /// Indexes every message; `progress(done, total)` counts rows of both passes. The
  /// indexes must be empty (the migration just created them).
  public func build(progress: (Int64, Int64) -> Void = { _, _ in }) throws {
    let messages = try db.int64("SELECT count(*) FROM Messages") ?? 0
    guard messages > 0 else { return }
    let cjk = try db.int64("SELECT count(*) FROM Messages WHERE \(Self.cjkRows)") ?? 0
    let total = messages + cjk
    var done: Int64 = 0
    progress(0, total)
    let chunkEnd = try db.prepare("SELECT max(id) FROM (SELECT id FROM Messages WHERE id > ?1 ORDER BY id LIMIT ?2)")
    let fill = try db.prepare(
      "INSERT INTO MessageSearch (rowid, content) SELECT id, content FROM Messages WHERE id > ?1 AND id <= ?2")
    var low = Int64.min
    while let high = try chunkEnd.first([low, Self.chunkRows], { $0.optionalInt64(0) }) ?? nil {
      try fill.execute([low, high])
      done += Int64(db.changes)
      progress(done, total)
      low = high
    }
    // The segmented rows go through a temporary table into the index in one statement
    // per chunk: row by row, this SQLite's FTS5 writes a segment per statement (see
    // `SearchIndexUpkeep`).
    try db.execute(
      "CREATE TEMP TABLE IF NOT EXISTS chatdb_search_segments (id INTEGER PRIMARY KEY, content TEXT NOT NULL)")
    defer { try? db.execute("DROP TABLE IF EXISTS temp.chatdb_search_segments") }
    let insert = try db.prepare("INSERT INTO temp.chatdb_search_segments (id, content) VALUES (?1, ?2)")
    var rows: [(Int64, String)] = []
    try db.prepare("SELECT id, content FROM Messages WHERE \(Self.cjkRows)").forEachRow { row in
      rows.append((row.int64(0), row.string(1)))
      if rows.count == Int(Self.chunkRows) {
        try flush(&rows, into: insert)
        done += Self.chunkRows
        progress(done, total)
      }
    }
    done += Int64(rows.count)
    try flush(&rows, into: insert)
    progress(done, total)
  }

  /// Empties the three search indexes and builds them again from the rows (what
  /// `chatdb index apply` does when `index verify` found them differing from the text);
  /// run it in a write transaction.
  public func rebuild(progress: (Int64, Int64) -> Void = { _, _ in }) throws {
    for table in ["MessageSearch", "MessageSearchCJK", "RequestSearch"] {
      try db.execute("INSERT INTO \(table) (\(table)) VALUES ('delete-all')")
    }
    try db.execute("DELETE FROM SearchStash")
    try db.execute("INSERT INTO RequestSearch (RequestSearch) VALUES ('rebuild')")
    try build(progress: progress)
  }

  private func flush(_ rows: inout [(Int64, String)], into insert: Statement) throws {
    for (id, content) in rows { try insert.execute([id, SearchText.segmented(content)]) }
    try db.execute("INSERT INTO MessageSearchCJK (rowid, content) SELECT id, content FROM temp.chatdb_search_segments")
    try db.execute("DELETE FROM temp.chatdb_search_segments")
    rows.removeAll(keepingCapacity: true)
  }
}
