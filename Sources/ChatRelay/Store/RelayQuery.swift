/// The by-key statements the relay runs on every request, in one catalog: the store
/// takes their SQL from here, and a test checks with `EXPLAIN QUERY PLAN` that each
/// reaches its rows by an index or primary key, never by scanning a table.
///
/// Left out: plain `INSERT`s (no plan), `removeUser`'s clean-up (a rare administrative
/// call that may scan), `slowestDeviceOfEachUser`, read by the retention-0 sweep once
/// a minute over every user's devices, and `unreferencedMedia`, read by the upload
/// sweep once a minute over the media.
/// See <https://sqlite.org/eqp.html>.
enum RelayQuery {
  static let userExists = "SELECT EXISTS (SELECT 1 FROM RelayUsers WHERE id = ?)"
  static let userByID = "SELECT id, name, avatar_url, last_connected_at FROM RelayUsers WHERE id = ?"
  static let tokensByLookupKey = "SELECT user_id, id, digest FROM RelayDevices WHERE lookup_key = ?"
  static let devicesOfUser =
    "SELECT id, user_id, name, created_at, last_seen_at, synced_message FROM RelayDevices WHERE user_id = ? ORDER BY id"
  static let deviceByID =
    "SELECT id, user_id, name, created_at, last_seen_at, synced_message FROM RelayDevices WHERE id = ?"
  static let firstDeviceOf = "SELECT min(id) FROM RelayDevices WHERE user_id = ?"
  static let lastMessageID = "SELECT value FROM RelayCounters WHERE name = 'last_message_id'"
  static let setLastMessageID = "UPDATE RelayCounters SET value = ? WHERE name = 'last_message_id'"
  static let requestByKey =
    "SELECT message_id, from_user_id, to_user_id, content, created_at, content_digest FROM RelayRequests WHERE from_user_id = ? AND device_id = ? AND request_id = ?"
  /// The newest id of a user's log (0 before their first message); it never goes back.
  static let logHead = "SELECT log_head FROM RelayUsers WHERE id = ?"
  /// A new message is the newest of both its parties' logs.
  static let setLogHeads = "UPDATE RelayUsers SET log_head = ?1 WHERE id IN (?2, ?3)"
  /// A page of a user's log after a cursor: what they received and what they sent, merged
  /// in id order. Columns: id, from, to, content, created_at, delivered, read, from device, request,
  /// version, edited_at, deleted_at, attachments (a count).
  static let log = """
    SELECT id, from_user_id, to_user_id, content, created_at, delivered_at IS NOT NULL,
      id <= coalesce((SELECT up_to FROM RelayReadMarks WHERE reader_id = ?1 AND sender_id = from_user_id), 0),
      from_device_id, request_id, version, edited_at, deleted_at, attachments
    FROM RelayMessages WHERE to_user_id = ?1 AND id > ?2
    UNION ALL
    SELECT id, from_user_id, to_user_id, content, created_at, delivered_at IS NOT NULL,
      id <= coalesce((SELECT up_to FROM RelayReadMarks WHERE reader_id = to_user_id AND sender_id = ?1), 0),
      from_device_id, request_id, version, edited_at, deleted_at, attachments
    FROM RelayMessages WHERE from_user_id = ?1 AND id > ?2
    ORDER BY 1 LIMIT ?3
    """
  /// Messages of a user's log above a cursor (a device's lag), counted up to a limit.
  static let logCountAbove = """
    SELECT (SELECT count(*) FROM RelayMessages WHERE to_user_id = ?1 AND id > ?2)
      + (SELECT count(*) FROM RelayMessages WHERE from_user_id = ?1 AND id > ?2)
    """
  static let markDelivered =
    "UPDATE RelayMessages SET delivered_at = ?3 WHERE id = ?1 AND to_user_id = ?2 AND delivered_at IS NULL RETURNING from_user_id"
  static let messageTo = "SELECT EXISTS (SELECT 1 FROM RelayMessages WHERE id = ? AND to_user_id = ?)"
  static let contactExists = "SELECT EXISTS (SELECT 1 FROM RelayContacts WHERE user_id = ? AND contact_id = ?)"
  static let contactsOf = "SELECT contact_id FROM RelayContacts WHERE user_id = ? ORDER BY contact_id"
  static let readMark = "SELECT up_to FROM RelayReadMarks WHERE reader_id = ? AND sender_id = ?"
  /// The message a post made with this (sender, device, requestId), if any.
  static let postedByKey =
    "SELECT message_id FROM RelayRequests WHERE from_user_id = ? AND device_id = ? AND request_id = ?"
  /// A user's status updates after a sequence, with an edit's version and its text (NULL
  /// once the message was deleted).
  static let statusUpdates = """
    SELECT s.sequence, s.user_id, s.type, s.message_id, s.conversation_id, s.at, s.version, e.content
    FROM RelayStatusUpdates s LEFT JOIN RelayMessageEdits e ON e.message_id = s.message_id AND e.version = s.version
    WHERE s.user_id = ? AND s.sequence > ? ORDER BY s.sequence
    """
  /// The versions an edited message's text replaced, oldest first (the newest is its text).
  static let earlierVersions = """
    SELECT version, content, edited_at FROM RelayMessageEdits
    WHERE message_id = ?1 AND version < (SELECT version FROM RelayMessages WHERE id = ?1) ORDER BY version
    """
  // Edits and deletes (`RelayStore.change`).
  /// The change a (sender, device, requestId) made, if any (its message first).
  static let changeRecord =
    "SELECT message_id, kind, version, content_digest, at FROM RelayChangeRequests WHERE from_user_id = ? AND device_id = ? AND request_id = ?"
  static let messageToChange =
    "SELECT from_user_id, to_user_id, version, deleted_at, created_at, content FROM RelayMessages WHERE id = ?"
  static let partiesOf = "SELECT from_user_id, to_user_id FROM RelayMessages WHERE id = ?"
  /// A version of a message's text (0 the text as sent, kept at its first edit).
  static let insertVersion =
    "INSERT OR IGNORE INTO RelayMessageEdits (message_id, version, content, edited_at) VALUES (?, ?, ?, ?)"
  static let editMessage = "UPDATE RelayMessages SET content = ?, version = ?, edited_at = ? WHERE id = ?"
  static let eraseVersions = "DELETE FROM RelayMessageEdits WHERE message_id = ?"
  static let leaveTombstone =
    "UPDATE RelayMessages SET content = '', edited_at = NULL, deleted_at = ?, attachments = 0 WHERE id = ?"
  /// An idempotency record made before relay migration 0003 kept the text itself.
  static let requestTextOf = "SELECT content FROM RelayRequests WHERE message_id = ? AND content IS NOT NULL"
  static let forgetRequestText = "UPDATE RelayRequests SET content = NULL, content_digest = ? WHERE message_id = ?"
  static let recordChange =
    "INSERT INTO RelayChangeRequests (from_user_id, device_id, request_id, message_id, kind, version, content_digest, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
  static let insertChangeUpdate =
    "INSERT INTO RelayStatusUpdates (user_id, type, message_id, conversation_id, at, version) VALUES (?, ?, ?, ?, ?, ?)"
  /// A user's newest update sequence (0 before any).
  static let lastUpdateOf = "SELECT coalesce(max(sequence), 0) FROM RelayStatusUpdates WHERE user_id = ?"
  /// Raises a device's acknowledged place (forward only).
  static let raiseDeviceCursors =
    "UPDATE RelayDevices SET synced_message = max(synced_message, ?2), synced_update = max(synced_update, ?3) WHERE id = ?1"
  /// The lowest acknowledged places among a user's devices (NULL when they have none).
  static let slowestDevice =
    "SELECT min(synced_message), min(synced_update) FROM RelayDevices WHERE user_id = ?"
  /// Every user with a device, and the lowest acknowledged message among their devices.
  static let slowestDeviceOfEachUser =
    "SELECT user_id, min(synced_message) FROM RelayDevices GROUP BY user_id ORDER BY user_id"
  /// Drops a user's updates every device of theirs has stored.
  static let dropStatusUpdates = "DELETE FROM RelayStatusUpdates WHERE user_id = ? AND sequence <= ?"
  /// Retention 0: messages a user received (or sent) that every device of both parties
  /// acknowledged. ?2 is the slowest cursor of user ?1's devices.
  static let dropAcknowledgedReceived = """
    DELETE FROM RelayMessages WHERE to_user_id = ?1 AND id <= ?2
      AND id <= coalesce((SELECT min(synced_message) FROM RelayDevices WHERE user_id = RelayMessages.from_user_id), ?2)
    """
  static let dropAcknowledgedSent = """
    DELETE FROM RelayMessages WHERE from_user_id = ?1 AND id <= ?2
      AND id <= coalesce((SELECT min(synced_message) FROM RelayDevices WHERE user_id = RelayMessages.to_user_id), ?2)
    """
  /// Retention: the oldest messages, by id (time-sortable), a bounded batch at a time.
  static let dropMessagesBefore =
    "DELETE FROM RelayMessages WHERE id IN (SELECT id FROM RelayMessages WHERE id > 0 AND id < ?1 ORDER BY id LIMIT ?2)"
  /// Retention: the oldest updates and push records, read in sequence order.
  static let oldestUpdates = "SELECT sequence, at FROM RelayStatusUpdates WHERE sequence > 0 ORDER BY sequence LIMIT ?"
  static let dropUpdatesUpTo = "DELETE FROM RelayStatusUpdates WHERE sequence <= ?"
  static let oldestPushes = "SELECT id, created_at FROM RelayPushes WHERE id > 0 ORDER BY id LIMIT ?"
  static let dropPushesUpTo = "DELETE FROM RelayPushes WHERE id <= ?"
  static let pushesAfter =
    "SELECT id, to_user_id, message_id, created_at, unread FROM RelayPushes WHERE id > ? ORDER BY id LIMIT ?"
  /// A user's messages no device of theirs stored yet (kept by triggers, migration 0004).
  static let undeliveredCount = "SELECT undelivered FROM RelayUsers WHERE id = ?"
  /// The oldest message from one sender to a recipient no device of theirs stored yet (a read mark stops below it).
  static let firstUndeliveredFrom =
    "SELECT id FROM RelayMessages WHERE to_user_id = ?1 AND from_user_id = ?2 AND delivered_at IS NULL ORDER BY id LIMIT 1"
  /// Idempotency records of messages older than an id that are no longer on the relay.
  static let forgetRequests =
    "DELETE FROM RelayRequests WHERE message_id < ?1 AND NOT EXISTS (SELECT 1 FROM RelayMessages m WHERE m.id = RelayRequests.message_id)"

  /// The change records of messages gone and older than the idempotency window.
  static let forgetChangeRequests =
    "DELETE FROM RelayChangeRequests WHERE message_id < ?1 AND NOT EXISTS (SELECT 1 FROM RelayMessages m WHERE m.id = RelayChangeRequests.message_id)"

  /// An upload (tus 1.0) by its id.
  static let uploadByID =
    "SELECT id, user_id, device_id, length, mime, sha256, created_at, expires_at, media_id FROM RelayUploads WHERE id = ?"
  static let mediaByID = "SELECT id, sha256, size, mime, uploaded_by, created_at FROM RelayMedia WHERE id = ?"
  static let mediaBySHA256 = "SELECT id FROM RelayMedia WHERE sha256 = ?"
  static let linkUpload = "UPDATE RelayUploads SET media_id = ?, expires_at = ? WHERE id = ?"
  static let dropUpload = "DELETE FROM RelayUploads WHERE id = ?"
  /// Whether a user's upload made a media.
  static let uploadedMedia = "SELECT EXISTS (SELECT 1 FROM RelayUploads WHERE media_id = ? AND user_id = ?)"
  /// Whether a media is attached to a message a user sent or received.
  static let receivedMedia = """
    SELECT EXISTS (SELECT 1 FROM RelayAttachments a JOIN RelayMessages m ON m.id = a.message_id
      WHERE a.media_id = ?1 AND (m.from_user_id = ?2 OR m.to_user_id = ?2))
    """
  /// A message's attachments with their media, in order.
  static let attachmentsOf = """
    SELECT a.media_id, m.mime, m.size, m.sha256, a.width, a.height, a.duration_ms, a.thumbnail
    FROM RelayAttachments a JOIN RelayMedia m ON m.id = a.media_id WHERE a.message_id = ? ORDER BY a.position
    """
  static let dropAttachments = "DELETE FROM RelayAttachments WHERE message_id = ?"
  static let expiredUploads = """
    SELECT id, user_id, device_id, length, mime, sha256, created_at, expires_at, media_id FROM RelayUploads
    WHERE expires_at <= ? ORDER BY expires_at LIMIT ?
    """
  /// Media no upload names (the sweep's: it scans RelayMedia).
  static let unreferencedMedia = """
    SELECT id, sha256, size, mime, uploaded_by, created_at FROM RelayMedia m
    WHERE NOT EXISTS (SELECT 1 FROM RelayUploads u WHERE u.media_id = m.id)
      AND NOT EXISTS (SELECT 1 FROM RelayAttachments a WHERE a.media_id = m.id) ORDER BY id LIMIT ?
    """
  static let dropMedia = "DELETE FROM RelayMedia WHERE id = ?"

  /// Every entry, with a name for reports.
  static let all: [(name: String, sql: String)] = [
    ("userExists", userExists), ("userByID", userByID), ("tokensByLookupKey", tokensByLookupKey),
    ("devicesOfUser", devicesOfUser), ("deviceByID", deviceByID), ("firstDeviceOf", firstDeviceOf),
    ("lastMessageID", lastMessageID), ("setLastMessageID", setLastMessageID), ("requestByKey", requestByKey),
    ("logHead", logHead), ("setLogHeads", setLogHeads), ("log", log), ("logCountAbove", logCountAbove),
    ("markDelivered", markDelivered), ("messageTo", messageTo),
    ("contactExists", contactExists), ("contactsOf", contactsOf), ("readMark", readMark),
    ("statusUpdates", statusUpdates), ("earlierVersions", earlierVersions),
    ("forgetChangeRequests", forgetChangeRequests), ("postedByKey", postedByKey),
    ("changeRecord", changeRecord), ("messageToChange", messageToChange),
    ("partiesOf", partiesOf), ("editMessage", editMessage), ("eraseVersions", eraseVersions),
    ("leaveTombstone", leaveTombstone), ("requestTextOf", requestTextOf), ("forgetRequestText", forgetRequestText),
    ("lastUpdateOf", lastUpdateOf), ("raiseDeviceCursors", raiseDeviceCursors),
    ("slowestDevice", slowestDevice), ("dropStatusUpdates", dropStatusUpdates),
    ("dropAcknowledgedReceived", dropAcknowledgedReceived), ("dropAcknowledgedSent", dropAcknowledgedSent),
    ("dropMessagesBefore", dropMessagesBefore), ("oldestUpdates", oldestUpdates), ("dropUpdatesUpTo", dropUpdatesUpTo),
    ("oldestPushes", oldestPushes), ("dropPushesUpTo", dropPushesUpTo), ("pushesAfter", pushesAfter),
    ("undeliveredCount", undeliveredCount), ("firstUndeliveredFrom", firstUndeliveredFrom),
    ("uploadByID", uploadByID), ("mediaByID", mediaByID), ("mediaBySHA256", mediaBySHA256),
    ("linkUpload", linkUpload), ("dropUpload", dropUpload), ("uploadedMedia", uploadedMedia),
    ("expiredUploads", expiredUploads), ("dropMedia", dropMedia), ("receivedMedia", receivedMedia),
    ("attachmentsOf", attachmentsOf), ("dropAttachments", dropAttachments),
  ]
}
