import ChatCLI
import ChatMaintenance
import ChatStore

/// `chatdb check`: integrity, foreign keys, schema health and data sanity of one file
/// or every file in the data folder.
enum CheckCommand: ParsableCommand {
  static let name = "check"
  static let abstract = "Check chat databases: integrity, foreign keys, schema health and data sanity."
  static let discussion: String? = """
    Runs PRAGMA quick_check (integrity_check with --full) and foreign_key_check, \
    compares the schema with a fresh one built from the shipped migrations up to the \
    file's version (tables, columns, indexes, triggers) and the applied migrations' \
    checksums, then looks for impossible data: unknown statuses, SENT requests \
    without last_sent_at, negative fail counts, message ids whose time is more than \
    a day from created_at, orphan rows. Exit codes: 0 clean, 4 findings; a file that \
    could not be checked gets its error's code (65 damaged or not a database, 66 \
    missing, 75 locked). With --all: 1 when any file could not be checked, else 4 \
    when any has findings. Opens files read-only and leaves nothing behind.
    """

  static let examples = [
    "chatdb check --user 42",
    "chatdb check --all --jobs 2",
    "chatdb check --db ./chats-42.db --full --json",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var full: Bool
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      full = o.flag(
        "--full",
        help:
          "Use PRAGMA integrity_check (slower, also checks index contents) instead of quick_check, and compare the search index with the text of the rows (about a minute for 1,000,000 messages)."
      )
    }
    func validate() throws { try store.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let checker = HealthCheck(full: options.full)
    let reports = context.runEach(try options.store.targets(), jobs: options.store.jobs, label: "Checking") {
      target, _ in
      let report = checker.check(path: target.path)
      switch report.outcome {
      case .checked: break
      case .damaged(let reason): throw StoreError(.notADatabase, reason, path: target.path)
      case .failed(let kind, let reason): throw StoreError(kind, reason, path: target.path)
      }
      return try FileResult(
        Result(report), text: text(report),
        row: [
          report.version.map(String.init) ?? "-", state(report),
          report.findings.map { "\($0.check) ×\($0.count)" }.joined(separator: ", "),
        ],
        status: report.findings.isEmpty ? .success : .findings,
        totals: ["clean": report.isClean ? 1 : 0, "withFindings": report.isClean ? 0 : 1])
    }
    context.report(
      reports,
      fleet: options.store.all
        ? [.init("VERSION", alignment: .right), .init("STATE"), .init("FINDINGS", maxWidth: 60)] : nil,
      summaryLine: options.store.all
        ? "\(reports.count) file(s) in \(options.store.dataDirectory): \(reports.total("clean")) clean, "
          + "\(reports.total("withFindings")) with findings, \(reports.failedCount) not checked" : nil)
  }

  // MARK: - Text

  static func state(_ report: HealthReport) -> String {
    switch report.outcome {
    case .checked: report.findings.isEmpty ? "clean" : "\(report.findings.count) finding(s)"
    case .damaged: "DAMAGED"
    case .failed: "NOT CHECKED"
    }
  }

  static func text(_ report: HealthReport) -> String {
    switch report.outcome {
    case .damaged(let reason), .failed(_, let reason):
      return reason + "\n"
    case .checked:
      let version = report.version.map { " (schema version \($0))" } ?? ""
      guard !report.findings.isEmpty else { return "\(report.path)\(version): clean\n" }
      return "\(report.path)\(version): \(report.findings.count) finding(s)\n"
        + Table(
          columns: [
            .init("CHECK"), .init("SEVERITY"), .init("COUNT", alignment: .right), .init("DETAIL", maxWidth: 60),
          ],
          rows: report.findings.map { [$0.check, $0.severity.rawValue, String($0.count), $0.detail] }
        ).render()
    }
  }

  // MARK: - JSON

  /// `result`: the file's schema version and what the checks found.
  struct Result: CommandResult {
    struct Finding: Encodable {
      var check: String
      var severity: String
      var count: Int64
      var detail: String
    }
    var version: Int?
    var clean: Bool
    var findings: [Finding]

    init(version: Int?, clean: Bool, findings: [Finding]) {
      self.version = version
      self.clean = clean
      self.findings = findings
    }

    init(_ report: HealthReport) {
      self.init(
        version: report.version, clean: report.isClean,
        findings: report.findings.map {
          Finding(check: $0.check, severity: $0.severity.rawValue, count: $0.count, detail: $0.detail)
        })
    }

    static var example: Result {
      Result(
        version: 6, clean: false,
        findings: [
          Finding(
            check: "request-sent-without-time", severity: "error", count: 2,
            detail: "SENT requests without last_sent_at: 17, 18")
        ])
    }
  }
}
