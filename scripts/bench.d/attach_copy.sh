#!/usr/bin/env bash
# SQLite's own limit for writing a history (issue 12's anchor): copies SRC's rows into
# DST, a fresh file at the same schema (made by `chatdb migrate`), with ATTACH and
# INSERT ... SELECT in one transaction. Triggers are off as in chatdb's bulk jobs (they
# would turn off SQLite's transfer optimization), then the conversation summaries are
# computed set-wise (summaries.sql), so both files end the same.
#
# With SEGMENTS (segments.py's file for SRC) the copy also fills the search indexes
# (migration 0005) the fastest way SQLite has: FTS5's 'rebuild' of the word index and
# of the outbox's, and the CJK index from the ready-made segmented text. Without it
# the indexes stay empty: the rows alone, the limit before the search index existed.
#   attach_copy.sh SRC DST [SEGMENTS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
attach="" search=""
if [ $# -ge 3 ]; then
  attach="ATTACH '$3' AS segments;"
  search="
INSERT INTO MessageSearch (MessageSearch) VALUES ('rebuild');
INSERT INTO MessageSearchCJK (rowid, content) SELECT id, content FROM segments.Segments;
INSERT INTO RequestSearch (RequestSearch) VALUES ('rebuild');"
fi
sqlite3 "$2" >/dev/null <<SQL
.dbconfig enable_trigger off
PRAGMA synchronous = NORMAL;
ATTACH '$1' AS src;
$attach
BEGIN;
INSERT INTO Users SELECT * FROM src.Users;
INSERT INTO Messages SELECT * FROM src.Messages;
INSERT INTO MessageRequests SELECT * FROM src.MessageRequests;
$search
.dbconfig enable_trigger on
.read $here/summaries.sql
COMMIT;
SQL
