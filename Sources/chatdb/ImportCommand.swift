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
    request id, so importing the same file twice changes nothing. A damaged chatdb \
    export (zstd checksum, trailer, counts) changes nothing: into a new file it is \
    imported in one pass into a temporary file moved into place at the end, into an \
    existing one it is checked whole first. The \
    first bad record stops the import: its batch is rolled back, the batches before it \
    stay committed (re-run after fixing the file); a file the import created is removed \
    when nothing was committed. Whose history it is comes from --user, else the file \
    name chats-<id>.db, else the owner recorded in the file, else the export's header \
    (--user may name the owner of a --db file). A bad header is never skipped. Content \
    is limited to \(maximumContentBytes) bytes. A new device of a user takes the history \
    older than the relay keeps from another device's export with --other-device: that \
    device's outbox stays its own, and messages are keyed by the relay's ids, so what \
    this device's sync stored already is not duplicated. Attachments become media rows, \
    'remote' unless the file is in the media folder (chats-<id>.media/); the files of \
    an export made with --with-media are written there, each checked against its \
    SHA-256 before it takes its name, and a file already there is skipped.
    """

  static let examples = [
    "chatdb import --user 42 history.ndjson.zst",
    "zstd -dc history.ndjson.zst | chatdb import --user 42 -",
    "chatdb import --user 42 --other-device phone-history.ndjson.zst",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var input: String
    var batchSize: Int
    var skipBadRecords: Bool
    var rejects: String?
    var otherDevice: Bool
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: false)
      batchSize =
        o.option(
          "--batch-size", valueName: "n",
          help: "Records per transaction (default \(HistoryImporter.defaultBatchSize)).",
          parse: Parse.count(from: 1, to: 10_000_000)) ?? HistoryImporter.defaultBatchSize
      skipBadRecords = o.flag(
        "--skip-bad-records", help: "Skip bad records (never a bad header) instead of stopping at the first.")
      rejects = o.option(
        "--rejects", valueName: "file",
        help: "With --skip-bad-records: write each rejected line, its number and reason here.",
        parse: Parse.path)
      otherDevice = o.flag(
        "--other-device",
        help:
          "The file is another device's export of the same user: import its users and messages, not its outbox (that device sends it)."
      )
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
    let target = FileTarget(
      path: path, userID: options.store.user ?? StoreLocation.userID(fromFileName: path),
      dataFolder: options.store.db == nil ? options.store.dataDirectory : nil)
    context.report(
      context.runEach([target], jobs: 1, label: "Importing") { target, progress in
        try importFile(target, options, progress)
      })
  }

  static func importFile(_ target: FileTarget, _ options: Options, _ progress: FileProgress) throws -> FileResult {
    let started = DispatchTime.now()
    let path = target.path
    let input = options.input
    var owner = target.userID
    // A new file from a chatdb export: one pass into a temporary file beside it, moved
    // into place only once the whole export checked out (zstd checksum, trailer,
    // counts), so a damaged export leaves nothing behind; reading it twice (check, then
    // import) was about 15% of a 1M-message zstd import.
    if input != "-", !FileSystem.exists(path), let header = try ExportVerifier.header(path: input) {
      if let owner, owner != header.userID {
        throw StoreError(
          .badInput, "\(input): this history belongs to user \(header.userID), not \(owner) (nothing was imported)",
          path: input)
      }
      try requireSpace(estimatedDecodedBytes(input) * 3 / 2, toWrite: path)
      let temporary = temporaryPath(for: path)
      FileSystem.removeDatabase(atPath: temporary)
      let summary: ImportSummary
      do {
        var created = false
        // The media files go beside the file's final name; they go too if it fails.
        (summary, _) = try importHistory(
          from: try ByteSource.open(path: input), into: temporary, owner: header.userID, options, progress,
          expected: nil, media: MediaFolder(database: path), discardsOnFailure: true, created: &created)
        try publish(temporary, as: path)
      } catch {
        FileSystem.removeDatabase(atPath: temporary)
        throw error
      }
      return try result(summary, owner: header.userID, created: true, started: started, options, path)
    }
    // Otherwise a whole-file check first: a damaged export is refused before anything
    // changes, and the decoded size tells how much room the import needs.
    var expected: Int64?
    if input != "-" {
      let verification = try ExportVerifier.verify(path: input)
      expected = verification.records
      if let exporter = verification.userID {
        if let owner, exporter != owner {
          throw StoreError(
            .badInput, "\(input): this history belongs to user \(exporter), not \(owner) (nothing was imported)",
            path: input)
        }
        if owner == nil && !FileSystem.exists(path) { owner = exporter }
      }
      // The NDJSON of records takes about 1.5× in the database; a media file its own size.
      let decoded = try verification.decodedBytes ?? estimatedDecodedBytes(input)
      try requireSpace(
        (decoded - verification.mediaLineBytes) * 3 / 2 + verification.mediaBytes, toWrite: path)
    }
    let source = try ByteSource.open(path: input)
    if input == "-" && owner == nil && !FileSystem.exists(path) {
      // Standard input is read once: its header is looked at, then imported with the rest.
      owner = try ExportVerifier.header(peekingAt: source)?.userID
    }
    var created = false
    let summary: ImportSummary
    let resolvedOwner: Int64
    do {
      (summary, resolvedOwner) = try importHistory(
        from: source, into: path, owner: owner, options, progress, expected: expected,
        media: MediaFolder(database: path), discardsOnFailure: false, created: &created)
    } catch {
      // A file this import created holds nothing of value when nothing was committed.
      if created && ((error as? ImportError)?.committed.records ?? 0) == 0 { FileSystem.removeDatabase(atPath: path) }
      throw error
    }
    return try result(summary, owner: resolvedOwner, created: created, started: started, options, path)
  }

  /// A database takes about 1.5× its NDJSON; zstd NDJSON is about 4× smaller.
  static func estimatedDecodedBytes(_ input: String) throws -> Int64 {
    let fileSize = FileSystem.size(atPath: input) ?? 0
    return try ByteSource.open(path: input).isCompressed ? fileSize * 4 : fileSize
  }

  /// `.chats-1.db.importing` beside `chats-1.db`.
  static func temporaryPath(for path: String) -> String {
    let (folder, name) = FileSystem.splitPath(path)
    return FileSystem.joinPath(folder, ".\(name).importing")
  }

  /// Moves the finished temporary database to `path`: its WAL checkpointed into it
  /// first (the companions stay behind with the old name), then linked under the new
  /// name, which fails rather than replace a file that appeared meanwhile.
  static func publish(_ temporary: String, as path: String) throws {
    do {
      // The last connection to close checkpoints too; TRUNCATE makes sure of it.
      let db = try Database(path: temporary)
      try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    }
    if (FileSystem.size(atPath: temporary + "-wal") ?? 0) > 0 {
      throw StoreError(
        .writeFailed, "\(temporary): the import could not be checkpointed; nothing was moved to \(path)", path: path)
    }
    guard link(temporary, path) == 0 else {
      let reason = errno == EEXIST ? "\(path) appeared while importing" : String(cString: strerror(errno))
      throw StoreError(.io, "\(path): cannot move the import into place: \(reason)", path: path)
    }
    FileSystem.removeDatabase(atPath: temporary)
  }

  static func result(
    _ summary: ImportSummary, owner resolvedOwner: Int64, created: Bool, started: DispatchTime, _ options: Options,
    _ path: String
  ) throws -> FileResult {
    let input = options.input
    let elapsed = seconds(since: started)
    return try FileResult(
      Result(
        input: input, owner: resolvedOwner, records: summary.records, users: summary.users,
        messages: summary.messages, requests: summary.requests, edits: summary.edits,
        attachments: summary.attachments, mediaFiles: summary.mediaFiles, mediaBytes: summary.mediaBytes,
        unchanged: summary.unchanged,
        rejected: summary.rejected, otherDevice: summary.otherDevice, batches: summary.batches,
        bytesIn: summary.bytesIn, seconds: elapsed, rejects: options.rejects, created: created),
      text:
        "\(input) → \(path): \(summary.records.grouped) records in \(summary.batches.grouped) batches (\(String(format: "%.2f", elapsed)) s): "
        + "\(summary.messages.grouped) messages, \(summary.users.grouped) users, \(summary.requests.grouped) requests"
        + (summary.edits > 0 ? ", \(summary.edits.grouped) older versions" : "")
        + (summary.attachments > 0 ? ", \(summary.attachments.grouped) attachments" : "") + " changed; "
        + (summary.mediaFiles > 0
          ? "\(summary.mediaFiles.grouped) media files written (\(ByteCount.format(summary.mediaBytes))); " : "")
        + "\(summary.unchanged.grouped) already there; \(summary.rejected.grouped) rejected"
        + (options.otherDevice ? "; \(summary.otherDevice) outbox requests left to the other device" : "")
        + (summary.rejected > 0 && options.rejects != nil ? " (see \(options.rejects!))" : ""),
      totals: ["records": summary.records, "messages": summary.messages])
  }

  /// Opens (or creates) the database and runs the import; the connection is closed on return.
  static func importHistory(
    from source: ByteSource, into path: String, owner: Int64?, _ options: Options, _ progress: FileProgress,
    expected: Int64?, media: MediaFolder, discardsOnFailure: Bool,
    created: inout Bool
  ) throws -> (ImportSummary, Int64) {
    let (db, resolvedOwner, wasCreated) = try openForWriting(path: path, owner: owner)
    created = wasCreated
    let rejects = try options.rejects.map { try OutputFile(path: $0) }
    let rejectsSink = rejects.map { PlainSink(fileDescriptor: $0.fileDescriptor, name: $0.path) }
    var importerOptions = HistoryImporter.Options()
    importerOptions.batchSize = options.batchSize
    importerOptions.skipBadRecords = options.skipBadRecords
    importerOptions.fromOtherDevice = options.otherDevice
    importerOptions.mediaFolder = media
    importerOptions.discardsOnFailure = discardsOnFailure
    let importer = try HistoryImporter(database: db, owner: resolvedOwner, options: importerOptions)
    let summary = try importer.run(source, rejects: rejectsSink) {
      progress.update(completed: $0.records, total: expected, bytes: $0.bytesIn)
    }
    try rejects?.commit()
    return (summary, resolvedOwner)
  }

  /// `result`: what the import read, changed, kept and rejected.
  struct Result: CommandResult {
    /// The file read (`-`: standard input).
    var input: String
    var owner: Int64
    var records: Int64
    var users: Int64
    var messages: Int64
    var requests: Int64
    /// Older versions added to edited messages' history (format 2's `edit` records).
    var edits: Int64
    /// Attachment rows added to messages and requests (format 3).
    var attachments: Int64
    /// Media files written into the media folder (an export made with `--with-media`)
    /// and their bytes.
    var mediaFiles: Int64
    var mediaBytes: Int64
    /// Records the file already held as they are.
    var unchanged: Int64
    var rejected: Int64
    /// `--other-device`: the other device's outbox requests, not imported.
    var otherDevice: Int64
    var batches: Int64
    var bytesIn: Int64
    var seconds: Double
    /// `--rejects`: where the rejected lines went.
    var rejects: String?
    /// The database file did not exist before.
    var created: Bool

    static var example: Result {
      Result(
        input: "history.ndjson.zst", owner: 42, records: 100_250, users: 200, messages: 100_000, requests: 50,
        edits: 0, attachments: 0, mediaFiles: 0, mediaBytes: 0, unchanged: 0, rejected: 2, otherDevice: 0,
        batches: 21, bytesIn: 31_457_280, seconds: 1.84,
        rejects: "rejects.ndjson",
        created: true)
    }
  }
}

/// Whether two paths name the same existing file (device and inode), or the same path.
private func sameFile(_ a: String, _ b: String) -> Bool {
  var x = stat()
  var y = stat()
  if stat(a, &x) == 0 && stat(b, &y) == 0 { return x.st_dev == y.st_dev && x.st_ino == y.st_ino }
  return URL(fileURLWithPath: a).standardizedFileURL.path == URL(fileURLWithPath: b).standardizedFileURL.path

}
