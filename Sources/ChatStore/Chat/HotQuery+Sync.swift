/// The sync client's statements: storing what the relay sends, receipts that come
/// before their message, the delivery acknowledgements the relay has not confirmed and
/// the outbox's heads. `ChatRepository+Sync` and `ChatRepository` run them by key.
extension HotQuery {
  /// Stores a message (as the relay holds it: edited or a tombstone), or moves a stored
  /// one's status forward (never back) and keeps its request id; its text changes only
  /// by edits and deletes (``ChatRepository/applyUpdates(_:sequence:)``).
  public static let storeMessage = HotQuery(
    name: "sync: store a message",
    sql: """
      INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at, conversation_id, request_id,
        version, edited_at, deleted_at)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
      ON CONFLICT (id) DO UPDATE SET
        status = CASE WHEN \(MessageStatus.rankSQL("excluded.status")) > \(MessageStatus.rankSQL("Messages.status"))
          THEN excluded.status ELSE Messages.status END,
        request_id = coalesce(Messages.request_id, excluded.request_id)
      """,
    sampleArguments: [
      .integer(1), .integer(1), .integer(2), .text("hi"), .text("SYNCED"), .text(sample), .integer(2), .null,
      .integer(0), .null, .null,
    ],
    access: [.primaryKey])

  /// Keeps a version an edit replaced, which came with a message from a catch-up page
  /// (``Message/history``): only below the stored message's version and never for a
  /// tombstone (a delete erased the history; a late page must not bring it back).
  public static let storeEarlierVersion = HotQuery(
    name: "sync: keep an earlier version of a message",
    sql: """
      INSERT INTO MessageEdits (message_id, version, content, edited_at)
      SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM Messages WHERE id = ?1 AND deleted_at IS NULL AND version > ?2)
      ON CONFLICT DO NOTHING
      """,
    sampleArguments: [.integer(1), .integer(0), .text("hi"), .text(sample)], access: [.primaryKey])

  /// A conversation's receipt marks (delivered up to, read up to) for messages that
  /// arrive after their receipt.
  public static let receiptMarks = HotQuery(
    name: "sync: a conversation's receipt marks",
    sql: "SELECT delivered_up_to, read_up_to FROM ConversationReceipts WHERE conversation_id = ?1",
    sampleArguments: [.integer(2)], access: [.primaryKey])

  /// Raises a conversation's delivered (`status` DELIVERED) or read mark; never lowers it.
  static func raiseReceiptMark(_ status: MessageStatus) -> HotQuery {
    let column = status == .read ? "read_up_to" : "delivered_up_to"
    return HotQuery(
      name: "sync: raise the \(column) mark",
      sql: """
        INSERT INTO ConversationReceipts (conversation_id, \(column)) VALUES (?1, ?2)
        ON CONFLICT (conversation_id) DO UPDATE SET \(column) = max(\(column), excluded.\(column))
        """,
      sampleArguments: [.integer(2), .integer(1)], access: [.primaryKey])
  }

  /// Takes (deletes and returns) the receipt that came before message `?1`.
  public static let takeEarlyReceipt = HotQuery(
    name: "sync: take a receipt that came before its message",
    sql: "DELETE FROM EarlyReceipts WHERE message_id = ?1 RETURNING status",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// Keeps a receipt for a message not stored yet (the highest status wins).
  public static let keepEarlyReceipt = HotQuery(
    name: "sync: keep a receipt for a message not stored yet",
    sql: """
      INSERT INTO EarlyReceipts (message_id, status) VALUES (?1, ?2)
      ON CONFLICT (message_id) DO UPDATE SET status = CASE
        WHEN \(MessageStatus.rankSQL("excluded.status")) > \(MessageStatus.rankSQL("EarlyReceipts.status"))
        THEN excluded.status ELSE EarlyReceipts.status END
      """,
    sampleArguments: [.integer(1), .text("READ")], access: [.primaryKey])

  /// Marks a conversation's incoming messages up to `?2` read: the owner read them on
  /// another device (`conversation_read`).
  public static let markReadElsewhere = HotQuery(
    name: "sync: mark a conversation read on another device",
    sql: """
      UPDATE Messages SET status = 'READ'
      WHERE conversation_id = ?1 AND from_user_id = conversation_id AND status <> 'READ' AND id <= ?2
      """,
    sampleArguments: [.integer(2), .integer(1)], access: unreadAccess)

  /// The outbox request `?1` if it is the message (recipient `?2`, content `?3`) the relay
  /// says this device sent with that request id.
  public static let matchingRequest = HotQuery(
    name: "sync: the outbox request a message of this device came from",
    sql: "SELECT 1 FROM MessageRequests WHERE request_id = ?1 AND to_user_id = ?2 AND content = ?3",
    sampleArguments: [.integer(1), .integer(2), .text("hi")], access: [.primaryKey])

  /// Remembers that incoming message `?1` is to be acknowledged until the relay confirms.
  public static let rememberDeliveryAck = HotQuery(
    name: "sync: remember a delivery acknowledgement",
    sql: "INSERT OR IGNORE INTO PendingDeliveryAcks (message_id) VALUES (?1)",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// Forgets an acknowledgement the relay confirmed.
  public static let forgetDeliveryAck = HotQuery(
    name: "sync: forget a confirmed delivery acknowledgement",
    sql: "DELETE FROM PendingDeliveryAcks WHERE message_id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// Acknowledgements the relay has not confirmed, after an id, oldest first.
  public static let unconfirmedDeliveryAcks = HotQuery(
    name: "sync: unconfirmed delivery acknowledgements",
    sql: "SELECT message_id FROM PendingDeliveryAcks WHERE message_id > ?1 ORDER BY message_id LIMIT ?2",
    sampleArguments: [.integer(0), .integer(500)], access: [.primaryKey, .rowidRange])

  /// An incoming message the relay confirmed as delivered: SYNCED becomes DELIVERED.
  public static let confirmDelivered = HotQuery(
    name: "sync: an incoming message confirmed delivered",
    sql:
      "UPDATE Messages SET status = 'DELIVERED' WHERE id = ?1 AND status = 'SYNCED' AND from_user_id = conversation_id",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// The next request to send in each conversation: the first (creation time, then
  /// request id) that is neither a draft nor failed for good. The conversations are
  /// walked by a skip-scan of `MessageRequests_by_conversation` and each head is one
  /// seek on it: the cost does not grow with the backlog (reading every queued request
  /// on each step made sending a backlog of n cost n²).
  public static let outboxHeads = HotQuery(
    name: "outbox: the head of each conversation",
    sql: """
      WITH RECURSIVE conversations(id) AS (
        SELECT min(to_user_id) FROM MessageRequests
        UNION ALL
        SELECT (SELECT min(to_user_id) FROM MessageRequests WHERE to_user_id > conversations.id)
        FROM conversations WHERE conversations.id IS NOT NULL
      )
      SELECT \(Columns.request.list(of: "r"))
      FROM conversations JOIN MessageRequests r ON r.request_id = (
        SELECT request_id FROM MessageRequests
        WHERE to_user_id = conversations.id AND next_attempt_at IS NOT NULL AND \(visibleRequests)
        ORDER BY created_at, request_id LIMIT 1)
      WHERE conversations.id IS NOT NULL
      ORDER BY r.to_user_id
      """,
    sampleArguments: [],
    access: [
      .index("MessageRequests_by_conversation"), .index("MessageRequests_by_recipient"), .primaryKey,
      .scan("conversations"),
    ])

  /// A conversation's requests from its head on (`?2` created_at, `?3` request id), in
  /// the head's order: the head and what may go with it in one batch.
  public static let requestsFromHead = HotQuery(
    name: "outbox: a conversation's requests from its head on",
    sql: """
      SELECT \(requestColumns) FROM MessageRequests
      WHERE to_user_id = ?1 AND (created_at, request_id) >= (?2, ?3) AND next_attempt_at IS NOT NULL
        AND \(visibleRequests)
      ORDER BY created_at, request_id LIMIT ?4
      """,
    sampleArguments: [.integer(2), .text(sample), .integer(1), .integer(100)],
    access: [.index("MessageRequests_by_conversation")])

  /// FAILED requests (waiting for a retry or failed for good), by request id. The
  /// outbox holds what is unsent, a handful of rows: read whole, in key order.
  public static let failedRequests = HotQuery(
    name: "outbox: failed requests",
    sql: "SELECT \(requestColumns) FROM MessageRequests WHERE status = 'FAILED' ORDER BY request_id LIMIT ?1",
    sampleArguments: [.integer(100)], access: [.scan("MessageRequests")])

  /// A sent request the relay did not try (its batch came before the one it followed):
  /// due again at `?2`, still SENT (it goes with the same request id).
  public static let requeueSent = HotQuery(
    name: "outbox: a sent request due again",
    sql: "UPDATE MessageRequests SET next_attempt_at = ?2 WHERE request_id = ?1 AND status = 'SENT'",
    sampleArguments: [.integer(1), .text(sample)], access: [.primaryKey])

  /// After a restart: requests a killed process left SENT are due at `?1`. The
  /// outbox's few rows are read whole.
  public static let resumeInterruptedSends = HotQuery(
    name: "outbox: resume interrupted sends",
    sql: "UPDATE MessageRequests SET next_attempt_at = ?1 WHERE status = 'SENT'",
    sampleArguments: [.text(sample)], access: [.scan("MessageRequests")])

  /// Outbox counts by status, `permanent` for failed requests that wait for `retry`.
  /// The outbox's few rows are read whole.
  public static let outboxCounts = HotQuery(
    name: "outbox: counts by status",
    sql: """
      SELECT CASE WHEN status = 'FAILED' AND next_attempt_at IS NULL THEN 'permanent' ELSE status END, count(*)
      FROM MessageRequests GROUP BY 1
      """,
    sampleArguments: [], access: [.scan("MessageRequests")])

  /// Counts one more failed send of request `?1` that reached the relay; returns the count.
  public static let recordFailedAnswer = HotQuery(
    name: "outbox: count a failed answer",
    sql:
      "UPDATE MessageRequests SET failed_answers = failed_answers + 1 WHERE request_id = ?1 RETURNING failed_answers",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// Requests failed for a passing reason become due at `?1` (the relay is back).
  public static let retryFailedNow = HotQuery(
    name: "outbox: failed requests due now",
    sql: "UPDATE MessageRequests SET next_attempt_at = ?1 WHERE status = 'FAILED' AND next_attempt_at > ?1",
    sampleArguments: [.text(sample)], access: [.index("MessageRequests_due"), .scan("MessageRequests")])

  /// A new request, PENDING and due now.
  public static let insertRequest = HotQuery(
    name: "outbox: a new request",
    sql: """
      INSERT INTO MessageRequests (request_id, to_user_id, content, status, created_at, last_modified_at,
        last_sent_at, fail_count, next_attempt_at, fail_reason)
      VALUES (?1, ?2, ?3, 'PENDING', ?4, ?4, NULL, 0, ?4, NULL)
      """,
    sampleArguments: [.integer(1), .integer(2), .text("hi"), .text(sample)], access: [.primaryKey])

  /// Inserts or updates a contact; a known last-seen time never moves back.
  public static let upsertUser = HotQuery(
    name: "users: store a profile",
    sql: """
      INSERT INTO Users (id, name, avatar_url, last_connected_at) VALUES (?1, ?2, ?3, ?4)
      ON CONFLICT (id) DO UPDATE SET name = excluded.name, avatar_url = excluded.avatar_url,
        last_connected_at = CASE
          WHEN Users.last_connected_at IS NULL OR excluded.last_connected_at > Users.last_connected_at
          THEN coalesce(excluded.last_connected_at, Users.last_connected_at)
          ELSE Users.last_connected_at END
      """,
    sampleArguments: [.integer(2), .text("Ada"), .null, .null], access: [.primaryKey])

  /// Stores a stand-in profile unless the contact has one.
  public static let addPlaceholderUser = HotQuery(
    name: "users: a stand-in profile",
    sql: "INSERT OR IGNORE INTO Users (id, name, avatar_url, last_connected_at) VALUES (?1, ?2, ?3, ?4)",
    sampleArguments: [.integer(2), .text("user 2"), .null, .null], access: [.primaryKey])

  /// Contacts still shown by their stand-in profile ("user 7"), but `?1` (the owner),
  /// at most `?2`. A pass over the contacts, once per connect.
  public static let standInContacts = HotQuery(
    name: "users: stand-in profiles",
    sql: "SELECT id FROM Users WHERE name = 'user ' || id AND avatar_url IS NULL AND id <> ?1 ORDER BY id LIMIT ?2",
    sampleArguments: [.integer(1), .integer(100)], access: [.scan("Users"), .rowidRange])

  /// A conversation's oldest unread incoming message (read receipts stop below it).
  public static let firstUnread = HotQuery(
    name: "receipts: the oldest unread message of a conversation",
    sql: "SELECT min(id) FROM Messages WHERE conversation_id = ?1 AND from_user_id = ?1 AND status <> 'READ'",
    sampleArguments: [.integer(2)], access: [.index("Messages_unread"), byConversation])

  /// The sync client's entries of the catalog.
  static let sync: [HotQuery] =
    [
      storeMessage, storeEarlierVersion, receiptMarks, takeEarlyReceipt, keepEarlyReceipt, markReadElsewhere,
      matchingRequest,
      rememberDeliveryAck, forgetDeliveryAck,
      unconfirmedDeliveryAcks, confirmDelivered, outboxHeads, requestsFromHead, failedRequests, resumeInterruptedSends,
      requeueSent, outboxCounts,
      recordFailedAnswer, retryFailedNow, insertRequest, upsertUser, addPlaceholderUser, standInContacts, firstUnread,
    ] + [MessageStatus.delivered, .read].map(raiseReceiptMark)
}
