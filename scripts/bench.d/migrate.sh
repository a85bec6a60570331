#!/usr/bin/env bash
# Migrations 0008 and 0009 (edits and deletes, issue 29; media, issue 30) on a file of N
# messages: their time, their peak
# memory, the room it needs (the backup `chatdb migrate` writes first, and its free-space
# preflight) and that no row is lost (a digest of every table the migration leaves as it
# was, before and after).
#
#   scripts/bench.d/migrate.sh BIN DATA [MESSAGES]
#
# BIN holds release chatdb; DATA is scratch space (DATA/migrate is recreated). MESSAGES
# defaults to 1,000,000. The file at schema 7 is made from a generated one at the current
# schema by undoing 0009 and 0008 with the sqlite3 shell (their tables and triggers
# dropped, 0008's three columns dropped, their records removed, user_version 7): the same
# rows a version-7 chatdb would have written, in a fraction of the time a version-7 build
# would take.
set -euo pipefail
bin=$1
data=$2
messages=${3:-1000000}
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
d="$data/migrate"
rm -rf "$d"
mkdir -p "$d"
db="$d/chats-1.db"
"$bin/chatdb" generate --db "$db" --messages "$messages" --seed 29 >/dev/null 2>&1
sqlite3 "$db" <<'SQL'
DROP TRIGGER Attachments_message_delete;
DROP TRIGGER RequestAttachments_request_delete;
DROP TABLE Attachments;
DROP TABLE RequestAttachments;
DROP TABLE Media;
DELETE FROM chatdb_migrations WHERE version = 9;
DROP TRIGGER MessageEdits_message_delete;
DROP TABLE MessageEdits;
DROP TABLE HiddenMessages;
DROP TABLE MessageChanges;
ALTER TABLE Messages DROP COLUMN deleted_at;
ALTER TABLE Messages DROP COLUMN edited_at;
ALTER TABLE Messages DROP COLUMN version;
DELETE FROM chatdb_migrations WHERE version = 8;
PRAGMA user_version = 7;
VACUUM;
SQL
digest() {
  python3 - "$db" <<'PY'
import hashlib, sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
out = []
for table, columns, key in [
    ("Users", "id, name, avatar_url, last_connected_at", "id"),
    ("Messages", "id, from_user_id, to_user_id, content, status, created_at, conversation_id, request_id", "id"),
    ("MessageRequests", "*", "request_id"),
    ("ConversationSummaries", "*", "conversation_id"),
    ("MessageSearch_data", "*", "id"),
]:
    h, n = hashlib.sha256(), 0
    for row in con.execute(f"SELECT {columns} FROM {table} ORDER BY {key}"):
        h.update(repr(row).encode())
        n += 1
    out.append(f"{table}:{n}:{h.hexdigest()[:16]}")
print(" ".join(out))
PY
}
before=$(digest)
size_before=$(stat -c %s "$db")
free_before=$(df --output=avail -B1 "$d" | tail -n 1 | tr -d ' ')
/usr/bin/time -f "%e %M" -o "$d/time.txt" "$bin/chatdb" migrate --db "$db" >"$d/migrate.out" 2>&1
read -r seconds peak_kib <"$d/time.txt"
after=$(digest)
size_after=$(stat -c %s "$db")
backup=$(stat -c %s "$db.bak-v7")
version=$(sqlite3 "$db" "PRAGMA user_version")
check=$("$bin/chatdb" check --db "$db" >/dev/null 2>&1 && echo clean || echo "NOT clean")
python3 - "$messages" "$seconds" "$peak_kib" "$size_before" "$size_after" "$backup" "$free_before" "$version" \
  "$check" "$before" "$after" <<'PY'
import os, sys
sys.path.insert(0, "scripts/bench.d")
import record
n, secs, peak, size0, size1, backup, free, version, check, before, after = sys.argv[1:]
n, secs, peak, size0, size1, backup, free = int(n), float(secs), int(peak), int(size0), int(size1), int(backup), int(free)
mib = lambda b: f"{b / 1048576:,.1f} MiB"
same = before == after
rows = [
    (f"migrate {n:,} messages from schema 7 to {version}", f"{secs:.2f} s", "reported"),
    ("  peak memory (RSS)", f"{peak / 1024:,.1f} MiB", ""),
    ("  file before / after", f"{mib(size0)} / {mib(size1)}", ""),
    ("  room needed: the backup written first (.bak-v7)", mib(backup), f"free then: {mib(free)}"),
    ("  rows of every table it keeps (digest before and after)", "0 lost" if same else "CHANGED", "0 lost (" + ("✔ pass" if same else "✘ miss") + ")"),
    ("  chatdb check afterwards", check, ""),
]
record.table("migrate", ("what", "figure", "goal"), rows,
             ["The schema-7 file is a generated one with 0009 and 0008 undone by the sqlite3 shell; the digest covers "
              "Users, Messages (the columns 0008 keeps), MessageRequests, ConversationSummaries and the search index's "
              "data."])
w = max(len(r[0]) for r in rows)
for r in rows:
    print(f"   {r[0]:<{w}}  {r[1]:>22}  {r[2]}")
if not same:
    print(f"   before: {before}\n   after:  {after}")
PY
