import ChatCLI
import ChatStore
import Foundation

/// `chatdb migrate status`: where a file stands against the shipped migrations.
enum MigrateStatusCommand {
  static let command = Command(
    name: "status",
    abstract: "Show a file's schema version, pending migrations, drift and size.",
    options: StoreOptions.options(all: true),
    run: run
  )

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let json = arguments.flag("--json")
    let migrator = Migrator()
    switch try StoreOptions.target(arguments) {
    case .file(let path, _):
      let status = try migrator.status(ofFileAt: path)
      print(json ? Self.json(status).render() : text(status))
      return ChatExitCode.success
    case .all(let dataDirectory):
      let files = try StoreLocation.databaseFiles(in: dataDirectory)
      var failed = 0
      var rows: [[String]] = []
      var items: [JSONValue] = []
      for path in files {
        let name = (path as NSString).lastPathComponent
        do {
          let status = try migrator.status(ofFileAt: path)
          items.append(Self.json(status))
          rows.append([
            name, String(status.version), String(status.latestVersion),
            status.isNewer ? "newer than this chatdb" : status.pending.isEmpty ? "-" : status.pending.map(\.fileName).joined(separator: ", "),
            status.drift.isEmpty ? "none" : "\(status.drift.count) migration(s)", ByteCount.format(status.fileSize),
          ])
        } catch {
          failed += 1
          let error = StoreError.from(error, path: path, doing: "read")
          items.append(.object(["path": .string(path), "error": .string(error.message), "exitCode": .int(Int64(error.exitCode))]))
          rows.append([name, "-", "-", "ERROR: \(error.message)", "-", ByteCount.format(FileSystem.databaseSize(atPath: path))])
        }
      }
      if json {
        print(JSONValue.object(["dataDirectory": .string(dataDirectory), "files": .array(items), "failed": .int(Int64(failed))]).render())
      } else {
        print(
          Table(
            columns: [
              .init("FILE"), .init("VERSION", alignment: .right), .init("LATEST", alignment: .right), .init("PENDING"),
              .init("DRIFT"), .init("SIZE", alignment: .right),
            ], rows: rows
          ).render())
        print("\(files.count) file(s) in \(dataDirectory), \(failed) unreadable")
      }
      return failed == 0 ? ChatExitCode.success : ChatExitCode.partialFailure
    }
  }

  static func text(_ status: SchemaStatus) -> String {
    guard status.exists else {
      return """
        File:            \(status.path) (missing; 'chatdb migrate' creates it)
        Schema version:  0 (latest \(status.latestVersion))
        Pending:         \(status.pending.map(\.fileName).joined(separator: ", "))
        """
    }
    let pending =
      status.isNewer
      ? "none (the file is newer than this chatdb)"
      : status.pending.isEmpty ? "none" : status.pending.map(\.fileName).joined(separator: ", ")
    let drift = status.drift.isEmpty ? "none" : status.drift.map(\.description).joined(separator: "; ")
    return """
      File:            \(status.path) (\(ByteCount.format(status.fileSize)))
      Schema version:  \(status.version) (latest \(status.latestVersion))\(status.isSeedFile ? ", a seed-era file without migration records" : "")
      Pending:         \(pending)
      Drift:           \(drift)
      """
  }

  static func json(_ status: SchemaStatus) -> JSONValue {
    .object([
      "path": .string(status.path),
      "exists": .bool(status.exists),
      "version": .int(Int64(status.version)),
      "latestVersion": .int(Int64(status.latestVersion)),
      "seedFile": .bool(status.isSeedFile),
      "newer": .bool(status.isNewer),
      "fileSize": .int(status.fileSize),
      "applied": .array(
        status.applied.map {
          .object([
            "version": .int(Int64($0.version)), "name": .string($0.name), "checksum": .string($0.checksum),
            "appliedAt": .string($0.appliedAt),
          ])
        }),
      "pending": .array(status.pending.map { .object(["version": .int(Int64($0.version)), "name": .string($0.name)]) }),
      "drift": .array(
        status.drift.map {
          .object([
            "version": .int(Int64($0.version)), "recordedChecksum": .string($0.recordedChecksum),
            "shippedChecksum": .string($0.shippedChecksum), "description": .string($0.description),
          ])
        }),
    ])
  }
}
