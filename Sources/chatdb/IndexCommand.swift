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
  static let command = Command(
    name: "index",
    abstract: "List, verify, repair and analyze the indexes of a chat database.",
    discussion: """
      The expected indexes are those of a fresh database built from the shipped \
      migrations up to the file's version. 'verify' plans every hot query of the app \
      and exits 4 when one reads Messages or MessageRequests in full.
      """,
    subcommands: [list, verify, apply, analyze]
  )

  static let list = Command(
    name: "list",
    abstract: "Show every index: table, columns, size, and whether the schema expects it, lacks it or does not know it.",
    options: StoreOptions.options(all: false),
    run: runList
  )

  static let verify = Command(
    name: "verify",
    abstract: "Run EXPLAIN QUERY PLAN on every hot query; exit 4 when one scans Messages or MessageRequests.",
    options: StoreOptions.options(all: false),
    run: runVerify
  )

  static let apply = Command(
    name: "apply",
    abstract: "Create the expected indexes the file lacks, in one transaction.",
    options: StoreOptions.options(all: false) + [
      .flag("--drop-unknown", help: "Also drop the indexes the schema does not expect."),
      .flag("--dry-run", help: "Print the SQL without changing the file."),
    ],
    run: runApply
  )

  static let analyze = Command(
    name: "analyze",
    abstract: "Run ANALYZE and report what changed in the planner's statistics (sqlite_stat1).",
    options: StoreOptions.options(all: false),
    run: runAnalyze
  )

  /// The one file an index command works on; `--all` is not offered.
  static func path(_ arguments: ParsedArguments) throws -> String {
    guard case .file(let path, _) = try StoreOptions.target(arguments) else { throw arguments.usageError("'--all' is not supported here") }
    guard FileSystem.exists(path) else { throw StoreError(.notFound, "\(path): no such file", path: path) }
    return path
  }

  static func open(_ path: String, mode: Database.Mode) throws -> Database {
    do { return try Database(path: path, mode: mode) } catch { throw StoreError.from(error, path: path, doing: "open") }
  }

  // MARK: - list

  static func runList(_ arguments: ParsedArguments) throws -> Int32 {
    let path = try path(arguments)
    let entries: [IndexEntry]
    do { entries = try IndexTools.list(try open(path, mode: .readOnly)) } catch { throw StoreError.from(error, path: path, doing: "list the indexes of") }
    if arguments.flag("--json") {
      print(
        JSONValue.object([
          "path": .string(path),
          "indexes": .array(
            entries.map {
              .object([
                "name": .string($0.name), "table": .string($0.table), "columns": .array($0.columns.map { .string($0) }),
                "bytes": .int($0.bytes), "state": .string($0.state.rawValue), "sql": .string($0.sql),
              ])
            }),
        ]).render())
    } else {
      print(
        Table(
          columns: [.init("INDEX"), .init("TABLE"), .init("COLUMNS"), .init("SIZE", alignment: .right), .init("STATE")],
          rows: entries.map { [$0.name, $0.table, $0.columns.joined(separator: ", "), ByteCount.format($0.bytes), $0.state.rawValue] }
        ).render(), terminator: "")
      let missing = entries.filter { $0.state == .missing }.count
      let unknown = entries.filter { $0.state == .unknown }.count
      print("\(entries.count) index(es): \(missing) missing, \(unknown) unknown")
    }
    return ChatExitCode.success
  }

  // MARK: - verify

  static func runVerify(_ arguments: ParsedArguments) throws -> Int32 {
    let path = try path(arguments)
    let checks = try IndexTools.verify(open(path, mode: .readOnly))
    let failing = checks.filter { !$0.isOK }
    if arguments.flag("--json") {
      print(
        JSONValue.object([
          "path": .string(path), "ok": .bool(failing.isEmpty),
          "queries": .array(
            checks.map {
              .object([
                "name": .string($0.name), "plan": .string($0.plan), "scans": .array($0.scans.map { .string($0) }),
                "error": $0.error.map { .string($0) } ?? .null, "ok": .bool($0.isOK),
              ])
            }),
        ]).render())
    } else {
      for check in checks {
        let verdict = check.error != nil ? "ERROR" : check.scans.isEmpty ? "ok" : "SCAN \(check.scans.joined(separator: ", "))"
        print("\(verdict)\t\(check.name)\t\(check.error ?? check.plan)")
      }
      print(
        failing.isEmpty
          ? "\(checks.count) hot queries: all use indexes"
          : "\(failing.count) of \(checks.count) hot queries scan or fail: \(failing.map(\.name).joined(separator: "; ")); run 'chatdb index apply'")
    }
    return failing.isEmpty ? ChatExitCode.success : ChatExitCode.findings
  }

  // MARK: - apply

  static func runApply(_ arguments: ParsedArguments) throws -> Int32 {
    let path = try path(arguments)
    let dryRun = arguments.flag("--dry-run")
    let db = try open(path, mode: dryRun ? .readOnly : .readWrite)
    let statements: [String]
    do { statements = try IndexTools.repairStatements(db, dropUnknown: arguments.flag("--drop-unknown")) } catch {
      throw StoreError.from(error, path: path, doing: "read the indexes of")
    }
    if !dryRun {
      let progress = Progress(label: "Building indexes", total: Int64(statements.count), unit: "statements")
      try IndexTools.apply(statements, to: db) { done, _ in progress.update(completed: Int64(done)) }
      progress.finish()
    }
    if arguments.flag("--json") {
      print(
        JSONValue.object(["path": .string(path), "dryRun": .bool(dryRun), "statements": .array(statements.map { .string($0) })]).render())
    } else if statements.isEmpty {
      print("\(path): the indexes match the schema; nothing to do")
    } else {
      for sql in statements { print(sql + ";") }
      print(dryRun ? "\(statements.count) statement(s) not run (--dry-run)" : "\(statements.count) statement(s) run in one transaction")
    }
    return ChatExitCode.success
  }

  // MARK: - analyze

  static func runAnalyze(_ arguments: ParsedArguments) throws -> Int32 {
    let path = try path(arguments)
    let report = try IndexTools.analyze(try open(path, mode: .readWrite))
    if arguments.flag("--json") {
      print(
        JSONValue.object([
          "path": .string(path), "rowsBefore": .int(Int64(report.rowsBefore)), "rowsAfter": .int(Int64(report.rowsAfter)),
          "changed": .array(report.changed.map { .string($0) }),
        ]).render())
    } else {
      print("sqlite_stat1: \(report.rowsBefore) row(s) before, \(report.rowsAfter) after; \(report.changed.count) changed")
      for name in report.changed { print("  \(name)") }
    }
    return ChatExitCode.success
  }
}
