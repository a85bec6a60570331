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
  /// a message's `version`, `editedAt` and `deletedAt` (edits and tombstones); a
  /// version 1 file reads as before.
  public static let currentVersion = 2

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

  public init(users: Int64 = 0, messages: Int64 = 0, requests: Int64 = 0, edits: Int64 = 0) {
    self.users = users
    self.messages = messages
    self.requests = requests
    self.edits = edits
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

  /// All records.
  public var total: Int64 { users + messages + requests + edits }
}
