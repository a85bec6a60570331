-- Full-text search over the history and the outbox (issue 13; design and figures in
-- docs/architecture.md, "Search").
--
-- Words: MessageSearch indexes Messages.content with unicode61 (case folded, diacritics
-- removed: 'café' finds 'cafe'), external content keyed by message id, so the text is
-- stored once, in Messages. columnsize=0: results are ordered by id, never ranked, so
-- the per-row token counts bm25 needs are not kept.
--
-- CJK: unicode61 keeps a run like 你好世界 as one token, so 你好 would not find it.
-- MessageSearchCJK indexes only the messages that hold a CJK character, with a U+200B
-- (zero width space, a separator for unicode61) on each side of every CJK character,
-- so each one is a token and a CJK query is a phrase of consecutive characters: a
-- substring match inside any run. It is contentless: the segmented text is not
-- stored, and deleting a row gives its segments again (MessageSearchSegments).
-- CJK here is what SearchText.isCJK says in Swift: kana U+3040-30FF, CJK extension A
-- U+3400-4DBF, unified ideographs U+4E00-9FFF, compatibility U+F900-FAFF, Hangul
-- syllables U+AC00-D7AF and the supplementary ideographs U+20000-2FFFF.
--
-- Requests (the outbox, few rows) have one index, RequestSearch, over the segmented
-- text of every request (RequestSearchText), words and CJK together.
--
-- Every writer keeps them exact through the triggers below. chatdb's bulk jobs
-- (import, generate, evict) run with triggers off and make the same changes per batch
-- (ChatStore's SearchIndexUpkeep); `chatdb migrate` fills the indexes of a file made
-- before this version (SearchIndexBuilder) after this script, in the same transaction.
CREATE VIRTUAL TABLE MessageSearch USING fts5 (
  content, content = 'Messages', content_rowid = 'id', columnsize = 0,
  tokenize = 'unicode61 remove_diacritics 2');

CREATE VIRTUAL TABLE MessageSearchCJK USING fts5 (
  content, content = '', columnsize = 0, tokenize = 'unicode61 remove_diacritics 2');

-- The segmented text of each message that holds a CJK character (what MessageSearchCJK
-- indexes), character by character; about half a millisecond a message, so the bulk
-- jobs compute the same text in Swift (SearchText.segmented) and a test compares them.
CREATE VIEW MessageSearchSegments (id, content) AS
SELECT id, (
  WITH RECURSIVE c(i, ch) AS (
    SELECT 1, substr(content, 1, 1)
    UNION ALL SELECT i + 1, substr(content, i + 1, 1) FROM c WHERE i < length(content))
  SELECT group_concat(
    CASE WHEN ch GLOB '[぀-ヿ㐀-䶿一-鿿豈-﫿가-힯𠀀-𯿿]' THEN char(8203) || ch || char(8203) ELSE ch END, '')
  FROM c)
FROM Messages WHERE content GLOB '*[぀-ヿ㐀-䶿一-鿿豈-﫿가-힯𠀀-𯿿]*';

-- Every request's text as RequestSearch indexes it: segmented when it holds CJK.
CREATE VIEW RequestSearchText (request_id, content) AS
SELECT request_id, CASE WHEN content GLOB '*[぀-ヿ㐀-䶿一-鿿豈-﫿가-힯𠀀-𯿿]*' THEN (
  WITH RECURSIVE c(i, ch) AS (
    SELECT 1, substr(content, 1, 1)
    UNION ALL SELECT i + 1, substr(content, i + 1, 1) FROM c WHERE i < length(content))
  SELECT group_concat(
    CASE WHEN ch GLOB '[぀-ヿ㐀-䶿一-鿿豈-﫿가-힯𠀀-𯿿]' THEN char(8203) || ch || char(8203) ELSE ch END, '')
  FROM c) ELSE content END
FROM MessageRequests;

CREATE VIRTUAL TABLE RequestSearch USING fts5 (
  content, content = 'RequestSearchText', content_rowid = 'request_id', columnsize = 0,
  tokenize = 'unicode61 remove_diacritics 2');

-- Index entries that a REPLACE may have orphaned. An INSERT OR REPLACE (or UPDATE OR
-- REPLACE) deletes the rows it collides with without firing DELETE triggers, so the
-- BEFORE triggers keep here what the indexes hold for each row a change collides with,
-- and the AFTER trigger of the same change removes the entries of the rows that are
-- gone (or were overwritten). A collision that OR IGNORE, DO NOTHING or an upsert
-- turned into no replacement leaves rows here that still describe their row exactly;
-- the next change drops them, and every trigger that changes a row's entries drops its
-- row here first, so what is kept is always what the indexes hold.
CREATE TABLE SearchStash (
  source TEXT NOT NULL,  -- 'message' or 'request'
  id INTEGER NOT NULL,
  content TEXT,          -- the text MessageSearch (or RequestSearch) indexed
  segments TEXT,         -- the text MessageSearchCJK indexed, or NULL
  PRIMARY KEY (source, id)
) WITHOUT ROWID;

-- Messages: a new message is indexed; a deleted one removed; a changed id or text moves.
CREATE TRIGGER MessageSearch_before_insert BEFORE INSERT ON Messages
WHEN EXISTS (SELECT 1 FROM Messages WHERE id = NEW.id)
  OR EXISTS (SELECT 1 FROM Messages WHERE from_user_id = NEW.from_user_id AND request_id = NEW.request_id)
BEGIN
  INSERT INTO SearchStash (source, id, content, segments)
  SELECT 'message', m.id, m.content, (SELECT s.content FROM MessageSearchSegments s WHERE s.id = m.id)
  FROM Messages m
  WHERE m.id = NEW.id OR (m.from_user_id = NEW.from_user_id AND m.request_id = NEW.request_id)
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER MessageSearch_insert AFTER INSERT ON Messages BEGIN
  INSERT INTO MessageSearch (MessageSearch, rowid, content)
  SELECT 'delete', id, content FROM SearchStash
  WHERE source = 'message' AND (id = NEW.id OR NOT EXISTS (SELECT 1 FROM Messages m WHERE m.id = SearchStash.id));
  INSERT INTO MessageSearchCJK (MessageSearchCJK, rowid, content)
  SELECT 'delete', id, segments FROM SearchStash
  WHERE source = 'message' AND segments IS NOT NULL
    AND (id = NEW.id OR NOT EXISTS (SELECT 1 FROM Messages m WHERE m.id = SearchStash.id));
  DELETE FROM SearchStash WHERE source = 'message';
  INSERT INTO MessageSearch (rowid, content) VALUES (NEW.id, NEW.content);
  INSERT INTO MessageSearchCJK (rowid, content) SELECT id, content FROM MessageSearchSegments WHERE id = NEW.id;
END;

CREATE TRIGGER MessageSearch_delete BEFORE DELETE ON Messages BEGIN
  DELETE FROM SearchStash WHERE source = 'message' AND id = OLD.id;
  INSERT INTO MessageSearch (MessageSearch, rowid, content) VALUES ('delete', OLD.id, OLD.content);
  INSERT INTO MessageSearchCJK (MessageSearchCJK, rowid, content)
  SELECT 'delete', id, content FROM MessageSearchSegments WHERE id = OLD.id;
END;

CREATE TRIGGER MessageSearch_before_update BEFORE UPDATE ON Messages
WHEN NEW.id IS NOT OLD.id OR NEW.content IS NOT OLD.content
  OR ((NEW.from_user_id IS NOT OLD.from_user_id OR NEW.request_id IS NOT OLD.request_id)
    AND EXISTS (SELECT 1 FROM Messages WHERE from_user_id = NEW.from_user_id AND request_id = NEW.request_id))
BEGIN
  INSERT INTO SearchStash (source, id, content, segments)
  SELECT 'message', m.id, m.content, (SELECT s.content FROM MessageSearchSegments s WHERE s.id = m.id)
  FROM Messages m
  WHERE m.id <> OLD.id AND (m.id = NEW.id OR (m.from_user_id = NEW.from_user_id AND m.request_id = NEW.request_id))
  ON CONFLICT DO NOTHING;
  DELETE FROM SearchStash WHERE source = 'message' AND id = OLD.id
    AND (NEW.id IS NOT OLD.id OR NEW.content IS NOT OLD.content);
  INSERT INTO MessageSearch (MessageSearch, rowid, content)
  SELECT 'delete', OLD.id, OLD.content WHERE NEW.id IS NOT OLD.id OR NEW.content IS NOT OLD.content;
  INSERT INTO MessageSearchCJK (MessageSearchCJK, rowid, content)
  SELECT 'delete', id, content FROM MessageSearchSegments
  WHERE id = OLD.id AND (NEW.id IS NOT OLD.id OR NEW.content IS NOT OLD.content);
END;

CREATE TRIGGER MessageSearch_update AFTER UPDATE ON Messages
WHEN NEW.id IS NOT OLD.id OR NEW.content IS NOT OLD.content
  OR EXISTS (SELECT 1 FROM SearchStash WHERE source = 'message')
BEGIN
  INSERT INTO MessageSearch (MessageSearch, rowid, content)
  SELECT 'delete', id, content FROM SearchStash
  WHERE source = 'message' AND id <> OLD.id
    AND (id = NEW.id OR NOT EXISTS (SELECT 1 FROM Messages m WHERE m.id = SearchStash.id));
  INSERT INTO MessageSearchCJK (MessageSearchCJK, rowid, content)
  SELECT 'delete', id, segments FROM SearchStash
  WHERE source = 'message' AND segments IS NOT NULL AND id <> OLD.id
    AND (id = NEW.id OR NOT EXISTS (SELECT 1 FROM Messages m WHERE m.id = SearchStash.id));
  DELETE FROM SearchStash WHERE source = 'message';
  INSERT INTO MessageSearch (rowid, content)
  SELECT NEW.id, NEW.content WHERE NEW.id IS NOT OLD.id OR NEW.content IS NOT OLD.content;
  INSERT INTO MessageSearchCJK (rowid, content)
  SELECT id, content FROM MessageSearchSegments
  WHERE id = NEW.id AND (NEW.id IS NOT OLD.id OR NEW.content IS NOT OLD.content);
END;

-- Requests: the same rules over RequestSearch (one unique key, request_id).
CREATE TRIGGER RequestSearch_before_insert BEFORE INSERT ON MessageRequests
WHEN EXISTS (SELECT 1 FROM MessageRequests WHERE request_id = NEW.request_id)
BEGIN
  INSERT INTO SearchStash (source, id, content)
  SELECT 'request', request_id, content FROM RequestSearchText WHERE request_id = NEW.request_id
  ON CONFLICT DO NOTHING;
END;

CREATE TRIGGER RequestSearch_insert AFTER INSERT ON MessageRequests BEGIN
  INSERT INTO RequestSearch (RequestSearch, rowid, content)
  SELECT 'delete', id, content FROM SearchStash
  WHERE source = 'request'
    AND (id = NEW.request_id OR NOT EXISTS (SELECT 1 FROM MessageRequests r WHERE r.request_id = SearchStash.id));
  DELETE FROM SearchStash WHERE source = 'request';
  INSERT INTO RequestSearch (rowid, content)
  SELECT request_id, content FROM RequestSearchText WHERE request_id = NEW.request_id;
END;

CREATE TRIGGER RequestSearch_delete BEFORE DELETE ON MessageRequests BEGIN
  DELETE FROM SearchStash WHERE source = 'request' AND id = OLD.request_id;
  INSERT INTO RequestSearch (RequestSearch, rowid, content)
  SELECT 'delete', request_id, content FROM RequestSearchText WHERE request_id = OLD.request_id;
END;

CREATE TRIGGER RequestSearch_before_update BEFORE UPDATE ON MessageRequests
WHEN NEW.request_id IS NOT OLD.request_id OR NEW.content IS NOT OLD.content
BEGIN
  INSERT INTO SearchStash (source, id, content)
  SELECT 'request', request_id, content FROM RequestSearchText
  WHERE request_id = NEW.request_id AND NEW.request_id IS NOT OLD.request_id
  ON CONFLICT DO NOTHING;
  DELETE FROM SearchStash WHERE source = 'request' AND id = OLD.request_id;
  INSERT INTO RequestSearch (RequestSearch, rowid, content)
  SELECT 'delete', request_id, content FROM RequestSearchText WHERE request_id = OLD.request_id;
END;

CREATE TRIGGER RequestSearch_update AFTER UPDATE ON MessageRequests
WHEN NEW.request_id IS NOT OLD.request_id OR NEW.content IS NOT OLD.content
  OR EXISTS (SELECT 1 FROM SearchStash WHERE source = 'request')
BEGIN
  INSERT INTO RequestSearch (RequestSearch, rowid, content)
  SELECT 'delete', id, content FROM SearchStash
  WHERE source = 'request' AND id <> OLD.request_id
    AND (id = NEW.request_id OR NOT EXISTS (SELECT 1 FROM MessageRequests r WHERE r.request_id = SearchStash.id));
  DELETE FROM SearchStash WHERE source = 'request';
  INSERT INTO RequestSearch (rowid, content)
  SELECT request_id, content FROM RequestSearchText
  WHERE request_id = NEW.request_id AND (NEW.request_id IS NOT OLD.request_id OR NEW.content IS NOT OLD.content);
END;

-- The outbox is small: its index is built here. The messages' indexes are filled by
-- `chatdb migrate` after this script (SearchIndexBuilder: in Swift, with progress).
INSERT INTO RequestSearch (RequestSearch) VALUES ('rebuild');
