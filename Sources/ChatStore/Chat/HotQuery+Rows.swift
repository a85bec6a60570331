import Foundation

/// The rows the catalog's queries return, decoded beside the column lists the SQL is
/// built from: a query's columns and their reading are written once, here, and no
/// column index appears outside the catalog.
extension HotQuery {
  /// A table's columns in the order its rows are read.
  struct Columns {
    var names: [String]

    /// `Users` as `User`.
    static let user = Columns(names: ["id", "name", "avatar_url", "last_connected_at"])
    /// `Messages` as `Message`.
    static let message = Columns(names: [
      "id", "from_user_id", "to_user_id", "content", "status", "created_at", "request_id", "version", "edited_at",
      "deleted_at",
    ])
    /// `MessageRequests` as `MessageRequest`.
    static let request = Columns(names: [
      "request_id", "to_user_id", "content", "status", "created_at", "last_modified_at", "last_sent_at",
      "fail_count", "next_attempt_at", "fail_reason",
    ])

    /// The names, comma-separated, each qualified by `table` when given.
    func list(of table: String? = nil) -> String {
      names.map { name in table.map { "\($0).\(name)" } ?? name }.joined(separator: ", ")
    }

    var count: Int32 { Int32(names.count) }

    /// A conversation list row (`conversationList`, `conversationListFromTables`): the
    /// contact (`u`), its newest message (`m`) and request (`r`), the unread count and
    /// the time of the last activity (`conversationPreview(_:)` reads them).
    static func conversationPreview(unread: String, lastActivity: String) -> String {
      "\(user.list(of: "u")), \(message.list(of: "m")), \(request.list(of: "r")), \(unread), \(lastActivity)"
    }
  }

  /// A `Columns.user` row.
  static func user(_ row: Row) -> User { user(row, from: 0) }

  /// A `Columns.user` row from column `start`.

  static func user(_ row: Row, from start: Int32) -> User {
    User(
      id: row.int64(start), name: row.string(start + 1), avatarURL: row.optionalString(start + 2),
      lastConnectedAt: row.optionalString(start + 3))
  }

  /// A `Columns.message` row from column `start`.
  static func message(_ row: Row) -> Message { message(row, from: 0) }

  static func message(_ row: Row, from start: Int32) -> Message {
    Message(
      id: row.int64(start), fromUserID: row.int64(start + 1), toUserID: row.int64(start + 2),
      content: row.string(start + 3), status: row.withUTF8(start + 4, MessageStatus.init(utf8:)) ?? .synced,
      createdAt: row.string(start + 5), requestID: row.optionalInt64(start + 6), version: row.int64(start + 7),
      editedAt: row.optionalString(start + 8), deletedAt: row.optionalString(start + 9))
  }

  /// A `Columns.request` row from column `start`.
  static func request(_ row: Row) -> MessageRequest { request(row, from: 0) }

  static func request(_ row: Row, from start: Int32) -> MessageRequest {
    MessageRequest(
      requestID: row.int64(start), toUserID: row.int64(start + 1), content: row.string(start + 2),
      status: MessageRequestStatus(rawValue: row.string(start + 3)) ?? .pending, createdAt: row.string(start + 4),
      lastModifiedAt: row.string(start + 5), lastSentAt: row.optionalString(start + 6),
      failCount: row.int(start + 7), nextAttemptAt: row.optionalString(start + 8),
      failReason: row.optionalString(start + 9))
  }

  /// The one column of `unconfirmedDeliveryAcks` and `markConversationRead`.
  static func messageID(_ row: Row) -> Int64 { row.int64(0) }

  /// The one column of `standInContacts`.
  static func userID(_ row: Row) -> Int64 { row.int64(0) }

  /// The one column of `firstUnread` (`min(id)`: NULL when there is none).
  static func optionalID(_ row: Row) -> Int64? { row.optionalInt64(0) }

  /// A row of `SearchSQL.messages`: a `Columns.message` row and its conversation.
  static func messageInConversation(_ row: Row) -> (Message, Int64) {
    (message(row), row.int64(Columns.message.count))
  }

  /// A row of `outboxCounts`.
  static func statusCount(_ row: Row) -> (String, Int) { (row.string(0), row.int(1)) }

  /// A row of `receiptMarks`.
  static func marks(_ row: Row) -> (delivered: Int64, read: Int64) { (row.int64(0), row.int64(1)) }

  /// A row of `Columns.conversationPreview`.
  static func conversationPreview(_ row: Row) -> ConversationPreview {
    let messageStart = Columns.user.count
    let requestStart = messageStart + Columns.message.count
    let unreadColumn = requestStart + Columns.request.count
    let message = row.isNull(messageStart) ? nil : Self.message(row, from: messageStart)
    let request = row.isNull(requestStart) ? nil : Self.request(row, from: requestStart)
    // The activity time is one of the two times just read: share its storage.
    let lastActivity = row.withUTF8(unreadColumn + 1) { bytes in
      if let time = message?.createdAt, equal(time, bytes) { return time }
      if let time = request?.createdAt, equal(time, bytes) { return time }
      return String(decoding: bytes, as: UTF8.self)
    }
    return ConversationPreview(
      contact: user(row), lastMessage: message, lastRequest: request, unreadCount: row.int(unreadColumn),
      lastActivityAt: lastActivity)
  }

  /// Whether `text` is exactly these UTF-8 bytes.
  private static func equal(_ text: String, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard text.utf8.count == bytes.count else { return false }
    guard let base = bytes.baseAddress else { return true }
    var text = text
    return text.withUTF8 { memcmp($0.baseAddress!, base, bytes.count) == 0 }
  }
}
