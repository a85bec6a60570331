import ChatProtocol
import ChatStore
import Foundation

/// An upload in progress or complete (tus 1.0): what the uploader declared, and the
/// media it made once its bytes were all in and hashed to `sha256`.
public struct RelayUpload: Sendable, Equatable {
  public var id: String
  public var userId: Int64
  public var deviceId: Int64
  public var length: Int64
  public var mime: String
  public var sha256: [UInt8]
  public var createdAt: Int64
  public var expiresAt: Int64
  public var mediaId: Int64?
}

/// A complete media blob, content-addressed by its SHA-256.
public struct RelayMediaItem: Sendable, Equatable {
  public var id: Int64
  public var sha256: [UInt8]
  public var size: Int64
  public var mime: String
  public var uploadedBy: Int64
  public var createdAt: Int64
}

extension RelayStore {
  /// Records a new upload; its bytes go to the media folder (``MediaFolder``).
  public func createUpload(_ upload: RelayUpload) throws {
    try writing("record upload \(upload.id) in", singleWrite: true) { db in
      try db.execute(
        """
        INSERT INTO RelayUploads (id, user_id, device_id, length, mime, sha256, created_at, expires_at)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
        """,
        [
          upload.id, upload.userId, upload.deviceId, upload.length, upload.mime, upload.sha256, upload.createdAt,
          upload.expiresAt,
        ])
    }
  }

  /// Upload `id`, or nil.
  public func upload(id: String) throws -> RelayUpload? {
    try reading("read upload \(id) from") { db in
      try db.query(RelayQuery.uploadByID, [id], Self.upload).first
    }
  }

  /// Media `id`, or nil.
  public func media(id: Int64) throws -> RelayMediaItem? {
    try reading("read media \(id) from") { db in
      try db.query(RelayQuery.mediaByID, [id], Self.mediaItem).first
    }
  }

  /// The upload's bytes are all in and hash to its `sha256`: the media of those bytes
  /// (the one already there when someone uploaded the same bytes before, else a new
  /// one), now named by the upload, which then lasts until `expiresAt`.
  public func completeUpload(_ upload: RelayUpload, now: Int64, expiresAt: Int64) throws -> Int64 {
    try writing("record the media of upload \(upload.id) in") { db in
      let media: Int64
      if let existing = try db.int64(RelayQuery.mediaBySHA256, [upload.sha256]) {
        media = existing
      } else {
        try db.execute(
          "INSERT INTO RelayMedia (sha256, size, mime, uploaded_by, created_at) VALUES (?, ?, ?, ?, ?)",
          [upload.sha256, upload.length, upload.mime, upload.userId, now])
        media = db.lastInsertRowID
      }
      try db.execute(RelayQuery.linkUpload, [media, expiresAt, upload.id])
      return media
    }
  }

  /// Forgets upload `id` (its file is the caller's).
  public func deleteUpload(id: String) throws {
    try writing("delete upload \(id) from", singleWrite: true) { db in
      try db.execute(RelayQuery.dropUpload, [id])
    }
  }

  /// Whether `user` may fetch media `media`: they uploaded those bytes, or a message they
  /// sent or received carries them.
  public func mayFetch(user: Int64, media: Int64) throws -> Bool {
    try reading("check access to media \(media) in") { db in try Self.mayFetch(user: user, media: media, db) }
  }

  static func mayFetch(user: Int64, media: Int64, _ db: Database) throws -> Bool {
    try db.int64(RelayQuery.uploadedMedia, [media, user]) == 1
      || db.int64(RelayQuery.receivedMedia, [media, user]) == 1
  }

  /// A message's attachments as the wire has them.
  static func attachments(of message: Int64, _ db: Database) throws -> [RelayAttachment] {
    try db.query(RelayQuery.attachmentsOf, [message]) { row in
      var thumbnail: String?
      if case .blob(let bytes) = row.value(7) { thumbnail = Data(bytes).base64EncodedString() }
      return RelayAttachment(
        mediaId: row.int64(0), mime: row.string(1), size: row.int64(2), sha256: SHA256.hex(digest: bytes(row, 3)),
        width: row.optionalInt64(4), height: row.optionalInt64(5), durationMs: row.optionalInt64(6),
        thumbnail: thumbnail)
    }
  }

  /// The attachments of a message being posted by `sender`, checked: each a media the
  /// sender may fetch, at most ``RelayAttachment/maximumCount``, thumbnails base64 of at
  /// most ``RelayAttachment/maximumThumbnailBytes``. With the thumbnails' bytes, for the rows.
  func checkAttachments(_ posted: [AttachmentPost], from sender: Int64, _ db: Database) throws -> [(
    RelayAttachment, [UInt8]?
  )] {
    guard posted.count <= RelayAttachment.maximumCount else {
      throw StoreError(
        .badInput, "attachments: at most \(RelayAttachment.maximumCount) a message, got \(posted.count)", path: path)
    }
    return try posted.enumerated().map { index, attachment in
      let field = "attachments[\(index)]"
      guard let media = try db.query(RelayQuery.mediaByID, [attachment.mediaId], Self.mediaItem).first,
        try Self.mayFetch(user: sender, media: attachment.mediaId, db)
      else {
        throw StoreError(.notFound, "\(field).mediaId \(attachment.mediaId) is no media of this user", path: path)
      }
      for (name, value) in [
        ("width", attachment.width), ("height", attachment.height), ("durationMs", attachment.durationMs),
      ]
      where (value ?? 0) < 0 {
        throw StoreError(.badInput, "\(field).\(name) must not be negative", path: path)
      }
      var thumbnail: [UInt8]?
      if let text = attachment.thumbnail {
        guard let data = Data(base64Encoded: text) else {
          throw StoreError(.badInput, "\(field).thumbnail is not base64", path: path)
        }
        guard data.count <= RelayAttachment.maximumThumbnailBytes else {
          throw StoreError(
            .badInput,
            "\(field).thumbnail has \(data.count) bytes; at most \(RelayAttachment.maximumThumbnailBytes) are allowed",
            path: path)
        }
        thumbnail = Array(data)
      }
      return (
        RelayAttachment(
          mediaId: attachment.mediaId, mime: media.mime, size: media.size, sha256: SHA256.hex(digest: media.sha256),
          width: attachment.width, height: attachment.height, durationMs: attachment.durationMs,
          thumbnail: thumbnail.map { Data($0).base64EncodedString() }),
        thumbnail
      )
    }
  }

  /// Uploads whose time is up (`expires_at` at or before `now`), oldest first.
  public func expiredUploads(now: Int64, limit: Int = 1_000) throws -> [RelayUpload] {
    try reading("read expired uploads from") { db in try db.query(RelayQuery.expiredUploads, [now, limit], Self.upload)
    }
  }

  /// Media no upload names any more (each one's uploads expired or were deleted):
  /// the rows are deleted and returned, for the caller to remove their blobs.
  public func dropUnreferencedMedia(limit: Int = 1_000) throws -> [RelayMediaItem] {
    try writing("drop unreferenced media from") { db in
      let gone = try db.query(RelayQuery.unreferencedMedia, [limit], Self.mediaItem)
      for item in gone { try db.execute(RelayQuery.dropMedia, [item.id]) }
      return gone
    }
  }

  /// Reads `RelayQuery.uploadByID` and `.expiredUploads` rows.
  private static func upload(_ row: Row) -> RelayUpload {
    RelayUpload(
      id: row.string(0), userId: row.int64(1), deviceId: row.int64(2), length: row.int64(3), mime: row.string(4),
      sha256: bytes(row, 5), createdAt: row.int64(6), expiresAt: row.int64(7), mediaId: row.optionalInt64(8))
  }

  /// Reads `RelayQuery.mediaByID` and `.unreferencedMedia` rows.
  private static func mediaItem(_ row: Row) -> RelayMediaItem {
    RelayMediaItem(
      id: row.int64(0), sha256: bytes(row, 1), size: row.int64(2), mime: row.string(3), uploadedBy: row.int64(4),
      createdAt: row.int64(5))
  }

  static func bytes(_ row: Row, _ index: Int32) -> [UInt8] {
    if case .blob(let bytes) = row.value(index) { return bytes }
    return []
  }
}
