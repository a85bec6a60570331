import ChatStore

/// One line of a chatdb NDJSON history: a contact, an acknowledged message or an
/// unsent request. Export writes them, import reads them, the generator makes them.
///
/// ```
/// {"type":"user","id":2,"name":"Ada","avatarUrl":null,"lastConnectedAt":null}
/// {"type":"message","id":5571…,"fromUserId":2,"toUserId":1,"content":"Hi","status":"READ","createdAt":"2026-…Z"}
/// {"type":"request","requestId":7,"toUserId":2,"content":"…","status":"PENDING","createdAt":"…","lastModifiedAt":"…","failCount":0}
/// ```
public enum Record: Hashable, Sendable {
  case user(User)
  case message(Message)
  case request(MessageRequest)
  /// An older version of a message's text (its edit history, format 2), after its message.
  case edit(messageID: Int64, MessageVersion)
}

/// The first line of a chatdb export.
public struct HistoryHeader: Hashable, Sendable {
  /// The format's name, always `chatdb-history`.
  public static let formatName = "chatdb-history"
  /// The newest format version this build reads and the one it writes. Version 2 adds
  /// a message's `version`, `editedAt` and `deletedAt` (edits and tombstones); version 3
  /// the `attachments` of messages and requests and, with `export --with-media`, the
  /// files themselves as `media` lines. Older versions read as before.
  public static let currentVersion = 3

  public var version: Int
  /// The schema version of the file it was exported from.
  public var schemaVersion: Int
  /// Whose history it is.
  public var userID: Int64
  /// When it was written (a `Timestamp` string).
  public var exportedAt: String
  /// The filters it was written with (`conversation`, `since`, `until`), as given.
  public var filters: [String: String]

  public init(
    version: Int = HistoryHeader.currentVersion, schemaVersion: Int, userID: Int64, exportedAt: String,
    filters: [String: String] = [:]
  ) {
    self.version = version
    self.schemaVersion = schemaVersion
    self.userID = userID
    self.exportedAt = exportedAt
    self.filters = filters
  }
}

/// The last line of a chatdb export: how many records of each kind came before it.
public struct HistoryTrailer: Hashable, Sendable {
  public var users: Int64
  public var messages: Int64
  public var requests: Int64
  /// Edit history records (format 2; a trailer without the field counts none).
  public var edits: Int64
  /// Media files streamed as `media` lines and their bytes (format 3, `--with-media`;
  /// nil: the field is absent, an export without media).
  public var media: Int64?
  public var mediaBytes: Int64?

  public init(
    users: Int64 = 0, messages: Int64 = 0, requests: Int64 = 0, edits: Int64 = 0, media: Int64? = nil,
    mediaBytes: Int64? = nil
  ) {
    self.users = users
    self.messages = messages
    self.requests = requests
    self.edits = edits
    self.media = media
    self.mediaBytes = mediaBytes
  }

  /// Counts one more record.
  public mutating func count(_ record: Record) {
    switch record {
    case .user: users += 1
    case .message: messages += 1
    case .request: requests += 1
    case .edit: edits += 1
    }
  }

  /// All records (`media` lines are file data, not records).
  public var total: Int64 { users + messages + requests + edits }

  /// Whether the record counts are the same (the media counts aside).
  func countsSameRecords(as other: HistoryTrailer) -> Bool {
    users == other.users && messages == other.messages && requests == other.requests && edits == other.edits
  }
}

/// One `media` line of an export made with `--with-media` (format 3): up to
/// ``maximumBytes`` of a file's bytes from `offset`. A file's pieces follow one another
/// from offset 0 to its size (one empty piece for an empty file), after every record.
///
/// ```
/// {"type":"media","sha256":"5f1c…","size":300000,"offset":0,"data":"/9j/4AAQ…"}
/// ```
public struct MediaPiece: Hashable, Sendable {
  /// The most bytes one line carries (1 MiB; its base64 is 4/3 of that).
  public static let maximumBytes = 1 << 20

  /// The file's SHA-256 (64 lowercase hex digits): its name in the media folder.
  public var sha256: String
  /// The whole file's size in bytes.
  public var size: Int64
  /// Where in the file these bytes start.
  public var offset: Int64
  public var data: [UInt8]

  public init(sha256: String, size: Int64, offset: Int64, data: [UInt8]) {
    self.sha256 = sha256
    self.size = size
    self.offset = offset
    self.data = data
  }

  /// Whether these are the file's last bytes.
  public var isLast: Bool { offset + Int64(data.count) == size }
}

/// The longest line a history may hold: a `media` line of ``MediaPiece/maximumBytes``
/// in base64 with room to spare (2 MiB).
public let maximumHistoryLineBytes = 2 << 20

/// The most attachments a message or request carries.
public let maximumAttachments = 10
