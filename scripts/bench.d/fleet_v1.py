#!/usr/bin/env python3
"""Makes the fleet's histories at schema version 1 for scripts/bench's fleet section (untimed).

  fleet_v1.py TEMPLATE FLEET_DIR OUT_DIR

TEMPLATE is an empty file at version 1 (`chatdb migrate --db T --to 1`). For every
chats-<id>.db of FLEET_DIR (at the latest version), OUT_DIR/chats-<id>.db is a copy
of TEMPLATE holding the same users, messages and requests, in the columns version 1
has: what `chatdb migrate` would meet in a fleet that has not been upgraded yet.
OUT_DIR is emptied first.
"""
import os, re, shutil, sqlite3, sys

template, fleet, out = sys.argv[1:4]
shutil.rmtree(out, ignore_errors=True)
os.makedirs(out)
names = sorted((n for n in os.listdir(fleet) if re.fullmatch(r"chats-\d+\.db", n)), key=lambda n: int(n[6:-3]))
for name in names:
    dst = os.path.join(out, name)
    shutil.copyfile(template, dst)
    con = sqlite3.connect(dst, isolation_level=None)
    con.execute("PRAGMA synchronous = OFF")  # setup only; the bench syncs before timing
    con.execute("ATTACH DATABASE ? AS src", (os.path.join(fleet, name),))
    con.executescript("""
        BEGIN;
        INSERT INTO Users SELECT id, name, avatar_url, last_connected_at FROM src.Users;
        INSERT INTO Messages SELECT id, from_user_id, to_user_id, content, status, created_at FROM src.Messages;
        INSERT INTO MessageRequests
          SELECT request_id, to_user_id, content, status, last_modified_at, last_sent_at, fail_count FROM src.MessageRequests;
        COMMIT;
        DETACH DATABASE src;
        """)
    con.close()
