-- Conversations: a key on every message and the indexes the hot queries need.

-- Whose file this is. The migrator fills temp.migration_context with the owner's
-- user id, taken from the file name (chats-<id>.db) or from the messages themselves.
CREATE TABLE StoreInfo (
  key TEXT PRIMARY KEY NOT NULL,
  value
) WITHOUT ROWID;

INSERT INTO StoreInfo (key, value)
SELECT 'owner_user_id', owner_user_id FROM temp.migration_context WHERE owner_user_id IS NOT NULL;

-- The conversation a message belongs to: the other user's id (one-to-one chats).
ALTER TABLE Messages ADD COLUMN conversation_id INTEGER NOT NULL DEFAULT 0;

UPDATE Messages
SET conversation_id = CASE
  WHEN from_user_id = (SELECT owner_user_id FROM temp.migration_context) THEN to_user_id
  ELSE from_user_id
END;

-- Timeline pages (keyset on id within a conversation) and the conversation list
-- (the newest id per conversation).
CREATE INDEX Messages_by_conversation ON Messages (conversation_id, id);

-- Eviction by age.
CREATE INDEX Messages_by_created_at ON Messages (created_at);

-- Pending requests per conversation, for the timeline and the conversation list.
CREATE INDEX MessageRequests_by_recipient ON MessageRequests (to_user_id);
