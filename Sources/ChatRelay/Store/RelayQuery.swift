/// The by-key statements the relay runs on every request, in one catalog: the store
/// takes their SQL from here, and a test checks with `EXPLAIN QUERY PLAN` that each
/// reaches its rows by an index or primary key, never by scanning a table.
///
/// Left out: plain `INSERT`s (no plan) and `removeUser`'s clean-up, a rare
/// administrative call that may scan.
/// See <https://sqlite.org/eqp.html>.
enum RelayQuery {
  static let userExists = "SELECT EXISTS (SELECT 1 FROM RelayUsers WHERE id = ?)"
  static let userByID = "SELECT id, name, avatar_url, last_connected_at FROM RelayUsers WHERE id = ?"
  static let tokensByLookupKey = "SELECT user_id, id, digest FROM RelayDevices WHERE lookup_key = ?"
  static let devicesOfUser =
    "SELECT id, user_id, name, created_at, last_seen_at FROM RelayDevices WHERE user_id = ? ORDER BY id"
  static let deviceByID = "SELECT id, user_id, name, created_at, last_seen_at FROM RelayDevices WHERE id = ?"
  static let firstDeviceOf = "SELECT min(id) FROM RelayDevices WHERE user_id = ?"
  static let lastMessageID = "SELECT value FROM RelayCounters WHERE name = 'last_message_id'"
  static let setLastMessageID = "UPDATE RelayCounters SET value = ? WHERE name = 'last_message_id'"
  static let requestByKey =
    "SELECT message_id, from_user_id, to_user_id, content, created_at FROM RelayRequests WHERE from_user_id = ? AND device_id = ? AND request_id = ?"
  static let undelivered =
    "SELECT id, from_user_id, to_user_id, content, created_at FROM RelayMessages WHERE to_user_id = ? AND id > ? ORDER BY id LIMIT ?"
  static let deleteDelivered = "DELETE FROM RelayMessages WHERE id = ? AND to_user_id = ? RETURNING from_user_id"
  static let contactExists = "SELECT EXISTS (SELECT 1 FROM RelayContacts WHERE user_id = ? AND contact_id = ?)"
  static let contactsOf = "SELECT contact_id FROM RelayContacts WHERE user_id = ? ORDER BY contact_id"
  static let readMark = "SELECT up_to FROM RelayReadMarks WHERE reader_id = ? AND sender_id = ?"
  static let statusUpdates =
    "SELECT sequence, user_id, type, message_id, conversation_id, at FROM RelayStatusUpdates WHERE user_id = ? AND sequence > ? ORDER BY sequence"
  static let dropStatusUpdates = "DELETE FROM RelayStatusUpdates WHERE user_id = ? AND sequence <= ?"
  static let pushesAfter =
    "SELECT id, to_user_id, message_id, created_at, unread FROM RelayPushes WHERE id > ? ORDER BY id LIMIT ?"
  static let undeliveredCount = "SELECT count(*) FROM RelayMessages WHERE to_user_id = ?"
  /// The oldest message from one sender to a recipient still on the relay (a read mark stops below it).
  static let firstUndeliveredFrom =
    "SELECT id FROM RelayMessages WHERE to_user_id = ?1 AND from_user_id = ?2 ORDER BY id LIMIT 1"
  /// Idempotency records of messages older than an id that are no longer on the relay.
  static let forgetRequests =
    "DELETE FROM RelayRequests WHERE message_id < ?1 AND NOT EXISTS (SELECT 1 FROM RelayMessages m WHERE m.id = RelayRequests.message_id)"

  /// Every entry, with a name for reports.
  static let all: [(name: String, sql: String)] = [
    ("userExists", userExists), ("userByID", userByID), ("tokensByLookupKey", tokensByLookupKey),
    ("devicesOfUser", devicesOfUser), ("deviceByID", deviceByID), ("firstDeviceOf", firstDeviceOf),
    ("lastMessageID", lastMessageID), ("setLastMessageID", setLastMessageID), ("requestByKey", requestByKey),
    ("undelivered", undelivered), ("deleteDelivered", deleteDelivered), ("contactExists", contactExists),
    ("contactsOf", contactsOf), ("readMark", readMark), ("statusUpdates", statusUpdates),
    ("dropStatusUpdates", dropStatusUpdates), ("pushesAfter", pushesAfter), ("undeliveredCount", undeliveredCount),
    ("firstUndeliveredFrom", firstUndeliveredFrom),
  ]
}
