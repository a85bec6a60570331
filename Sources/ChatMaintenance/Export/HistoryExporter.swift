import ChatStore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Which part of a history to export. Times are `Timestamp` strings; `since` is
/// inclusive and `until` exclusive, on `created_at`.
public struct ExportFilter: Sendable, Hashable {
  public var conversation: Int64?
  public var since: String?
  public var until: String?

  public init(conversation: Int64? = nil, since: String? = nil, until: String? = nil) {
    self.conversation = conversation
    self.since = since
    self.until = until
  }

  /// The filters as written into the header.
  var headerFields: [String: String] {
    var fields: [String: String] = [:]
    if let conversation { fields["conversation"] = String(conversation) }
    if let since { fields["since"] = since }
    if let until { fields["until"] = until }
    return fields
  }

  /// `WHERE` terms and their arguments for a table, given its conversation column.
  func terms(conversationColumn: String) -> (sql: String, arguments: [any DatabaseValueConvertible]) {
    var terms: [String] = []
    var arguments: [any DatabaseValueConvertible] = []
    if let conversation {
      terms.append("\(conversationColumn) = ?")
      arguments.append(conversation)
    }
    if let since {
      terms.append("created_at >= ?")
      arguments.append(since)
    }
    if let until {
      terms.append("created_at < ?")
      arguments.append(until)
    }
    return (terms.isEmpty ? "" : " WHERE " + terms.joined(separator: " AND "), arguments)
  }
}

/// Writes a user's history as NDJSON: a header, the users, the messages in id order
/// (each with its attachments' metadata), the outbox requests, with `media` the files
/// of their media that are here, and a trailer with the counts, from one read
/// transaction (a consistent snapshot while `chat-sync` may be writing).
///
/// Rows go from SQLite's buffers into the output buffer without making Swift strings,
/// and memory does not grow with the history, nor with a media file (read 1 MiB at a
/// time). See <https://sqlite.org/isolation.html>.
public enum HistoryExporter {
  /// Exports `db` (owned by `owner`) into `sink`; `progress` gets the records written
  /// so far, every 10,000. With `media` (`export --with-media`), the files in that
  /// folder of the media the records name follow them as `media` lines. Returns the
  /// trailer's counts.
  public static func export(
    _ db: Database, owner: Int64, filter: ExportFilter = ExportFilter(), media: MediaFolder? = nil,
    to sink: some ByteSink, progress: (Int64) -> Void = { _ in }
  ) throws -> HistoryTrailer {
    try db.read { db in
      var out = JSONLineWriter()
      var counts = HistoryTrailer()
      let schemaVersion = Int(try db.int64("PRAGMA user_version") ?? 0)
      out.write(
        HistoryHeader(
          schemaVersion: schemaVersion, userID: owner, exportedAt: Timestamp.now(), filters: filter.headerFields))

      // Users: everyone, or the owner and the one contact of a conversation.
      let users =
        filter.conversation == nil
        ? ("SELECT id, name, avatar_url, last_connected_at FROM Users ORDER BY id", [any DatabaseValueConvertible]())
        : (
          "SELECT id, name, avatar_url, last_connected_at FROM Users WHERE id IN (?, ?) ORDER BY id",
          [owner, filter.conversation!]
        )
      try db.prepare(users.0).forEachRow(users.1) { row in
        out.begin(type: "user")
        out.field("id", row.int64(0))
        row.withUTF8(1) { out.field("name", utf8: $0) }
        optionalText(row, 2, "avatarUrl", &out)
        optionalText(row, 3, "lastConnectedAt", &out)
        out.end()
        counts.users += 1
      }

      let messages = filter.terms(conversationColumn: "conversation_id")
      let edits = try db.prepare(
        "SELECT version, content, edited_at FROM MessageEdits WHERE message_id = ?1 ORDER BY version")
      // Format 3: a message's attachments, looked up for the messages that have some
      // (asked of each message only in a file with attachments: a lookup a row).
      let attachments = try db.prepare(HotQuery.messageAttachments.sql)
      let hasAttachments =
        try db.int64("SELECT 1 FROM Attachments LIMIT 1") == nil
        ? "0" : "EXISTS (SELECT 1 FROM Attachments WHERE message_id = Messages.id)"
      try db.prepare(
        """
        SELECT id, from_user_id, to_user_id, content, status, created_at, request_id, version, edited_at, deleted_at,
          \(hasAttachments)
        FROM Messages\(messages.sql) ORDER BY id
        """
      ).forEachRow(messages.arguments) { row in
        out.begin(type: "message")
        out.field("id", row.int64(0))
        out.field("fromUserId", row.int64(1))
        out.field("toUserId", row.int64(2))
        // The short fields first and the content last: the run of field names and
        // values that repeat from line to line compresses as one match.
        row.withUTF8(4) { out.field("status", utf8: $0) }
        row.withUTF8(5) { out.field("createdAt", utf8: $0) }
        if !row.isNull(6) { out.field("requestId", row.int64(6)) }
        // Edited: the version shown and when it was made; deleted for everyone: when (a
        // tombstone's content is "", so no deleted text is ever exported).
        if row.int64(7) > 0 { out.field("version", row.int64(7)) }
        if !row.isNull(8) { row.withUTF8(8) { out.field("editedAt", utf8: $0) } }
        if !row.isNull(9) { row.withUTF8(9) { out.field("deletedAt", utf8: $0) } }
        row.withUTF8(3) { out.field("content", utf8: $0) }
        if row.int64(10) != 0 { out.field("attachments", attachments: try read(attachments, of: row.int64(0))) }
        out.end()
        counts.messages += 1
        // An edited message's older versions (its edit history) follow it.
        if row.int64(7) > 0 {
          try edits.forEachRow([row.int64(0)]) { edit in
            out.begin(type: "edit")
            out.field("messageId", row.int64(0))
            out.field("version", edit.int64(0))
            edit.withUTF8(2) { out.field("editedAt", utf8: $0) }
            edit.withUTF8(1) { out.field("content", utf8: $0) }
            out.end()
            counts.edits += 1
          }
        }
        try out.flushIfFull(to: sink)
        if counts.messages % 10_000 == 0 { progress(counts.total) }
      }

      let requests = filter.terms(conversationColumn: "to_user_id")
      let requestAttachments = try db.prepare(HotQuery.requestAttachments.sql)
      try db.prepare(
        """
        SELECT request_id, to_user_id, content, status, created_at, last_modified_at, last_sent_at, fail_count,
          next_attempt_at, fail_reason
        FROM MessageRequests\(requests.sql) ORDER BY request_id
        """
      ).forEachRow(requests.arguments) { row in
        out.begin(type: "request")
        out.field("requestId", row.int64(0))
        out.field("toUserId", row.int64(1))
        row.withUTF8(2) { out.field("content", utf8: $0) }
        row.withUTF8(3) { out.field("status", utf8: $0) }
        row.withUTF8(4) { out.field("createdAt", utf8: $0) }
        row.withUTF8(5) { out.field("lastModifiedAt", utf8: $0) }
        optionalText(row, 6, "lastSentAt", &out)
        out.field("failCount", row.int64(7))
        optionalText(row, 8, "nextAttemptAt", &out)
        optionalText(row, 9, "failReason", &out)
        out.field("attachments", attachments: try read(requestAttachments, of: row.int64(0)))
        out.end()
        counts.requests += 1
        try out.flushIfFull(to: sink)
      }
      if let media {
        counts.media = 0
        counts.mediaBytes = 0
        try out.flush(to: sink)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: MediaPiece.maximumBytes, alignment: 16)
        defer { buffer.deallocate() }
        let query = mediaQuery(filter)
        try db.prepare(query.sql).forEachRow(query.arguments) { row in
          let sha256 = row.string(0)
          guard try stream(sha256, size: row.int64(1), from: media, through: buffer, &out, to: sink) else { return }
          counts.media! += 1
          counts.mediaBytes! += row.int64(1)
          progress(counts.total)
        }
      }
      out.write(counts)
      try out.flush(to: sink)
      try sink.finish()
      progress(counts.total)
      return counts
    }
  }

  /// The zstd stream an export is written through.
  ///
  /// Two workers compress 4 MiB jobs beside the thread that reads rows. At the default
  /// level a larger match table (`hashLog` 19, 2 MiB) makes the output smaller than
  /// `sqlite3 .dump | zstd -3` of the same file at the same speed; measured on a
  /// 1,000,000-message history, peak memory stays near 54 MB.
  public static func sink(fileDescriptor: Int32, name: String, level: Int32 = 3) throws -> ZstdSink {
    try ZstdSink(
      fileDescriptor: fileDescriptor, name: name, level: level, workers: 2, hashLog: level == 3 ? 19 : nil,
      jobSize: 4 << 20)
  }

  /// The media files an export with `media` holds: those here (`local`) that an
  /// exported message or request names, and their bytes.
  public static func mediaToExport(_ db: Database, filter: ExportFilter = ExportFilter()) throws -> (
    files: Int64, bytes: Int64
  ) {
    let query = mediaQuery(filter)
    return try db.query(
      """
      SELECT count(*), coalesce(sum(size), 0) FROM (\(query.sql))
      """, query.arguments
    ) { ($0.int64(0), $0.int64(1)) }[0]
  }

  /// The media files an export holds (sha256, size), in row order.
  private static func mediaQuery(_ filter: ExportFilter) -> (sql: String, arguments: [any DatabaseValueConvertible]) {
    let messages = filter.terms(conversationColumn: "conversation_id")
    let requests = filter.terms(conversationColumn: "to_user_id")
    return (
      """
      SELECT sha256, size FROM Media WHERE state = 'local' AND (
        id IN (SELECT a.media_id FROM Attachments a JOIN Messages ON Messages.id = a.message_id\(messages.sql))
        OR id IN (
          SELECT r.media_id FROM RequestAttachments r JOIN MessageRequests ON MessageRequests.request_id = r.request_id\(requests.sql)))
      ORDER BY id
      """,
      messages.arguments + requests.arguments
    )
  }

  /// The attachments of a message or request (`statement`: ``HotQuery/messageAttachments``
  /// or ``HotQuery/requestAttachments``).
  private static func read(_ statement: Statement, of id: Int64) throws -> [Attachment] {
    try statement.map([id]) { row in
      Attachment(
        sha256: row.string(0), mime: row.string(1), size: row.int64(2), relayID: row.optionalInt64(3),
        width: row.optionalInt64(4), height: row.optionalInt64(5), durationMs: row.optionalInt64(6),
        thumbnail: row.optionalBlob(7))
    }
  }

  /// Writes the file of a media as `media` lines of up to 1 MiB each, read a piece at a
  /// time into `buffer`; false (nothing written) when the file is missing or not its
  /// recorded size (`chatdb check` reports it). Bytes that do not hash to the name stop
  /// the export before the file's last line.
  private static func stream(
    _ sha256: String, size: Int64, from folder: MediaFolder, through buffer: UnsafeMutableRawBufferPointer,
    _ out: inout JSONLineWriter, to sink: some ByteSink
  ) throws -> Bool {
    let path = folder.file(sha256)
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return false }
    defer { close(descriptor) }
    var info = stat()
    guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) == size else {
      return false
    }
    let hasher = SHA256.Hasher()
    var offset: Int64 = 0
    repeat {
      let want = Int(min(Int64(buffer.count), size - offset))
      var got = 0
      while got < want {
        let read = pread(descriptor, buffer.baseAddress! + got, want - got, off_t(offset) + off_t(got))
        if read < 0 && errno == EINTR { continue }
        guard read > 0 else {
          let reason =
            read == 0 ? "it ended at \(offset + Int64(got)) of \(size) bytes" : String(cString: strerror(errno))
          throw StoreError(.readFailed, "cannot read media \(path): \(reason)", path: path)
        }
        got += read
      }
      let piece = UnsafeRawBufferPointer(rebasing: buffer[0..<want])
      hasher.update(piece)
      if offset + Int64(want) == size {
        let digest = SHA256.hex(digest: hasher.finish())
        guard digest == sha256 else {
          throw StoreError(
            .readFailed,
            "media \(path): its bytes hash to \(digest), not to its name (`chatdb check --full` finds such files); the export stops",
            path: path)
        }
      }
      out.writeMedia(sha256: sha256, size: size, offset: offset, data: piece)
      try out.flush(to: sink)
      offset += Int64(want)
    } while offset < size
    return true
  }

  private static func optionalText(_ row: Row, _ index: Int32, _ name: StaticString, _ out: inout JSONLineWriter) {
    if row.isNull(index) { out.nullField(name) } else { row.withUTF8(index) { out.field(name, utf8: $0) } }
  }
}
