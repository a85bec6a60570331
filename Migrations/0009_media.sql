-- Media (issue 30; docs/data-layer.md, "Media").
--
-- One row per distinct file, by its SHA-256: the same photo sent twice, or sent and
-- received, is one row and one file (`chats-<id>.media/<sha256>` beside the database).
-- `state` says where the bytes are: 'local' (the file is here), 'partial' (a download
-- stopped part-way: `<sha256>.part`), 'remote' (only on the relay: never fetched) or
-- 'evicted' (removed here by eviction; fetched again on demand while the relay keeps it).
-- `relay_id` is the relay's media id once uploaded or received; `upload_url` the tus
-- upload of a file being sent, kept so a killed upload resumes where it stopped.
CREATE TABLE Media (
  id INTEGER PRIMARY KEY,
  sha256 TEXT NOT NULL UNIQUE CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
  size INTEGER NOT NULL CHECK (size >= 0),
  mime TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('local', 'partial', 'remote', 'evicted')),
  relay_id INTEGER,
  upload_url TEXT,
  width INTEGER,
  height INTEGER,
  duration_ms INTEGER,
  created_at TEXT NOT NULL,
  last_accessed_at TEXT NOT NULL
);
-- Least recently used first (`chatdb evict --media-max-size`).
CREATE INDEX Media_by_access ON Media (last_accessed_at);
-- Downloads under way (`chat-sync run` resumes them when it starts).
CREATE INDEX Media_partial ON Media (id) WHERE state = 'partial';

-- A message's media, in order, each with the thumbnail that came with it (JPEG or WebP,
-- at most 20 KiB): shown at once, before the media itself is fetched.
CREATE TABLE Attachments (
  message_id INTEGER NOT NULL,
  position INTEGER NOT NULL CHECK (position >= 0),
  media_id INTEGER NOT NULL REFERENCES Media (id),
  thumbnail BLOB,
  PRIMARY KEY (message_id, position)
) WITHOUT ROWID;
CREATE INDEX Attachments_by_media ON Attachments (media_id);

-- The same for a message still in the outbox (MessageRequests): posted once every one
-- of its media is uploaded.
CREATE TABLE RequestAttachments (
  request_id INTEGER NOT NULL,
  position INTEGER NOT NULL CHECK (position >= 0),
  media_id INTEGER NOT NULL REFERENCES Media (id),
  thumbnail BLOB,
  PRIMARY KEY (request_id, position)
) WITHOUT ROWID;
CREATE INDEX RequestAttachments_by_media ON RequestAttachments (media_id);

-- Attachments go with their message or request (every writer; chatdb's bulk jobs delete
-- them per batch). A media no attachment names is deleted with its file by whoever made
-- it so (`MediaStore.sweep`); `chatdb check` finds what a crash left between the two.
CREATE TRIGGER Attachments_message_delete AFTER DELETE ON Messages BEGIN
  DELETE FROM Attachments WHERE message_id = OLD.id;
END;
CREATE TRIGGER RequestAttachments_request_delete AFTER DELETE ON MessageRequests BEGIN
  DELETE FROM RequestAttachments WHERE request_id = OLD.request_id;
END;
