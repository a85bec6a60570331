import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb export`: a user's history as NDJSON, zstd-compressed or plain.
enum ExportCommand: ParsableCommand {
  static let name = "export"
  static let abstract = "Export a user's history as NDJSON (header, records, trailer), zstd-compressed or plain."
  static let discussion: String? = """
    The format follows the output's name: FILE.zst is zstd-compressed (content checksum \
    on, compressed on a second thread), FILE.ndjson or FILE.jsonl is plain NDJSON, and \
    '-' writes zstd to standard output (the report then goes to standard error). With \
    --all, -o names a folder (it ends in '/' or exists) and each file is written there \
    as chats-<id>.ndjson.zst. The export reads one consistent snapshot while other \
    programs may write, and writes to a temporary file beside the target that is \
    renamed into place only when complete (mode 0600). Messages and requests carry \
    their attachments' metadata and thumbnails; --with-media adds the media files that \
    are here after the records, 1 MiB of base64 a line. 'chatdb import' reads it back.
    """

  static let examples = [
    "chatdb export --user 42 -o chats-42.ndjson.zst",
    "chatdb export --user 42 --conversation 7 --since 2026-01-01 -o - | zstd -dc | head",
    "chatdb export --all -o backups/",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var output: String
    var filter: ExportFilter
    var level: Int32
    var withMedia: Bool
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      output =
        o.option(
          "-o", "--output", valueName: "file",
          help:
            "Where to write: a .zst file (zstd), a .ndjson/.jsonl file (plain), '-' (zstd to standard output), or with --all a folder.",
          required: true, parse: Parse.path) ?? ""
      filter = ExportFilter(
        conversation: o.option(
          "--conversation", valueName: "id", help: "Only the conversation with this contact.", parse: Parse.userID),
        since: o.option(
          "--since", valueName: "date", help: "Only messages and requests created at or after this date or time.",
          parse: Parse.time),
        until: o.option(
          "--until", valueName: "date", help: "Only messages and requests created before this date or time.",
          parse: Parse.time))
      level =
        o.option("--level", valueName: "n", help: "zstd level, 1 (fastest) to 19 (smallest) (default 3).") {
          text -> Int32? in
          guard let n = Int32(text), (1...19).contains(n) else { throw InvalidValue("a level is 1 to 19") }
          return n
        } ?? 3
      withMedia = o.flag(
        "--with-media",
        help:
          "Also write the files of the media the export names that are here (chats-<id>.media/), after the records.")
    }
    func validate() throws {
      try store.validate()
      if store.all {
        if output == "-" {
          throw ValidationError("With '--all', '--output <file>' names a folder, not standard output")
        }
      } else if output != "-" && ExportCommand.compression(of: output) == nil {
        throw ValidationError(
          "The value '\(output)' is invalid for '--output <file>': name it .ndjson or .jsonl (plain) or .zst (zstd)")
      }
    }
  }

  /// Whether a file name asks for zstd (`true`), plain NDJSON (`false`), or neither (nil).
  static func compression(of path: String) -> Bool? {
    if path.hasSuffix(".zst") { return true }
    if path.hasSuffix(".ndjson") || path.hasSuffix(".jsonl") { return false }
    return nil
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let targets = try options.store.targets()
    var folder: String?
    if options.store.all {
      let isFolder = isDirectory(options.output)
      guard options.output.hasSuffix("/") || isFolder else {
        throw ValidationError("With '--all', '--output <file>' names a folder: end it with '/'")
      }
      if !isFolder { try FileSystem.createPrivateDirectory(atPath: options.output) }
      folder = options.output.hasSuffix("/") ? options.output : options.output + "/"
    }
    context.reportToStandardError = options.output == "-"
    let reports = context.runEach(targets, jobs: options.store.jobs, label: "Exporting") { [folder] target, progress in
      let output =
        folder.map { $0 + "chats-\(target.userID.map(String.init) ?? "unknown").ndjson.zst" } ?? options.output
      return try export(target, to: output, options, progress: progress)
    }
    context.report(
      reports,
      fleet: options.store.all
        ? [.init("MESSAGES", alignment: .right), .init("SIZE", alignment: .right), .init("OUTPUT")] : nil,
      summaryLine: options.store.all
        ? "\(reports.count) file(s) exported to \(options.output): \(reports.total("messages").grouped) messages, "
          + "\(ByteCount.format(reports.total("bytesOut"))); \(reports.failedCount) failed" : nil)
  }

  static func export(_ target: FileTarget, to output: String, _ options: Options, progress: FileProgress) throws
    -> FileResult
  {
    let started = DispatchTime.now()
    let db = try openLatest(target.path, mode: .readOnly, for: "export")
    guard let owner = try target.userID ?? recordedOwner(db) else {
      throw StoreError(
        .badInput, "\(target.path): cannot tell whose file this is; name it chats-<userId>.db or use --user",
        path: target.path)
    }
    let toStdout = output == "-"
    let media = options.withMedia ? MediaFolder(database: target.path) : nil
    let planned =
      options.withMedia ? try HistoryExporter.mediaToExport(db, filter: options.filter) : (files: 0, bytes: 0)
    let file: OutputFile? =
      toStdout
      ? nil
      : try {
        // zstd of base64 is about the bytes it encodes; plain, a third more.
        try requireSpace(FileSystem.databaseSize(atPath: target.path) / 3 + planned.bytes * 4 / 3, toWrite: output)
        return try OutputFile(path: output)
      }()
    let fd = file?.fileDescriptor ?? 1
    let name = toStdout ? "<stdout>" : output
    let zstd = toStdout || compression(of: output) != false
    let zstdSink = zstd ? try HistoryExporter.sink(fileDescriptor: fd, name: name, level: options.level) : nil
    let sink: any ByteSink = zstdSink ?? PlainSink(fileDescriptor: fd, name: name)
    let total = try db.int64("SELECT count(*) FROM Messages")
    let counts = try HistoryExporter.export(db, owner: owner, filter: options.filter, media: media, to: sink) {
      progress.update(completed: $0, total: total, bytes: zstdSink?.compressedBytes ?? sink.bytesWritten)
    }
    try file?.commit()
    let bytesOut = zstdSink?.compressedBytes ?? sink.bytesWritten
    let elapsed = seconds(since: started)
    // Local media whose file is missing or not its size were left out (`chatdb check` names them).
    let skipped = counts.media.map { max(0, planned.files - $0) }
    var mediaText = ""
    if let files = counts.media, let bytes = counts.mediaBytes {
      mediaText = ", \(files.grouped) media files (\(ByteCount.format(bytes)))"
      if let skipped, skipped > 0 {
        mediaText += ", \(skipped.grouped) left out: missing or not their recorded size (see chatdb check)"
      }
    }
    return try FileResult(
      Result(
        output: output, compression: zstd ? "zstd" : "none", users: counts.users, messages: counts.messages,
        requests: counts.requests, mediaFiles: counts.media, mediaBytes: counts.mediaBytes, mediaSkipped: skipped,
        bytesIn: sink.bytesWritten, bytesOut: bytesOut, seconds: elapsed),
      text:
        "\(target.path) → \(output): \(counts.messages.grouped) messages, \(counts.users.grouped) users, \(counts.requests.grouped) requests"
        + mediaText + "; \(ByteCount.format(sink.bytesWritten)) of NDJSON"
        + (zstd ? " in \(ByteCount.format(bytesOut)) of zstd" : "") + " (\(String(format: "%.2f", elapsed)) s)",
      row: [String(counts.messages), ByteCount.format(bytesOut), output],
      totals: ["messages": counts.messages, "bytesOut": bytesOut])
  }

  /// `result`: where the history went and how much of it.
  struct Result: CommandResult {
    /// The file written (`-`: standard output).
    var output: String
    /// `zstd` or `none`.
    var compression: String
    var users: Int64
    var messages: Int64
    var requests: Int64
    /// `--with-media`: the media files written after the records and their bytes, and the
    /// local media left out because the file is missing or not its recorded size.
    var mediaFiles: Int64?
    var mediaBytes: Int64?
    var mediaSkipped: Int64?
    /// Bytes of NDJSON.
    var bytesIn: Int64
    /// Bytes written (compressed).
    var bytesOut: Int64
    var seconds: Double

    static var example: Result {
      Result(
        output: "chats-42.ndjson.zst", compression: "zstd", users: 200, messages: 100_000, requests: 50,
        mediaFiles: 120, mediaBytes: 157_286_400, mediaSkipped: 0, bytesIn: 241_172_480, bytesOut: 163_577_856,
        seconds: 1.84)
    }
  }
}
