/// The queries the app and the maintenance tools run by key on `Messages`,
/// `MessageRequests` and `Users`, in one catalog: the repository, the importer, the
/// eviction planner and the evictor take their SQL from here and nowhere else, tests
/// check each plan with `EXPLAIN QUERY PLAN`, and `chatdb index verify` uses the
/// catalog as the truth of what the app asks of the file.
///
/// Each entry says how its plan may reach rows (`access`): the indexes it expects,
/// a single row by key, a rowid range where walking the table in id order is the
/// point, or one index walked in its order (a page of the chat list). Anything else in the plan (a `SCAN` of a table, a `SEARCH` with no index
/// or another one) is a finding. Plain `INSERT`s are left out: they have no plan.
///
/// See <https://sqlite.org/eqp.html>.
public struct HotQuery: Sendable, Hashable {
  /// A short name, for reports.
  public var name: String
  /// The SQL, with `?NNN` parameters.
  public var sql: String
  /// Sample arguments that make the statement runnable for `EXPLAIN QUERY PLAN`.
  public var sampleArguments: [DatabaseValue]
  /// How the plan may reach table rows; every `SCAN`/`SEARCH` step must be one of these.
  public var access: Set<PlanAccess>
  /// SQL that must run before the query can be prepared (a temporary table it reads),
  /// or nil.
  public var setup: String?

  init(name: String, sql: String, sampleArguments: [DatabaseValue], access: Set<PlanAccess>, setup: String? = nil) {
    self.name = name
    self.sql = sql
    self.sampleArguments = sampleArguments
    self.access = access
    self.setup = setup
  }

  static let messageColumns = Columns.message.list()
  static let requestColumns = Columns.request.list()
  /// Not `status IN (…)`: SQLite builds a temporary b-tree for an IN list of three or
  /// more values each time a statement runs (see migration 0007).
  static let visibleRequests = "(status = 'PENDING' OR status = 'SENT' OR status = 'FAILED')"
  static let sample = "2026-01-01T00:00:00.000Z"

  static let byConversation = PlanAccess.index("Messages_by_conversation")

  // MARK: - Timeline

  /// Messages of a conversation older than a cursor id, newest first.
  public static let messagesBefore = HotQuery(
    name: "timeline: messages before a cursor",
    sql: "SELECT \(messageColumns) FROM Messages WHERE conversation_id = ?1 AND id < ?2 ORDER BY id DESC LIMIT ?3",
    sampleArguments: [.integer(2), .integer(Int64.max), .integer(50)], access: [byConversation])

  /// Messages of a conversation newer than a cursor id, oldest first.
  public static let messagesAfter = HotQuery(
    name: "timeline: messages after a cursor",
    sql: "SELECT \(messageColumns) FROM Messages WHERE conversation_id = ?1 AND id > ?2 ORDER BY id ASC LIMIT ?3",
    sampleArguments: [.integer(2), .integer(0), .integer(50)], access: [byConversation])

  /// Visible requests of a conversation before a (created_at, request_id) cursor, newest first.
  public static let requestsBefore = HotQuery(
    name: "timeline: requests before a cursor",
    sql: """
      SELECT \(requestColumns) FROM MessageRequests
      WHERE to_user_id = ?1 AND \(visibleRequests) AND (created_at, request_id) < (?2, ?3)
      ORDER BY created_at DESC, request_id DESC LIMIT ?4
      """,
    sampleArguments: [.integer(2), .text("9999"), .integer(Int64.max), .integer(50)],
    access: [.index("MessageRequests_by_conversation")])

  /// Visible requests of a conversation after a (created_at, request_id) cursor, oldest first.
  public static let requestsAfter = HotQuery(
    name: "timeline: requests after a cursor",
    sql: """
      SELECT \(requestColumns) FROM MessageRequests
      WHERE to_user_id = ?1 AND \(visibleRequests) AND (created_at, request_id) > (?2, ?3)
      ORDER BY created_at ASC, request_id ASC LIMIT ?4
      """,
    sampleArguments: [.integer(2), .text(""), .integer(0), .integer(50)],
    access: [.index("MessageRequests_by_conversation")])

  // MARK: - Conversation list

  /// Every contact with a message or a visible request: the newest message, the
  /// newest request and the unread count, newest activity first.
  ///
  /// It reads `ConversationSummaries` (migration 0004) in the order of its activity
  /// index and stops after the page: a page costs the same at 100 contacts or 100,000.
  /// The summary names each conversation's newest message and request; their rows and
  /// the contact's profile are read by key. `CROSS JOIN` keeps SQLite from starting at
  /// `Users` (every contact) and sorting. The rows, order and fields are those of the
  /// list computed from the tables (`conversationListFromTables`).
  public static let conversationList = HotQuery(
    name: "conversation list",
    sql: """
      SELECT \(Columns.conversationPreview(unread: "s.unread_count", lastActivity: "s.last_activity"))
      FROM ConversationSummaries s
      CROSS JOIN Users u ON u.id = s.conversation_id
      LEFT JOIN Messages m ON m.id = s.last_message_id
      LEFT JOIN MessageRequests r ON r.request_id = s.last_request_id
      ORDER BY s.last_activity DESC, s.conversation_id
      LIMIT ?1
      """,
    sampleArguments: [.integer(50)],
    access: [.indexOrder("ConversationSummaries_by_activity"), .primaryKey])

  /// The chat list computed from the tables, as it was before migration 0004 kept it in
  /// `ConversationSummaries`: one pass over every contact. Not run by the app; it is the
  /// definition the summary must equal (tests and `chatdb check` compare the two).
  public static let conversationListFromTables = HotQuery(
    name: "conversation list from the tables (the summary's definition)",
    sql: """
      SELECT \(Columns.conversationPreview(
        unread: """
          (SELECT count(*) FROM Messages
            WHERE conversation_id = u.id AND from_user_id = conversation_id AND status <> 'READ') AS unread
          """,
        lastActivity: "max(coalesce(m.created_at, ''), coalesce(r.created_at, '')) AS last_activity"))
      FROM Users u
      LEFT JOIN Messages m ON m.id = (SELECT max(id) FROM Messages WHERE conversation_id = u.id)
      LEFT JOIN MessageRequests r ON r.request_id = (
        SELECT request_id FROM MessageRequests
        WHERE to_user_id = u.id AND \(visibleRequests)
        ORDER BY created_at DESC, request_id DESC LIMIT 1)
      WHERE m.id IS NOT NULL OR r.request_id IS NOT NULL
      ORDER BY last_activity DESC, u.id
      LIMIT ?1
      """,
    sampleArguments: [.integer(100)],
    access: [
      .scan("Users"), .primaryKey, byConversation, .index("Messages_unread"), .index("MessageRequests_by_conversation"),
    ])

  /// One conversation's summary computed from the tables (after `DELETE` of its row):
  /// what the migration's triggers do when a change is more than a new message or an
  /// unread one fewer, and what bulk jobs do with their triggers off.
  public static let recomputeConversationSummary = HotQuery(
    name: "summary: recompute a conversation",
    sql: """
      INSERT INTO ConversationSummaries (
        conversation_id, last_message_id, last_message_at, last_request_id, last_request_at, unread_count, last_activity)
      SELECT ?1, m.id, m.created_at, r.request_id, r.created_at,
        (SELECT count(*) FROM Messages WHERE conversation_id = ?1 AND from_user_id = conversation_id AND status <> 'READ'),
        max(coalesce(m.created_at, ''), coalesce(r.created_at, ''))
      FROM (SELECT 1)
      LEFT JOIN Messages m ON m.id = (SELECT max(id) FROM Messages WHERE conversation_id = ?1)
      LEFT JOIN MessageRequests r ON r.request_id = (
        SELECT request_id FROM MessageRequests
        WHERE to_user_id = ?1 AND \(visibleRequests)
        ORDER BY created_at DESC, request_id DESC LIMIT 1)
      WHERE m.id IS NOT NULL OR r.request_id IS NOT NULL
      """,
    sampleArguments: [.integer(2)],
    access: [.primaryKey, byConversation, .index("Messages_unread"), .index("MessageRequests_by_conversation")])

  /// The newest message id a conversation's summary names.
  public static let conversationSummaryNewestMessage = HotQuery(
    name: "summary: a conversation's newest message",
    sql: "SELECT last_message_id FROM ConversationSummaries WHERE conversation_id = ?1",
    sampleArguments: [.integer(2)], access: [.primaryKey])

  /// Unread messages removed from a conversation (eviction).
  public static let subtractUnread = HotQuery(
    name: "summary: subtract unread messages",
    sql: "UPDATE ConversationSummaries SET unread_count = unread_count - ?2 WHERE conversation_id = ?1",
    sampleArguments: [.integer(2), .integer(1)], access: [.primaryKey])

  /// Incoming messages of one conversation not yet read.
  public static let unreadCount = HotQuery(
    name: "unread count of a conversation",
    sql:
      "SELECT count(*) FROM Messages WHERE conversation_id = ?1 AND from_user_id = conversation_id AND status <> 'READ'",
    sampleArguments: [.integer(2)], access: unreadAccess)

  /// The partial index of unread messages is the better plan, but without statistics
  /// SQLite may pick the conversation index instead (say, after `index apply` rebuilt
  /// it): still one conversation's rows, so both pass.
  static let unreadAccess: Set<PlanAccess> = [.index("Messages_unread"), byConversation]

  // MARK: - Users

  /// A user by id.
  public static let userByID = HotQuery(
    name: "user by id",
    sql: "SELECT \(Columns.user.list()) FROM Users WHERE id = ?1",
    sampleArguments: [.integer(2)], access: [.primaryKey])

  /// Records a contact's presence; never moves it back in time.
  public static let updatePresence = HotQuery(
    name: "update a user's presence",
    sql:
      "UPDATE Users SET last_connected_at = ?2 WHERE id = ?1 AND (last_connected_at IS NULL OR last_connected_at < ?2)",
    sampleArguments: [.integer(2), .text(sample)], access: [.primaryKey])

  // MARK: - Receipts

  /// Marks a conversation's incoming messages read; returns their ids.
  public static let markConversationRead = HotQuery(
    name: "mark a conversation read",
    sql: """
      UPDATE Messages SET status = 'READ'
      WHERE conversation_id = ?1 AND from_user_id = conversation_id AND status <> 'READ'
      RETURNING id
      """,
    sampleArguments: [.integer(2)], access: unreadAccess)

  /// Moves the owner's messages in a conversation up to an id forward to a status.
  /// The statuses it may replace are spelled out per status.
  static func statusUpTo(_ status: MessageStatus) -> HotQuery {
    HotQuery(
      name: "status up to an id (\(status.rawValue))",
      sql: """
        UPDATE Messages SET status = '\(status.rawValue)'
        WHERE conversation_id = ?1 AND id <= ?2 AND from_user_id <> conversation_id
          AND status IN (\(status.earlierStatusesSQL))
        """,
      sampleArguments: [.integer(2), .integer(Int64.max)], access: [byConversation])
  }

  /// Moves one message forward to a status (`?2`, one of the statuses after those listed).
  static func statusOfMessage(_ status: MessageStatus) -> HotQuery {
    HotQuery(
      name: "status of one message (\(status.rawValue))",
      sql: "UPDATE Messages SET status = ?2 WHERE id = ?1 AND status IN (\(status.earlierStatusesSQL))",
      sampleArguments: [.integer(1), .text(status.rawValue)], access: [.primaryKey])
  }

  /// Whether a message is stored (receipts and import).
  public static let messageExists = HotQuery(
    name: "message exists",
    sql: "SELECT 1 FROM Messages WHERE id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// A message's edit history, for a bulk job that deleted the message with triggers off.
  public static let deleteEditHistory = HotQuery(
    name: "evict: a deleted message's edit history",
    sql: "DELETE FROM MessageEdits WHERE message_id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// The edit history of the messages an id range no longer holds (`?1` < id <= `?2`).
  public static let deleteEditHistoryInIDRange = HotQuery(
    name: "evict: the edit history of an id range's deleted messages",
    sql: """
      DELETE FROM MessageEdits
      WHERE message_id > ?1 AND message_id <= ?2 AND NOT EXISTS (SELECT 1 FROM Messages m WHERE m.id = message_id)
      """,
    sampleArguments: [.integer(0), .integer(1)], access: [.rowidRange, .primaryKey])

  /// A message deleted on this device only (`HiddenMessages`): the sync does not store it again.
  public static let messageHidden = HotQuery(
    name: "message hidden",
    sql: "SELECT 1 FROM HiddenMessages WHERE id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// A stored message's parties, text and time: generate compares a clash with what it
  /// would write (same id, other content: another --seed).
  public static let storedMessage = HotQuery(
    name: "generate: a stored message by id",
    sql: "SELECT from_user_id, to_user_id, content, created_at FROM Messages WHERE id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// Moves an imported message's status forward (never back); returns a row when it moved.
  public static let advanceMessageStatus = HotQuery(
    name: "import: move a message's status forward",
    sql: """
      UPDATE Messages SET status = ?2 WHERE id = ?1 AND \(MessageStatus.rankSQL("?2")) > \(MessageStatus.rankSQL("status"))
      RETURNING 1
      """,
    sampleArguments: [.integer(1), .text("READ")], access: [.primaryKey])

  // MARK: - Outbox

  /// Requests due for sending at a time, whose retry budget is not spent, oldest
  /// first per conversation.
  public static let dueRequests = HotQuery(
    name: "outbox: due requests",
    sql: """
      SELECT \(requestColumns) FROM MessageRequests
      WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= ?1 AND \(visibleRequests) AND coalesce(fail_count, 0) < ?2
      ORDER BY to_user_id, created_at, request_id LIMIT ?3
      """,
    sampleArguments: [.text(sample), .integer(10), .integer(100)], access: [.index("MessageRequests_due")])

  /// A request by id.
  public static let requestByID = HotQuery(
    name: "outbox: request by id",
    sql: "SELECT \(requestColumns) FROM MessageRequests WHERE request_id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// Marks a visible request SENT (`?2` now, `?3` when its reply is overdue).
  public static let markRequestSent = HotQuery(
    name: "outbox: mark a request sent",
    sql: """
      UPDATE MessageRequests SET status = 'SENT', last_sent_at = ?2, last_modified_at = ?2, next_attempt_at = ?3
      WHERE request_id = ?1 AND \(visibleRequests)
      """,
    sampleArguments: [.integer(1), .text(sample), .text(sample)], access: [.primaryKey])

  /// Records a failed attempt of a visible request (`?2` reason, `?3` now, `?4` next attempt or NULL).
  public static let markRequestFailed = HotQuery(
    name: "outbox: mark a request failed",
    sql: """
      UPDATE MessageRequests SET status = 'FAILED', fail_count = coalesce(fail_count, 0) + 1, fail_reason = ?2,
        last_modified_at = ?3, next_attempt_at = ?4
      WHERE request_id = ?1 AND \(visibleRequests)
      """,
    sampleArguments: [.integer(1), .text("timeout"), .text(sample), .null], access: [.primaryKey])

  /// Puts a FAILED request back in line at `?2`.
  public static let retryRequest = HotQuery(
    name: "outbox: retry a failed request",
    sql: """
      UPDATE MessageRequests SET status = 'PENDING', fail_count = 0, failed_answers = 0, fail_reason = NULL,
        last_modified_at = ?2, next_attempt_at = ?2
      WHERE request_id = ?1 AND status = 'FAILED'
      """,
    sampleArguments: [.integer(1), .text(sample)], access: [.primaryKey])

  /// Deletes a request only if it is FAILED (the user's explicit delete).
  public static let deleteFailedRequest = HotQuery(
    name: "outbox: delete a failed request",
    sql: "DELETE FROM MessageRequests WHERE request_id = ?1 AND status = 'FAILED'",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// Deletes a request (it was acknowledged).
  public static let deleteRequest = HotQuery(
    name: "outbox: delete an acknowledged request",
    sql: "DELETE FROM MessageRequests WHERE request_id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// The request an acknowledged message came from (dedupe of acknowledgements).
  public static let messageByRequest = HotQuery(
    name: "message by request id",
    sql: "SELECT id FROM Messages WHERE from_user_id = ?1 AND request_id = ?2",
    sampleArguments: [.integer(1), .integer(1)], access: [.index("Messages_by_request")])

  /// Raises the request-id counter above every request id in the file (`?1` the owner),
  /// after an import: new sends never reuse an imported id.
  public static let raiseRequestCounter = HotQuery(
    name: "import: raise the request counter",
    sql: """
      UPDATE StoreInfo SET value = max(value,
        coalesce((SELECT max(request_id) FROM MessageRequests), 0),
        coalesce((SELECT max(request_id) FROM Messages WHERE from_user_id = ?1 AND request_id IS NOT NULL), 0))
      WHERE key = 'last_request_id'
      """,
    // `max(request_id)` of MessageRequests is one step to the end of its rowid b-tree.
    sampleArguments: [.integer(1)], access: [.primaryKey, .rowidRange, .index("Messages_by_request")])

  // MARK: - Maintenance

  /// The first message at or after a time: eviction by age deletes the ids below it.
  ///
  /// `+id` keeps SQLite from answering `min(id)` by walking the table in id order
  /// until a row matches (a pass over every message older than the cutoff, the ones
  /// to delete); with it, the `created_at` index gives the rows at or after the cutoff.
  public static let firstMessageAtOrAfter = HotQuery(
    name: "eviction: first message at or after a time",
    sql: "SELECT min(+id) FROM Messages WHERE created_at >= ?1",
    sampleArguments: [.text(sample)], access: [.index("Messages_by_created_at")])

  /// Every conversation with messages, found by skipping through the
  /// `(conversation_id, id)` index: one seek per conversation, not a scan.
  public static let conversationIDs = HotQuery(
    name: "eviction: conversations with messages",
    sql: """
      WITH RECURSIVE c(id) AS (
        SELECT min(conversation_id) FROM Messages
        UNION ALL
        SELECT (SELECT min(conversation_id) FROM Messages WHERE conversation_id > c.id) FROM c WHERE c.id IS NOT NULL
      )
      SELECT id FROM c WHERE id IS NOT NULL
      """,
    sampleArguments: [], access: [byConversation])

  /// The id of a conversation's message `?2` places from the newest (keep-last).
  public static let nthNewestMessage = HotQuery(
    name: "eviction: a conversation's nth newest message",
    sql: "SELECT id FROM Messages WHERE conversation_id = ?1 ORDER BY id DESC LIMIT 1 OFFSET ?2",
    sampleArguments: [.integer(2), .integer(10)], access: [byConversation])

  /// A conversation's newest message id (least-recent conversations go first).
  public static let newestMessageOfConversation = HotQuery(
    name: "eviction: a conversation's newest message",
    sql: "SELECT max(id) FROM Messages WHERE conversation_id = ?1",
    sampleArguments: [.integer(2)], access: [byConversation])

  /// Messages of a conversation in an id range (the eviction plan, per conversation).
  public static let conversationRange = HotQuery(
    name: "eviction: a conversation's messages in an id range",
    sql: "SELECT count(*), max(id), 0 FROM Messages WHERE conversation_id = ?1 AND id > ?2 AND id <= ?3",
    sampleArguments: [.integer(2), .integer(0), .integer(Int64.max)], access: [byConversation])

  /// As `conversationRange`, with the bytes of the messages' content.
  public static let conversationRangeBytes = HotQuery(
    name: "eviction: a conversation's messages and bytes in an id range",
    sql: """
      SELECT count(*), max(id), coalesce(sum(length(CAST(content AS BLOB))), 0) FROM Messages
      WHERE conversation_id = ?1 AND id > ?2 AND id <= ?3
      """,
    sampleArguments: [.integer(2), .integer(0), .integer(Int64.max)], access: [byConversation])

  /// Messages from an id on, oldest first, with their content bytes (the size step
  /// walks the table in id order, how the rows lie on disk).
  public static let messagesFromID = HotQuery(
    name: "eviction: messages from an id on",
    sql: "SELECT id, conversation_id, length(CAST(content AS BLOB)) FROM Messages WHERE id >= ?1 ORDER BY id",
    sampleArguments: [.integer(0)], access: [.rowidRange])

  /// The oldest message id.
  public static let oldestMessage = HotQuery(
    name: "eviction: oldest message",
    sql: "SELECT min(id) FROM Messages",
    sampleArguments: [], access: [.rowidRange])

  /// What eviction's deletes return of each row, for the conversation summaries
  /// (`ConversationSummaryUpkeep.deleted`): its conversation, id and whether it was
  /// unread; and its text, for the search indexes (`SearchIndexUpkeep.deletedMessage`).
  static let deletedRows = "RETURNING conversation_id, id, from_user_id = conversation_id AND status <> 'READ', content"

  /// Deletes up to `?3` of a conversation's oldest messages with ids up to `?2`.
  public static let deleteConversationChunk = HotQuery(
    name: "eviction: delete a chunk of a conversation",
    sql: """
      DELETE FROM Messages WHERE id IN (SELECT id FROM Messages WHERE conversation_id = ?1 AND id <= ?2 ORDER BY id LIMIT ?3)
      \(deletedRows)
      """,
    sampleArguments: [.integer(2), .integer(Int64.max), .integer(100)], access: [.primaryKey, byConversation])

  /// The id `?3` rows after `?1` (at most `?2`): the upper end of the next chunk.
  public static let chunkEnd = HotQuery(
    name: "eviction: end of the next chunk",
    sql: "SELECT id FROM Messages WHERE id > ?1 AND id <= ?2 ORDER BY id LIMIT 1 OFFSET ?3",
    sampleArguments: [.integer(0), .integer(Int64.max), .integer(100)], access: [.rowidRange])

  /// The per-conversation bounds of a many-conversation eviction, in a temporary table.
  public static let evictionBoundsTable =
    "CREATE TEMP TABLE IF NOT EXISTS chatdb_evict_bounds (conversation_id INTEGER PRIMARY KEY, last_id INTEGER NOT NULL)"

  /// Deletes the messages in an id range that the per-conversation bounds cover.
  public static let deleteBoundedRange = HotQuery(
    name: "eviction: delete an id range within conversation bounds",
    sql: """
      DELETE FROM Messages WHERE id > ?1 AND id <= ?2
        AND id <= (SELECT last_id FROM temp.chatdb_evict_bounds b WHERE b.conversation_id = Messages.conversation_id)
      \(deletedRows)
      """,
    sampleArguments: [.integer(0), .integer(100)], access: [.rowidRange, .primaryKey], setup: evictionBoundsTable)

  /// Deletes every message in an id range. Nothing comes back: the chunk learns what
  /// the summaries need from `unreadInIDRange` and `summariesWithNewestInIDRange` first.
  /// (`RETURNING` made each chunk a third slower: SQLite collects the returned rows in an
  /// ephemeral table, and the evictor steps through every one.)
  public static let deleteIDRange = HotQuery(
    name: "eviction: delete an id range",
    sql: "DELETE FROM Messages WHERE id > ?1 AND id <= ?2",
    sampleArguments: [.integer(0), .integer(100)], access: [.rowidRange])

  /// Per conversation, the unread messages in an id range: a walk of the unread index,
  /// which holds exactly the unread messages (a few, usually the newest), checking each
  /// entry's id before its row is read.
  public static let unreadInIDRange = HotQuery(
    name: "eviction: unread messages in an id range",
    sql: """
      SELECT conversation_id, count(*) FROM Messages INDEXED BY Messages_unread
      WHERE from_user_id = conversation_id AND status <> 'READ' AND id > ?1 AND id <= ?2
      GROUP BY conversation_id
      """,
    sampleArguments: [.integer(0), .integer(100)], access: [.indexOrder("Messages_unread")])

  /// Conversations whose newest message lies in an id range (their summary is recomputed
  /// once the range is deleted): a walk of the summaries' covering index.
  public static let summariesWithNewestInIDRange = HotQuery(
    name: "eviction: conversations whose newest message is in an id range",
    sql: "SELECT conversation_id FROM ConversationSummaries WHERE last_message_id > ?1 AND last_message_id <= ?2",
    sampleArguments: [.integer(0), .integer(100)], access: [.scan("ConversationSummaries")])

  /// A message's time (storage report: the oldest and newest of a conversation).
  public static let messageCreatedAt = HotQuery(
    name: "storage: a message's time",
    sql: "SELECT created_at FROM Messages WHERE id = ?1",
    sampleArguments: [.integer(1)], access: [.primaryKey])

  /// The whole catalog.
  public static let all: [HotQuery] =
    [
      messagesBefore, messagesAfter, requestsBefore, requestsAfter, conversationList, conversationListFromTables,
      recomputeConversationSummary, conversationSummaryNewestMessage, subtractUnread, unreadCount, userByID,
      updatePresence,
      markConversationRead, messageExists, messageHidden, deleteEditHistory, deleteEditHistoryInIDRange, storedMessage,
      advanceMessageStatus, dueRequests, requestByID,
      markRequestSent, markRequestFailed, retryRequest, deleteFailedRequest, deleteRequest, messageByRequest,
      raiseRequestCounter,
      firstMessageAtOrAfter, conversationIDs, nthNewestMessage, newestMessageOfConversation, conversationRange,
      conversationRangeBytes, messagesFromID, oldestMessage, deleteConversationChunk, chunkEnd, deleteBoundedRange,
      deleteIDRange, unreadInIDRange, summariesWithNewestInIDRange, messageCreatedAt,
    ] + MessageStatus.allCases.dropFirst().map(statusUpTo) + MessageStatus.allCases.dropFirst().map(statusOfMessage)
    + search + sync + media
}

// MARK: - Plans

/// How one step of a query plan reaches a table's rows.
///
/// See <https://sqlite.org/eqp.html>.
public enum PlanAccess: Sendable, Hashable, CustomStringConvertible {
  /// Through this index: `SEARCH t USING [COVERING] INDEX name (…)`.
  case index(String)
  /// One row by its key: `USING INTEGER PRIMARY KEY (rowid=?)` or `USING PRIMARY KEY (key=?)`.
  case primaryKey
  /// A walk along the rowid b-tree from a bound or an end, the right thing when the
  /// query wants rows in id order: `USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)`,
  /// or a bare `SEARCH t` (`min(id)`/`max(id)`). Where an index was expected, this is
  /// the fallback that visits the whole table just the same.
  case rowidRange
  /// This index from one end in its order: `SCAN t USING [COVERING] INDEX name`. With
  /// `ORDER BY` on the index's columns and a `LIMIT`, SQLite stops after the page.
  case indexOrder(String)
  /// Every row of this table: `SCAN t`; also allows `SCAN t USING INDEX …` (a full
  /// index pass, `indexOrder`) on the table.
  case scan(String)

  public var description: String {
    switch self {
    case .index(let name): "index \(name)"
    case .primaryKey: "the primary key"
    case .rowidRange: "a rowid range"
    case .indexOrder(let name): "index \(name) in order"
    case .scan(let table): "a scan of \(table)"
    }
  }
}

/// A plan step of a hot query that reaches a table in a way its catalog entry does not allow.
public struct PlanFinding: Sendable, Hashable, CustomStringConvertible {
  /// The table (aliases resolved).
  public var table: String
  /// The `EXPLAIN QUERY PLAN` line.
  public var step: String
  /// What the entry allows.
  public var expected: Set<PlanAccess>

  public var description: String {
    "\(step): expected \(expected.map(\.description).sorted().joined(separator: " or "))"
  }
}

extension HotQuery {
  /// The `EXPLAIN QUERY PLAN` lines of this query on `db`, one per step.
  public func plan(in db: Database) throws -> [String] {
    if let setup {
      // The setup only creates a TEMP table, which `query_only` (how `Mode.readOnly`
      // keeps a read-write handle from writing) refuses too: lift it for that one
      // statement; the database file itself is never written.
      let queryOnly = try db.int64("PRAGMA query_only") == 1
      if queryOnly { try db.execute("PRAGMA query_only = OFF") }
      defer { if queryOnly { try? db.execute("PRAGMA query_only = ON") } }
      try db.execute(setup)
    }
    return try db.prepare("EXPLAIN QUERY PLAN " + sql).map(sampleArguments) { $0.string(3) }
  }

  /// The plan steps that reach a table other than `access` allows: any `SCAN` of a
  /// table not declared scannable, any `SEARCH` through another index or none (a bare
  /// `SEARCH Messages` walks the table in id order, as does the `rowid>? AND rowid<?`
  /// fallback SQLite picks when the expected index is gone).
  public func findings(in db: Database) throws -> [PlanFinding] {
    let aliases = tableAliases
    let tables = Set(
      try db.query(
        "SELECT lower(name) FROM sqlite_schema WHERE type = 'table' UNION SELECT lower(name) FROM sqlite_temp_schema WHERE type = 'table'"
      ) { $0.string(0) })
    return try plan(in: db).compactMap { line -> PlanFinding? in
      let words = line.split(separator: " ").map(String.init)
      guard words.count >= 2, words[0] == "SCAN" || words[0] == "SEARCH" else { return nil }
      let table = aliases[words[1]] ?? words[1]
      // A CTE or subquery result (`SCAN c`) is not a table of the file.
      guard tables.contains(table.lowercased()) else { return nil }
      let used = Self.access(of: words, table: table)
      return used.map { permits($0, on: table) } == true ? nil : PlanFinding(table: table, step: line, expected: access)
    }
  }

  /// Whether `access` allows a step that uses `used` on `table`: declared as such, or a
  /// walk of one of the table's indexes where a scan of the table is allowed.
  func permits(_ used: PlanAccess, on table: String) -> Bool {
    if access.contains(used) { return true }
    if case .indexOrder = used { return access.contains(.scan(table)) }
    return false
  }

  /// What one plan step (split in words) uses; nil for an automatic index, which is never expected.
  static func access(of words: [String], table: String) -> PlanAccess? {
    if words[0] == "SCAN" {
      if words.count > 3, words[2] == "USING", let i = words.firstIndex(of: "INDEX"), i + 1 < words.count {
        return .indexOrder(words[i + 1])
      }
      return .scan(table)
    }
    guard words.count > 3, words[2] == "USING" else { return .rowidRange }
    if words.contains("AUTOMATIC") { return nil }
    if let i = words.firstIndex(of: "INDEX"), i + 1 < words.count { return .index(words[i + 1]) }
    if words.contains("KEY") {
      let constraint = words.drop { $0 != "KEY" }.dropFirst().joined(separator: " ")
      // `(rowid=?)` or `(key=?)`: one row; ranges (`<`, `>`) walk the b-tree.
      return constraint.contains("<") || constraint.contains(">") ? .rowidRange : .primaryKey
    }
    return nil
  }

  /// The tables this plan reaches other than `access` allows, one per finding (see `findings(in:)`).
  public func fullScans(in db: Database) throws -> [String] {
    try findings(in: db).map(\.table)
  }

  /// `alias → table` for every `FROM`/`JOIN <table> <alias>` in the SQL.
  var tableAliases: [String: String] {
    let words = sql.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "(" || $0 == ")" || $0 == "," }).map(
      String.init)
    var aliases: [String: String] = [:]
    for i in words.indices.dropLast(2) where ["FROM", "JOIN"].contains(words[i].uppercased()) {
      let alias = words[i + 2]
      let table = words[i + 1].hasPrefix("temp.") ? String(words[i + 1].dropFirst(5)) : words[i + 1]
      if !["WHERE", "ON", "LEFT", "ORDER", "LIMIT", "GROUP"].contains(alias.uppercased()) { aliases[alias] = table }
    }
    return aliases
  }
}
