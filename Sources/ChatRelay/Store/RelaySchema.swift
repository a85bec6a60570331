import ChatStore

/// The schema of `relay.db`, as migrations run by ChatStore's `Migrator`.
///
/// The SQL lives here as Swift strings, so the binary and its schema cannot drift
/// apart and no build step is needed. Applied migrations are recorded the way chat
/// files record theirs (`chatdb_migrations`: version, name, SHA-256 of the normalised
/// SQL, time) and `PRAGMA user_version` is the newest applied. A shipped migration is
/// never edited: add `0003_relay_….sql` to `migrations` instead.
///
/// The file says what it is in its header: `PRAGMA application_id` is `RELY`
/// (0x52454C59), set by the first migration. `RelayStore` refuses a file with tables
/// but another id (a `chats-<id>.db`), and `chatdb` refuses a relay file because its
/// recorded migration names (`relay_initial`) are not its own (drift).
/// See <https://sqlite.org/pragma.html#pragma_application_id>.
public enum RelaySchema {
  /// `PRAGMA application_id` of a relay file: ASCII `RELY`.
  public static let applicationID: Int32 = 0x5245_4C59

  /// The relay's migrations, in order (checked by `Migration.validated`).
  public static let migrations: [Migration] = {
    do {
      return try Migration.validated([
        Migration(fileName: "0001_relay_initial.sql", sql: initial),
        Migration(fileName: "0002_relay_devices.sql", sql: devices),
        Migration(fileName: "0003_relay_log.sql", sql: log),
        Migration(fileName: "0004_relay_undelivered_count.sql", sql: undeliveredCount),
        Migration(fileName: "0005_relay_edits.sql", sql: edits),
        Migration(fileName: "0006_relay_media.sql", sql: media),
      ])
    } catch {
      fatalError("the relay's migration set is invalid: \(error)")
    }
  }()

  /// The newest schema version.
  public static var latestVersion: Int { migrations.last?.version ?? 0 }

  // MARK: - 0001

  static let initial = """
    -- chat-relay's own file (relay.db), never a chats-<id>.db: application_id 'RELY'.
    PRAGMA application_id = 1380273241;

    -- Users and their profile (seed 000's Users, relay side).
    CREATE TABLE RelayUsers (
      id INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      avatar_url TEXT,
      last_connected_at TEXT
    );

    -- One bearer token per user, as SHA-256 only; lookup_key is the digest's first
    -- 8 bytes (not secret), the whole digest is compared in constant time.
    CREATE TABLE RelayTokens (
      user_id INTEGER PRIMARY KEY REFERENCES RelayUsers(id) ON DELETE CASCADE,
      lookup_key INTEGER NOT NULL,
      digest BLOB NOT NULL CHECK (length(digest) = 32)
    );
    CREATE INDEX RelayTokensByLookupKey ON RelayTokens(lookup_key);

    -- Who may see whose profile: both directions of every pair that exchanged a message.
    CREATE TABLE RelayContacts (
      user_id INTEGER NOT NULL,
      contact_id INTEGER NOT NULL,
      PRIMARY KEY (user_id, contact_id)
    ) WITHOUT ROWID;

    -- Messages not yet acknowledged by their recipient; deleted on acknowledgement.
    CREATE TABLE RelayMessages (
      id INTEGER PRIMARY KEY,
      from_user_id INTEGER NOT NULL,
      to_user_id INTEGER NOT NULL,
      content TEXT NOT NULL,
      created_at TEXT NOT NULL
    );
    CREATE INDEX RelayMessagesByRecipient ON RelayMessages(to_user_id, id);

    -- Idempotency records: (sender, requestId) -> the message it made. They outlive
    -- the message, so they keep its fields.
    CREATE TABLE RelayRequests (
      from_user_id INTEGER NOT NULL,
      request_id INTEGER NOT NULL,
      message_id INTEGER NOT NULL UNIQUE,
      to_user_id INTEGER NOT NULL,
      content TEXT NOT NULL,
      created_at TEXT NOT NULL,
      PRIMARY KEY (from_user_id, request_id)
    ) WITHOUT ROWID;

    -- Receipts waiting for the user they are addressed to (the message's sender).
    -- AUTOINCREMENT: a sequence is never reused, even after the newest is dropped.
    CREATE TABLE RelayStatusUpdates (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      user_id INTEGER NOT NULL,
      type TEXT NOT NULL CHECK (type IN ('message_delivered', 'message_read')),
      message_id INTEGER NOT NULL,
      conversation_id INTEGER NOT NULL,
      at TEXT NOT NULL
    );
    CREATE INDEX RelayStatusUpdatesByUser ON RelayStatusUpdates(user_id, sequence);

    -- The highest message id each reader has read from each sender: receipts only go forward.
    CREATE TABLE RelayReadMarks (
      reader_id INTEGER NOT NULL,
      sender_id INTEGER NOT NULL,
      up_to INTEGER NOT NULL,
      PRIMARY KEY (reader_id, sender_id)
    ) WITHOUT ROWID;

    -- Push notifications recorded for users without a live socket.
    CREATE TABLE RelayPushes (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      to_user_id INTEGER NOT NULL,
      message_id INTEGER NOT NULL,
      unread INTEGER NOT NULL DEFAULT 0,
      created_at TEXT NOT NULL
    );

    -- Counters that must survive restarts; last_message_id keeps ids increasing
    -- when the clock steps back and after every message has been deleted.
    CREATE TABLE RelayCounters (
      name TEXT PRIMARY KEY,
      value INTEGER NOT NULL
    ) WITHOUT ROWID;
    INSERT INTO RelayCounters (name, value) VALUES ('last_message_id', 0);
    """

  // MARK: - 0002

  /// Devices are first-class: a token belongs to one device of one user. Each user's
  /// existing token becomes their first device (so it keeps working), and the
  /// idempotency key becomes (user, device, requestId); the existing records go to the
  /// sender's first device (0 when the sender is gone: no device can send as them).
  static let devices = """
    -- A user's devices, each with its own bearer token as SHA-256 only; lookup_key is the
    -- digest's first 8 bytes (not secret), the whole digest is compared in constant time.
    -- AUTOINCREMENT: a removed device's id is never given to another device, whose
    -- requestIds would otherwise meet the removed one's idempotency records.
    CREATE TABLE RelayDevices (
      id INTEGER PRIMARY KEY AUTOINCREMENT,
      user_id INTEGER NOT NULL REFERENCES RelayUsers(id) ON DELETE CASCADE,
      name TEXT NOT NULL,
      created_at TEXT NOT NULL,
      last_seen_at TEXT,
      lookup_key INTEGER NOT NULL,
      digest BLOB NOT NULL CHECK (length(digest) = 32)
    );
    CREATE INDEX RelayDevicesByLookupKey ON RelayDevices(lookup_key);
    CREATE INDEX RelayDevicesByUser ON RelayDevices(user_id, id);

    INSERT INTO RelayDevices (user_id, name, created_at, lookup_key, digest)
      SELECT user_id, 'first device', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), lookup_key, digest
      FROM RelayTokens ORDER BY user_id;
    DROP TABLE RelayTokens;

    -- Idempotency records: (sender, sender's device, requestId) -> the message it made.
    CREATE TABLE RelayRequests_0002 (
      from_user_id INTEGER NOT NULL,
      device_id INTEGER NOT NULL,
      request_id INTEGER NOT NULL,
      message_id INTEGER NOT NULL UNIQUE,
      to_user_id INTEGER NOT NULL,
      content TEXT NOT NULL,
      created_at TEXT NOT NULL,
      PRIMARY KEY (from_user_id, device_id, request_id)
    ) WITHOUT ROWID;
    INSERT INTO RelayRequests_0002
      (from_user_id, device_id, request_id, message_id, to_user_id, content, created_at)
      SELECT r.from_user_id,
        coalesce((SELECT min(d.id) FROM RelayDevices d WHERE d.user_id = r.from_user_id), 0),
        r.request_id, r.message_id, r.to_user_id, r.content, r.created_at
      FROM RelayRequests r;
    DROP TABLE RelayRequests;
    ALTER TABLE RelayRequests_0002 RENAME TO RelayRequests;
    """

  // MARK: - 0003

  /// The relay keeps a log per user (every message they sent or received, for the
  /// retention window) with a cursor per device, instead of deleting a message at its
  /// first acknowledgement. A message is stored once; who it was delivered to is its
  /// `delivered_at`. Idempotency records keep a SHA-256 of the content, not the content.
  static let log = """
    -- A message in both parties' logs: the sending device and its requestId (given back
    -- to the sender's own devices), and when a device of the recipient first stored it.
    ALTER TABLE RelayMessages ADD COLUMN from_device_id INTEGER;
    ALTER TABLE RelayMessages ADD COLUMN request_id INTEGER;
    ALTER TABLE RelayMessages ADD COLUMN delivered_at TEXT;
    CREATE INDEX RelayMessagesBySender ON RelayMessages(from_user_id, id);
    CREATE INDEX RelayMessagesUndelivered ON RelayMessages(to_user_id, from_user_id, id)
      WHERE delivered_at IS NULL;

    -- The newest id of each user's log: it never goes back, also when messages leave
    -- (events name the message before them in the log; a device follows that chain).
    ALTER TABLE RelayUsers ADD COLUMN log_head INTEGER NOT NULL DEFAULT 0;
    UPDATE RelayUsers SET log_head = max(
      coalesce((SELECT max(id) FROM RelayMessages WHERE to_user_id = RelayUsers.id), 0),
      coalesce((SELECT max(id) FROM RelayMessages WHERE from_user_id = RelayUsers.id), 0));

    -- Each device's acknowledged place in its user's log and update stream (sync_ack).
    ALTER TABLE RelayDevices ADD COLUMN synced_message INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE RelayDevices ADD COLUMN synced_update INTEGER NOT NULL DEFAULT 0;

    -- Status updates gain conversation_read (a user read a conversation on one device:
    -- their other devices follow). The sequence carries on where it was.
    CREATE TABLE RelayStatusUpdates_0003 (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      user_id INTEGER NOT NULL,
      type TEXT NOT NULL CHECK (type IN ('message_delivered', 'message_read', 'conversation_read')),
      message_id INTEGER NOT NULL,
      conversation_id INTEGER NOT NULL,
      at TEXT NOT NULL
    );
    INSERT INTO RelayStatusUpdates_0003 (sequence, user_id, type, message_id, conversation_id, at)
      SELECT sequence, user_id, type, message_id, conversation_id, at FROM RelayStatusUpdates;
    DELETE FROM sqlite_sequence WHERE name = 'RelayStatusUpdates_0003';
    INSERT INTO sqlite_sequence (name, seq)
      SELECT 'RelayStatusUpdates_0003', seq FROM sqlite_sequence WHERE name = 'RelayStatusUpdates';
    DROP TABLE RelayStatusUpdates;
    ALTER TABLE RelayStatusUpdates_0003 RENAME TO RelayStatusUpdates;
    CREATE INDEX RelayStatusUpdatesByUser ON RelayStatusUpdates(user_id, sequence);

    -- Idempotency records keep the content's SHA-256 (content_digest) rather than the text;
    -- records made before keep their content.
    CREATE TABLE RelayRequests_0003 (
      from_user_id INTEGER NOT NULL,
      device_id INTEGER NOT NULL,
      request_id INTEGER NOT NULL,
      message_id INTEGER NOT NULL UNIQUE,
      to_user_id INTEGER NOT NULL,
      content TEXT,
      content_digest BLOB CHECK (content_digest IS NULL OR length(content_digest) = 32),
      created_at TEXT NOT NULL,
      CHECK ((content IS NULL) <> (content_digest IS NULL)),
      PRIMARY KEY (from_user_id, device_id, request_id)
    ) WITHOUT ROWID;
    INSERT INTO RelayRequests_0003
      (from_user_id, device_id, request_id, message_id, to_user_id, content, created_at)
      SELECT from_user_id, device_id, request_id, message_id, to_user_id, content, created_at FROM RelayRequests;
    DROP TABLE RelayRequests;
    ALTER TABLE RelayRequests_0003 RENAME TO RelayRequests;
    """

  // MARK: - 0004

  /// Each user's count of messages no device of theirs stored yet (a push record's badge,
  /// `unread`), kept by triggers: counting them at every push was a scan of the user's
  /// undelivered messages, so a backlog to an offline user cost time quadratic in its length.
  static let undeliveredCount = """
    ALTER TABLE RelayUsers ADD COLUMN undelivered INTEGER NOT NULL DEFAULT 0;
    UPDATE RelayUsers SET undelivered =
      (SELECT count(*) FROM RelayMessages m WHERE m.to_user_id = RelayUsers.id AND m.delivered_at IS NULL);

    CREATE TRIGGER RelayMessagesCountInsert AFTER INSERT ON RelayMessages WHEN new.delivered_at IS NULL
    BEGIN
      UPDATE RelayUsers SET undelivered = undelivered + 1 WHERE id = new.to_user_id;
    END;
    CREATE TRIGGER RelayMessagesCountDelivered AFTER UPDATE OF delivered_at ON RelayMessages
      WHEN (old.delivered_at IS NULL) <> (new.delivered_at IS NULL)
    BEGIN
      UPDATE RelayUsers SET undelivered = undelivered + iif(new.delivered_at IS NULL, 1, -1) WHERE id = new.to_user_id;
    END;
    CREATE TRIGGER RelayMessagesCountDelete AFTER DELETE ON RelayMessages WHEN old.delivered_at IS NULL
    BEGIN
      UPDATE RelayUsers SET undelivered = undelivered - 1 WHERE id = old.to_user_id;
    END;
    """

  // MARK: - 0005

  /// Editing and deleting a message (issue 29): its versions, the changes' idempotency
  /// records, and two more kinds of status update that reach every device of both parties.
  static let edits = """
    -- The version of the text held (0 as sent), when an edit made it, and when the sender
    -- deleted it for everyone (content '' from then on: a tombstone in both logs).
    ALTER TABLE RelayMessages ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE RelayMessages ADD COLUMN edited_at TEXT;
    ALTER TABLE RelayMessages ADD COLUMN deleted_at TEXT;

    -- Every version of an edited message: the text as sent (0, kept at the first edit)
    -- and each edit's, the newest included. A message_edited update names one, a device
    -- that missed the event reads it here, and a device that first sees the message in a
    -- catch-up page gets the older ones as its edit history. Erased with a delete, and
    -- gone with the message.
    CREATE TABLE RelayMessageEdits (
      message_id INTEGER NOT NULL,
      version INTEGER NOT NULL CHECK (version >= 0),
      content TEXT NOT NULL,
      edited_at TEXT NOT NULL,
      PRIMARY KEY (message_id, version)
    ) WITHOUT ROWID;
    CREATE TRIGGER RelayMessageEditsGo AFTER DELETE ON RelayMessages BEGIN
      DELETE FROM RelayMessageEdits WHERE message_id = old.id;
    END;

    -- Idempotency records of edits and deletes: (sender, device, requestId) -> the change
    -- made (the edit's text as its SHA-256 only, so a delete leaves no text here either).
    CREATE TABLE RelayChangeRequests (
      from_user_id INTEGER NOT NULL,
      device_id INTEGER NOT NULL,
      request_id INTEGER NOT NULL,
      message_id INTEGER NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('edit', 'delete')),
      version INTEGER,
      content_digest BLOB CHECK (content_digest IS NULL OR length(content_digest) = 32),
      at TEXT NOT NULL,
      PRIMARY KEY (from_user_id, device_id, request_id)
    ) WITHOUT ROWID;
    -- Forgotten with the message's idempotency records (the sweep, by message id).
    CREATE INDEX RelayChangeRequestsByMessage ON RelayChangeRequests(message_id);

    -- Status updates gain message_edited (with the version it made) and message_deleted.
    CREATE TABLE RelayStatusUpdates_0005 (
      sequence INTEGER PRIMARY KEY AUTOINCREMENT,
      user_id INTEGER NOT NULL,
      type TEXT NOT NULL CHECK (type IN
        ('message_delivered', 'message_read', 'conversation_read', 'message_edited', 'message_deleted')),
      message_id INTEGER NOT NULL,
      conversation_id INTEGER NOT NULL,
      at TEXT NOT NULL,
      version INTEGER
    );
    INSERT INTO RelayStatusUpdates_0005 (sequence, user_id, type, message_id, conversation_id, at)
      SELECT sequence, user_id, type, message_id, conversation_id, at FROM RelayStatusUpdates;
    DELETE FROM sqlite_sequence WHERE name = 'RelayStatusUpdates_0005';
    INSERT INTO sqlite_sequence (name, seq)
      SELECT 'RelayStatusUpdates_0005', seq FROM sqlite_sequence WHERE name = 'RelayStatusUpdates';
    DROP TABLE RelayStatusUpdates;
    ALTER TABLE RelayStatusUpdates_0005 RENAME TO RelayStatusUpdates;
    CREATE INDEX RelayStatusUpdatesByUser ON RelayStatusUpdates(user_id, sequence);
    """

  // MARK: - 0006

  /// Media (issue 30): resumable uploads (tus 1.0), the complete blobs they made, and
  /// the attachments of messages that carry them.
  /// The bytes live in files beside relay.db (`relay.db.media/`), not in the database.
  static let media = """
    -- Complete media, content-addressed: one row per distinct SHA-256, its bytes in
    -- relay.db.media/blobs/<hex digest>. uploaded_by is the user whose upload made it.
    CREATE TABLE RelayMedia (
      id INTEGER PRIMARY KEY,
      sha256 BLOB NOT NULL UNIQUE CHECK (length(sha256) = 32),
      size INTEGER NOT NULL CHECK (size >= 0),
      mime TEXT NOT NULL,
      uploaded_by INTEGER NOT NULL,
      created_at INTEGER NOT NULL
    );

    -- Uploads in progress (tus 1.0): the bytes so far in relay.db.media/uploads/<id>,
    -- whose size is the upload's offset. id is random (the upload URL names it). Once
    -- complete and checked against sha256, media_id names the media it made; the row
    -- stays until it expires, so the uploader may ask for its offset (and media id) again.
    CREATE TABLE RelayUploads (
      id TEXT PRIMARY KEY,
      user_id INTEGER NOT NULL REFERENCES RelayUsers(id) ON DELETE CASCADE,
      device_id INTEGER NOT NULL,
      length INTEGER NOT NULL CHECK (length >= 0),
      mime TEXT NOT NULL,
      sha256 BLOB NOT NULL CHECK (length(sha256) = 32),
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      media_id INTEGER REFERENCES RelayMedia(id) ON DELETE SET NULL
    ) WITHOUT ROWID;
    CREATE INDEX RelayUploadsByExpiry ON RelayUploads(expires_at);
    CREATE INDEX RelayUploadsByMedia ON RelayUploads(media_id, user_id);

    -- What a message carries, in order: a media, and what its sender said of it (pixels,
    -- duration, an inline thumbnail). Rows go with their message (retention, delete for
    -- everyone); a media no row and no upload names is swept with its blob.
    CREATE TABLE RelayAttachments (
      message_id INTEGER NOT NULL REFERENCES RelayMessages(id) ON DELETE CASCADE,
      position INTEGER NOT NULL CHECK (position >= 0),
      media_id INTEGER NOT NULL REFERENCES RelayMedia(id),
      width INTEGER,
      height INTEGER,
      duration_ms INTEGER,
      thumbnail BLOB,
      PRIMARY KEY (message_id, position)
    ) WITHOUT ROWID;
    CREATE INDEX RelayAttachmentsByMedia ON RelayAttachments(media_id);
    -- How many attachments a message has: a log page looks them up only where there are some.
    ALTER TABLE RelayMessages ADD COLUMN attachments INTEGER NOT NULL DEFAULT 0;
    """
}
