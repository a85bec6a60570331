#!/usr/bin/env python3
"""A writer beside a long job: how long it waits for SQLite's write lock.

    writer_beside.py DB -- COMMAND...

Opens DB as chat-sync would (WAL, a 5 s busy timeout), starts COMMAND, and while it
runs commits one small write every 50 ms (a contact's presence, `Users.last_connected_at`,
what chat-sync writes most often), timing each from `BEGIN IMMEDIATE` to holding the lock.
Prints one JSON line: the job's exit code and seconds, the writes, their waits (p50, p99,
max, in ms) and how many failed with SQLITE_BUSY. Its write changes nothing the job
reads or deletes.
"""
import json
import sqlite3
import subprocess
import sys
import time


def main() -> int:
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 64
    db = sqlite3.connect(sys.argv[1], timeout=5.0, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    contact = db.execute("SELECT id FROM Users ORDER BY id DESC LIMIT 1").fetchone()[0]
    waits, busy = [], 0
    start = time.monotonic()
    job = subprocess.Popen(sys.argv[3:], stdout=subprocess.DEVNULL)
    while job.poll() is None:
        asked = time.monotonic()
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            busy += 1
            continue
        waits.append((time.monotonic() - asked) * 1000)
        db.execute("UPDATE Users SET last_connected_at = strftime('%Y-%m-%dT%H:%M:%fZ') WHERE id = ?", (contact,))
        db.execute("COMMIT")
        time.sleep(0.05)
    seconds = time.monotonic() - start
    waits.sort()

    def at(q: float) -> float:
        return round(waits[min(len(waits) - 1, max(0, int(len(waits) * q + 0.999999) - 1))], 1) if waits else 0.0

    print(json.dumps({
        "exit": job.returncode, "seconds": round(seconds, 2), "writes": len(waits), "busy": busy,
        "waitP50Millis": at(0.5), "waitP99Millis": at(0.99), "waitMaxMillis": at(1.0),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
