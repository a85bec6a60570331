-- The sqlite3 shell's peer for chatdb import: CSV (header line skipped) into TEMP
-- staging tables, then one INSERT … SELECT each into the real tables, so empty CSV
-- fields become NULL (a plain .import would store '' and break the partial unique
-- index on request_id). Like chatdb's import, it writes with its connection's triggers
-- off and then computes the conversation summaries set-wise (summaries.sql). Run with
-- the data folder as the working directory.
.dbconfig enable_trigger off
PRAGMA journal_mode = WAL;
PRAGMA synchronous = NORMAL;
PRAGMA temp_store = MEMORY;
CREATE TEMP TABLE users_csv (id INTEGER, name TEXT, avatar_url TEXT, last_connected_at TEXT);
CREATE TEMP TABLE messages_csv (id INTEGER, from_user_id INTEGER, to_user_id INTEGER, content TEXT,
  status TEXT, created_at TEXT, conversation_id INTEGER, request_id INTEGER);
.import --csv --skip 1 --schema temp users.csv users_csv
.import --csv --skip 1 --schema temp messages.csv messages_csv
BEGIN;
INSERT INTO Users SELECT id, name, NULLIF(avatar_url, ''), NULLIF(last_connected_at, '') FROM temp.users_csv;
INSERT INTO Messages (id, from_user_id, to_user_id, content, status, created_at, conversation_id, request_id)
SELECT id, from_user_id, to_user_id, content, status, created_at, conversation_id, NULLIF(request_id, '')
FROM temp.messages_csv;
COMMIT;
.dbconfig enable_trigger on
BEGIN;
.read summaries.sql
COMMIT;
