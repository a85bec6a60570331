-- Conversation summaries: the chat list's rows, kept up to date by the writes themselves,
-- so its first page reads one short index range instead of every contact.
--
-- One row per conversation that has a message or a visible (PENDING, SENT, FAILED)
-- request: its newest message (the highest id), its newest visible request (by
-- created_at, then request_id), its unread count (incoming messages not READ) and the
-- time the list sorts by, max(coalesce(message time, ''), coalesce(request time, '')).
-- Exactly what the list computed from Messages and MessageRequests before this version.
-- Keyed by conversation, not by user: the list joins Users when it reads, so a profile
-- change needs no upkeep here. WITHOUT ROWID so that any conversation_id a row can hold
-- has a summary (a rowid key would refuse a write that stored a non-integer one).
CREATE TABLE ConversationSummaries (
  conversation_id INTEGER NOT NULL PRIMARY KEY,
  last_message_id INTEGER,
  last_message_at TEXT,
  last_request_id INTEGER,
  last_request_at TEXT,
  unread_count INTEGER NOT NULL DEFAULT 0,
  last_activity TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;

-- The list: ORDER BY last_activity DESC, conversation_id LIMIT ?. It holds every column
-- the list reads, so a page never looks the summary rows up.
CREATE INDEX ConversationSummaries_by_activity
ON ConversationSummaries (last_activity DESC, conversation_id, last_message_id, last_request_id, unread_count);

-- Conversations to recompute from the tables: deleting a row here recomputes that
-- conversation's summary (the trigger below), the one routine the other triggers call.
-- An INSERT OR REPLACE (or UPDATE OR REPLACE) deletes the row it replaces without firing
-- DELETE triggers (unless PRAGMA recursive_triggers is on), so the BEFORE triggers note
-- here the conversation of any row a change collides with, and the AFTER trigger of
-- the same change recomputes it once the new row is in place. Empty between
-- statements, except after a collision that OR IGNORE or DO NOTHING turned into no
-- change: the next change recomputes what is left, which changes nothing.
CREATE TABLE ConversationSummaryRefresh (conversation_id NOT NULL UNIQUE);

CREATE TRIGGER ConversationSummaryRefresh_recompute AFTER DELETE ON ConversationSummaryRefresh BEGIN
  DELETE FROM ConversationSummaries WHERE conversation_id = OLD.conversation_id;
  INSERT INTO ConversationSummaries (
    conversation_id, last_message_id, last_message_at, last_request_id, last_request_at, unread_count, last_activity)
  SELECT OLD.conversation_id, m.id, m.created_at, r.request_id, r.created_at,
    (SELECT count(*) FROM Messages
      WHERE conversation_id = OLD.conversation_id AND from_user_id = conversation_id AND status <> 'READ'),
    max(coalesce(m.created_at, ''), coalesce(r.created_at, ''))
  FROM (SELECT 1)
  LEFT JOIN Messages m ON m.id = (SELECT max(id) FROM Messages WHERE conversation_id = OLD.conversation_id)
  LEFT JOIN MessageRequests r ON r.request_id = (
    SELECT request_id FROM MessageRequests
    WHERE to_user_id = OLD.conversation_id AND status IN ('PENDING', 'SENT', 'FAILED')
    ORDER BY created_at DESC, request_id DESC LIMIT 1)
  WHERE m.id IS NOT NULL OR r.request_id IS NOT NULL;
END;

-- Backfill: every conversation with a message or a visible request.
INSERT INTO ConversationSummaryRefresh (conversation_id)
SELECT conversation_id FROM Messages
UNION SELECT to_user_id FROM MessageRequests WHERE status IN ('PENDING', 'SENT', 'FAILED');
DELETE FROM ConversationSummaryRefresh;

-- Upkeep, for every writer: the app, chatdb and any other program (a user's sqlite3).
-- chatdb's bulk jobs (import, generate, evict) turn triggers off for their own
-- connection and make the same changes per batch instead (RecordWriter, Evictor): row
-- by row, these triggers cost several microseconds per message, more than the insert.
-- Every AFTER trigger ends by recomputing the conversations noted, after its own
-- change, so a recomputation always counts the row in its final state exactly once.
-- They note conversations with ON CONFLICT DO NOTHING, not OR IGNORE: the conflict
-- clause of the statement that fired a trigger (an app's upsert, an INSERT OR IGNORE)
-- replaces a trigger statement's own OR clause, but not its upsert clause.

-- Messages. A new message is the newest when its id is the highest; an incoming one
-- not READ adds one to the unread count.
CREATE TRIGGER ConversationSummaries_message_before_insert BEFORE INSERT ON Messages
WHEN EXISTS (SELECT 1 FROM Messages WHERE id = NEW.id)
  OR EXISTS (SELECT 1 FROM Messages WHERE from_user_id = NEW.from_user_id AND request_id = NEW.request_id)
BEGIN
  INSERT INTO ConversationSummaryRefresh (conversation_id)
  SELECT conversation_id FROM Messages WHERE id = NEW.id
  UNION ALL SELECT conversation_id FROM Messages WHERE from_user_id = NEW.from_user_id AND request_id = NEW.request_id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER ConversationSummaries_message_insert AFTER INSERT ON Messages BEGIN
  INSERT INTO ConversationSummaries (conversation_id, last_message_id, last_message_at, unread_count, last_activity)
  VALUES (NEW.conversation_id, NEW.id, NEW.created_at, NEW.from_user_id = NEW.conversation_id AND NEW.status <> 'READ',
    max(coalesce(NEW.created_at, ''), ''))
  ON CONFLICT (conversation_id) DO UPDATE SET
    unread_count = unread_count + excluded.unread_count,
    last_message_id = CASE WHEN last_message_id IS NULL OR excluded.last_message_id > last_message_id
      THEN excluded.last_message_id ELSE last_message_id END,
    last_message_at = CASE WHEN last_message_id IS NULL OR excluded.last_message_id > last_message_id
      THEN excluded.last_message_at ELSE last_message_at END,
    last_activity = CASE WHEN last_message_id IS NULL OR excluded.last_message_id > last_message_id
      THEN max(coalesce(excluded.last_message_at, ''), coalesce(last_request_at, '')) ELSE last_activity END;
  DELETE FROM ConversationSummaryRefresh;
END;

-- A deleted message: one unread fewer if it was unread; recomputed if it was the newest.
CREATE TRIGGER ConversationSummaries_message_delete AFTER DELETE ON Messages
WHEN (OLD.from_user_id = OLD.conversation_id AND OLD.status <> 'READ')
  OR OLD.id = (SELECT last_message_id FROM ConversationSummaries WHERE conversation_id = OLD.conversation_id)
BEGIN
  UPDATE ConversationSummaries SET unread_count = unread_count - 1
  WHERE conversation_id = OLD.conversation_id AND OLD.from_user_id = OLD.conversation_id AND OLD.status <> 'READ';
  INSERT INTO ConversationSummaryRefresh (conversation_id)
  SELECT conversation_id FROM ConversationSummaries WHERE conversation_id = OLD.conversation_id AND last_message_id = OLD.id
  ON CONFLICT DO NOTHING;
  DELETE FROM ConversationSummaryRefresh;
END;

-- A changed message: read (or unread again) in place moves the count by one; a message
-- given another id, conversation or time recomputes both conversations.
CREATE TRIGGER ConversationSummaries_message_before_update BEFORE UPDATE ON Messages
WHEN (NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM Messages WHERE id = NEW.id))
  OR ((NEW.from_user_id IS NOT OLD.from_user_id OR NEW.request_id IS NOT OLD.request_id)
    AND EXISTS (SELECT 1 FROM Messages WHERE from_user_id = NEW.from_user_id AND request_id = NEW.request_id))
BEGIN
  INSERT INTO ConversationSummaryRefresh (conversation_id)
  SELECT conversation_id FROM Messages WHERE id = NEW.id AND id IS NOT OLD.id
  UNION ALL SELECT conversation_id FROM Messages
  WHERE from_user_id = NEW.from_user_id AND request_id = NEW.request_id AND id IS NOT OLD.id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER ConversationSummaries_message_update AFTER UPDATE ON Messages
WHEN NEW.id IS NOT OLD.id OR NEW.conversation_id IS NOT OLD.conversation_id OR NEW.created_at IS NOT OLD.created_at
  OR (NEW.from_user_id = NEW.conversation_id AND NEW.status <> 'READ')
    IS NOT (OLD.from_user_id = OLD.conversation_id AND OLD.status <> 'READ')
  OR EXISTS (SELECT 1 FROM ConversationSummaryRefresh)
BEGIN
  UPDATE ConversationSummaries
  SET unread_count = unread_count + (NEW.from_user_id = NEW.conversation_id AND NEW.status <> 'READ')
    - (OLD.from_user_id = OLD.conversation_id AND OLD.status <> 'READ')
  WHERE conversation_id = OLD.conversation_id AND NEW.conversation_id IS OLD.conversation_id;
  INSERT INTO ConversationSummaryRefresh (conversation_id)
  SELECT OLD.conversation_id
  WHERE NEW.id IS NOT OLD.id OR NEW.conversation_id IS NOT OLD.conversation_id OR NEW.created_at IS NOT OLD.created_at
  UNION ALL SELECT NEW.conversation_id
  WHERE NEW.id IS NOT OLD.id OR NEW.conversation_id IS NOT OLD.conversation_id OR NEW.created_at IS NOT OLD.created_at
  ON CONFLICT DO NOTHING;
  DELETE FROM ConversationSummaryRefresh;
END;

-- Requests (few, and changed one at a time): any change that can move a conversation's
-- newest visible request recomputes the conversation.
CREATE TRIGGER ConversationSummaries_request_before_insert BEFORE INSERT ON MessageRequests
WHEN EXISTS (SELECT 1 FROM MessageRequests WHERE request_id = NEW.request_id)
BEGIN
  INSERT INTO ConversationSummaryRefresh (conversation_id)
  SELECT to_user_id FROM MessageRequests WHERE request_id = NEW.request_id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER ConversationSummaries_request_insert AFTER INSERT ON MessageRequests BEGIN
  INSERT INTO ConversationSummaryRefresh (conversation_id)
  SELECT NEW.to_user_id WHERE NEW.status IN ('PENDING', 'SENT', 'FAILED')
  ON CONFLICT DO NOTHING;
  DELETE FROM ConversationSummaryRefresh;
END;

CREATE TRIGGER ConversationSummaries_request_delete AFTER DELETE ON MessageRequests
WHEN OLD.request_id = (SELECT last_request_id FROM ConversationSummaries WHERE conversation_id = OLD.to_user_id)
BEGIN
  INSERT INTO ConversationSummaryRefresh (conversation_id) VALUES (OLD.to_user_id) ON CONFLICT DO NOTHING;
  DELETE FROM ConversationSummaryRefresh;
END;

CREATE TRIGGER ConversationSummaries_request_before_update BEFORE UPDATE ON MessageRequests
WHEN NEW.request_id IS NOT OLD.request_id AND EXISTS (SELECT 1 FROM MessageRequests WHERE request_id = NEW.request_id)
BEGIN
  INSERT INTO ConversationSummaryRefresh (conversation_id)
  SELECT to_user_id FROM MessageRequests WHERE request_id = NEW.request_id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER ConversationSummaries_request_update AFTER UPDATE ON MessageRequests
WHEN NEW.request_id IS NOT OLD.request_id OR NEW.to_user_id IS NOT OLD.to_user_id OR NEW.created_at IS NOT OLD.created_at
  OR (NEW.status IN ('PENDING', 'SENT', 'FAILED')) IS NOT (OLD.status IN ('PENDING', 'SENT', 'FAILED'))
  OR EXISTS (SELECT 1 FROM ConversationSummaryRefresh)
BEGIN
  INSERT INTO ConversationSummaryRefresh (conversation_id) VALUES (OLD.to_user_id), (NEW.to_user_id)
  ON CONFLICT DO NOTHING;
  DELETE FROM ConversationSummaryRefresh;
END;
