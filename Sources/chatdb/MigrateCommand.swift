import ChatCLI
import ChatStore
import Foundation

/// `chatdb migrate`: create a database or upgrade it to the current schema.
enum MigrateCommand: ParsableCommand {
  static let name = "migrate"
  static let abstract = "Create a database or upgrade it to the latest schema version."
  static let discussion: String? = """
    A missing file is created at the latest version. An existing one is upgraded one \
    migration at a time, each in its own transaction; before the first change a \
    consistent backup is written beside it as <file>.bak-v<from>. Files newer than \
    this chatdb, files whose applied migrations differ from the shipped ones, and \
    downgrades are refused. A file already at the target version is only read.
    """

  static let examples = [
    "chatdb migrate --user 42",
    "chatdb migrate --all --dry-run",
    "chatdb migrate --db ./chats-42.db --to 5 --no-backup",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var version: Int?
    var dryRun: Bool
    var backup: Bool
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      version = o.option("--to", valueName: "version", help: "Migrate to this version instead of the latest.") {
        text -> Int? in
        guard let n = Int(text), n >= 0 else { throw InvalidValue("a version is a number from 0") }
        return n
      }
      dryRun = o.flag("--dry-run", help: "Print the migrations and their SQL without touching the file.")
      backup = !o.flag("--no-backup", help: "Do not write the backup before changing a file.")
    }
    func validate() throws { try store.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let reports = context.runEach(
      try options.store.targets(), jobs: options.store.jobs, label: options.dryRun ? "Checking" : "Migrating"
    ) { target, progress in
      let outcome = try migrateOne(path: target.path, owner: target.userID, options, progress: progress)
      let result =
        outcome.migrations.isEmpty
        ? "up to date"
        : options.dryRun ? "would apply \(outcome.migrations.count)" : outcome.created ? "created" : "migrated"
      return try FileResult(
        outcome.result, text: outcome.text(dryRun: options.dryRun),
        row: [String(outcome.fromVersion), String(outcome.toVersion), result],
        totals: ["changed": outcome.migrations.isEmpty || options.dryRun ? 0 : 1])
    }
    context.report(
      reports,
      fleet: options.store.all
        ? [.init("FROM", alignment: .right), .init("TO", alignment: .right), .init("RESULT")] : nil,
      summaryLine: options.store.all
        ? "\(reports.count) file(s) in \(options.store.dataDirectory): \(reports.count - reports.failedCount) ok "
          + "(\(reports.total("changed")) changed), \(reports.failedCount) failed" : nil)
  }

  /// What happened (or would happen) to one file.
  struct Outcome {
    var path: String
    var fromVersion: Int
    var toVersion: Int
    var migrations: [Migration]
    var backupPath: String?
    var created: Bool
    var dryRun: Bool

    func text(dryRun: Bool) -> String {
      let names = migrations.map { "\(String(format: "%04d", $0.version))_\($0.name)" }.joined(separator: ", ")
      if dryRun {
        guard !migrations.isEmpty else { return "\(path): already at version \(fromVersion); nothing to do" }
        var lines = [
          "\(path): would \(created ? "create it at" : "migrate from version \(fromVersion) to") version \(toVersion)"
        ]
        for migration in migrations {
          lines.append("")
          lines.append("-- \(migration.fileName) (sha256 \(migration.checksum.prefix(16)))")
          lines.append(migration.sql.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        return lines.joined(separator: "\n")
      }
      if migrations.isEmpty { return "\(path): already at version \(fromVersion)" }
      if created { return "\(path): created at version \(toVersion) (\(names))" }
      let backup = backupPath.map { "; backup: \($0)" } ?? ""
      return "\(path): migrated from version \(fromVersion) to \(toVersion) (\(names))\(backup)"
    }

    var result: Result {
      Result(
        fromVersion: fromVersion, toVersion: toVersion, created: created, dryRun: dryRun, backup: backupPath,
        migrations: migrations.map { .init(version: $0.version, name: $0.name, checksum: $0.checksum) })
    }
  }

  static func migrateOne(path: String, owner: Int64?, _ options: Options, progress: FileProgress) throws -> Outcome {
    var migrator = Migrator()
    // Migration 0005 builds the search index of the rows already in the file: the
    // progress line counts them (on a terminal, one file at a time).
    migrator.indexProgress = { done, total in progress.update(completed: done, total: total) }
    if options.dryRun {
      let status = try migrator.status(ofFileAt: path)
      let plan = try migrator.plan(for: status, to: options.version)
      return Outcome(
        path: path, fromVersion: status.version, toVersion: plan.last?.version ?? status.version, migrations: plan,
        backupPath: nil, created: !status.exists, dryRun: true)
    }
    try prepareFolder(for: path)
    let report = try migrator.migrate(fileAt: path, to: options.version, owner: owner, backup: options.backup)
    return Outcome(
      path: path, fromVersion: report.fromVersion, toVersion: report.toVersion, migrations: report.applied,
      backupPath: report.backupPath, created: report.created, dryRun: false)
  }

  /// `result`: the versions before and after, the migrations applied (or, with
  /// `--dry-run`, that would be), and the backup written.
  struct Result: CommandResult {
    struct Applied: Encodable {
      var version: Int
      var name: String
      var checksum: String
    }
    var fromVersion: Int
    var toVersion: Int
    var created: Bool
    var dryRun: Bool
    var backup: String?
    var migrations: [Applied]

    static var example: Result {
      Result(
        fromVersion: 5, toVersion: 6, created: false, dryRun: false,
        backup: "/home/me/.local/share/chatdb/chats-42.db.bak-v5",
        migrations: [
          Applied(
            version: 6, name: "delivery_acks",
            checksum: "4e6a8c0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a4c6e8b0d2f4a6c")
        ])
    }
  }
}
