#!/usr/bin/python3
"""Waits for a sender's backlog to drain, for scripts/bench.d/sync.sh, from one process.

  backlog_wait.py A_DB B_DB PID_FILE COUNT TAG [TIMEOUT]

Started before A's run (so its own start costs the measured processes nothing), it
creates PID_FILE.ready and waits for PID_FILE to hold A's process id. Then it polls A's file every 5 ms until its outbox is empty (the relay accepted every message),
then B's every 10 ms until it holds COUNT messages whose content starts with TAG, both
read-only through Python's sqlite3. Prints "DRAINED A_CPU LAST": the wall-clock times
(seconds since 1970) of the empty outbox and of B's last, and A's CPU seconds (user +
system) when its outbox emptied. One process querying a connection costs the two busy
cores a few µs a poll; the `sqlite3` shell started 50 times a second cost a tenth of a
core, which the processes being measured paid for.
"""
import os, sqlite3, sys, time

a_db, b_db, pid_file, count, tag = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
deadline = time.time() + (float(sys.argv[6]) if len(sys.argv) > 6 else 120)
open(pid_file + ".ready", "w").close()
pid = None
while pid is None and time.time() < deadline:
    try:
        with open(pid_file) as f:
            text = f.read()
        pid = int(text) if text.endswith("\n") else None
    except (FileNotFoundError, ValueError):
        pass
    if pid is None:
        time.sleep(0.001)
hz = os.sysconf("SC_CLK_TCK")


def cpu(p):
    try:
        with open(f"/proc/{p}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / hz
    except (OSError, IndexError, ValueError):
        return 0.0


def poll(path, sql, args, done, every):
    """Runs sql until done(result) or the deadline; True when done."""
    connection = None
    while time.time() < deadline:
        try:
            if connection is None:
                connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
            if done(connection.execute(sql, args).fetchone()[0]):
                connection.close()
                return True
        except sqlite3.Error:
            connection = None  # not created yet, or being rewritten: open it again
        time.sleep(every)
    return False


drained = poll(a_db, "SELECT count(*) FROM MessageRequests", (), lambda n: n == 0, 0.005)
drained_at, drained_cpu = (time.time(), cpu(pid)) if drained else (0, 0)
received = poll(b_db, "SELECT count(*) FROM Messages WHERE from_user_id = 1 AND content LIKE ?", (tag + " %",),
                lambda n: n >= count, 0.01)
if not received:
    print(f"   WARNING: B did not receive all {count} '{tag}' messages in time", file=sys.stderr)
print(drained_at, drained_cpu, time.time())
