import ChatStore
import Foundation

/// One index of a file, or one the file's schema expects and lacks.
public struct IndexEntry: Sendable, Hashable {
  /// Whether the schema at the file's version expects the index.
  public enum State: String, Sendable {
    /// Expected and present.
    case expected
    /// Expected and absent (dropped by someone): `index apply` creates it.
    case missing
    /// Present but not in the schema (added by hand): `index apply --drop-unknown` drops it.
    case unknown
  }

  public var name: String
  public var table: String
  /// Indexed columns in order; `<expr>` for an expression.
  public var columns: [String]
  /// Bytes of its b-tree (`dbstat`); 0 for a missing index.
  public var bytes: Int64
  public var state: State
  /// The `CREATE INDEX` statement: the reference's for a missing index, the file's otherwise.
  public var sql: String
}

/// One hot query's plan, as `index verify` prints it.
public struct HotQueryCheck: Sendable, Hashable {
  /// What verifying one query found.
  public enum Outcome: String, Sendable {
    /// Every step reaches its table the way the catalog entry expects.
    case ok
    /// A step scans a table or searches it without the expected index.
    case scans
    /// The query could not be planned at all (a missing table or column, say): the
    /// file is not the schema the catalog was written for, which is not the same
    /// failure as a missing index. `chatdb index verify` exits 6 for it.
    case planFailed
  }

  public var name: String
  /// The `EXPLAIN QUERY PLAN` lines joined with `; `, or the error that stopped it.
  public var plan: String
  /// The tables of the flagged steps, one per finding (`HotQuery.fullScans(in:)`).
  public var scans: [String]
  /// Set when the query could not be planned (for example a column is missing).
  public var error: String?
  /// The flagged steps, each with what its entry expected.
  public var findings: [PlanFinding] = []

  public init(name: String, plan: String, scans: [String], error: String?, findings: [PlanFinding] = []) {
    self.name = name
    self.plan = plan
    self.scans = scans
    self.error = error
    self.findings = findings
  }

  /// `planFailed` when it could not be planned, `scans` when a step was flagged, `ok` otherwise.
  public var outcome: Outcome { error != nil ? .planFailed : scans.isEmpty ? .ok : .scans }

  /// Whether the plan is acceptable: planned, and every step as expected.
  public var isOK: Bool { outcome == .ok }
}

/// What `ANALYZE` changed in `sqlite_stat1`.
public struct AnalyzeReport: Sendable, Hashable {
  /// Rows of `sqlite_stat1` before and after.
  public var rowsBefore: Int
  public var rowsAfter: Int
  /// `table.index` whose statistics are new or changed.
  public var changed: [String]
}

/// The index tools behind `chatdb index`: list, verify against the hot-query catalog,
/// create what is missing, and refresh the planner's statistics.
///
/// ```swift
/// let db = try Database(path: "chats-1.db")
/// let failing = try IndexTools.verify(db).filter { !$0.isOK }  // .scans or .planFailed
/// try IndexTools.apply(IndexTools.repairStatements(db), to: db)
/// ```
/// See <https://sqlite.org/eqp.html> and <https://sqlite.org/lang_analyze.html>.
public enum IndexTools {
  // MARK: - List

  /// Every index in the file and every expected one it lacks, by table then name.
  public static func list(_ db: Database) throws -> [IndexEntry] {
    let version = try SchemaReference.status(of: db).version
    let reference = try SchemaReference.database(version: version)
    let expected = try indexes(in: reference) + searchIndexes(in: reference)
    let present = try indexes(in: db) + searchIndexes(in: db)
    let sizes = try indexSizes(db)
    var entries: [IndexEntry] = present.map { index in
      var entry = index
      entry.bytes = sizes[index.name] ?? 0
      entry.state = expected.contains { $0.name == index.name } ? .expected : .unknown
      return entry
    }
    for index in expected where !present.contains(where: { $0.name == index.name }) {
      var entry = index
      entry.state = .missing
      entries.append(entry)
    }
    return entries.sorted { ($0.table, $0.name) < ($1.table, $1.name) }
  }

  /// The explicit indexes of `db` (SQLite's automatic ones have no SQL and are left out).
  static func indexes(in db: Database) throws -> [IndexEntry] {
    let rows = try db.query(
      "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ) { ($0.string(0), $0.string(1), $0.string(2)) }
    return try rows.map { name, table, sql in
      let columns = try db.query("SELECT name FROM pragma_index_info(?) ORDER BY seqno", [name]) {
        $0.optionalString(0) ?? "<expr>"
      }
      return IndexEntry(name: name, table: table, columns: columns, bytes: 0, state: .expected, sql: sql)
    }
  }

  /// The search indexes (FTS5 tables, migration 0005), each as one entry over the table
  /// it indexes; its size (`searchIndexSizes`) is that of its shadow tables.
  static func searchIndexes(in db: Database) throws -> [IndexEntry] {
    try db.query(
      "SELECT name, sql FROM sqlite_schema WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%' ORDER BY name"
    ) { row in
      let name = row.string(0)
      return IndexEntry(
        name: name, table: name.hasPrefix("Request") ? "MessageRequests" : "Messages", columns: ["content"], bytes: 0,
        state: .expected, sql: row.string(1))
    }
  }

  /// Bytes per b-tree from `dbstat`, with each FTS5 table's shadow tables (`X_data`,
  /// `X_idx`, `X_config`, …) added up under `X`; empty when this SQLite lacks `dbstat`.
  static func indexSizes(_ db: Database) throws -> [String: Int64] {
    var sizes: [String: Int64] = [:]
    do {
      try db.prepare("SELECT name, pgsize FROM dbstat WHERE aggregate = TRUE").forEachRow {
        sizes[$0.string(0)] = $0.int64(1)
      }
      for search in try searchIndexes(in: db) {
        sizes[search.name] = sizes.filter {
          $0.key.hasPrefix(search.name + "_") && !$0.key.dropFirst(search.name.count + 1).contains("_")
        }
        .reduce(0) { $0 + $1.value }
      }
    } catch let error as SQLiteError where !error.isCorruptOrNotADatabase && !error.isBusy {
      return [:]
    }
    return sizes
  }

  // MARK: - Verify

  /// Plans every query of `HotQuery.all` on `db` and checks each step against what
  /// the query's catalog entry expects.
  ///
  /// A file at an older schema version is refused (`StoreError.olderSchema`): its
  /// plans would only report the columns and indexes a migration adds. A query that
  /// cannot be planned on a file at the latest version is reported with outcome
  /// `planFailed`, not thrown, so the other queries are still checked.
  public static func verify(_ db: Database, queries: [HotQuery] = HotQuery.all) throws -> [HotQueryCheck] {
    do {
      if try (db.int64("PRAGMA user_version") ?? 0) < Int64(Migration.shipped.count) {
        try Migrator.requireLatest(db, for: "index verify")
      }
    } catch {
      throw StoreError.from(error, path: db.path, doing: "read the schema version of", otherwise: .readFailed)
    }
    return queries.map { query in
      do {
        let plan = try query.plan(in: db)
        let findings = try query.findings(in: db)
        return HotQueryCheck(
          name: query.name, plan: plan.joined(separator: "; "), scans: findings.map(\.table), error: nil,
          findings: findings)
      } catch {
        let reason = (error as? SQLiteError)?.message ?? String(describing: error)
        return HotQueryCheck(name: query.name, plan: "", scans: [], error: reason)
      }
    }
  }

  // MARK: - Apply

  /// The SQL that brings the file's indexes to the schema: `CREATE INDEX` for each
  /// missing one (the reference's own statement) and, with `dropUnknown`, `DROP INDEX`
  /// for each one the schema does not expect.
  public static func repairStatements(_ db: Database, dropUnknown: Bool = false) throws -> [String] {
    let entries = try list(db)
    var statements = entries.filter { $0.state == .missing }.map(\.sql)
    if dropUnknown {
      statements += entries.filter { $0.state == .unknown }.map {
        "DROP INDEX \"\($0.name.replacingOccurrences(of: "\"", with: "\"\""))\""
      }
    }
    return statements
  }

  /// What `index apply` lists for a stale search index (`SearchIndexCheck.rebuild`).
  public static let rebuildSearchIndex =
    "-- rebuild the search index (MessageSearch, MessageSearchCJK, RequestSearch) from the rows"

  /// Runs `statements` in one `IMMEDIATE` transaction: all of them, or none.
  /// `progress` is called after each with (done, total).
  public static func apply(_ statements: [String], to db: Database, progress: (Int, Int) -> Void = { _, _ in }) throws {
    guard !statements.isEmpty else { return }
    do {
      try db.inTransaction(.immediate) { db in
        for (index, sql) in statements.enumerated() {
          try db.execute(sql)
          progress(index + 1, statements.count)
        }
        return .commit
      }
    } catch {
      throw StoreError.from(error, path: db.path, doing: "change the indexes of")
    }
  }

  // MARK: - Analyze

  /// Runs `ANALYZE`, then `PRAGMA optimize`, and reports which statistics rows of
  /// `sqlite_stat1` were added or changed. See <https://sqlite.org/pragma.html#pragma_optimize>.
  public static func analyze(_ db: Database) throws -> AnalyzeReport {
    let before = try stat1(db)
    do {
      try db.execute("ANALYZE")
      try db.execute("PRAGMA optimize")
    } catch {
      throw StoreError.from(error, path: db.path, doing: "analyze")
    }
    let after = try stat1(db)
    let changed = after.keys.filter { before[$0] != after[$0] }.sorted()
    return AnalyzeReport(rowsBefore: before.count, rowsAfter: after.count, changed: changed)
  }

  /// `table.index` → stat text of `sqlite_stat1`; empty when the table does not exist yet.
  static func stat1(_ db: Database) throws -> [String: String] {
    guard try db.int64("SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'") == 1 else { return [:] }
    var rows: [String: String] = [:]
    try db.prepare("SELECT tbl, idx, stat FROM sqlite_stat1").forEachRow {
      rows[$0.string(0) + "." + ($0.optionalString(1) ?? "")] = $0.optionalString(2) ?? ""
    }
    return rows
  }
}
