import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb export`: a user's history as one zstd-compressed NDJSON file.
enum ExportCommand {
  static let command = Command(
    name: "export",
    abstract: "Export a user's history as zstd-compressed NDJSON (header, records, trailer).",
    discussion: """
      The export reads one consistent snapshot while other programs may write, \
      compresses on a second thread with the zstd content checksum on, and writes to a \
      temporary file beside the target that is renamed into place only when complete \
      (mode 0600). 'chatdb import' reads it back.
      """,
    options: [StoreOptions.dataDir, StoreOptions.user, StoreOptions.db] + [
      .value("-o", "--output", valueName: "file", help: "The file to write (e.g. history.ndjson.zst), or '-' for standard output."),
      .value("--conversation", valueName: "id", help: "Only the conversation with this contact."),
      .value("--since", valueName: "date", help: "Only messages and requests created at or after this date or time."),
      .value("--until", valueName: "date", help: "Only messages and requests created before this date or time."),
      .value("--level", valueName: "n", help: "zstd level, 1 (fastest) to 19 (smallest) (default 3)."),
      StoreOptions.json,
    ],
    run: run
  )

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    guard case .file(let path, let owner) = try StoreOptions.target(arguments) else { return ChatExitCode.usage }
    guard let output = arguments.value("--output") else { throw arguments.usageError("Missing '--output <file>'") }
    let filter = ExportFilter(
      conversation: try arguments.value("--conversation") { text -> Int64? in
        guard let id = StoreLocation.parseUserID(text) else { throw InvalidValue("a user id is a positive 64-bit integer") }
        return id
      },
      since: try arguments.value("--since", as: StoreOptions.time),
      until: try arguments.value("--until", as: StoreOptions.time))
    let level = try arguments.value("--level") { text -> Int32? in
      guard let n = Int32(text), (1...19).contains(n) else { throw InvalidValue("a level is 1 to 19") }
      return n
    } ?? 3
    let json = arguments.flag("--json")
    let started = DispatchTime.now()

    guard FileSystem.exists(path) else { throw StoreError(.notFound, "\(path): no such database", path: path) }
    let db: Database
    do {
      db = try Database(path: path, mode: .readOnly)
      try Migrator.requireLatest(db, for: "export")
    } catch {
      throw StoreError.from(error, path: path, doing: "open")
    }
    let resolvedOwner = try owner ?? db.int64("SELECT value FROM StoreInfo WHERE key = 'owner_user_id'")
    guard let resolvedOwner else {
      throw StoreError(.badInput, "\(path): cannot tell whose file this is; name it chats-<userId>.db or use --user", path: path)
    }

    let toStdout = output == "-"
    let file = toStdout ? nil : try { () throws -> OutputFile in
      try Preflight.requireSpace(FileSystem.databaseSize(atPath: path) / 3, toWrite: output)
      return try OutputFile(path: output)
    }()
    let sink = try HistoryExporter.sink(fileDescriptor: file?.fileDescriptor ?? 1, name: toStdout ? "<stdout>" : output, level: level)
    let total = try db.int64("SELECT count(*) FROM Messages") ?? 0
    let progress = Progress(label: "Exporting", total: total, unit: "records")
    let counts = try HistoryExporter.export(db, owner: resolvedOwner, filter: filter, to: sink) {
      progress.update(completed: $0, bytes: sink.compressedBytes)
    }
    progress.finish()
    try file?.commit()
    let seconds = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9

    let report: String
    if json {
      report = JSONValue.object([
        "database": .string(path), "output": .string(output), "users": .int(counts.users),
        "messages": .int(counts.messages), "requests": .int(counts.requests), "bytesIn": .int(sink.bytesWritten),
        "bytesOut": .int(sink.compressedBytes), "seconds": .double((seconds * 1000).rounded() / 1000),
      ]).render()
    } else {
      report =
        "\(path) → \(output): \(counts.messages) messages, \(counts.users) users, \(counts.requests) requests; "
        + "\(ByteCount.format(sink.bytesWritten)) of NDJSON in \(ByteCount.format(sink.compressedBytes)) (\(String(format: "%.2f", seconds)) s)"
    }
    // With the export on standard output, the report goes to standard error.
    if toStdout { TextOutput.standardError.writeLine(report) } else { print(report) }
    return ChatExitCode.success
  }
}
