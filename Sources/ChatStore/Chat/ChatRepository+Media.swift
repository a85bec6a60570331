import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Media (migration 0009; docs/data-layer.md, "Media"): the attachments of messages and
/// outbox requests, the media folder's files, and the uploads and downloads under way.
extension ChatRepository {
  /// The folder of this file's media (`chats-<id>.media/`).
  public var mediaFolder: MediaFolder { MediaFolder(database: database.path) }

  /// Stores `attachments` as media rows (by SHA-256, in `state`) in the caller's
  /// transaction; their row ids, in order.
  static func storeMedia(_ attachments: [Attachment], state: MediaState, at: String, _ db: Database) throws
    -> [Int64]
  {
    let upsert = try db.cachedStatement(HotQuery.upsertMedia)
    return try attachments.map { attachment in
      guard
        let id = try upsert.first(
          [
            attachment.sha256, attachment.size, attachment.mime, state.rawValue, attachment.relayID,
            attachment.width, attachment.height, attachment.durationMs, at,
          ], { $0.int64(0) })
      else { throw StoreError(.internalError, "\(db.path): media \(attachment.sha256) was not stored", path: db.path) }
      return id
    }
  }

  /// Stores a message's attachments (media rows as `remote` unless the file is here) in
  /// the caller's transaction; nothing for a tombstone.
  func storeAttachments(of message: Message, _ db: Database) throws {
    guard !message.attachments.isEmpty, message.deletedAt == nil else { return }
    let ids = try Self.storeMedia(message.attachments, state: .remote, at: message.createdAt, db)
    let insert = try db.cachedStatement(HotQuery.insertAttachment.sql)
    for (position, (attachment, id)) in zip(message.attachments, ids).enumerated() {
      try insert.execute([message.id, position, id, attachment.thumbnail])
    }
  }

  /// A message's attachments, in order, with where each one's bytes are.
  public func attachments(ofMessage id: Int64) throws -> [Attachment] {
    try database.cachedStatement(HotQuery.messageAttachments.sql).map([id]) { HotQuery.attachment($0).attachment }
  }

  /// An outbox request's attachments, in order, each with its media row id.
  public func attachments(ofRequest id: Int64) throws -> [(attachment: Attachment, mediaID: Int64)] {
    try database.cachedStatement(HotQuery.requestAttachments.sql).map([id], HotQuery.attachment)
  }

  /// The requests from `low` to `high` (request ids) that carry attachments.
  public func requestsWithAttachments(from low: Int64, to high: Int64) throws -> Set<Int64> {
    Set(try database.cachedStatement(HotQuery.requestsWithAttachments.sql).map([low, high]) { $0.int64(0) })
  }

  /// Keeps the URL of a media's upload (nil: forget it, it expired), so an upload
  /// stopped by a kill resumes where the relay's offset says.
  public func recordUpload(ofMedia id: Int64, url: String?) throws {
    try database.write { db in try db.execute(HotQuery.recordUpload.sql, [id, url, Int64?.none]) }
  }

  /// A media's upload is done: the relay's id for it.
  public func recordUploaded(media id: Int64, relayID: Int64) throws {
    try database.write { db in try db.execute(HotQuery.recordUpload.sql, [id, String?.none, relayID]) }
  }

  /// Moves media to `state` (and their last access to now), in one transaction.
  public func setStates(_ sha256s: [String], _ state: MediaState) throws {
    let at = timestamp
    try database.write { db in
      let update = try db.cachedStatement(HotQuery.setMediaState.sql)
      for sha256 in sha256s { try update.execute([sha256, state.rawValue, at]) }
    }
  }

  /// Downloads done: each media `local` and accessed now, unless an eviction or a sweep
  /// changed it meanwhile (its file is then not kept as local).
  public func downloaded(_ sha256s: [String]) throws {
    let at = timestamp
    try database.write { db in
      let update = try db.cachedStatement(HotQuery.mediaDownloaded.sql)
      for sha256 in sha256s { try update.execute([sha256, at]) }
    }
  }

  /// A download given up (the relay no longer has it): `remote` again, if still `partial`.
  public func abandonDownload(of sha256: String) throws {
    try database.write { db in try db.execute(HotQuery.mediaDownloadAbandoned.sql, [sha256]) }
  }

  /// Downloads under way (`partial`), oldest first: what a run resumes.
  public func partialMedia(limit: Int = 100) throws -> [Attachment] {
    try database.cachedStatement(HotQuery.partialMedia.sql).map([limit]) { HotQuery.attachment($0).attachment }
  }

  /// Deletes the media rows no attachment names any more, and their files: the count and
  /// the bytes freed. A file a crash leaves (removed rows, files not yet) is a stray that
  /// `chatdb check` reports and `chatdb vacuum` removes.
  @discardableResult
  public func sweepMedia() throws -> (count: Int, bytes: Int64) {
    let folder = mediaFolder
    // The files go inside the transaction: a send that names one of them again (in its
    // own transaction) comes wholly before or after.
    return try database.write { db in
      let swept = try db.query(HotQuery.sweepMedia.sql, []) { $0.string(0) }
      return (swept.count, swept.reduce(0) { $0 + folder.remove($1) })
    }
  }
}

extension ChatRepository {
  /// The URL of a media's upload under way, if any.
  public func uploadURL(ofMedia id: Int64) throws -> String? {
    try database.cachedStatement("SELECT upload_url FROM Media WHERE id = ?1").first([id]) { $0.optionalString(0) }
      ?? nil
  }

  /// Marks media only on the relay (`remote`) as wanted here (`partial`): a running
  /// `chat-sync run` downloads them. The count marked.
  @discardableResult
  public func want(_ sha256s: [String]) throws -> Int {
    guard !sha256s.isEmpty else { return 0 }
    let at = timestamp
    return try database.write { db in
      let mark = try db.cachedStatement(
        "UPDATE Media SET state = 'partial', last_accessed_at = max(last_accessed_at, ?2) WHERE sha256 = ?1 AND state = 'remote'"
      )
      var marked = 0
      for sha256 in sha256s {
        try mark.execute([sha256, at])
        marked += db.changes
      }
      return marked
    }
  }
}

/// A file copied into the media folder under a temporary name, with its attachment:
/// ``ChatRepository/send(to:content:staged:)`` names it in the transaction that stores its
/// row. Remove `temporary` when the send fails (after a send it is gone).
public struct StagedMedia: Sendable {
  public var attachment: Attachment
  public let temporary: String
}

extension ChatRepository {
  /// Copies a file into the media folder under a temporary name, for
  /// ``send(to:content:staged:)``: the attachment, with a thumbnail and its pixels when it
  /// is an image libvips reads (`mime`: its type; guessed from the file name when nil).
  public func stageMedia(copying path: String, mime: String? = nil) throws -> StagedMedia {
    let staged = try mediaFolder.stage(copying: path)
    let type = mime ?? Attachment.mime(forFileName: path)
    var attachment = Attachment(sha256: staged.sha256, mime: type, size: staged.size, state: .local)
    if attachment.kind == .image, let thumbnail = try? Thumbnail(of: staged.temporary) {
      attachment.thumbnail = thumbnail.jpeg
      attachment.width = thumbnail.width
      attachment.height = thumbnail.height
    }
    return StagedMedia(attachment: attachment, temporary: staged.temporary)
  }

  /// ``stageMedia(copying:mime:)`` with the file named at once: for a writer alone with
  /// the folder (tests, tools); ``send(to:content:attachments:)`` then stores its rows.
  public func addMedia(copying path: String, mime: String? = nil) throws -> Attachment {
    let staged = try stageMedia(copying: path, mime: mime)
    try mediaFolder.place(staged.temporary, as: staged.attachment.sha256)
    return staged.attachment
  }

  /// Queues a message with staged files: each is named by its hash in the transaction
  /// that stores the request and its rows, so an eviction or a sweep (which remove files
  /// in their own transactions) never removes a file this message needs.
  @discardableResult
  public func send(to recipient: Int64, content: String, staged: [StagedMedia]) throws -> MessageRequest {
    let folder = mediaFolder
    return try send(to: recipient, content: content, attachments: staged.map(\.attachment)) {
      for media in staged { try folder.place(media.temporary, as: media.attachment.sha256) }
    }
  }
}

/// What `chat-sync status` shows of media: uploads waiting, downloads under way (with
/// the bytes their partial files hold) and the files here.
public struct MediaSummary: Sendable, Equatable {
  /// Files of queued messages the relay does not have yet, and their bytes.
  public var uploads: Int
  public var uploadBytes: Int64
  /// Downloads under way: each media and the bytes of it here so far.
  public var downloads: [(sha256: String, size: Int64, received: Int64)]
  /// Media whose file is here, and their bytes.
  public var localFiles: Int
  public var localBytes: Int64

  public static func == (a: MediaSummary, b: MediaSummary) -> Bool {
    a.uploads == b.uploads && a.uploadBytes == b.uploadBytes && a.localFiles == b.localFiles
      && a.localBytes == b.localBytes && a.downloads.map(\.sha256) == b.downloads.map(\.sha256)
  }
}

extension ChatRepository {
  /// The media figures of ``MediaSummary``.
  public func mediaSummary() throws -> MediaSummary {
    let folder = mediaFolder
    return try database.read { db in
      let uploads = try db.query(
        """
        SELECT count(*), coalesce(sum(size), 0) FROM Media
        WHERE relay_id IS NULL AND id IN (SELECT media_id FROM RequestAttachments)
        """, []
      ) { ($0.int(0), $0.int64(1)) }[0]
      let local = try db.query("SELECT count(*), coalesce(sum(size), 0) FROM Media WHERE state = 'local'", []) {
        ($0.int(0), $0.int64(1))
      }[0]
      let downloads = try db.query(HotQuery.partialMedia.sql, [100]) { HotQuery.attachment($0).attachment }.map {
        ($0.sha256, $0.size, FileSystem.size(atPath: folder.partial($0.sha256)) ?? 0)
      }
      return MediaSummary(
        uploads: uploads.0, uploadBytes: uploads.1, downloads: downloads, localFiles: local.0, localBytes: local.1)
    }
  }
}
