import ChatCLI
import ChatStore

/// `chatdb migrate status`: where a file stands against the shipped migrations.
enum MigrateStatusCommand: ParsableCommand {
  static let name = "status"
  static let abstract = "Show a file's schema version, pending migrations, drift and size."
  static let discussion: String? =
    "Reads the file read-only and leaves nothing behind; the size counts the database and its -wal."

  struct Options: ParsableOptions {
    var store: StoreSelection
    init(_ o: inout OptionReader) { store = StoreSelection(&o, all: true) }
    func validate() throws { try store.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let migrator = Migrator()
    let reports = context.runEach(try options.store.targets(), jobs: options.store.jobs, label: "Reading") {
      target, _ in
      let status = try migrator.status(ofFileAt: target.path)
      let pending =
        status.isNewer
        ? "newer than this chatdb"
        : status.pending.isEmpty ? "-" : status.pending.map(\.fileName).joined(separator: ", ")
      return FileResult(
        json: json(status), text: text(status),
        row: [
          String(status.version), String(status.latestVersion), pending,
          status.drift.isEmpty ? "none" : "\(status.drift.count) migration(s)", ByteCount.format(status.fileSize),
        ],
        totals: ["pending": status.pending.isEmpty ? 0 : 1, "drifted": status.drift.isEmpty ? 0 : 1])
    }
    context.report(
      reports,
      fleet: options.store.all
        ? [
          .init("VERSION", alignment: .right), .init("LATEST", alignment: .right), .init("PENDING"), .init("DRIFT"),
          .init("SIZE", alignment: .right),
        ]
        : nil,
      summaryLine: options.store.all
        ? "\(reports.count) file(s) in \(options.store.dataDirectory): \(reports.total("pending")) with pending migrations, "
          + "\(reports.total("drifted")) drifted, \(reports.failedCount) unreadable" : nil)
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
      "pending": .array(
        status.pending.map { .object(["version": .int(Int64($0.version)), "name": .string($0.name)]) }),
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
