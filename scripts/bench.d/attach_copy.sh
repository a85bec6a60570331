#!/usr/bin/env bash
# SQLite's own limit for writing a history (issue 12's anchor): copies SRC's rows into
# DST, a fresh file at the same schema (made by `chatdb migrate`), with ATTACH and
# INSERT ... SELECT in one transaction. Triggers are off as in chatdb's bulk jobs (they
# would turn off SQLite's transfer optimization), then the conversation summaries are
# computed set-wise (summaries.sql), so both files end the same.
#   attach_copy.sh SRC DST
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sqlite3 "$2" >/dev/null <<SQL
.dbconfig enable_trigger off
PRAGMA synchronous = NORMAL;
ATTACH '$1' AS src;
BEGIN;
INSERT INTO Users SELECT * FROM src.Users;
INSERT INTO Messages SELECT * FROM src.Messages;
INSERT INTO MessageRequests SELECT * FROM src.MessageRequests;
.dbconfig enable_trigger on
.read $here/summaries.sql
COMMIT;
SQL
