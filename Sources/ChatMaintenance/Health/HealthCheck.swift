import ChatStore
import Foundation

/// One problem `chatdb check` found in a file.
public struct HealthFinding: Sendable, Hashable {
  /// How bad it is.
  public enum Severity: String, Sendable, Comparable {
    /// Worth a look; the app still works (an extra index, say).
    case warning
    /// Wrong data or schema: the app may misbehave.
    case error

    public static func < (a: Severity, b: Severity) -> Bool { a == .warning && b == .error }
  }

  /// A stable name for the check, e.g. `message-status` (see `HealthCheck` for the list).
  public var check: String
  public var severity: Severity
  /// How many rows or objects are affected.
  public var count: Int64
  /// What was found, in a few words (names, never message content).
  public var detail: String

  public init(check: String, severity: Severity, count: Int64, detail: String) {
    self.check = check
    self.severity = severity
    self.count = count
    self.detail = detail
  }
}

/// The outcome of checking one file.
public struct HealthReport: Sendable {
  /// Whether the file could be checked, and what came of it.
  public enum Outcome: Sendable, Equatable {
    /// Every check ran; `findings` lists what they found (empty: clean).
    case checked
    /// The file is not a SQLite database, is truncated or has a damaged page; the
    /// reason names what SQLite said. Checks after integrity did not run.
    case damaged(String)
    /// The file could not be checked at all (missing, locked, no permission).
    case failed(StoreError.Kind, String)
  }

  public var path: String
  /// The schema version recorded in the file, when it could be read.
  public var version: Int?
  public var outcome: Outcome
  public var findings: [HealthFinding]

  /// Checked, with no findings.
  public var isClean: Bool { outcome == .checked && findings.isEmpty }
}

/// The checks behind `chatdb check`, run read-only on one file.
///
/// In order: integrity (`quick_check`, or `integrity_check` when `full`), foreign keys
/// (`foreign_key_check`), schema health (the file's `sqlite_schema` against a fresh
/// database built from the shipped migrations up to the file's version, and the
/// applied migrations' checksums), and data sanity. Check names:
///
/// | check | severity | what |
/// | --- | --- | --- |
/// | `integrity` | error | `quick_check`/`integrity_check` lines other than `ok` |
/// | `foreign-keys` | error | rows of `foreign_key_check`, per table |
/// | `schema-version` | error | the version is newer than this chatdb, or inconsistent |
/// | `schema-missing` | error | tables, indexes, triggers the version expects and the file lacks |
/// | `schema-different` | error | same name, other columns or SQL |
/// | `schema-extra` | warning | objects the schema does not have |
/// | `migration-drift` | error | an applied migration's checksum or name differs from the shipped one |
/// | `message-status` | error | `Messages.status` not SYNCED, DELIVERED or READ |
/// | `request-status` | error | `MessageRequests.status` not DRAFT, PENDING, SENT or FAILED |
/// | `request-sent-without-time` | error | SENT requests with no `last_sent_at` |
/// | `request-negative-fail-count` | error | `fail_count < 0` |
/// | `message-id-time` | warning | the id's time and `created_at` differ by more than the tolerance (or `created_at` is not a time) |
/// | `orphan-messages` | error | `conversation_id` not in `Users` |
/// | `orphan-requests` | error | `to_user_id` not in `Users` |
/// | `conversation-summary` | error | `ConversationSummaries` rows (the chat list) that differ from the list computed from the messages and requests |
/// | `media-missing` | error | media the file keeps (`local`) whose file in `chats-<id>.media/` is missing or not its size |
/// | `media-bad-hash` | error | (with `full`) media files whose bytes do not hash to their name |
/// | `media-partial` | warning | downloads stopped part-way |
/// | `media-stray-file` | warning | files in the media folder no media row keeps |
/// | `media-unreferenced` | warning | media rows no message or request names |
/// | `search-index` | error | a search index (migration 0005) fails FTS5's integrity-check or (with `full`) differs from the text of its rows (`SearchIndexCheck`) |
///
/// See <https://sqlite.org/pragma.html#pragma_integrity_check>.
public struct HealthCheck: Sendable {
  /// `integrity_check` instead of the faster `quick_check` (which skips index contents).
  public var full: Bool
  /// How far a message id's time may be from its `created_at`: one day by default,
  /// room for device clocks and relay queues, far below what a wrong id looks like.
  public var idTimeTolerance: Int64
  /// Lines of `integrity_check` reported at most.
  public static let integrityLineLimit = 100

  public init(full: Bool = false, idTimeTolerance: Int64 = 86_400_000) {
    self.full = full
    self.idTimeTolerance = idTimeTolerance
  }

  /// Checks the file at `path`; never throws: a file that cannot be checked is an outcome.
  public func check(path: String) -> HealthReport {
    var report = HealthReport(path: path, version: nil, outcome: .checked, findings: [])
    guard FileSystem.exists(path) else {
      report.outcome = .failed(.notFound, "\(path): no such file")
      return report
    }
    let db: Database
    do {
      db = try Database(path: path, mode: .readOnly)
    } catch {
      report.outcome = Self.outcome(for: error, path: path)
      return report
    }
    do {
      try db.read { db in try run(db, into: &report) }
      // Outside the read transaction: FTS5's integrity-check is a (non-writing) write statement.
      if case .checked = report.outcome { try checkSearchIndex(db, into: &report) }
      if case .checked = report.outcome { try db.read { db in try checkMedia(db, into: &report) } }
    } catch {
      report.outcome = Self.outcome(for: error, path: path)
    }
    return report
  }

  /// A corrupt file is `damaged`; anything else is `failed` with its kind.
  static func outcome(for error: any Error, path: String) -> HealthReport.Outcome {
    if let sqlite = error as? SQLiteError, sqlite.isCorruptOrNotADatabase {
      return .damaged("\(path): not a SQLite database or damaged (\(sqlite.message))")
    }
    let store = StoreError.from(error, path: path, doing: "check", otherwise: .readFailed)
    if store.kind == .notADatabase { return .damaged(store.message) }
    return .failed(store.kind, store.message)
  }

  // MARK: - Checks

  func run(_ db: Database, into report: inout HealthReport) throws {
    // Integrity first: the other checks mean nothing on a damaged file.
    let pragma = full ? "integrity_check(\(Self.integrityLineLimit))" : "quick_check(\(Self.integrityLineLimit))"
    let problems = try db.query("PRAGMA \(pragma)") { $0.string(0) }.filter { $0 != "ok" }
    if !problems.isEmpty {
      report.outcome = .damaged(
        "\(db.path): damaged: \(problems.count >= Self.integrityLineLimit ? "\(Self.integrityLineLimit)+" : "\(problems.count)") integrity problem(s), first: \(problems[0])"
      )
      report.findings.append(
        HealthFinding(check: "integrity", severity: .error, count: Int64(problems.count), detail: problems[0]))
      return
    }

    let foreignKeys = try db.query("SELECT \"table\", count(*) FROM pragma_foreign_key_check GROUP BY 1 ORDER BY 1") {
      ($0.string(0), $0.int64(1))
    }
    if !foreignKeys.isEmpty {
      report.findings.append(
        HealthFinding(
          check: "foreign-keys", severity: .error, count: foreignKeys.reduce(0) { $0 + $1.1 },
          detail: foreignKeys.map { "\($0.0): \($0.1)" }.joined(separator: ", ")))
    }

    try checkSchema(db, into: &report)
    try checkData(db, into: &report)
    try checkSummaries(db, into: &report)
  }

  func checkSchema(_ db: Database, into report: inout HealthReport) throws {
    let status: SchemaStatus
    do {
      status = try SchemaReference.status(of: db)
    } catch let error as StoreError {
      report.findings.append(HealthFinding(check: "schema-version", severity: .error, count: 1, detail: error.message))
      return
    }
    report.version = status.version
    if !status.drift.isEmpty {
      report.findings.append(
        HealthFinding(
          check: "migration-drift", severity: .error, count: Int64(status.drift.count),
          detail: status.drift.map(\.description).joined(separator: "; ")))
    }
    guard !status.isNewer else {
      report.findings.append(
        HealthFinding(
          check: "schema-version", severity: .error, count: 1,
          detail:
            "version \(status.version) is newer than this chatdb knows (\(status.latestVersion)); schema not compared"))
      return
    }
    let reference = try SchemaReference.database(version: status.version)
    let differences = try SchemaReference.compare(db, with: reference)
    for kind in [SchemaDifference.Kind.missing, .different, .extra] {
      let items = differences.filter { $0.kind == kind }
      guard !items.isEmpty else { continue }
      report.findings.append(
        HealthFinding(
          check: "schema-\(kind.rawValue)", severity: kind == .extra ? .warning : .error, count: Int64(items.count),
          detail: Self.list(items.map(\.description))))
    }
  }

  func checkData(_ db: Database, into report: inout HealthReport) throws {
    let messageColumns = Set(try db.query("SELECT name FROM pragma_table_info('Messages')") { $0.string(0) })
    let requestColumns = Set(try db.query("SELECT name FROM pragma_table_info('MessageRequests')") { $0.string(0) })
    let hasUsers = try db.int64("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'Users'") == 1

    func count(_ check: String, _ severity: HealthFinding.Severity, _ detail: String, _ sql: String) throws {
      let n = try db.int64(sql) ?? 0
      if n > 0 { report.findings.append(HealthFinding(check: check, severity: severity, count: n, detail: detail)) }
    }
    func values(_ sql: String) throws -> String {
      Self.list(try db.query(sql) { "'\($0.optionalString(0) ?? "NULL")' ×\($0.int64(1))" })
    }

    if messageColumns.contains("status") {
      let allowed = MessageStatus.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
      let bad = "FROM Messages WHERE status IS NULL OR status NOT IN (\(allowed))"
      try count(
        "message-status", .error, try values("SELECT status, count(*) \(bad) GROUP BY 1 ORDER BY 2 DESC LIMIT 5"),
        "SELECT count(*) \(bad)")
    }
    if requestColumns.contains("status") {
      let allowed = MessageRequestStatus.allCases.map { "'\($0.rawValue)'" }.joined(separator: ", ")
      let bad = "FROM MessageRequests WHERE status IS NULL OR status NOT IN (\(allowed))"
      try count(
        "request-status", .error, try values("SELECT status, count(*) \(bad) GROUP BY 1 ORDER BY 2 DESC LIMIT 5"),
        "SELECT count(*) \(bad)")
      if requestColumns.contains("last_sent_at") {
        try count(
          "request-sent-without-time", .error, "SENT requests with last_sent_at NULL",
          "SELECT count(*) FROM MessageRequests WHERE status = 'SENT' AND last_sent_at IS NULL")
      }
    }
    if requestColumns.contains("fail_count") {
      try count(
        "request-negative-fail-count", .error, "requests with fail_count < 0",
        "SELECT count(*) FROM MessageRequests WHERE fail_count < 0")
    }
    if messageColumns.contains("created_at") {
      // julianday() reads ISO 8601 with or without fractions and a trailing Z; NULL for anything else.
      let createdMs = "CAST(round((julianday(created_at) - 2440587.5) * 86400000) AS INTEGER)"
      let idMs = "((id >> \(MessageID.sequenceBits)) + \(MessageID.epochMilliseconds))"
      try count(
        "message-id-time", .warning,
        "id time and created_at differ by more than \(idTimeTolerance / 1000) s (or created_at is not a time)",
        "SELECT count(*) FROM Messages WHERE \(createdMs) IS NULL OR abs(\(idMs) - \(createdMs)) > \(idTimeTolerance)")
    }
    if hasUsers && messageColumns.contains("conversation_id") {
      try count(
        "orphan-messages", .error, "messages whose conversation_id is not a user",
        "SELECT count(*) FROM Messages WHERE conversation_id NOT IN (SELECT id FROM Users)")
    }
    if hasUsers && requestColumns.contains("to_user_id") {
      try count(
        "orphan-requests", .error, "requests whose to_user_id is not a user",
        "SELECT count(*) FROM MessageRequests WHERE to_user_id NOT IN (SELECT id FROM Users)")
    }
    if messageColumns.contains("deleted_at") {
      // Edits and deletes (migration 0008): a tombstone keeps no text and no history; a
      // version in the history is older than the text shown; no history without its message.
      try count(
        "tombstone-text", .error, "messages deleted for everyone that still hold text or edit history",
        """
        SELECT count(*) FROM Messages m WHERE m.deleted_at IS NOT NULL
          AND (m.content <> '' OR EXISTS (SELECT 1 FROM MessageEdits e WHERE e.message_id = m.id))
        """)
      try count(
        "orphan-edits", .error, "edit history rows whose message is gone",
        "SELECT count(*) FROM MessageEdits e WHERE NOT EXISTS (SELECT 1 FROM Messages m WHERE m.id = e.message_id)")
      try count(
        "edit-version", .error, "edit history rows not older than the text shown",
        "SELECT count(*) FROM MessageEdits e JOIN Messages m ON m.id = e.message_id WHERE e.version >= m.version")
      try count(
        "hidden-message-stored", .error, "messages deleted on this device (HiddenMessages) that are stored again",
        "SELECT count(*) FROM HiddenMessages h JOIN Messages m ON m.id = h.id")
    }
  }

  /// The chat list read from `ConversationSummaries` against the same list computed
  /// from the tables (the definition the triggers and bulk jobs keep it equal to).
  func checkSummaries(_ db: Database, into report: inout HealthReport) throws {
    guard
      try db.int64("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'ConversationSummaries'") == 1
    else { return }
    func rows(_ query: HotQuery) throws -> [Int64: String] {
      var rows: [Int64: String] = [:]
      try db.cachedStatement(query.sql).forEachRow([-1]) { row in
        rows[row.int64(0)] = row.values.map(\.description).joined(separator: "|")
      }
      return rows
    }
    // A table or column the lists need is missing: the schema findings say so.
    guard let stored = try? rows(HotQuery.conversationList),
      let computed = try? rows(HotQuery.conversationListFromTables)
    else {
      return
    }
    let differing = Set(stored.keys).union(computed.keys).filter { stored[$0] != computed[$0] }.sorted()
    guard !differing.isEmpty else { return }
    report.findings.append(
      HealthFinding(
        check: "conversation-summary", severity: .error, count: Int64(differing.count),
        detail: "conversations whose summary (the chat list) differs from their messages and requests: "
          + Self.list(differing.map(String.init))))
  }

  /// The search indexes (`SearchIndexCheck`): FTS5's integrity-check, and with `full`
  /// their entries against the rows: `search-index`.
  func checkSearchIndex(_ db: Database, into report: inout HealthReport) throws {
    let problems = try SearchIndexCheck.problems(db, compareWithRows: full)
    guard !problems.isEmpty else { return }
    report.findings.append(
      HealthFinding(check: "search-index", severity: .error, count: Int64(problems.count), detail: Self.list(problems)))
  }

  /// The first few items joined, with how many more there are.
  static func list(_ items: [String], limit: Int = 5) -> String {
    let shown = items.prefix(limit).joined(separator: ", ")
    return items.count > limit ? "\(shown), … (\(items.count - limit) more)" : shown
  }
}
