/// The statements of media (migration 0009): a message's or a request's attachments,
/// the uploads and downloads under way, and what no attachment names any more.
extension HotQuery {
  /// An attachment as ``HotQuery/attachment(_:)`` reads it, from `Media m` and an
  /// attachment table `a`.
  static let attachmentColumns =
    "m.sha256, m.mime, m.size, m.relay_id, m.width, m.height, m.duration_ms, a.thumbnail, m.state, m.id"

  /// Stores a media by its SHA-256, or completes the row of one known: a file here
  /// (`state` local) wins over any other state; a relay id, pixels and duration fill in
  /// what was missing. Its id.
  static let upsertMedia = """
    INSERT INTO Media (sha256, size, mime, state, relay_id, width, height, duration_ms, created_at, last_accessed_at)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)
    ON CONFLICT (sha256) DO UPDATE SET
      state = CASE WHEN excluded.state = 'local' THEN 'local' ELSE Media.state END,
      relay_id = coalesce(excluded.relay_id, Media.relay_id),
      width = coalesce(Media.width, excluded.width),
      height = coalesce(Media.height, excluded.height),
      duration_ms = coalesce(Media.duration_ms, excluded.duration_ms),
      last_accessed_at = max(Media.last_accessed_at, excluded.last_accessed_at)
    RETURNING id
    """

  /// A message's attachment, unless the message is a tombstone (a delete for everyone
  /// dropped its attachments; a late page must not bring them back).
  public static let insertAttachment = HotQuery(
    name: "media: store a message's attachment",
    sql: """
      INSERT INTO Attachments (message_id, position, media_id, thumbnail)
      SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM Messages WHERE id = ?1 AND deleted_at IS NULL)
      ON CONFLICT DO NOTHING
      """,
    sampleArguments: [.integer(1), .integer(0), .integer(1), .null], access: [.primaryKey])

  /// A queued message's attachment (a second import of the same request changes nothing).
  public static let insertRequestAttachment = """
    INSERT INTO RequestAttachments (request_id, position, media_id, thumbnail) VALUES (?1, ?2, ?3, ?4)
    ON CONFLICT DO NOTHING
    """

  static let deleteRequestAttachments = "DELETE FROM RequestAttachments WHERE request_id = ?1"

  /// A message's attachments, in order.
  public static let messageAttachments = HotQuery(
    name: "media: a message's attachments",
    sql: """
      SELECT \(attachmentColumns) FROM Attachments a JOIN Media m ON m.id = a.media_id
      WHERE a.message_id = ?1 ORDER BY a.position
      """,
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// A request's attachments, in order.
  public static let requestAttachments = HotQuery(
    name: "media: an outbox request's attachments",
    sql: """
      SELECT \(attachmentColumns) FROM RequestAttachments a JOIN Media m ON m.id = a.media_id
      WHERE a.request_id = ?1 ORDER BY a.position
      """,
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// The requests with attachments in a range of request ids (an outbox batch stops
  /// before each: it is posted alone once its media is uploaded).
  public static let requestsWithAttachments = HotQuery(
    name: "media: requests with attachments in a range",
    sql: "SELECT DISTINCT request_id FROM RequestAttachments WHERE request_id >= ?1 AND request_id <= ?2",
    sampleArguments: [.integer(1), .integer(100)], access: [.rowidRange])

  /// Drops a message's attachments (a delete for everyone).
  public static let deleteMessageAttachments = HotQuery(
    name: "media: drop a message's attachments",
    sql: "DELETE FROM Attachments WHERE message_id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// Drops the attachments of the messages in an id range (chatdb's bulk deletes run
  /// with triggers off).
  public static let deleteAttachmentsInIDRange = HotQuery(
    name: "media: drop the attachments of an id range",
    sql: "DELETE FROM Attachments WHERE message_id > ?1 AND message_id <= ?2",
    sampleArguments: [.integer(0), .integer(100)], access: [.rowidRange])

  /// Whether media `m` is named by no attachment of a message or a request: a media the
  /// file no longer needs (every writer's sweep, `chatdb check` and `vacuum` use it).
  public static let mediaUnreferenced = """
    NOT EXISTS (SELECT 1 FROM Attachments a WHERE a.media_id = m.id)
      AND NOT EXISTS (SELECT 1 FROM RequestAttachments r WHERE r.media_id = m.id)
    """

  /// Whether the file has the media tables (migration 0009).
  public static func hasMedia(_ db: Database) throws -> Bool {
    try db.int64("SELECT 1 FROM sqlite_schema WHERE name = 'Media'") != nil
  }

  /// Media no attachment names, their rows deleted; their files are removed after the
  /// commit (`chatdb check` finds a file a crash left between the two).
  public static let sweepMedia = HotQuery(
    name: "media: delete what no attachment names",
    sql: """
      DELETE FROM Media AS m WHERE \(mediaUnreferenced) RETURNING sha256
      """,
    sampleArguments: [],
    access: [.scan("Media"), .index("Attachments_by_media"), .index("RequestAttachments_by_media")])

  /// Keeps an upload's URL, or its media id once it is done (the URL then goes).
  public static let recordUpload = HotQuery(
    name: "media: record an upload",
    sql: "UPDATE Media SET upload_url = ?2, relay_id = coalesce(?3, relay_id) WHERE id = ?1",
    sampleArguments: [.integer(1), .null, .null], access: [.primaryKey])

  /// Moves a media to another state (a download starts, ends or is evicted).
  public static let setMediaState = HotQuery(
    name: "media: set a media's state",
    sql: "UPDATE Media SET state = ?2, last_accessed_at = max(last_accessed_at, ?3) WHERE sha256 = ?1",
    sampleArguments: [.text(String(repeating: "0", count: 64)), .text("local"), .text(sample)],
    access: [.index("sqlite_autoindex_Media_1")])

  /// A download done: `local` (and accessed now), unless eviction or a sweep changed the
  /// media meanwhile (only from `partial`, or `local` for one fetched again).
  public static let mediaDownloaded = HotQuery(
    name: "media: a download done",
    sql: """
      UPDATE Media SET state = 'local', last_accessed_at = max(last_accessed_at, ?2)
      WHERE sha256 = ?1 AND (state = 'partial' OR state = 'local')
      """,
    sampleArguments: [.text(String(repeating: "0", count: 64)), .text(sample)],
    access: [.index("sqlite_autoindex_Media_1")])

  /// A download given up: back to `remote`, unless it is no longer `partial`.
  public static let mediaDownloadAbandoned = HotQuery(
    name: "media: a download given up",
    sql: "UPDATE Media SET state = 'remote' WHERE sha256 = ?1 AND state = 'partial'",
    sampleArguments: [.text(String(repeating: "0", count: 64))], access: [.index("sqlite_autoindex_Media_1")])

  /// Downloads under way, to resume.
  public static let partialMedia = HotQuery(
    name: "media: downloads under way",
    sql: """
      SELECT sha256, mime, size, relay_id, width, height, duration_ms, NULL, state, id FROM Media
      WHERE state = 'partial' ORDER BY id LIMIT ?1
      """,
    sampleArguments: [.integer(100)], access: [.indexOrder("Media_partial")])

  static let media: [HotQuery] = [
    insertAttachment, messageAttachments, requestAttachments, requestsWithAttachments, deleteMessageAttachments,
    deleteAttachmentsInIDRange, sweepMedia, recordUpload, setMediaState, mediaDownloaded, mediaDownloadAbandoned,
    partialMedia,
  ]

  /// Reads ``attachmentColumns``: the attachment and its media's row id.
  static func attachment(_ row: Row) -> (attachment: Attachment, mediaID: Int64) {
    (
      Attachment(
        sha256: row.string(0), mime: row.string(1), size: row.int64(2), relayID: row.optionalInt64(3),
        width: row.optionalInt64(4), height: row.optionalInt64(5), durationMs: row.optionalInt64(6),
        thumbnail: row.optionalBlob(7), state: MediaState(rawValue: row.string(8)) ?? .remote),
      row.int64(9)
    )
  }
}
