import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb generate`: deterministic synthetic histories for performance tests.
enum GenerateCommand {
  static let command = Command(
    name: "generate",
    abstract: "Generate a realistic synthetic history, deterministically from a seed.",
    discussion: """
      The same arguments give the same rows and ids on any machine. Writes straight \
      into the user's file through the import path, or, with '--format ndjson', to \
      standard output or '-o FILE' (zstd-compressed when FILE ends in .zst). With \
      '--users N' it makes a fleet of files chats-1.db … chats-N.db in the data folder.
      """,
    options: [StoreOptions.dataDir, StoreOptions.user, StoreOptions.db] + [
      .value("--users", valueName: "n", help: "Make files for users 1 to n instead of one user."),
      .value("--contacts", valueName: "n", help: "Contacts per user (default 200)."),
      .value("--messages", valueName: "n", help: "Acknowledged messages per user (default 10000)."),
      .value("--seed", valueName: "n", help: "The random seed (default 42)."),
      .value("--days", valueName: "n", help: "Days of history, ending at --end (default 365)."),
      .value("--end", valueName: "date", help: "When the history ends (default 2026-01-01; fixed so runs repeat)."),
      .value("--pending", valueName: "n", help: "PENDING outbox requests per user (default 20)."),
      .value("--failed", valueName: "n", help: "FAILED outbox requests per user (default 5)."),
      .value("--format", valueName: "format", help: "'ndjson' to write NDJSON instead of a database."),
      .value("-o", "--output", valueName: "file", help: "With --format ndjson: the file to write (default: standard output)."),
      .value("--batch-size", valueName: "n", help: "Records per transaction (default \(HistoryImporter.defaultBatchSize))."),
      StoreOptions.json,
    ],
    run: run
  )

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let fleet = try arguments.value("--users", as: upTo(100_000))
    let dataDirectory = arguments.value("--data-dir") ?? StoreLocation.defaultDataDirectory()
    let ndjson = try arguments.value("--format") { text -> Bool? in
      guard text == "ndjson" else { throw InvalidValue("the only format is 'ndjson'") }
      return true
    } ?? false
    if arguments.value("--output") != nil && !ndjson { throw arguments.usageError("'--output <file>' needs '--format ndjson'") }

    var targets: [(path: String?, owner: Int64?)] = []
    if let fleet {
      if arguments.value("--user") != nil || arguments.value("--db") != nil {
        throw arguments.usageError("Use '--users <n>' or one of '--user <id>' and '--db <path>'")
      }
      guard fleet > 0, !ndjson else { throw arguments.usageError("'--users <n>' needs n ≥ 1 and writes databases, not NDJSON") }
      targets = (1...fleet).map { (StoreLocation.path(forUser: Int64($0), in: dataDirectory), Int64($0)) }
    } else if ndjson && arguments.value("--db") == nil {
      guard let user = try arguments.value("--user", as: { StoreLocation.parseUserID($0) }) else {
        throw arguments.usageError("Missing '--user <id>'")
      }
      targets = [(nil, user)]
    } else {
      guard case .file(let path, let owner) = try StoreOptions.target(arguments) else { return ChatExitCode.usage }
      targets = [(path, owner)]
    }

    var base = HistoryGenerator.Options(owner: 1, contacts: 200, messages: 10_000, seed: 42)
    if let n = try arguments.value("--contacts", as: upTo(1_000_000)) { base.contacts = n }
    if let n = try arguments.value("--messages", as: upTo(1_000_000_000)) { base.messages = n }
    if let n = try arguments.value("--seed", as: { UInt64($0) }) { base.seed = n }
    if let n = try arguments.value("--days", as: upTo(36_500)) { base.days = max(1, n) }
    if let n = try arguments.value("--pending", as: upTo(1_000_000)) { base.pending = n }
    if let n = try arguments.value("--failed", as: upTo(1_000_000)) { base.failed = n }
    if let end = try arguments.value("--end", as: StoreOptions.time), let ms = Timestamp.milliseconds(from: end) { base.end = ms }
    var importOptions = HistoryImporter.Options()
    importOptions.batchSize = try arguments.value("--batch-size") { try StoreOptions.count($0).flatMap { $0 > 0 ? $0 : nil } }
      ?? HistoryImporter.defaultBatchSize
    let json = arguments.flag("--json")
    let started = DispatchTime.now()

    let perUser = HistoryGenerator(base).recordCount
    let progress = Progress(label: "Generating", total: perUser * Int64(targets.count), unit: "records")
    var done: Int64 = 0
    var results: [JSONValue] = []
    for target in targets {
      var options = base
      // Each file of a fleet gets its own stream, still fixed by the seed.
      func generator(owner: Int64) -> HistoryGenerator {
        options.owner = owner
        if fleet != nil { options.seed = base.seed &+ UInt64(owner) &* 0x9E37_79B9_7F4A_7C15 }
        return HistoryGenerator(options)
      }
      if let path = target.path {
        let (db, owner) = try StoreOptions.openForWriting(path: path, owner: target.owner)
        let generator = generator(owner: owner)
        let importer = try RecordWriter(database: db, owner: owner, options: importOptions)
        let summary = try importer.write({ emit in try generator.generate(emit) }) {
          progress.update(completed: done + $0.records)
        }
        done += summary.records
        results.append(
          .object([
            "database": .string(path), "user": .int(owner), "records": .int(summary.records),
            "messages": .int(summary.messages), "users": .int(summary.users), "requests": .int(summary.requests),
            "unchanged": .int(summary.unchanged),
          ]))
      } else {
        let generator = generator(owner: target.owner ?? 1)
        let output = arguments.value("--output").flatMap { $0 == "-" ? nil : $0 }
        let file = try output.map { try OutputFile(path: $0) }
        let fd = file?.fileDescriptor ?? 1
        let name = output ?? "<stdout>"
        let sink: any ByteSink =
          (output?.hasSuffix(".zst") ?? false) ? try ZstdSink(fileDescriptor: fd, name: name) : PlainSink(fileDescriptor: fd, name: name)
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
        done += count
        results.append(.object(["output": .string(name), "user": .int(generator.options.owner), "records": .int(count)]))
      }
    }
    progress.finish()
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
    let toStdout = ndjson && (arguments.value("--output") ?? "-") == "-"
    let report =
      json
      ? JSONValue.object([
        "files": .array(results), "records": .int(done), "seed": .int(Int64(bitPattern: base.seed)),
        "seconds": .double((seconds * 1000).rounded() / 1000),
      ]).render()
      : "Generated \(done) records for \(targets.count) user(s) in \(String(format: "%.2f", seconds)) s (seed \(base.seed))"
    if toStdout { TextOutput.standardError.writeLine(report) } else { print(report) }
    return ChatExitCode.success
  }
}

/// A count parser with an upper bound (generated histories beyond it would not fit a
/// device, and the arithmetic must not overflow).
private func upTo(_ limit: Int) -> (String) throws -> Int? {
  { text in
    guard let n = try StoreOptions.count(text), n <= limit else {
      throw InvalidValue("expected a whole number from 0 to \(limit)")
    }
    return n
  }
}
