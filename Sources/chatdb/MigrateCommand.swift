import ChatCLI
import ChatStore
import Foundation

/// `chatdb migrate`: create a database or upgrade it to the current schema.
enum MigrateCommand {
  static let command = Command(
    name: "migrate",
    abstract: "Create a database or upgrade it to the latest schema version.",
    discussion: """
      A missing file is created at the latest version. An existing one is upgraded one \
      migration at a time, each in its own transaction; before the first change a \
      consistent backup is written beside it as <file>.bak-v<from>. Files newer than \
      this chatdb, files whose applied migrations differ from the shipped ones, and \
      downgrades are refused.
      """,
    options: StoreOptions.options(all: true) + [
      .value("--to", valueName: "version", help: "Migrate to this version instead of the latest."),
      .flag("--dry-run", help: "Print the migrations and their SQL without touching the file."),
      .flag("--no-backup", help: "Do not write the backup before changing a file."),
    ],
    subcommands: [MigrateStatusCommand.command],
    run: run
  )

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let target = try StoreOptions.target(arguments)
    let version = try arguments.value("--to") { text -> Int? in
      guard let n = Int(text), n >= 0 else { throw InvalidValue("a version is a number from 0") }
      return n
    }
    let options = Options(
      version: version, dryRun: arguments.flag("--dry-run"), backup: !arguments.flag("--no-backup"),
      json: arguments.flag("--json"))
    switch target {
    case .file(let path, let owner):
      let outcome = try migrateOne(path: path, owner: owner, options)
      print(options.json ? outcome.json.render() : outcome.text(dryRun: options.dryRun))
      return ChatExitCode.success
    case .all(let dataDirectory):
      return try migrateAll(in: dataDirectory, options)
    }
  }

  struct Options {
    var version: Int?
    var dryRun: Bool
    var backup: Bool
    var json: Bool
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

    var json: JSONValue {
      .object([
        "path": .string(path),
        "fromVersion": .int(Int64(fromVersion)),
        "toVersion": .int(Int64(toVersion)),
        "created": .bool(created),
        "dryRun": .bool(dryRun),
        "backup": backupPath.map { .string($0) } ?? .null,
        "migrations": .array(
          migrations.map {
            .object(["version": .int(Int64($0.version)), "name": .string($0.name), "checksum": .string($0.checksum)])
          }),
      ])
    }
  }

  static func migrateOne(path: String, owner: Int64?, _ options: Options) throws -> Outcome {
    let migrator = Migrator()
    if options.dryRun {
      let status = try migrator.status(ofFileAt: path)
      let plan = try migrator.plan(for: status, to: options.version)
      return Outcome(
        path: path, fromVersion: status.version, toVersion: plan.last?.version ?? status.version, migrations: plan,
        backupPath: nil, created: !status.exists, dryRun: true)
    }
    try StoreOptions.prepareFolder(for: path)
    let report = try migrator.migrate(fileAt: path, to: options.version, owner: owner, backup: options.backup)
    return Outcome(
      path: path, fromVersion: report.fromVersion, toVersion: report.toVersion, migrations: report.applied,
      backupPath: report.backupPath, created: report.created, dryRun: false)
  }

  /// Migrates every file in the folder; one failing file neither stops nor harms the rest.
  static func migrateAll(in dataDirectory: String, _ options: Options) throws -> Int32 {
    let files = try StoreLocation.databaseFiles(in: dataDirectory)
    let progress = Progress(label: options.dryRun ? "Checking" : "Migrating", total: Int64(files.count), unit: "files")
    var results: [(path: String, result: Result<Outcome, StoreError>)] = []
    for (index, path) in files.enumerated() {
      do {
        results.append((path, .success(try migrateOne(path: path, owner: StoreLocation.userID(fromFileName: path), options))))
      } catch {
        results.append((path, .failure(StoreError.from(error, path: path, doing: "migrate"))))
      }
      progress.update(completed: Int64(index + 1))
    }
    progress.finish()
    let failed = results.filter { if case .failure = $0.result { true } else { false } }.count

    if options.json {
      let items: [JSONValue] = results.map { item in
        switch item.result {
        case .success(let outcome):
          var object = outcome.json
          if case .object(var fields) = object {
            fields["ok"] = .bool(true)
            object = .object(fields)
          }
          return object
        case .failure(let error):
          return .object([
            "path": .string(item.path), "ok": .bool(false), "error": .string(error.message),
            "exitCode": .int(Int64(error.exitCode)),
          ])
        }
      }
      let summary: JSONValue = .object([
        "dataDirectory": .string(dataDirectory), "files": .int(Int64(files.count)),
        "failed": .int(Int64(failed)), "results": .array(items),
      ])
      print(summary.render())
    } else {
      var rows: [[String]] = []
      for item in results {
        let name = (item.path as NSString).lastPathComponent
        switch item.result {
        case .success(let o):
          let result =
            o.migrations.isEmpty ? "up to date" : options.dryRun ? "would apply \(o.migrations.count)" : o.created ? "created" : "migrated"
          rows.append([name, String(o.fromVersion), String(o.toVersion), result])
        case .failure(let error):
          rows.append([name, "-", "-", "FAILED: \(error.message)"])
        }
      }
      print(Table(columns: [.init("FILE"), .init("FROM", alignment: .right), .init("TO", alignment: .right), .init("RESULT")], rows: rows).render())
      print("\(files.count) file(s) in \(dataDirectory): \(files.count - failed) ok, \(failed) failed")
    }
    return failed == 0 ? ChatExitCode.success : ChatExitCode.partialFailure
  }
}
