import ChatStore
import Foundation

/// What an import did.
public struct ImportSummary: Sendable, Equatable {
  /// Lines that held a record (header and trailer excluded).
  public var records: Int64 = 0
  /// Records that changed the file (new rows, or a status moved forward).
  public var users: Int64 = 0
  public var messages: Int64 = 0
  public var requests: Int64 = 0
  /// Older versions added to messages' edit history (format 2's `edit` records).
  public var edits: Int64 = 0
  /// Attachment rows added to messages and requests (format 3).
  public var attachments: Int64 = 0
  /// Media files written into the media folder from `media` lines, and their bytes.
  public var mediaFiles: Int64 = 0
  public var mediaBytes: Int64 = 0
  /// Records already in the file exactly as given (a re-import changes nothing).
  public var unchanged: Int64 = 0
  /// Records rejected with `skipBadRecords`.
  public var rejected: Int64 = 0
  /// Outbox requests of another device, left to it (`fromOtherDevice`).
  public var otherDevice: Int64 = 0
  /// Batches committed.
  public var batches: Int64 = 0
  /// Bytes read from the input (compressed bytes for zstd).
  public var bytesIn: Int64 = 0
  /// Bytes of NDJSON after decompression.
  public var bytesDecoded: Int64 = 0
  /// Whether the input started with a chatdb header.
  public var hadHeader = false
}

/// A failed import: where and why, and what had been committed before it.
public struct ImportError: Error, CustomStringConvertible, Sendable {
  /// `FILE:LINE: <field and reason>` (or `FILE: <reason>` for the whole file).
  public var message: String
  /// The batches before the failure, which stay committed.
  public var committed: ImportSummary
  public var kind: StoreError.Kind

  public var description: String {
    guard committed.records > 0 else { return message + " (nothing was imported)" }
    return message
      + " (\(committed.records - committed.rejected) records before it were committed in \(committed.batches) batches;"
      + " import is idempotent: fix the file and run it again)"
  }
}

/// A problem with the header line: it says whose file and which format the whole
/// input is, so it is never skipped as one bad record, whatever `skipBadRecords` says.
struct HeaderError: Error, CustomStringConvertible {
  var reason: String
  var description: String { "header: \(reason)" }
}

/// A bad `media` line (format 3): a file's bytes cut short or not hashing to its name
/// are a damaged export, never skipped as one bad record.
struct MediaError: Error, CustomStringConvertible {
  var reason: String
  var line: Int
  var description: String { reason }
}

/// Imports an NDJSON history (plain or zstd) from a stream into a user's file, through
/// a `RecordWriter` (batch transactions, idempotent).
///
/// ```swift
/// let summary = try HistoryImporter(database: db, owner: 1).run(try ByteSource.open(path: "export.ndjson.zst"))
/// ```
/// A header on line 1 must be this user's and a format this chatdb reads; a trailer
/// must count what came before it. Only one batch is ever held in a transaction;
/// memory does not grow with the input. To check a whole export before importing it,
/// see `ExportVerifier`.
public final class HistoryImporter {
  /// How records are written (batch size, skipping bad records).
  public typealias Options = RecordWriter.Options

  /// Records per transaction by default.
  public static let defaultBatchSize = RecordWriter.defaultBatchSize

  let writer: RecordWriter
  let parser = RecordParser()
  /// The `media` lines so far, and the file they are writing.
  private var media = MediaSequence()
  private var incoming: IncomingMedia?

  /// Prepares an import into `db`, which must be at the latest schema version.
  public init(database: Database, owner: Int64, options: Options = Options()) throws {
    writer = try RecordWriter(database: database, owner: owner, options: options, for: "import")
  }

  private var options: Options { writer.options }
  private var owner: Int64 { writer.owner }
  private var summary: ImportSummary {
    get { writer.summary }
    set { writer.summary = newValue }
  }

  /// Reads every line of `source` and imports it. `rejects` receives each rejected
  /// line (with `skipBadRecords`); `progress` is called after every batch.
  public func run(
    _ source: ByteSource, rejects: (any ByteSink)? = nil, progress: (ImportSummary) -> Void = { _ in }
  ) throws -> ImportSummary {
    // Skipping bad records keeps each rejected line's text for the rejects file, and
    // inserts one message at a time: it stays on one thread.
    if !options.skipBadRecords { return try runPipelined(source, progress: progress) }
    var header: HistoryHeader?
    var trailer: HistoryTrailer?
    var seen = HistoryTrailer()
    var rejectWriter = JSONLineWriter()
    let lines = LineReader(source: source, maxLineLength: maximumHistoryLineBytes)
    do {
      try writer.begin()
      while let outcome = try lines.nextLine({ line -> LineOutcome in
        do {
          let parsed = try Self.parse(
            line, at: lines.lineNumber, parser: parser, owner: owner, afterTrailer: trailer != nil, bytesRead: 0)
          switch parsed {
          case nil: return .skipped
          case .header(let h): header = h
          case .trailer(let t): trailer = t
          case .record(let record, let at, _):
            try write(record, at: at, counting: &seen)
            return .imported
          case .media(let piece, let at): try receive(piece, at: at)
          }
          return .skipped
        } catch let error as RecordError where options.skipBadRecords {
          summary.rejected += 1
          rejectWriter.begin(type: "rejected")
          rejectWriter.field("line", Int64(lines.lineNumber))
          rejectWriter.field("reason", error.description)
          rejectWriter.field("text", utf8: line)
          rejectWriter.end()
          if let rejects { try rejectWriter.flushIfFull(to: rejects) }
          return .skipped
        }
      }) {
        if outcome == .imported, try writer.recordWritten() {
          summary.bytesIn = source.bytesRead
          progress(summary)
        }
      }
      try checkTrailer(header: header, trailer: trailer, seen: seen, source: source)
      try writer.finish()
    } catch {
      abandon()
      if let rejects {
        try? rejectWriter.flush(to: rejects)
        try? rejects.finish()
      }
      throw failure(error, source: source, line: lines.lineNumber)
    }
    if let rejects {
      try rejectWriter.flush(to: rejects)
      try rejects.finish()
    }
    summary.hadHeader = header != nil
    summary.bytesIn = source.bytesRead
    return summary
  }

  enum LineOutcome { case imported, skipped }

  /// What the parsing thread hands the writing one: a record with its line and the
  /// input's bytes read so far, a piece of a media file, or the header or trailer.
  enum Parsed: Sendable {
    case record(RecordWriter.Prepared, line: Int, bytesRead: Int64)
    case media(MediaPiece, line: Int)
    case header(HistoryHeader)
    case trailer(HistoryTrailer)
  }

  /// A parsing error and the line it is on.
  struct ParseFailure: Error {
    var error: any Error
    var line: Int
  }

  /// The import with reading, decompressing and parsing on a thread of their own
  /// (`Pipeline`) while this one writes: the same checks, errors and batches as `run`
  /// on one thread, which skipping bad records keeps to.
  private func runPipelined(_ source: ByteSource, progress: (ImportSummary) -> Void) throws -> ImportSummary {
    var header: HistoryHeader?
    var trailer: HistoryTrailer?
    var seen = HistoryTrailer()
    var line = 0
    let input = UncheckedSendable(source)
    let owner = self.owner
    do {
      try writer.begin()
      try Pipeline<Parsed>.run(
        { emit in
          let lines = LineReader(source: input.value, maxLineLength: maximumHistoryLineBytes)
          let parser = RecordParser()
          var afterTrailer = false
          do {
            while try lines.nextLine({ line -> Void in
              guard
                let parsed = try Self.parse(
                  line, at: lines.lineNumber, parser: parser, owner: owner, afterTrailer: afterTrailer,
                  bytesRead: input.value.bytesRead)
              else { return }
              if case .trailer = parsed { afterTrailer = true }
              try emit(parsed)
            }) != nil {}
          } catch let error where !(error is PipelineCancelled) {
            throw ParseFailure(error: error, line: lines.lineNumber)
          }
        },
        // A media piece holds up to 1 MiB: blocks of them are handed over by their bytes.
        weight: { parsed in if case .media(let piece, _) = parsed { piece.data.count } else { 0 } },
        into: { parsed in
          switch parsed {
          case .header(let h): header = h
          case .trailer(let t): trailer = t
          case .record(let record, let at, let bytesRead):
            line = at
            try write(record, at: at, counting: &seen)
            if try writer.recordWritten() {
              summary.bytesIn = bytesRead
              progress(summary)
            }
          case .media(let piece, let at):
            line = at
            try receive(piece, at: at)
          }
        })
      try checkTrailer(header: header, trailer: trailer, seen: seen, source: source)
      try writer.finish()
    } catch let parse as ParseFailure {
      abandon()
      throw failure(parse.error, source: source, line: parse.line)
    } catch {
      abandon()
      throw failure(error, source: source, line: line)
    }
    summary.hadHeader = header != nil
    summary.bytesIn = source.bytesRead
    return summary
  }

  /// One line of the input as a record, the header or the trailer (nil for an empty
  /// line), with the checks that need no file: a header only on line 1 and this user's,
  /// nothing after the trailer.
  static func parse(
    _ line: UnsafeBufferPointer<UInt8>, at lineNumber: Int, parser: RecordParser, owner: Int64, afterTrailer: Bool,
    bytesRead: Int64
  ) throws -> Parsed? {
    if line.isEmpty { return nil }
    if afterTrailer { throw RecordError("data after the trailer") }
    let kind: RecordParser.Line
    do {
      kind = try parser.parseLine(line)
    } catch {
      // A bad line 1 that starts as a header is a bad header (never skipped).
      if lineNumber == 1 && ExportVerifier.hasPrefix(line, #"{"type":"header""#) {
        throw HeaderError(reason: error.description)
      }
      throw error
    }
    switch kind {
    case .kind(.header):
      guard lineNumber == 1 else { throw RecordError("a header is only allowed on line 1") }
      return .header(try checkedHeader(parser, owner: owner))
    case .kind(.trailer): return .trailer(try parser.trailer())
    case .kind(let kind):
      // Prepared here, on the parsing thread of a pipelined import.
      let record = try parser.record(kind)
      let attachments = kind == .request ? try parser.attachmentList() : []
      return .record(
        RecordWriter.Prepared(record, requestAttachments: attachments), line: lineNumber, bytesRead: bytesRead)
    case .media:
      // Decoded here too; a bad media line is a damaged export, never skipped.
      do { return .media(try parser.mediaPiece(), line: lineNumber) } catch {
        throw MediaError(reason: "\(error)", line: lineNumber)
      }
    }
  }

  /// Takes one piece of a media file: checked in order and hashed (``MediaSequence``),
  /// written through a temporary file that takes its name once the last piece checked
  /// out (``IncomingMedia``); its row is then `local` and committed.
  private func receive(_ piece: MediaPiece, at line: Int) throws {
    writer.currentLine = line
    do {
      let starts = media.betweenFiles
      let complete = try media.take(piece)
      if starts { incoming = try writer.beginMedia(piece) }
      try incoming?.write(piece.data)
      if complete, let file = incoming {
        incoming = nil
        try writer.finishMedia(file)
      }
    } catch let error as RecordError {
      throw MediaError(reason: error.description, line: line)
    }
  }

  /// After a failure: rolls the batch back and removes the media files left without
  /// their rows (and an unfinished one).
  private func abandon() {
    writer.abandon()
    incoming = nil
    writer.discardMedia()
  }

  /// Writes one record of line `at` into the current batch.
  private func write(_ record: RecordWriter.Prepared, at line: Int, counting seen: inout HistoryTrailer) throws {
    summary.records += 1
    writer.currentLine = line
    seen.count(record.record)
    try writer.insert(record)
  }

  /// A header without a trailer, or a trailer that counts other records, is refused.
  private func checkTrailer(header: HistoryHeader?, trailer: HistoryTrailer?, seen: HistoryTrailer, source: ByteSource)
    throws
  {
    if header != nil && trailer == nil {
      throw fail("\(source.name): the trailer is missing: the export is incomplete (truncated?)", .badInput)
    }
    do { try media.finish() } catch { throw fail("\(source.name): \(error)", .badInput) }
    if let trailer, (trailer.media ?? 0) != media.files || (trailer.mediaBytes ?? 0) != media.bytes {
      throw fail(
        "\(source.name): the trailer counts \(trailer.media ?? 0) media files of \(trailer.mediaBytes ?? 0) bytes, "
          + "but the file holds \(media.files) of \(media.bytes)", .badInput)
    }
    if let trailer,
      trailer.total != seen.total + summary.rejected || (summary.rejected == 0 && !trailer.countsSameRecords(as: seen))
    {
      throw fail(
        "\(source.name): the trailer counts \(trailer.users) users, \(trailer.messages) messages, \(trailer.requests) requests and \(trailer.edits) edits, "
          + "but the file holds \(seen.users), \(seen.messages), \(seen.requests) and \(seen.edits)", .badInput)
    }
  }

  /// An import's failure as one line naming the input and line (`line`: where it was).
  private func failure(_ error: any Error, source: ByteSource, line: Int) -> ImportError {
    switch error {
    case let error as ImportError: return error
    case let error as RecordError: return fail("\(source.name):\(error.line ?? line): \(error)", .badInput)
    case let error as HeaderError: return fail("\(source.name):1: \(error)", .badInput)
    case let error as MediaError: return fail("\(source.name):\(error.line): \(error)", .badInput)
    case let error as StoreError: return fail(error.message, error.kind)
    case let error as SQLiteError:
      let store = StoreError.from(error, path: writer.db.path, doing: "import into")
      return fail(store.message, store.kind)
    default: return fail("\(source.name):\(line): \(error)", .badInput)
    }
  }

  /// Everything before the current batch is committed; the current batch is not.
  private func fail(_ message: String, _ kind: StoreError.Kind) -> ImportError {
    ImportError(message: message, committed: writer.committed, kind: kind)
  }

  /// The header on line 1, which must be this user's and a version this chatdb reads.
  static func checkedHeader(_ parser: RecordParser, owner: Int64) throws -> HistoryHeader {
    let header: HistoryHeader
    do {
      header = try parser.header()
    } catch let error as RecordError {
      throw HeaderError(reason: error.description)
    }
    guard header.version <= HistoryHeader.currentVersion else {
      throw HeaderError(
        reason:
          "format version \(header.version) is newer than this chatdb reads (\(HistoryHeader.currentVersion)); use a newer chatdb"
      )
    }
    guard header.userID == owner else {
      throw HeaderError(reason: "this history belongs to user \(header.userID), not \(owner)")
    }
    return header
  }

}

@available(*, unavailable)
extension HistoryImporter: Sendable {}
