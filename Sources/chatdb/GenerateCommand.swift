import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb generate`: deterministic synthetic histories for performance tests.
enum GenerateCommand: ParsableCommand {
  static let name = "generate"
  static let abstract = "Generate a realistic synthetic history, deterministically from a seed."
  static let discussion: String? = """
    The same arguments give the same rows and ids on any machine. Writes straight \
    into the user's file through the import path, or, with '--format ndjson', to \
    standard output or '-o FILE' (zstd-compressed when FILE ends in .zst). With \
    '--users N' it makes a fleet of files chats-1.db … chats-N.db in the data folder, \
    --jobs at a time. Generating into a file that holds another history (another \
    --seed) is refused as a conflict (65) once the first clash is met. --edit-rate and \
    --delete-rate edit or delete that share of the messages (each written as sent, then \
    again as edited or as a tombstone), from random streams of their own: without them a \
    seed gives the history it always gave. --media-rate attaches a media to that share \
    of the messages, from a stream of its own too: images (70%, 0.2-4 MB), videos (10%, \
    5-100 MB), audio (10%, 0.5-10 MB) and files (10%, 10 KB-20 MB), each a sparse file \
    in chats-<id>.media/ (64 bytes that name it, then zeros: a block on disk whatever its \
    size) named by the SHA-256 of its bytes, with its Media row ('local', last accessed \
    at the message's time) and a small JPEG thumbnail for images and videos; hashing \
    them, on every core, takes most of the time. NDJSON carries no media.
    """

  static let examples = [
    "chatdb generate --user 1 --messages 100000 --seed 7 --edit-rate 0.02 --delete-rate 0.01",
    "chatdb generate --user 1 --messages 100000 --media-rate 0.2",
    "chatdb generate --user 1 --format ndjson -o history.ndjson.zst",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var fleet: Int?
    var jobs: Int
    var generator: HistoryGenerator.Options
    var ndjson: Bool
    var output: String?
    var batchSize: Int
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: false)
      fleet = o.option(
        "--users", valueName: "n", help: "Make files for users 1 to n instead of one user.",
        parse: Parse.count(from: 1, to: 100_000))
      jobs = StoreSelection.jobs(&o)
      generator = HistoryGenerator.Options(owner: 1, contacts: 200, messages: 10_000, seed: 42)
      if let n = o.option(
        "--contacts", valueName: "n", help: "Contacts per user (default 200).",
        parse: Parse.count(from: 1, to: 1_000_000))
      {
        generator.contacts = n
      }
      if let n = o.option(
        "--messages", valueName: "n", help: "Acknowledged messages per user (default 10000).",
        parse: Parse.count(from: 0, to: 1_000_000_000))
      {
        generator.messages = n
      }
      if let n = o.option("--seed", valueName: "n", help: "The random seed (default 42).", parse: { UInt64($0) }) {
        generator.seed = n
      }
      if let n = o.option(
        "--days", valueName: "n", help: "Days of history, ending at --end (default 365).",
        parse: Parse.count(from: 1, to: 36_500))
      {
        generator.days = n
      }
      if let end = o.option(
        "--end", valueName: "date",
        help:
          "When the history ends (default 2026-01-01; fixed so runs repeat; at most \(GenerateCommand.latestEnd.prefix(10))).",
        parse: GenerateCommand.end)
      {
        generator.end = end
      }
      if let n = o.option(
        "--pending", valueName: "n", help: "PENDING outbox requests per user (default 20).",
        parse: Parse.count(from: 0, to: 1_000_000))
      {
        generator.pending = n
      }
      if let n = o.option(
        "--failed", valueName: "n", help: "FAILED outbox requests per user (default 5).",
        parse: Parse.count(from: 0, to: 1_000_000))
      {
        generator.failed = n
      }
      if let rate = o.option(
        "--edit-rate", valueName: "r", help: "Share of messages edited once by their sender, 0 to 1 (default 0).",
        parse: GenerateCommand.rate)
      {
        generator.editRate = rate
      }
      if let rate = o.option(
        "--delete-rate", valueName: "r", help: "Share of messages deleted for everyone, 0 to 1 (default 0).",
        parse: GenerateCommand.rate)
      {
        generator.deleteRate = rate
      }
      if let rate = o.option(
        "--media-rate", valueName: "r",
        help: "Share of messages that carry a media (sparse files named by their SHA-256), 0 to 1 (default 0).",
        parse: GenerateCommand.rate)
      {
        generator.mediaRate = rate
      }
      ndjson =
        o.option("--format", valueName: "format", help: "'ndjson' to write NDJSON instead of a database.") {
          text -> Bool? in
          guard text == "ndjson" else { throw InvalidValue("the only format is 'ndjson'") }
          return true
        } ?? false
      output = o.option(
        "-o", "--output", valueName: "file",
        help: "With --format ndjson: the file to write (.zst: zstd; default: standard output).",
        parse: Parse.path)
      batchSize =
        o.option(
          "--batch-size", valueName: "n",
          help: "Records per transaction (default \(HistoryImporter.defaultBatchSize)).",
          parse: Parse.count(from: 1, to: 10_000_000)) ?? HistoryImporter.defaultBatchSize
    }

    func validate() throws {
      if generator.editRate + generator.deleteRate > 1 {
        throw ValidationError("'--edit-rate' and '--delete-rate' add up to more than 1")
      }
      if output != nil && !ndjson { throw ValidationError("'--output <file>' needs '--format ndjson'") }
      if ndjson && generator.mediaRate > 0 {
        throw ValidationError("'--media-rate' writes media beside a database; NDJSON carries no media")
      }
      if fleet != nil {
        if store.user != nil || store.db != nil {
          throw ValidationError("Use '--users <n>' or one of '--user <id>' and '--db <path>'")
        }
        if ndjson { throw ValidationError("'--users <n>' writes databases, not NDJSON") }
      } else if ndjson && store.db == nil {
        if store.user == nil { throw ValidationError("Missing '--user <id>'") }
      } else {
        try store.validate()
      }
    }
  }

  /// The latest `--end` whose message ids still fit (see `MessageID`).
  static let latestEnd = Timestamp.string(milliseconds: HistoryGenerator.maximumEnd)

  static func rate(_ text: String) throws -> Double? {
    guard let rate = Double(text), rate >= 0, rate <= 1 else {
      throw InvalidValue("expected a share from 0 to 1, like 0.02")
    }
    return rate
  }

  static func end(_ text: String) throws -> Int64? {
    guard let ms = Timestamp.milliseconds(from: text) else { throw InvalidValue("expected a date like 2026-01-31") }
    guard ms <= HistoryGenerator.maximumEnd, ms >= HistoryGenerator.minimumEnd else {
      throw InvalidValue(
        "a history ends between \(Timestamp.string(milliseconds: HistoryGenerator.minimumEnd).prefix(10)) and \(latestEnd.prefix(10)) (message ids hold no later time)"
      )
    }
    return ms
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let started = DispatchTime.now()
    let base = options.generator
    let perUser = HistoryGenerator(base).recordCount
    if options.ndjson {
      var generatorOptions = base
      generatorOptions.owner = options.store.user ?? options.store.single?.userID ?? 1
      let toStdout = (options.output ?? "-") == "-"
      context.reportToStandardError = toStdout
      let progress = context.progress("Generating", total: perUser, unit: "records")
      let result = try writeNDJSON(
        HistoryGenerator(generatorOptions), to: toStdout ? nil : options.output, progress: progress)
      progress.finish()
      context.report(
        [
          FileReport(
            target: FileTarget(path: options.output ?? "-", userID: generatorOptions.owner), outcome: .success(result))
        ],
        summary: Summary(seed: Int64(bitPattern: base.seed), seconds: seconds(since: started)))
      return
    }
    let targets: [FileTarget] =
      if let fleet = options.fleet {
        (1...fleet).map {
          FileTarget(
            path: StoreLocation.path(forUser: Int64($0), in: options.store.dataDirectory), userID: Int64($0),
            dataFolder: options.store.dataDirectory)
        }
      } else {
        [options.store.single!]
      }
    let reports = context.runEach(targets, jobs: options.jobs, label: "Generating") { target, progress in
      var generatorOptions = base
      let (db, owner, _) = try openForWriting(path: target.path, owner: target.userID)
      generatorOptions.owner = owner
      // Each file of a fleet gets its own stream, still fixed by the seed.
      if options.fleet != nil { generatorOptions.seed = base.seed &+ UInt64(owner) &* 0x9E37_79B9_7F4A_7C15 }
      let generator = HistoryGenerator(generatorOptions)
      var importOptions = RecordWriter.Options()
      importOptions.batchSize = options.batchSize
      let importer = try RecordWriter(database: db, owner: owner, options: importOptions)
      // One file: the records are made on a thread of their own while this one writes
      // them (a fleet already keeps the cores busy with --jobs files at once).
      let written = try generator.write(into: importer, pipelined: options.fleet == nil) {
        progress.update(completed: $0.records, total: perUser)
      }
      let summary = written.records
      return try FileResult(
        Result.database(
          .init(
            records: summary.records, messages: summary.messages, users: summary.users, requests: summary.requests,
            unchanged: summary.unchanged)),
        text: "", row: [String(summary.records), String(summary.messages), String(summary.unchanged)],
        totals: ["records": summary.records, "messages": summary.messages].merging(
          written.media > 0 ? ["media": Int64(written.media), "mediaBytes": written.mediaBytes] : [:]
        ) { a, _ in a })
    }
    let elapsed = seconds(since: started)
    context.report(
      reports,
      fleet: options.fleet != nil
        ? [
          .init("RECORDS", alignment: .right), .init("MESSAGES", alignment: .right),
          .init("UNCHANGED", alignment: .right),
        ] : nil,
      summary: Summary(seed: Int64(bitPattern: base.seed), seconds: elapsed),
      summaryLine:
        "Generated \(reports.total("records").grouped) records for \(reports.count - reports.failedCount) user(s) "
        + (reports.total("media") > 0
          ? "with \(reports.total("media").grouped) media (\(ByteCount.format(reports.total("mediaBytes")))) " : "")
        + "in \(String(format: "%.2f", elapsed)) s (seed \(base.seed))"
        + (reports.failedCount > 0 ? "; \(reports.failedCount) failed" : ""))
  }

  /// Writes the generator's records as NDJSON to `path` (zstd when it ends in .zst) or stdout.
  static func writeNDJSON(_ generator: HistoryGenerator, to path: String?, progress: ChatCLI.Progress) throws
    -> FileResult
  {
    let file = try path.map { try OutputFile(path: $0) }
    let fd = file?.fileDescriptor ?? 1
    let name = path ?? "<stdout>"
    let sink: any ByteSink =
      (path?.hasSuffix(".zst") ?? false)
      ? try ZstdSink(fileDescriptor: fd, name: name) : PlainSink(fileDescriptor: fd, name: name)
    var writer = JSONLineWriter()
    var count: Int64 = 0
    try generator.generate { record in
      writer.write(record)
      count += 1
      try writer.flushIfFull(to: sink)
      if count % 10_000 == 0 { progress.update(completed: count) }
    }
    try writer.flush(to: sink)
    try sink.finish()
    try file?.commit()
    return try FileResult(
      Result.stream(.init(output: path ?? "-", records: count)),
      text:
        "Generated \(count.grouped) records for user \(generator.options.owner) into \(path ?? "standard output") (seed \(generator.options.seed))",
      totals: ["records": count])
  }

  // MARK: - Result

  /// `result`: the records written into a database, or with `--format ndjson` to a stream.
  enum Result: CommandResult {
    case database(Database)
    case stream(Stream)

    func encode(to encoder: any Encoder) throws {
      switch self {
      case .database(let database): try database.encode(to: encoder)
      case .stream(let stream): try stream.encode(to: encoder)
      }
    }

    /// What was written into the file (`unchanged`: records the file already held).
    struct Database: Encodable {
      var records: Int64
      var messages: Int64
      var users: Int64
      var requests: Int64
      var unchanged: Int64
    }

    /// `--format ndjson`: where the records went (`-`: standard output).
    struct Stream: Encodable {
      var output: String
      var records: Int64
    }

    static var example: Result {
      .database(Database(records: 100_250, messages: 100_000, users: 200, requests: 50, unchanged: 0))
    }

    static var otherExamples: [Result] { [.stream(Stream(output: "history.ndjson.zst", records: 100_250))] }

    static var summaryExample: (any Encodable & Sendable)? { Summary(seed: 42, seconds: 3.18) }
  }

  /// The envelope's `summary` beside the file counts.
  struct Summary: Encodable, Sendable {
    /// The seed that fixes every record (give it to `--seed` to make the same history).
    var seed: Int64
    var seconds: Double
  }
}
