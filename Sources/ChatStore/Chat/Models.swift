import Foundation

/// A contact (or the owner) as stored in `Users`.
public struct User: Hashable, Sendable {
  public var id: Int64
  public var name: String
  public var avatarURL: String?
  /// When the user was last seen online, as a `Timestamp` string.
  public var lastConnectedAt: String?

  public init(id: Int64, name: String, avatarURL: String? = nil, lastConnectedAt: String? = nil) {
    self.id = id
    self.name = name
    self.avatarURL = avatarURL
    self.lastConnectedAt = lastConnectedAt
  }
}

/// The state of an acknowledged message. It only ever moves forward:
/// `SYNCED` → `DELIVERED` → `READ`.
public enum MessageStatus: String, CaseIterable, Comparable, Sendable {
  /// The relay has it.
  case synced = "SYNCED"
  /// The recipient's device has it.
  case delivered = "DELIVERED"
  /// The recipient has read it.
  case read = "READ"

  var rank: Int {
    switch self {
    case .synced: 0
    case .delivered: 1
    case .read: 2
    }
  }

  public static func < (lhs: MessageStatus, rhs: MessageStatus) -> Bool { lhs.rank < rhs.rank }

  /// The status these UTF-8 bytes spell (a column read without making a `String`), or nil.
  public init?(utf8 bytes: UnsafeBufferPointer<UInt8>) {
    // The three spellings differ in length.
    let status: MessageStatus
    switch bytes.count {
    case 4: status = .read
    case 6: status = .synced
    case 9: status = .delivered
    default: return nil
    }
    let matches = status.rawValue.utf8.withContiguousStorageIfAvailable {
      memcmp($0.baseAddress!, bytes.baseAddress!, bytes.count) == 0
    }
    guard matches ?? status.rawValue.utf8.elementsEqual(bytes) else { return nil }
    self = status
  }

  /// SQL ranking a status column or parameter (-1 for an unknown value), so an update
  /// can move a status only forward: `WHERE rank(new) > rank(old)`.
  public static func rankSQL(_ column: String) -> String {
    "CASE \(column) WHEN 'SYNCED' THEN 0 WHEN 'DELIVERED' THEN 1 WHEN 'READ' THEN 2 ELSE -1 END"
  }

  /// The statuses this one may replace (the ones before it), as SQL `IN (...)` text.
  var earlierStatusesSQL: String {
    let earlier = MessageStatus.allCases.filter { $0 < self }.map { "'\($0.rawValue)'" }
    return earlier.isEmpty ? "NULL" : earlier.joined(separator: ", ")
  }
}

/// A message the relay has acknowledged, as stored in `Messages`.
public struct Message: Hashable, Sendable {
  /// The relay's time-sortable id (see `MessageID`).
  public var id: Int64
  public var fromUserID: Int64
  public var toUserID: Int64
  public var content: String
  public var status: MessageStatus
  /// The sender's creation time, as a `Timestamp` string.
  public var createdAt: String
  /// The request it came from, for messages the owner sent.
  public var requestID: Int64?
  /// The relay's number for the text shown: 0 as sent, then one more for each edit.
  public var version: Int64
  /// When the text shown was made by an edit (nil: as sent).
  public var editedAt: String?
  /// When the sender deleted it for everyone: a tombstone, its text erased (`content` is '').
  public var deletedAt: String?
  /// Versions its text replaced that come with it (a catch-up page gives an edited
  /// message's): stored in `MessageEdits` when it is stored. Not read back with it.
  public var history: [MessageVersion]
  /// Its media, in order (``Attachment``): stored in `Media` and `Attachments` with it.
  /// Not read back with it (``ChatRepository/attachments(ofMessage:)`` reads them).
  public var attachments: [Attachment]

  public init(
    id: Int64, fromUserID: Int64, toUserID: Int64, content: String, status: MessageStatus = .synced,
    createdAt: String, requestID: Int64? = nil, version: Int64 = 0, editedAt: String? = nil, deletedAt: String? = nil,
    history: [MessageVersion] = [], attachments: [Attachment] = []
  ) {
    self.id = id
    self.fromUserID = fromUserID
    self.toUserID = toUserID
    self.content = content
    self.status = status
    self.createdAt = createdAt
    self.requestID = requestID
    self.version = version
    self.editedAt = editedAt
    self.deletedAt = deletedAt
    self.history = history
    self.attachments = attachments
  }

  /// The conversation this message belongs to, for the file of `owner`: the other user.
  public func conversationID(owner: Int64) -> Int64 { fromUserID == owner ? toUserID : fromUserID }
}

/// The state of an unsent message. There is no success state: an acknowledged
/// request is deleted and becomes a `Message`.
public enum MessageRequestStatus: String, CaseIterable, Sendable {
  case draft = "DRAFT"
  /// Waiting for the outbox.
  case pending = "PENDING"
  /// On its way; no reply yet.
  case sent = "SENT"
  /// The last attempt failed; retried after `nextAttemptAt` unless that is nil.
  case failed = "FAILED"
}

/// An unsent message in the outbox (`MessageRequests`): the user's only copy of it.
public struct MessageRequest: Hashable, Sendable {
  /// The idempotency key the relay deduplicates on; never reused in a file.
  public var requestID: Int64
  public var toUserID: Int64
  public var content: String
  public var status: MessageRequestStatus
  public var createdAt: String
  public var lastModifiedAt: String
  public var lastSentAt: String?
  public var failCount: Int
  /// When the outbox should try again; nil for a draft or a permanent failure.
  public var nextAttemptAt: String?
  public var failReason: String?

  public init(
    requestID: Int64, toUserID: Int64, content: String, status: MessageRequestStatus, createdAt: String,
    lastModifiedAt: String, lastSentAt: String? = nil, failCount: Int = 0, nextAttemptAt: String? = nil,
    failReason: String? = nil
  ) {
    self.requestID = requestID
    self.toUserID = toUserID
    self.content = content
    self.status = status
    self.createdAt = createdAt
    self.lastModifiedAt = lastModifiedAt
    self.lastSentAt = lastSentAt
    self.failCount = failCount
    self.nextAttemptAt = nextAttemptAt
    self.failReason = failReason
  }

  /// A failed request that the outbox will not retry by itself.
  public var isPermanentlyFailed: Bool { status == .failed && nextAttemptAt == nil }
}

/// One row of the chat list.
public struct ConversationPreview: Hashable, Sendable {
  public var contact: User
  /// The newest acknowledged message, if any.
  public var lastMessage: Message?
  /// The newest unsent request, if any (it shows as the summary when it is newer).
  public var lastRequest: MessageRequest?
  /// Incoming messages not yet read.
  public var unreadCount: Int
  /// The time the list is ordered by: the newer of the last message and the last request.
  public var lastActivityAt: String

  public init(
    contact: User, lastMessage: Message?, lastRequest: MessageRequest?, unreadCount: Int, lastActivityAt: String
  ) {
    self.contact = contact
    self.lastMessage = lastMessage
    self.lastRequest = lastRequest
    self.unreadCount = unreadCount
    self.lastActivityAt = lastActivityAt
  }

  /// The text shown under the contact's name: the newest message or request, cut to
  /// `ConversationPreview.summaryLength` characters.
  public var summary: String {
    let text =
      if let lastRequest, lastRequest.createdAt >= (lastMessage?.createdAt ?? "") { lastRequest.content } else {
        lastMessage?.content ?? ""
      }
    return text.count > Self.summaryLength ? String(text.prefix(Self.summaryLength - 1)) + "…" : text
  }

  /// The longest summary, in characters.
  public static let summaryLength = 80
}
