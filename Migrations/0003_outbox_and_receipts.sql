-- The outbox and receipts: what the sync client and the conversation screen need.

-- When a request was written (device clock): pending requests are shown in this
-- order after the acknowledged messages. Existing rows take their last change time.
ALTER TABLE MessageRequests ADD COLUMN created_at TEXT NOT NULL DEFAULT '';
UPDATE MessageRequests SET created_at = last_modified_at;

-- When the outbox should (re)try a request: PENDING now, SENT when its reply is
-- overdue, FAILED after its backoff. NULL means never: a DRAFT, or a permanent failure.
ALTER TABLE MessageRequests ADD COLUMN next_attempt_at TEXT;
UPDATE MessageRequests SET next_attempt_at = last_modified_at WHERE status IN ('PENDING', 'SENT', 'FAILED');

-- Why the last attempt failed, for the "tap to retry" screen.
ALTER TABLE MessageRequests ADD COLUMN fail_reason TEXT;

-- The request an acknowledged message of ours came from: acknowledging twice, or
-- after the same message arrived through sync, stays one message.
ALTER TABLE Messages ADD COLUMN request_id INTEGER;
CREATE UNIQUE INDEX Messages_by_request ON Messages (from_user_id, request_id) WHERE request_id IS NOT NULL;

-- Unread counts: incoming messages not yet read, per conversation (a small index:
-- most messages are read).
CREATE INDEX Messages_unread ON Messages (conversation_id) WHERE status <> 'READ' AND from_user_id = conversation_id;

-- Pending requests per conversation in creation order, and the outbox's due list.
DROP INDEX MessageRequests_by_recipient;
CREATE INDEX MessageRequests_by_conversation ON MessageRequests (to_user_id, created_at, request_id);
CREATE INDEX MessageRequests_due ON MessageRequests (next_attempt_at) WHERE next_attempt_at IS NOT NULL;

-- Request ids are never reused, even after the newest request was acknowledged and
-- deleted: the relay treats a repeated id as a retry of the old message.
INSERT INTO StoreInfo (key, value) SELECT 'last_request_id', coalesce(max(request_id), 0) FROM MessageRequests;

-- Receipts can arrive before the message they are about (a read receipt can beat the
-- reply to the send). "Delivered/read up to id N" is kept per conversation and a
-- receipt for one unknown message is kept by id; both are applied when the message
-- is stored, so the order of events never changes the outcome.
CREATE TABLE ConversationReceipts (
  conversation_id INTEGER PRIMARY KEY,
  delivered_up_to INTEGER NOT NULL DEFAULT 0,
  read_up_to INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE EarlyReceipts (
  message_id INTEGER PRIMARY KEY,
  status TEXT NOT NULL
);
