import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb import`: load an NDJSON history (plain or zstd) into a user's file.
enum ImportCommand: ParsableCommand {
  static let name = "import"
  static let abstract = "Import an NDJSON history (plain or zstd, e.g. a chatdb export) in batch transactions."
  static let discussion: String? = """
    Records are users, messages and outbox requests, one JSON object per line; zstd \
    input is detected by its magic number. Messages are keyed by id and requests by \
    request id, so importing the same file twice changes nothing. A chatdb export is \
    checked whole first (zstd checksum, trailer, counts) and refused if damaged. The \
    first bad record stops the import: its batch is rolled back, the batches before it \
    stay committed (re-run after fixing the file); a file the import created is removed \
    when nothing was committed. Whose history it is comes from --user, else the file \
    name chats-<id>.db, else the owner recorded in the file, else the export's header \
    (--user may name the owner of a --db file). A bad header is never skipped. Content \
    is limited to \(maximumContentBytes) bytes.
    """

  struct Options: ParsableOptions {
    var store: StoreSelection
    var input: String
    var batchSize: Int
    var skipBadRecords: Bool
    var rejects: String?
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: false)
      batchSize =
        o.option(
          "--batch-size", valueName: "n", help: "Records per transaction (default \(HistoryImporter.defaultBatchSize)).",
          parse: Parse.count(from: 1, to: 10_000_000)) ?? HistoryImporter.defaultBatchSize
      skipBadRecords = o.flag("--skip-bad-records", help: "Skip bad records (never a bad header) instead of stopping at the first.")
      rejects = o.option(
        "--rejects", valueName: "file", help: "With --skip-bad-records: write each rejected line, its number and reason here.",
        parse: Parse.path)
      input = o.argument("file", help: "The NDJSON file, or '-' for standard input.") ?? ""
    }
    func validate() throws {
      // --user may name the owner of a --db file; otherwise one of them is needed.
      if store.user == nil && store.db == nil { throw ValidationError("Missing '--user <id>' or '--db <path>'") }
      if rejects != nil && !skipBadRecords { throw ValidationError("'--rejects <file>' needs '--skip-bad-records'") }
      if let rejects, sameFile(rejects, input) || sameFile(rejects, path) {
        throw ValidationError("'--rejects <file>' must not be the input or the database")
      }
    }
    /// The database: `--db`, else the user's file in the data folder.
    var path: String { store.db ?? StoreLocation.path(forUser: store.user!, in: store.dataDirectory) }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let path = options.path
    let target = FileTarget(path: path, userID: options.store.user ?? StoreLocation.userID(fromFileName: path))
    context.report(context.runEach([target], jobs: 1, label: "Importing") { target, progress in try importFile(target, options, progress) })
  }

  static func importFile(_ target: FileTarget, _ options: Options, _ progress: FileProgress) throws -> FileResult {
    let started = DispatchTime.now()
    let path = target.path
    let input = options.input
    var owner = target.userID
    // A whole-file check first: a damaged export is refused before anything changes,
    // and the decoded size tells how much room the import needs.
    var expected: Int64?
    if input != "-" {
      let verification = try ExportVerifier.verify(path: input)
      expected = verification.records
      if let exporter = verification.userID {
        if let owner, exporter != owner {
          throw StoreError(.badInput, "\(input): this history belongs to user \(exporter), not \(owner) (nothing was imported)", path: input)
        }
        if owner == nil && !FileSystem.exists(path) { owner = exporter }
      }
      // A database takes about 1.5× its NDJSON; zstd NDJSON is about 4× smaller.
      let fileSize = FileSystem.size(atPath: input) ?? 0
      let decoded = try verification.decodedBytes ?? (ByteSource.open(path: input).isCompressed ? fileSize * 4 : fileSize)
      try requireSpace(decoded * 3 / 2, toWrite: path)
    }
    let source = try ByteSource.open(path: input)
    var created = false
    let summary: ImportSummary
    let resolvedOwner: Int64
    do {
      (summary, resolvedOwner) = try importHistory(from: source, into: path, owner: owner, options, progress, expected: expected, created: &created)
    } catch {
      // A file this import created holds nothing of value when nothing was committed.
      if created && ((error as? ImportError)?.committed.records ?? 0) == 0 { removeDatabase(path) }
      throw error
    }
    let elapsed = seconds(since: started)
    return FileResult(
      json: .object([
        "input": .string(input), "owner": .int(resolvedOwner), "records": .int(summary.records), "users": .int(summary.users),
        "messages": .int(summary.messages), "requests": .int(summary.requests), "unchanged": .int(summary.unchanged),
        "rejected": .int(summary.rejected), "batches": .int(summary.batches), "bytesIn": .int(summary.bytesIn),
        "seconds": .double(elapsed), "rejects": options.rejects.map { .string($0) } ?? .null, "created": .bool(created),
      ]),
      text: "\(input) → \(path): \(summary.records) records in \(summary.batches) batches (\(String(format: "%.2f", elapsed)) s): "
        + "\(summary.messages) messages, \(summary.users) users, \(summary.requests) requests changed; "
        + "\(summary.unchanged) already there; \(summary.rejected) rejected"
        + (summary.rejected > 0 && options.rejects != nil ? " (see \(options.rejects!))" : ""),
      totals: ["records": summary.records, "messages": summary.messages])
  }

  /// Opens (or creates) the database and runs the import; the connection is closed on return.
  static func importHistory(
    from source: ByteSource, into path: String, owner: Int64?, _ options: Options, _ progress: FileProgress, expected: Int64?,
    created: inout Bool
  ) throws -> (ImportSummary, Int64) {
    let (db, resolvedOwner, wasCreated) = try openForWriting(path: path, owner: owner)
    created = wasCreated
    let rejects = try options.rejects.map { try OutputFile(path: $0) }
    let rejectsSink = rejects.map { PlainSink(fileDescriptor: $0.fileDescriptor, name: $0.path) }
    var importerOptions = HistoryImporter.Options()
    importerOptions.batchSize = options.batchSize
    importerOptions.skipBadRecords = options.skipBadRecords
    let importer = try HistoryImporter(database: db, owner: resolvedOwner, options: importerOptions)
    let summary = try importer.run(source, rejects: rejectsSink) {
      progress.update(completed: $0.records, total: expected, bytes: $0.bytesIn)
    }
    try rejects?.commit()
    return (summary, resolvedOwner)
  }
}

/// Whether two paths name the same existing file (device and inode), or the same path.
private func sameFile(_ a: String, _ b: String) -> Bool {
  var x = stat()
  var y = stat()
  if stat(a, &x) == 0 && stat(b, &y) == 0 { return x.st_dev == y.st_dev && x.st_ino == y.st_ino }
  return URL(fileURLWithPath: a).standardizedFileURL.path == URL(fileURLWithPath: b).standardizedFileURL.path
}
