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
  /// Records already in the file exactly as given (a re-import changes nothing).
  public var unchanged: Int64 = 0
  /// Records rejected with `skipBadRecords`.
  public var rejected: Int64 = 0
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

/// Imports an NDJSON history (plain or zstd) into a user's file in batch transactions.
///
/// Messages are keyed by id and requests by request id, so importing the same file
/// twice changes nothing. Only one batch is ever held in a transaction; memory does not
/// grow with the input. See <https://sqlite.org/lang_upsert.html>.
public final class HistoryImporter {
  public struct Options: Sendable {
    /// Records per transaction.
    public var batchSize = 10_000
    /// Write each bad record to `rejects` and go on, instead of stopping at the first.
    public var skipBadRecords = false
    public init() {}
  }

  /// Records per transaction by default: beyond 10,000 the batch size barely matters,
  /// and a batch holds the write lock for well under a second.
  public static let defaultBatchSize = 10_000

  let db: Database
  let owner: Int64
  let options: Options
  let parser = RecordParser()
  private(set) var summary = ImportSummary()
  private var committed = ImportSummary()
  private var inBatch = 0
  private let insertUser: Statement
  private let insertMessage: Statement
  private let insertRequest: Statement
  private let acknowledgedRequest: Statement
  private let advanceStatus: Statement
  /// One statement for `rowsPerInsert` messages: SQLite sets up its cursors once per
  /// statement, not once per row (about twice as fast as one row per INSERT here).
  private let insertMessages: Statement
  static let rowsPerInsert = 64
  /// Messages waiting for the multi-row insert, with the line each came from.
  private var pendingMessages: [(message: Message, line: Int)] = []
  /// The input line (or record number) being inserted, for errors found later.
  private var currentLine = 0
  private let messageExists: Statement
  /// Ids in `Users`, for the foreign-key rule.
  private var knownUsers: Set<Int64>

  /// Prepares an import into `db`, which must be at the latest schema version.
  public init(database: Database, owner: Int64, options: Options = Options()) throws {
    try Migrator.requireLatest(database, for: "import")
    self.db = database
    self.owner = owner
    self.options = options
    // Checkpoint every 64 MiB of WAL instead of every 4 MiB: each checkpoint syncs the
    // file, and a bulk load would otherwise spend its time waiting for the disk.
    try database.execute("PRAGMA wal_autocheckpoint = 16384")
    insertUser = try database.prepare(
      """
      INSERT INTO Users (id, name, avatar_url, last_connected_at) VALUES (?1, ?2, ?3, ?4)
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, avatar_url = excluded.avatar_url,
        last_connected_at = excluded.last_connected_at
      WHERE (name, avatar_url, last_connected_at) IS NOT (excluded.name, excluded.avatar_url, excluded.last_connected_at)
      """)
    // OR IGNORE costs nothing on new rows, where an upsert clause costs a second
    // lookup per row; the rare duplicate then takes the forward-only status update.
    insertMessage = try database.prepare(
      """
      INSERT OR IGNORE INTO Messages (id, from_user_id, to_user_id, content, status, created_at, conversation_id, request_id)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
      """)
    let tuple = "(" + Array(repeating: "?", count: 8).joined(separator: ", ") + ")"
    insertMessages = try database.prepare(
      """
      INSERT OR IGNORE INTO Messages (id, from_user_id, to_user_id, content, status, created_at, conversation_id, request_id)
      VALUES \(Array(repeating: tuple, count: Self.rowsPerInsert).joined(separator: ", "))
      """)
    advanceStatus = try database.prepare(HotQuery.advanceMessageStatus.sql)
    messageExists = try database.prepare(HotQuery.messageExists.sql)
    insertRequest = try database.prepare(
      """
      INSERT INTO MessageRequests (request_id, to_user_id, content, status, created_at, last_modified_at,
        last_sent_at, fail_count, next_attempt_at, fail_reason)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
      ON CONFLICT (request_id) DO NOTHING
      """)
    acknowledgedRequest = try database.prepare(HotQuery.messageByRequest.sql)
    knownUsers = Set(try database.query("SELECT id FROM Users") { $0.int64(0) })
    // Foreign keys cost two lookups per message; the importer checks the same rule
    // itself against the users it knows (see `requireUser`).
    try database.execute("PRAGMA foreign_keys = OFF")
  }

  deinit { try? db.execute("PRAGMA foreign_keys = ON") }

  /// A message or request may only name users that are in the file.
  private func requireUser(_ id: Int64, _ field: String) throws {
    guard !knownUsers.contains(id) else { return }
    throw RecordError("field '\(field)': user \(id) is not in the file (user records must come before their messages)")
  }

  /// Reads every line of `source` and imports it. `rejects` receives each rejected
  /// line (with `skipBadRecords`); `progress` is called after every batch.
  public func run(
    _ source: ByteSource, rejects: (any ByteSink)? = nil, progress: (ImportSummary) -> Void = { _ in }
  ) throws -> ImportSummary {
    let lines = LineReader(source: source)
    var header: HistoryHeader?
    var trailer: HistoryTrailer?
    var seen = HistoryTrailer()
    var rejectWriter = JSONLineWriter()
    try db.execute("BEGIN IMMEDIATE")
    do {
      while let outcome = try lines.nextLine({ line -> LineOutcome in
        if line.isEmpty { return .skipped }
        do {
          if trailer != nil { throw RecordError("data after the trailer") }
          let kind = try parser.parse(line)
          switch kind {
          case .header:
            guard lines.lineNumber == 1 else { throw RecordError("a header is only allowed on line 1") }
            header = try checkedHeader()
            return .skipped
          case .trailer:
            trailer = try parser.trailer()
            return .skipped
          case .user, .message, .request:
            summary.records += 1
            currentLine = lines.lineNumber
            try insert(kind, counting: &seen)
            return .imported
          }
        } catch let error as RecordError {
          guard options.skipBadRecords, !(error.description.hasPrefix("header")) else {
            throw fail("\(source.name):\(error.line ?? lines.lineNumber): \(error)", .badInput)
          }
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
        if outcome == .imported {
          inBatch += 1
          if inBatch >= options.batchSize {
            try commitBatch()
            summary.bytesIn = source.bytesRead
            progress(summary)
          }
        }
      }
      if header != nil && trailer == nil {
        throw fail("\(source.name): the trailer is missing: the export is incomplete (truncated?)", .badInput)
      }
      if let trailer, trailer.total != seen.total + summary.rejected || (summary.rejected == 0 && trailer != seen) {
        throw fail(
          "\(source.name): the trailer counts \(trailer.users) users, \(trailer.messages) messages and \(trailer.requests) requests, "
            + "but the file holds \(seen.users), \(seen.messages) and \(seen.requests)", .badInput)
      }
      try raiseRequestCounter()
      try commitBatch(last: true)
    } catch {
      if db.isInTransaction { try? db.execute("ROLLBACK") }
      if let rejects { try? rejectWriter.flush(to: rejects); try? rejects.finish() }
      if let error = error as? ImportError { throw error }
      if let error = error as? RecordError {
        throw fail("\(source.name):\(error.line ?? lines.lineNumber): \(error)", .badInput)
      }
      if let error = error as? StoreError { throw fail(error.message, error.kind) }
      if let error = error as? SQLiteError {
        let store = StoreError.from(error, path: db.path, doing: "import into")
        throw fail(store.message, store.kind)
      }
      throw fail("\(source.name):\(lines.lineNumber): \(error)", .badInput)
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

  /// Everything before the current batch is committed; the current batch is not.
  private func fail(_ message: String, _ kind: StoreError.Kind) -> ImportError {
    ImportError(message: message, committed: committed, kind: kind)
  }

  private func checkedHeader() throws -> HistoryHeader {
    let header = try parser.header()
    guard header.version <= HistoryHeader.currentVersion else {
      throw RecordError(
        "header: format version \(header.version) is newer than this chatdb reads (\(HistoryHeader.currentVersion)); use a newer chatdb")
    }
    guard header.userID == owner else {
      throw RecordError("header: this history belongs to user \(header.userID), not \(owner)")
    }
    return header
  }

  /// Commits the batch and, unless it was the last, opens the next one.
  private func commitBatch(last: Bool = false) throws {
    try flushMessages()
    try db.execute("COMMIT")
    if inBatch > 0 { summary.batches += 1 }
    committed = summary
    inBatch = 0
    if !last { try db.execute("BEGIN IMMEDIATE") }
  }

  /// New sends must never reuse an imported request id.
  private func raiseRequestCounter() throws {
    try flushMessages()
    try db.execute(HotQuery.raiseRequestCounter.sql, [owner])
  }

  // MARK: - Inserting

  private func insert(_ kind: RecordParser.Kind, counting seen: inout HistoryTrailer) throws {
    let record = try parser.record(kind)
    seen.count(record)
    try insert(record)
  }

  /// Inserts one record in the current batch; a record the file already holds changes nothing.
  func insert(_ record: Record) throws {
    switch record {
    case .user(let u):
      try insertUser.bind(u.id, at: 1)
      try insertUser.bind(u.name, at: 2)
      try insertUser.bind(u.avatarURL.databaseValue, at: 3)
      try insertUser.bind(u.lastConnectedAt.databaseValue, at: 4)
      try step(insertUser) { summary.users += 1 }
      knownUsers.insert(u.id)
    case .message(let m):
      guard m.fromUserID == owner || m.toUserID == owner else {
        throw RecordError("the message is between users \(m.fromUserID) and \(m.toUserID); this file belongs to \(owner)")
      }
      guard m.fromUserID != m.toUserID else {
        throw RecordError("the message is from user \(m.fromUserID) to themselves; chats are between two users")
      }
      try requireUser(m.fromUserID, "fromUserId")
      try requireUser(m.toUserID, "toUserId")
      if options.skipBadRecords {
        // Each record is judged on its own, so each is inserted on its own.
        try insertOne(m, line: currentLine)
      } else {
        pendingMessages.append((m, currentLine))
        if pendingMessages.count == Self.rowsPerInsert { try flushMessages() }
      }
    case .request(let r):
      // A request whose message is already here was acknowledged: nothing to keep.
      if try acknowledgedRequest.first([owner, r.requestID], { _ in true }) == true {
        summary.unchanged += 1
        return
      }
      guard r.toUserID != owner else {
        throw RecordError("field 'toUserId': a request from user \(owner) cannot be addressed to themselves")
      }
      try requireUser(r.toUserID, "toUserId")
      try insertRequest.bind(r.requestID, at: 1)
      try insertRequest.bind(r.toUserID, at: 2)
      try insertRequest.bind(r.content, at: 3)
      try insertRequest.bind(r.status.rawValue, at: 4)
      try insertRequest.bind(r.createdAt, at: 5)
      try insertRequest.bind(r.lastModifiedAt, at: 6)
      try insertRequest.bind(r.lastSentAt.databaseValue, at: 7)
      try insertRequest.bind(Int64(r.failCount), at: 8)
      try insertRequest.bind(r.nextAttemptAt.databaseValue, at: 9)
      try insertRequest.bind(r.failReason.databaseValue, at: 10)
      try step(insertRequest) { summary.requests += 1 }
    }
  }

  private func bind(_ m: Message, to statement: Statement, at base: Int32) throws {
    try statement.bind(m.id, at: base + 1)
    try statement.bind(m.fromUserID, at: base + 2)
    try statement.bind(m.toUserID, at: base + 3)
    try statement.bind(m.content, at: base + 4)
    try statement.bind(m.status.rawValue, at: base + 5)
    try statement.bind(m.createdAt, at: base + 6)
    try statement.bind(m.conversationID(owner: owner), at: base + 7)
    try statement.bind((m.fromUserID == owner ? m.requestID : nil).databaseValue, at: base + 8)
  }

  /// Inserts one message; a message already there can only move its status forward.
  private func insertOne(_ m: Message, line: Int) throws {
    try bind(m, to: insertMessage, at: 0)
    try insertMessage.step()
    insertMessage.reset()
    if db.changes > 0 {
      summary.messages += 1
    } else if try !settleExisting(m, line: line) {
      summary.unchanged += 1
    }
  }

  /// For a message the insert ignored: moves its status forward (true), leaves it
  /// (false), or reports that its request id belongs to another message.
  private func settleExisting(_ m: Message, line: Int) throws -> Bool {
    if try advanceStatus.first([m.id, m.status.rawValue], { _ in true }) == true {
      summary.messages += 1
      return true
    }
    guard try messageExists.first([m.id], { _ in true }) == true else {
      throw RecordError("field 'requestId': \(m.requestID ?? 0) already belongs to another message", line: line)
    }
    return false
  }

  /// Inserts the waiting messages, `rowsPerInsert` at a time.
  private func flushMessages() throws {
    guard !pendingMessages.isEmpty else { return }
    defer { pendingMessages.removeAll(keepingCapacity: true) }
    guard pendingMessages.count == Self.rowsPerInsert else {
      for (m, line) in pendingMessages { try insertOne(m, line: line) }
      return
    }
    for (index, item) in pendingMessages.enumerated() { try bind(item.message, to: insertMessages, at: Int32(index * 8)) }
    try insertMessages.step()
    insertMessages.reset()
    let inserted = Int64(db.changes)
    summary.messages += inserted
    guard inserted < Int64(pendingMessages.count) else { return }
    // Some were already in the file: settle each one (a row this statement inserted
    // has the same status and is left alone).
    var advanced: Int64 = 0
    for (m, line) in pendingMessages where try settleExisting(m, line: line) { advanced += 1 }
    summary.unchanged += Int64(pendingMessages.count) - inserted - advanced
  }

  /// Writes generated records straight into the file in batches, as an import of
  /// their NDJSON would. `progress` is called after every batch.
  public func write(
    _ produce: ((Record) throws -> Void) throws -> Void, progress: @escaping (ImportSummary) -> Void = { _ in }
  ) throws
    -> ImportSummary
  {
    try db.execute("BEGIN IMMEDIATE")
    do {
      try produce { record in
        summary.records += 1
        currentLine = Int(summary.records)
        try insert(record)
        inBatch += 1
        if inBatch >= options.batchSize {
          try commitBatch()
          progress(summary)
        }
      }
      try raiseRequestCounter()
      try commitBatch(last: true)
    } catch {
      if db.isInTransaction { try? db.execute("ROLLBACK") }
      throw StoreError.from(error, path: db.path, doing: "write generated records into")
    }
    return summary
  }

  /// Runs an insert; a constraint failure is the record's fault and is reported as such.
  private func step(_ statement: Statement, changed: () -> Void) throws {
    do {
      try statement.step()
      statement.reset()
    } catch let error as SQLiteError where error.code == SQLiteError.ResultCode.constraint {
      statement.reset()
      switch error.extendedCode {
      case SQLiteError.ResultCode.constraintForeignKey:
        throw RecordError("refers to a user who is not in the file (user records must come before their messages)")
      case SQLiteError.ResultCode.constraintUnique:
        throw RecordError("field 'requestId': already used by another message")
      default:
        throw RecordError("rejected by the database: \(error.message)")
      }
    }
    if db.changes > 0 { changed() } else { summary.unchanged += 1 }
  }
}

@available(*, unavailable)
extension HistoryImporter: Sendable {}

// MARK: - Verification

extension HistoryImporter {
  /// What a verification pass found.
  public struct Verification: Sendable {
    /// Whether the file starts with a chatdb header (and so must end with a trailer).
    public var isExport: Bool
    /// Record lines (header and trailer excluded), when the file was read whole.
    public var records: Int64?
    /// Bytes after decompression, when the file was read whole.
    public var decodedBytes: Int64?
    /// Whose history the header says it is.
    public var userID: Int64?
  }

  /// Checks a chatdb export whole without importing it: it must decompress cleanly
  /// (zstd checksum), end with its trailer and hold as many records as the trailer
  /// says. Lets import refuse a damaged export before changing anything. Other NDJSON
  /// (no header on line 1) is not read beyond its first line.
  public static func verify(path: String) throws -> Verification {
    let source = try ByteSource.open(path: path)
    let lines = LineReader(source: source)
    let parser = RecordParser()
    var header: HistoryHeader?
    var decoded: Int64 = 0
    _ = try lines.nextLine { line in
      decoded = Int64(line.count) + 1
      if hasPrefix(line, #"{"type":"header""#), (try? parser.parse(line)) == .header { header = try? parser.header() }
    }
    guard let header else { return Verification(isExport: false, records: nil, decodedBytes: nil, userID: nil) }
    guard header.version <= HistoryHeader.currentVersion else {
      throw StoreError(
        .badInput,
        "\(path):1: header: format version \(header.version) is newer than this chatdb reads (\(HistoryHeader.currentVersion)); use a newer chatdb",
        path: path)
    }
    var records: Int64 = 0
    var trailer: HistoryTrailer?
    while let _ = try lines.nextLine({ line -> Bool in
      decoded += Int64(line.count) + 1
      if hasPrefix(line, #"{"type":"trailer""#), (try? parser.parse(line)) == .trailer {
        trailer = try? parser.trailer()
      } else if !line.isEmpty {
        records += 1
      }
      return true
    }) {}
    guard let trailer else {
      throw StoreError(.badInput, "\(path): the trailer is missing: the export is incomplete (truncated?)", path: path)
    }
    guard trailer.total == records else {
      throw StoreError(.badInput, "\(path): the trailer counts \(trailer.total) records but the file holds \(records)", path: path)
    }
    return Verification(isExport: true, records: records, decodedBytes: decoded, userID: header.userID)
  }

  private static func hasPrefix(_ line: UnsafeBufferPointer<UInt8>, _ prefix: StaticString) -> Bool {
    let n = prefix.utf8CodeUnitCount
    return line.count >= n && memcmp(line.baseAddress!, prefix.utf8Start, n) == 0
  }
}
