import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb import`: load an NDJSON history (plain or zstd) into a user's file.
enum ImportCommand {
  static let command = Command(
    name: "import",
    abstract: "Import an NDJSON history (plain or zstd, e.g. a chatdb export) in batch transactions.",
    discussion: """
      Records are users, messages and outbox requests, one JSON object per line; zstd \
      input is detected by its magic number. Messages are keyed by id and requests by \
      request id, so importing the same file twice changes nothing. A chatdb export is \
      checked whole first (zstd checksum, trailer, counts) and refused if damaged. The \
      first bad record stops the import: its batch is rolled back, the batches before it \
      stay committed (re-run after fixing the file). Content is limited to \
      \(maximumContentBytes) bytes.
      """,
    arguments: [Argument(name: "file", help: "The NDJSON file, or '-' for standard input.")],
    options: [StoreOptions.dataDir, StoreOptions.user, StoreOptions.db] + [
      .value("--batch-size", valueName: "n", help: "Records per transaction (default \(HistoryImporter.defaultBatchSize))."),
      .flag("--skip-bad-records", help: "Skip bad records instead of stopping at the first."),
      .value("--rejects", valueName: "file", help: "With --skip-bad-records: write each rejected line, its number and reason here."),
      StoreOptions.json,
    ],
    run: run
  )

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    guard case .file(let path, let owner) = try StoreOptions.target(arguments) else { return ChatExitCode.usage }
    guard let input = arguments.positional("file") else { throw arguments.usageError("Missing expected argument '<file>'") }
    var options = HistoryImporter.Options()
    options.batchSize = try arguments.value("--batch-size") { try StoreOptions.count($0).flatMap { $0 > 0 ? $0 : nil } }
      ?? HistoryImporter.defaultBatchSize
    options.skipBadRecords = arguments.flag("--skip-bad-records")
    let rejectsPath = arguments.value("--rejects")
    if rejectsPath != nil && !options.skipBadRecords {
      throw arguments.usageError("'--rejects <file>' needs '--skip-bad-records'")
    }
    if let rejectsPath, sameFile(rejectsPath, input) || sameFile(rejectsPath, path) {
      throw arguments.usageError("'--rejects <file>' must not be the input or the database")
    }
    let json = arguments.flag("--json")
    let started = DispatchTime.now()

    // A whole-file check first: a damaged export is refused before anything changes,
    // and the decoded size tells how much room the import needs.
    var expected: Int64?
    if input != "-" {
      let verification = try ExportVerifier.verify(path: input)
      expected = verification.records
      if let exporter = verification.userID, let owner, exporter != owner {
        throw StoreError(.badInput, "\(input): this history belongs to user \(exporter), not \(owner) (nothing was imported)", path: input)
      }
      // A database takes about 1.5× its NDJSON; zstd NDJSON is about 4× smaller.
      let fileSize = FileSystem.size(atPath: input) ?? 0
      let decoded = try verification.decodedBytes ?? (ByteSource.open(path: input).isCompressed ? fileSize * 4 : fileSize)
      try Preflight.requireSpace(decoded * 3 / 2, toWrite: path)
    }
    let (db, resolvedOwner) = try StoreOptions.openForWriting(path: path, owner: owner)
    let rejects = try rejectsPath.map { try OutputFile(path: $0) }
    let rejectsSink = rejects.map { PlainSink(fileDescriptor: $0.fileDescriptor, name: $0.path) }
    let importer = try HistoryImporter(database: db, owner: resolvedOwner, options: options)
    let progress = Progress(label: "Importing", total: expected, unit: "records")
    let source = try ByteSource.open(path: input)
    let summary = try importer.run(source, rejects: rejectsSink) { progress.update(completed: $0.records, bytes: $0.bytesIn) }
    progress.finish()
    try rejects?.commit()
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9

    if json {
      print(
        JSONValue.object([
          "file": .string(input), "database": .string(path), "records": .int(summary.records),
          "users": .int(summary.users), "messages": .int(summary.messages), "requests": .int(summary.requests),
          "unchanged": .int(summary.unchanged), "rejected": .int(summary.rejected), "batches": .int(summary.batches),
          "bytesIn": .int(summary.bytesIn), "seconds": .double((seconds * 1000).rounded() / 1000),
          "rejects": rejectsPath.map { .string($0) } ?? .null,
        ]).render())
    } else {
      print(
        "\(input) → \(path): \(summary.records) records in \(summary.batches) batches (\(String(format: "%.2f", seconds)) s): "
          + "\(summary.messages) messages, \(summary.users) users, \(summary.requests) requests changed; "
          + "\(summary.unchanged) already there; \(summary.rejected) rejected"
          + (summary.rejected > 0 && rejectsPath != nil ? " (see \(rejectsPath!))" : ""))
    }
    return ChatExitCode.success
  }
}

/// Whether two paths name the same existing file (device and inode), or the same path.
private func sameFile(_ a: String, _ b: String) -> Bool {
  var x = stat()
  var y = stat()
  if stat(a, &x) == 0 && stat(b, &y) == 0 { return x.st_dev == y.st_dev && x.st_ino == y.st_ino }
  return URL(fileURLWithPath: a).standardizedFileURL.path == URL(fileURLWithPath: b).standardizedFileURL.path
}
