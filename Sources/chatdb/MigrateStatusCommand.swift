import ChatCLI
import ChatStore

/// `chatdb migrate status`: where a file stands against the shipped migrations.
enum MigrateStatusCommand: ParsableCommand {
  static let name = "status"
  static let abstract = "Show a file's schema version, pending migrations, drift and size."
  static let discussion: String? =
    "Reads the file read-only and leaves nothing behind; the size counts the database and its -wal."

  static let examples = [
    "chatdb migrate status --user 42",
    "chatdb migrate status --all --json",
  ]

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
      return try FileResult(
        Result(status), text: text(status),
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

  /// `result`: the file's schema version, its migrations applied and pending, and drift.
  struct Result: CommandResult {
    struct Applied: Encodable {
      var version: Int
      var name: String
      var checksum: String
      var appliedAt: String
    }
    struct Pending: Encodable {
      var version: Int
      var name: String
    }
    struct Drift: Encodable {
      var version: Int
      var recordedChecksum: String
      var shippedChecksum: String
      var description: String
    }
    var exists: Bool
    var version: Int
    var latestVersion: Int
    var seedFile: Bool
    var newer: Bool
    var fileSize: Int64
    var applied: [Applied]
    var pending: [Pending]
    var drift: [Drift]

    init(
      exists: Bool, version: Int, latestVersion: Int, seedFile: Bool, newer: Bool, fileSize: Int64,
      applied: [Applied], pending: [Pending], drift: [Drift]
    ) {
      self.exists = exists
      self.version = version
      self.latestVersion = latestVersion
      self.seedFile = seedFile
      self.newer = newer
      self.fileSize = fileSize
      self.applied = applied
      self.pending = pending
      self.drift = drift
    }

    init(_ status: SchemaStatus) {
      self.init(
        exists: status.exists, version: status.version, latestVersion: status.latestVersion,
        seedFile: status.isSeedFile, newer: status.isNewer, fileSize: status.fileSize,
        applied: status.applied.map {
          Applied(version: $0.version, name: $0.name, checksum: $0.checksum, appliedAt: $0.appliedAt)
        },
        pending: status.pending.map { Pending(version: $0.version, name: $0.name) },
        drift: status.drift.map {
          Drift(
            version: $0.version, recordedChecksum: $0.recordedChecksum, shippedChecksum: $0.shippedChecksum,
            description: $0.description)
        })
    }

    static var example: Result {
      Result(
        exists: true, version: 5, latestVersion: 6, seedFile: false, newer: false, fileSize: 52_428_800,
        applied: [
          Applied(
            version: 5, name: "search", checksum: "9f2c4e0b7d1a5c3e8b6f0a2d4c6e8f1a3b5d7f9e1c3a5b7d9f1e3c5a7b9d1f3e",
            appliedAt: "2026-11-30T09:12:44.120Z")
        ],
        pending: [Pending(version: 6, name: "delivery_acks")],
        drift: [
          Drift(
            version: 3, recordedChecksum: "1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a3c5e7b9d1f3a5c7e9b1d3f5a7c9e1b3d",
            shippedChecksum: "2c4e6a8b0d2f4c6e8a0b2d4f6c8e0a2b4d6f8c0e2a4b6d8f0c2e4a6b8d0f2c4e",
            description:
              "migration 0003_outbox_and_receipts was applied with checksum 1b3d5f7a9c1e but 0003_outbox_and_receipts.sql is 2c4e6a8b0d2f"
          )
        ])
    }
  }
}
