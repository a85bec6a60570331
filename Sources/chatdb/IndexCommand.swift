import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `chatdb index`: list, verify, repair and analyze a file's indexes against the
/// schema and the hot-query catalog (`HotQuery.all`).
enum IndexCommand {
  static let command = Command.group(
    name: "index",
    abstract: "List, verify, repair and analyze the indexes of a chat database.",
    discussion: """
      The expected indexes are those of a fresh database built from the shipped \
      migrations up to the file's version. 'verify' plans every hot query of the app \
      and exits 4 when one reads a table without the index it should use, 6 when one \
      cannot be planned.
      """,
    subcommands: [
      Command(IndexListCommand.self), Command(IndexVerifyCommand.self), Command(IndexApplyCommand.self),
      Command(IndexAnalyzeCommand.self),
    ],
    examples: ["chatdb index verify --user 42", "chatdb index apply --all --dry-run"]
  )

  /// The options of every index subcommand: which file(s).
  struct Options: ParsableOptions {
    var store: StoreSelection
    init(_ o: inout OptionReader) { store = StoreSelection(&o, all: true) }
    func validate() throws { try store.validate() }
  }

}

// MARK: - list

enum IndexListCommand: ParsableCommand {
  static let name = "list"
  static let abstract =
    "Show every index: table, columns, size, and whether the schema expects it, lacks it or does not know it."
  static let examples = [
    "chatdb index list --user 42",
    "chatdb index list --all",
  ]

  typealias Options = IndexCommand.Options

  static func run(_ options: Options, in context: CommandContext) throws {
    let reports = context.runEach(try options.store.targets(), jobs: options.store.jobs, label: "Listing") {
      target, _ in
      let entries: [IndexEntry]
      do { entries = try IndexTools.list(try openExisting(target.path, mode: .readOnly)) } catch {
        throw StoreError.from(error, path: target.path, doing: "list the indexes of", otherwise: .readFailed)
      }
      let missing = entries.filter { $0.state == .missing }.count
      let unknown = entries.filter { $0.state == .unknown }.count
      let table = Table(
        columns: [.init("INDEX"), .init("TABLE"), .init("COLUMNS"), .init("SIZE", alignment: .right), .init("STATE")],
        rows: entries.map {
          [$0.name, $0.table, $0.columns.joined(separator: ", "), ByteCount.format($0.bytes), $0.state.rawValue]
        }
      ).render()
      return try FileResult(
        Result(
          indexes: entries.map {
            .init(
              name: $0.name, table: $0.table, columns: $0.columns, bytes: $0.bytes, state: $0.state.rawValue,
              sql: $0.sql)
          }),
        text: table + "\(entries.count) index(es): \(missing) missing, \(unknown) unknown",
        row: [String(entries.count), String(missing), String(unknown)])
    }
    context.report(
      reports,
      fleet: options.store.all
        ? [
          .init("INDEXES", alignment: .right), .init("MISSING", alignment: .right), .init("UNKNOWN", alignment: .right),
        ] : nil)
  }

  /// `result`: every index of the file.
  struct Result: CommandResult {
    struct Index: Encodable {
      var name: String
      var table: String
      var columns: [String]
      var bytes: Int64
      /// `expected`, `missing` or `unknown`.
      var state: String
      var sql: String
    }
    var indexes: [Index]

    static var example: Result {
      Result(indexes: [
        Index(
          name: "idx_messages_conversation", table: "Messages", columns: ["conversation", "id"], bytes: 1_843_200,
          state: "expected", sql: "CREATE INDEX idx_messages_conversation ON Messages(conversation, id)")
      ])
    }
  }
}

// MARK: - verify

enum IndexVerifyCommand: ParsableCommand {
  static let name = "verify"
  static let abstract =
    "Run EXPLAIN QUERY PLAN on every hot query; exit 4 when one scans, 6 when one cannot be planned."
  static let discussion: String? = """
    Also runs FTS5's integrity-check on the search index (migration 0005), and with \
    --full compares its entries with an index built afresh from the rows (about a \
    minute for 1,000,000 messages): exit 4 when it differs.
    """

  static let examples = [
    "chatdb index verify --user 42",
    "chatdb index verify --all --full",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var full: Bool
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      full = o.flag("--full", help: "Also compare the search index's entries with the text of the rows.")
    }
    func validate() throws { try store.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let reports = context.runEach(try options.store.targets(), jobs: options.store.jobs, label: "Verifying") {
      target, _ in
      let checks: [HotQueryCheck]
      do { checks = try IndexTools.verify(openExisting(target.path, mode: .readOnly)) } catch {
        throw StoreError.from(error, path: target.path, doing: "verify the indexes of", otherwise: .readFailed)
      }
      let unplanned = checks.filter { $0.outcome == .planFailed }
      let scanning = checks.filter { $0.outcome == .scans }
      let search: [String]
      do {
        search = try SearchIndexCheck.problems(
          openExisting(target.path, mode: .readOnly), compareWithRows: options.full)
      } catch {
        throw StoreError.from(error, path: target.path, doing: "verify the search index of", otherwise: .readFailed)
      }
      var lines = checks.map { check in
        switch check.outcome {
        case .ok: return "ok\t\(check.name)\t\(check.plan)"
        case .planFailed: return "ERROR\t\(check.name)\t\(check.error ?? "cannot be planned")"
        case .scans: return "SCAN\t\(check.name)\t" + check.findings.map(\.description).joined(separator: "; ")
        }
      }
      lines +=
        search.isEmpty
        ? [
          "ok\tsearch index\tintegrity-check passed" + (options.full ? "; the entries equal the text of the rows" : "")
        ]
        : search.map { "STALE\tsearch index\t\($0)" }
      lines.append(
        unplanned.isEmpty && scanning.isEmpty
          ? "\(checks.count) hot queries: all use their indexes"
          : "\(scanning.count) of \(checks.count) hot queries scan or miss their index and \(unplanned.count) cannot be planned: "
            + (unplanned + scanning).map(\.name).joined(separator: "; ")
            + (scanning.isEmpty ? "" : "; run 'chatdb index apply'"))
      return try FileResult(
        Result(
          queries: checks.map {
            .init(
              name: $0.name, plan: $0.plan, outcome: $0.outcome.rawValue, findings: $0.findings.map(\.description),
              error: $0.error, ok: $0.isOK)
          },
          searchIndex: .init(ok: search.isEmpty, problems: search)),
        text: lines.joined(separator: "\n"),
        row: [String(checks.count), String(scanning.count), String(unplanned.count), search.isEmpty ? "ok" : "STALE"],
        status: !unplanned.isEmpty ? .unplannable : !scanning.isEmpty || !search.isEmpty ? .findings : .success,
        totals: [
          "queries": Int64(checks.count), "clean": unplanned.isEmpty && scanning.isEmpty && search.isEmpty ? 1 : 0,
        ])
    }
    let clean = reports.total("clean")
    context.report(
      reports,
      fleet: options.store.all
        ? [
          .init("QUERIES", alignment: .right), .init("SCANS", alignment: .right), .init("UNPLANNED", alignment: .right),
          .init("SEARCH"),
        ] : nil,
      summaryLine: options.store.all
        ? "\(reports.count) file(s): \(clean) clean, \(Int64(reports.count - reports.failedCount) - clean) with findings, "
          + "\(reports.failedCount) failed (\(reports.total("queries").grouped) hot query plans checked)" : nil)
  }

  /// `result`: each hot query's plan, and the search index's health.
  struct Result: CommandResult {
    struct Query: Encodable {
      var name: String
      var plan: String
      /// `ok`, `scans` or `planFailed`.
      var outcome: String
      var findings: [String]
      var error: String?
      var ok: Bool
    }
    struct SearchIndex: Encodable {
      var ok: Bool
      var problems: [String]
    }
    var queries: [Query]
    var searchIndex: SearchIndex

    static var example: Result {
      Result(
        queries: [
          Query(
            name: "conversation page", plan: "SEARCH Messages USING INDEX idx_messages_conversation (conversation=?)",
            outcome: "ok", findings: [], error: nil, ok: true),
          Query(
            name: "unread count", plan: "SCAN Messages", outcome: "scans",
            findings: ["SCAN Messages: no index used"], error: nil, ok: false),
          Query(
            name: "pending requests", plan: "", outcome: "planFailed", findings: [],
            error: "no such column: last_sent_at", ok: false),
        ],
        searchIndex: SearchIndex(ok: true, problems: []))
    }
  }
}

// MARK: - apply

enum IndexApplyCommand: ParsableCommand {
  static let name = "apply"
  static let abstract = "Create the expected indexes the file lacks, in one transaction; rebuild a stale search index."
  static let discussion: String? = """
    The search index is rebuilt from the rows, in its own transaction, when FTS5's \
    integrity-check fails or with --rebuild-search (after 'chatdb index verify --full' \
    or 'chatdb check --full' found it differing from the text of its rows: a writer \
    that turned triggers off); about half a minute for 1,000,000 messages.
    """

  static let examples = [
    "chatdb index apply --user 42 --dry-run",
    "chatdb index apply --all --drop-unknown",
    "chatdb index apply --user 42 --rebuild-search",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var dropUnknown: Bool
    var dryRun: Bool
    var rebuildSearch: Bool
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      dropUnknown = o.flag("--drop-unknown", help: "Also drop the indexes the schema does not expect.")
      rebuildSearch = o.flag("--rebuild-search", help: "Rebuild the search index from the rows.")
      dryRun = o.flag("--dry-run", help: "Print the SQL without changing the file.")
    }
    func validate() throws { try store.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let reports = context.runEach(try options.store.targets(), jobs: options.store.jobs, label: "Building indexes") {
      target, _ in
      let db = try openExisting(target.path, mode: options.dryRun ? .readOnly : .readWrite)
      var statements: [String]
      do { statements = try IndexTools.repairStatements(db, dropUnknown: options.dropUnknown) } catch {
        throw StoreError.from(error, path: target.path, doing: "read the indexes of", otherwise: .readFailed)
      }
      if !options.dryRun { try IndexTools.apply(statements, to: db) { _, _ in } }
      if try SearchIndexCheck.exists(db),
        try options.rebuildSearch || !SearchIndexCheck.problems(db, compareWithRows: false).isEmpty
      {
        statements.append(IndexTools.rebuildSearchIndex)
        if !options.dryRun { try SearchIndexCheck.rebuild(db) }
      }
      let text =
        statements.isEmpty
        ? "\(target.path): the indexes match the schema; nothing to do"
        : (statements.map { $0 + ";" } + [
          options.dryRun
            ? "\(statements.count) statement(s) not run (--dry-run)"
            : "\(statements.count) statement(s) run in one transaction"
        ]).joined(separator: "\n")
      return try FileResult(
        Result(dryRun: options.dryRun, statements: statements),
        text: text,
        row: [
          String(statements.count),
          options.dryRun ? "not run (--dry-run)" : statements.isEmpty ? "nothing to do" : "applied",
        ])
    }
    context.report(reports, fleet: options.store.all ? [.init("STATEMENTS", alignment: .right), .init("RESULT")] : nil)
  }

  /// `result`: the SQL run (or, with `--dry-run`, that would run).
  struct Result: CommandResult {
    var dryRun: Bool
    var statements: [String]

    static var example: Result {
      Result(dryRun: false, statements: ["CREATE INDEX idx_messages_conversation ON Messages(conversation, id)"])
    }
  }
}

// MARK: - analyze

enum IndexAnalyzeCommand: ParsableCommand {
  static let name = "analyze"
  static let abstract =
    "Run ANALYZE and PRAGMA optimize, and report what changed in the planner's statistics (sqlite_stat1)."
  static let examples = [
    "chatdb index analyze --user 42",
    "chatdb index analyze --all --json",
  ]

  typealias Options = IndexCommand.Options

  static func run(_ options: Options, in context: CommandContext) throws {
    let reports = context.runEach(try options.store.targets(), jobs: options.store.jobs, label: "Analyzing") {
      target, _ in
      let report = try IndexTools.analyze(try openExisting(target.path, mode: .readWrite))
      return try FileResult(
        Result(rowsBefore: report.rowsBefore, rowsAfter: report.rowsAfter, changed: report.changed),
        text: ([
          "sqlite_stat1: \(report.rowsBefore) row(s) before, \(report.rowsAfter) after; \(report.changed.count) changed"
        ]
          + report.changed.map { "  " + $0 }).joined(separator: "\n"),
        row: [String(report.rowsBefore), String(report.rowsAfter), String(report.changed.count)])
    }
    context.report(
      reports,
      fleet: options.store.all
        ? [.init("BEFORE", alignment: .right), .init("AFTER", alignment: .right), .init("CHANGED", alignment: .right)]
        : nil)
  }
  /// `result`: the rows of `sqlite_stat1` before and after, and those that changed.
  struct Result: CommandResult {
    var rowsBefore: Int
    var rowsAfter: Int
    var changed: [String]

    static var example: Result {
      Result(rowsBefore: 9, rowsAfter: 11, changed: ["Messages.idx_messages_conversation"])
    }
  }
}
