-- Editing and deleting a message (issue 29; docs/data-layer.md, "Edits and deletes").
--
-- Messages keeps the text shown: the newest version the relay numbered (`version`, 0 as
-- sent) and when it was made (`edited_at`, NULL for the original). A message deleted for
-- everyone stays as a tombstone (`deleted_at` set, content '') so the timeline, unread
-- counts and receipts keep their place; its text and edit history are erased.
ALTER TABLE Messages ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE Messages ADD COLUMN edited_at TEXT;
ALTER TABLE Messages ADD COLUMN deleted_at TEXT;

-- Edit history: the versions a newer one replaced, each with the time it was made (the
-- message's created_at for version 0). An edit that arrives after a newer one goes
-- straight here: versions apply in order whatever order they arrive in.
CREATE TABLE MessageEdits (
  message_id INTEGER NOT NULL,
  version INTEGER NOT NULL CHECK (version >= 0),
  content TEXT NOT NULL,
  edited_at TEXT NOT NULL,
  PRIMARY KEY (message_id, version)
) WITHOUT ROWID;
-- `chatdb evict --edit-history-older-than` deletes by time, a short transaction at a time.
CREATE INDEX MessageEdits_by_time ON MessageEdits (edited_at);

-- Deleted on this device only ("delete for me"): the id stays so the message does not
-- come back with the next sync or catch-up page.
CREATE TABLE HiddenMessages (
  id INTEGER PRIMARY KEY,
  hidden_at TEXT NOT NULL
);

-- A message's history goes with it (every writer; chatdb's bulk jobs delete it per batch).
CREATE TRIGGER MessageEdits_message_delete AFTER DELETE ON Messages BEGIN
  DELETE FROM MessageEdits WHERE message_id = OLD.id;
END;

-- Edits and deletes for everyone waiting to be sent, apart from MessageRequests (new
-- messages, which the chat list and the search index show while unsent): each names a
-- message of the owner the relay already holds, so it cannot overtake the message it
-- changes. The idempotency key comes from the same counter as MessageRequests'.
CREATE TABLE MessageChanges (
  request_id INTEGER PRIMARY KEY,
  message_id INTEGER NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('edit', 'delete')),
  content TEXT,
  created_at TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('PENDING', 'SENT', 'FAILED')),
  fail_count INTEGER NOT NULL DEFAULT 0,
  fail_reason TEXT,
  next_attempt_at TEXT,
  CHECK ((kind = 'edit') = (content IS NOT NULL))
);
CREATE INDEX MessageChanges_by_message ON MessageChanges (message_id, request_id);
