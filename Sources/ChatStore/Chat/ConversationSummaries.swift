/// Keeps `ConversationSummaries` (the chat list's rows, migration 0004) exact for a bulk
/// job that turned its connection's triggers off.
///
/// Every other writer keeps the table exact through the migration's triggers, row by
/// row. Row by row costs more than the insert itself, so import, generate and evict
/// switch triggers off for their own connection (`Database.setTriggersEnabled`), tell
/// this type what they changed, and `apply()` it in the same transaction before they
/// commit: the file is exact at every commit, for every reader, and writers on other
/// connections (the sync client, a user's sqlite3) keep running the triggers.
///
/// ```swift
/// let summaries = try ConversationSummaryUpkeep(database: db)
/// try db.beginTransaction(.immediate)
/// // … insert messages, then for each one inserted:
/// summaries.inserted(conversation: 2, id: 123, createdAt: "2026-01-01T00:00:00.000Z", unread: true)
/// try summaries.apply()
/// try db.commit()
/// ```
/// The changes it makes are the triggers' changes, in bulk: a new message merges
/// into its conversation's summary (the newest id wins, unread counts add up); a
/// deletion subtracts the unread messages it removed, and a conversation that lost
/// its newest message, or that changed in a way not described by those two, is
/// recomputed from the tables (`HotQuery.recomputeConversationSummary`).
public final class ConversationSummaryUpkeep {
  private let db: Database
  private let merge: Statement
  private let delete: Statement
  private let recompute: Statement
  private let newestID: Statement
  private let subtract: Statement

  /// Per conversation: the newest message inserted in the batch and how many of the
  /// inserted ones are unread.
  private var merges: [Int64: (id: Int64, createdAt: String, unread: Int64)] = [:]
  /// Per conversation: the unread messages deleted and the highest id deleted.
  private var deletions: [Int64: (unread: Int64, highestID: Int64)] = [:]
  /// Conversations to recompute from the tables.
  private var stale: Set<Int64> = []

  /// Prepares the statements; `database` must be at schema version 4 or later.
  public init(database: Database) throws {
    db = database
    merge = try database.prepare(Self.mergeSQL)
    delete = try database.prepare("DELETE FROM ConversationSummaries WHERE conversation_id = ?1")
    recompute = try database.prepare(HotQuery.recomputeConversationSummary.sql)
    newestID = try database.prepare(HotQuery.conversationSummaryNewestMessage.sql)
    subtract = try database.prepare(HotQuery.subtractUnread.sql)
  }

  /// What the migration's insert trigger does for one message, for a batch: `?2` is the
  /// batch's newest message of conversation `?1`, `?3` its time, `?4` the unread ones.
  static let mergeSQL = """
    INSERT INTO ConversationSummaries (conversation_id, last_message_id, last_message_at, unread_count, last_activity)
    VALUES (?1, ?2, ?3, ?4, max(coalesce(?3, ''), ''))
    ON CONFLICT (conversation_id) DO UPDATE SET
      unread_count = unread_count + excluded.unread_count,
      last_message_id = CASE WHEN last_message_id IS NULL OR excluded.last_message_id > last_message_id
        THEN excluded.last_message_id ELSE last_message_id END,
      last_message_at = CASE WHEN last_message_id IS NULL OR excluded.last_message_id > last_message_id
        THEN excluded.last_message_at ELSE last_message_at END,
      last_activity = CASE WHEN last_message_id IS NULL OR excluded.last_message_id > last_message_id
        THEN max(coalesce(excluded.last_message_at, ''), coalesce(last_request_at, '')) ELSE last_activity END
    """

  /// Whether anything waits for `apply()`.
  public var isEmpty: Bool { merges.isEmpty && deletions.isEmpty && stale.isEmpty }

  /// A message was inserted (a new row, not one a conflict kept).
  public func inserted(conversation: Int64, id: Int64, createdAt: String, unread: Bool) {
    if let current = merges[conversation] {
      merges[conversation] =
        id > current.id
        ? (id, createdAt, current.unread + (unread ? 1 : 0))
        : (current.id, current.createdAt, current.unread + (unread ? 1 : 0))
    } else {
      merges[conversation] = (id, createdAt, unread ? 1 : 0)
    }
  }

  /// A message was deleted; `unread` when it was an incoming message not READ.
  public func deleted(conversation: Int64, id: Int64, unread: Bool) {
    let current = deletions[conversation] ?? (0, Int64.min)
    deletions[conversation] = (current.unread + (unread ? 1 : 0), max(current.highestID, id))
  }

  /// `count` unread messages of a conversation were deleted, none of them its newest.
  public func deletedUnread(conversation: Int64, count: Int64) {
    let current = deletions[conversation] ?? (0, Int64.min)
    deletions[conversation] = (current.unread + count, current.highestID)
  }

  /// Something else changed in a conversation (a status moved, a request was added):
  /// it is recomputed from the tables.
  public func changed(conversation: Int64) {
    stale.insert(conversation)
  }

  /// Writes what was noted into the open transaction, and forgets it.
  public func apply() throws {
    defer { discard() }
    for (conversation, batch) in merges where !stale.contains(conversation) {
      try merge.execute([conversation, batch.id, batch.createdAt, batch.unread])
    }
    for (conversation, removed) in deletions where !stale.contains(conversation) {
      // The newest message went: recompute. Otherwise only the unread count moves.
      let newest = try newestID.first([conversation]) { $0.optionalInt64(0) } ?? nil
      if let newest, newest > removed.highestID {
        if removed.unread > 0 { try subtract.execute([conversation, removed.unread]) }
      } else {
        stale.insert(conversation)
      }
    }
    for conversation in stale { try recompute(conversation) }
  }

  /// Forgets what was noted (the transaction it was for rolled back).
  public func discard() {
    merges.removeAll(keepingCapacity: true)
    deletions.removeAll(keepingCapacity: true)
    stale.removeAll(keepingCapacity: true)
  }

  private func recompute(_ conversation: Int64) throws {
    try delete.execute([conversation])
    try recompute.execute([conversation])
  }
}

@available(*, unavailable)
extension ConversationSummaryUpkeep: Sendable {}
