import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb check`: integrity, foreign keys, schema health and data sanity of one file
/// or every file in the data folder.
enum CheckCommand {
  static let command = Command(
    name: "check",
    abstract: "Check chat databases: integrity, foreign keys, schema health and data sanity.",
    discussion: """
      Runs PRAGMA quick_check (integrity_check with --full) and foreign_key_check, \
      compares the schema with a fresh one built from the shipped migrations up to the \
      file's version (tables, columns, indexes, triggers) and the applied migrations' \
      checksums, then looks for impossible data: unknown statuses, SENT requests \
      without last_sent_at, negative fail counts, message ids whose time is more than \
      a day from created_at, orphan rows. Exit codes: 0 clean, 4 findings, 5 could \
      not check; for one file, 65 when it is not a SQLite database or is damaged and \
      66 when it is missing. With --all, 5 when any file could not be checked or is \
      damaged, else 4 when any has findings.
      """,
    options: StoreOptions.options(all: true) + [
      .flag("--full", help: "Use PRAGMA integrity_check (slower, also checks index contents) instead of quick_check.")
    ],
    run: run
  )

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let target = try StoreOptions.target(arguments)
    let checker = HealthCheck(full: arguments.flag("--full"))
    let json = arguments.flag("--json")
    switch target {
    case .file(let path, _):
      let report = checker.check(path: path)
      if json {
        print(reportJSON(report).render())
      } else if report.outcome == .checked {
        print(text(report), terminator: "")
      }
      switch report.outcome {
      case .checked: return report.findings.isEmpty ? ChatExitCode.success : ChatExitCode.findings
      case .damaged(let reason):
        if !json { FileHandle.standardError.write(Data("Error: \(reason)\n".utf8)) }
        return ChatExitCode.code(for: .notADatabase)
      case .failed(let kind, let reason):
        if !json { FileHandle.standardError.write(Data("Error: \(reason)\n".utf8)) }
        return kind == .notFound ? ChatExitCode.code(for: .notFound) : ChatExitCode.couldNotCheck
      }
    case .all(let dataDirectory):
      let files = try StoreLocation.databaseFiles(in: dataDirectory)
      let progress = Progress(label: "Checking", total: Int64(files.count), unit: "files")
      var reports: [HealthReport] = []
      for (index, path) in files.enumerated() {
        reports.append(checker.check(path: path))
        progress.update(completed: Int64(index + 1))
      }
      progress.finish()
      let unchecked = reports.filter { $0.outcome != .checked }.count
      let withFindings = reports.filter { $0.outcome == .checked && !$0.findings.isEmpty }.count
      if json {
        print(
          JSONValue.object([
            "dataDirectory": .string(dataDirectory), "files": .array(reports.map(reportJSON)),
            "summary": .object([
              "files": .int(Int64(reports.count)), "clean": .int(Int64(reports.filter(\.isClean).count)),
              "withFindings": .int(Int64(withFindings)), "unchecked": .int(Int64(unchecked)),
            ]),
          ]).render())
      } else {
        print(fleetText(reports), terminator: "")
        print("\(reports.count) file(s) in \(dataDirectory): \(reports.filter(\.isClean).count) clean, \(withFindings) with findings, \(unchecked) not checked")
      }
      return unchecked > 0 ? ChatExitCode.couldNotCheck : withFindings > 0 ? ChatExitCode.findings : ChatExitCode.success
    }
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
          columns: [.init("CHECK"), .init("SEVERITY"), .init("COUNT", alignment: .right), .init("DETAIL")],
          rows: report.findings.map { [$0.check, $0.severity.rawValue, String($0.count), $0.detail] }
        ).render()
    }
  }

  static func fleetText(_ reports: [HealthReport]) -> String {
    Table(
      columns: [.init("FILE"), .init("VERSION", alignment: .right), .init("STATE"), .init("FINDINGS")],
      rows: reports.map { report in
        let detail: String =
          switch report.outcome {
          case .checked: report.findings.map { "\($0.check) ×\($0.count)" }.joined(separator: ", ")
          case .damaged(let reason), .failed(_, let reason): reason
          }
        return [(report.path as NSString).lastPathComponent, report.version.map(String.init) ?? "-", state(report), detail]
      }
    ).render()
  }

  // MARK: - JSON

  static func reportJSON(_ report: HealthReport) -> JSONValue {
    var object: [String: JSONValue] = [
      "path": .string(report.path), "version": report.version.map { .int(Int64($0)) } ?? .null, "clean": .bool(report.isClean),
      "findings": .array(
        report.findings.map {
          .object(["check": .string($0.check), "severity": .string($0.severity.rawValue), "count": .int($0.count), "detail": .string($0.detail)])
        }),
    ]
    switch report.outcome {
    case .checked: object["state"] = .string("checked")
    case .damaged(let reason):
      object["state"] = .string("damaged")
      object["error"] = .string(reason)
    case .failed(let kind, let reason):
      object["state"] = .string("failed")
      object["error"] = .string(reason)
      object["kind"] = .string(kind.rawValue)
    }
    return .object(object)
  }
}
