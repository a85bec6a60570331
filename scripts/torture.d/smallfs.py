#!/usr/bin/env python3
"""A real small file system (issue 14): chatdb's writing commands on a tmpfs that fills up.

  smallfs.py --chatdb BIN --work DIR [--long] [--seed S] [--via-unshare]

Mounts a small tmpfs at DIR/mnt (as root; else inside `unshare -rm`, a user and mount
namespace of its own; where neither is allowed it prints one line
"small file system: skipped (<reason>)" and exits 0). The database (and SQLite's and
chatdb's temporary folder, SQLITE_TMPDIR and TMPDIR) live on it. Each writing command
(import into a new and into an existing file, generate into a new file and more
messages into an existing one, evict --older-than and --max-size, migrate from
version 1, vacuum, vacuum --into and export -o onto the small file system, index apply)
runs several times, each time with the disk full in one of two ways:
  - static: a filler file leaves N KiB free before the command starts, N drawn
    across 0 … 120% of the most the command's uninterrupted run ever had on the disk
    (measured), so some runs stop early (often at the preflight check) and some late;
  - dynamic: another writer fills the disk completely at a moment drawn between 0 and
    the command's run time, so the disk fills while the command is writing (past the
    preflight checks, which leave margins a small disk cannot meet).
A run that fails must exit with the code in docs/cli.md for a full disk (13, or 14 for a
write rolled back; 13 or 74 for the export's output), no signal, with one `Error:` line
naming a file on the small file system, and leave no temporary file taking space.
Then the filler is deleted and, as in crash.py:
  - `chatdb check --full` is clean (index apply: at most the findings the file had);
  - the outbox (MessageRequests) is byte for byte as before;
  - the file is at a recorded migration version;
  - the messages are those of before or of a finished run (none lost, none invented);
  - a partial export is absent or complete, a VACUUM INTO copy or migrate backup is
    absent or passes check --full;
  - running the command again finishes the job with the rows of a run that never met
    a full disk (evict --max-size: under the target).
Prints one line per command (runs, how many hit the full disk, exit codes seen) and a
summary; exits 1 on any failure, printing the case.
"""
import argparse, os, random, shutil, sqlite3, subprocess, sys, threading, time

from common import MESSAGES, OUTBOX, Chatdb, check_export, check_full, check_rerun, copy_db, digest, make_inputs

p = argparse.ArgumentParser()
p.add_argument("--chatdb", required=True)
p.add_argument("--work", required=True)
p.add_argument("--long", action="store_true")
p.add_argument("--seed", type=int, default=None)
p.add_argument("--runs", type=int, default=None, help="runs per command (default 4, --long 8)")
p.add_argument("--verbose", action="store_true", help="print each run's exit code and error line")
p.add_argument("--via-unshare", action="store_true", help="skip the plain mount (to test the namespace path)")
a = p.parse_args()
chatdb = os.path.abspath(a.chatdb)
work = os.path.abspath(a.work)
seed = a.seed if a.seed is not None else random.randrange(1 << 30)
rng = random.Random(seed)
mnt = os.path.join(work, "mnt")
IN_NAMESPACE = os.environ.get("CHATDB_SMALLFS_NAMESPACE") == "1"


def mount(size_bytes):
    """Mounts (or resizes) the tmpfs; returns None or the reason it failed."""
    opts = f"size={max(size_bytes // 1024, 64)}k,mode=0700"
    if os.path.ismount(mnt):
        opts = "remount," + opts
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", mnt], capture_output=True, text=True)
    if r.returncode != 0:
        return (r.stderr.strip() or f"mount exited {r.returncode}").replace("\n", " ")
    return None


# --- The file system: mount it here, or in a namespace of our own, or skip ----------
if not IN_NAMESPACE:
    if os.path.ismount(mnt):  # left by a run that was killed
        subprocess.run(["umount", mnt], capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
os.makedirs(mnt, exist_ok=True)
why = "not tried (--via-unshare)" if a.via_unshare and not IN_NAMESPACE else mount(1 << 20)
if why is not None:
    if IN_NAMESPACE:
        print(f"   small file system: skipped (mount -t tmpfs in a user namespace failed: {why})")
        sys.exit(0)
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        reason = (probe.stderr.strip() or f"unshare exited {probe.returncode}").replace("\n", " ")
        print(f"   small file system: skipped (mount -t tmpfs: {why}; unshare -rm: {reason})")
        sys.exit(0)
    env = dict(os.environ, CHATDB_SMALLFS_NAMESPACE="1")
    args = [sys.executable, os.path.abspath(__file__), "--chatdb", chatdb, "--work", work, "--seed", str(seed)]
    args += (["--long"] if a.long else []) + (["--verbose"] if a.verbose else []) + (["--runs", str(a.runs)] if a.runs else [])
    r = subprocess.run(["unshare", "-rm", "--propagation", "private"] + args, env=env)
    sys.exit(r.returncode)

failures = []


tool = Chatdb(chatdb, work)
run, path, version = tool.run, tool.path, tool.version
COLUMNS = "id, from_user_id, to_user_id, content, status, created_at"


def available():
    s = os.statvfs(mnt)
    return s.f_bavail * s.f_frsize


def used():
    s = os.statvfs(mnt)
    return (s.f_blocks - s.f_bfree) * s.f_frsize


def fill(name, leave):
    """A filler file taking all but `leave` bytes of the small file system."""
    f = os.path.join(mnt, name)
    size = available() - leave
    if size > 0:
        fd = os.open(f, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, size)
        finally:
            os.close(fd)
    return f


def fill_up(name):
    """Takes every byte left (another program writing until the disk is full)."""
    try:
        f = fill(name, 0)
    except OSError:  # the command took some of it meanwhile: write what is left
        f = os.path.join(mnt, name)
    with open(f, "ab", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError:
            pass
    return f


# --- Inputs, made once on the normal disk (untimed) ---------------------------------
messages = 20000 if a.long else 4000
contacts = 40
runs_per_command = a.runs or (8 if a.long else 4)
gen_args = ["--contacts", str(contacts), "--seed", "7", "--pending", "40", "--failed", "10"]
base, export, v1, noindex, now = make_inputs(tool, ["--messages", str(messages)] + gen_args)
# An existing file holding the newer half: import puts the older half back.
os.makedirs(path("base", "half"))
half = path("base", "half", "chats-1.db")
copy_db(base, half)
run(["evict", "--db", half, "--older-than", "30d", "--now", now])
# An existing file holding the older half of the same history (as a cut-short generate
# leaves it; deleted with the schema's triggers on, so its summaries and search index
# stay exact): generate adds the newer half.
os.makedirs(path("base", "short"))
short = path("base", "short", "chats-1.db")
copy_db(base, short)
con = sqlite3.connect(short, isolation_level=None)
con.execute("DELETE FROM Messages WHERE id > (SELECT id FROM Messages ORDER BY id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM Messages))")
con.close()
max_size = os.path.getsize(base) // 2

# name: (source file or None for a new one, arguments for a db path, output on the
# small file system or None). The output is named here; codes allowed for a full disk.
DB_FULL = {13, 14}
COMMANDS = {
    "import (new file)": (None, lambda db: ["import", "--db", db, export], None, DB_FULL),
    "import (existing file)": (half, lambda db: ["import", "--db", db, export], None, DB_FULL),
    "generate (new file)": (None, lambda db: ["generate", "--db", db, "--messages", str(messages)] + gen_args, None, DB_FULL),
    "generate (more messages)": (short, lambda db: ["generate", "--db", db, "--messages", str(messages)] + gen_args, None,
                                 DB_FULL),
    "evict --older-than": (base, lambda db: ["evict", "--db", db, "--older-than", "30d", "--now", now], None, DB_FULL),
    "evict --max-size": (base, lambda db: ["evict", "--db", db, "--max-size", f"{max_size}B"], None, DB_FULL),
    "migrate": (v1, lambda db: ["migrate", "--db", db], None, DB_FULL),
    "vacuum": (base, lambda db: ["vacuum", "--db", db], None, DB_FULL),
    "vacuum --into": (base, lambda db: ["vacuum", "--db", db, "--into", db + ".copy"], ".copy", DB_FULL),
    "export -o": (base, lambda db: ["export", "--db", db, "-o", db + ".ndjson.zst"], ".ndjson.zst", {13, 74}),
    "index apply": (noindex, lambda db: ["index", "apply", "--db", db], None, DB_FULL),
}


class Peak:
    """The most bytes the small file system held while a command ran (polled)."""

    def __init__(self):
        self.peak, self.stop = used(), threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, used())
            time.sleep(0.001)

    def done(self):
        self.stop.set()
        self.thread.join()
        return max(self.peak, used())


def clear_mnt():
    for n in os.listdir(mnt):
        f = os.path.join(mnt, n)
        shutil.rmtree(f) if os.path.isdir(f) and not os.path.islink(f) else os.remove(f)


def prepare(source):
    """A fresh run folder and temp folder on the small file system."""
    clear_mnt()
    d = os.path.join(mnt, "data")
    os.makedirs(d, mode=0o700)
    os.makedirs(os.path.join(mnt, "tmp"), mode=0o700)
    db = os.path.join(d, "chats-1.db")
    if source:
        copy_db(source, db)
    return db


env = dict(os.environ, SQLITE_TMPDIR=os.path.join(mnt, "tmp"), TMPDIR=os.path.join(mnt, "tmp"))

# The biggest input plus room: the tmpfs is sized for the largest need, then each
# reference run measures what its command has on the disk at most.
largest = max(os.path.getsize(f) for f in (base, v1, noindex, half, short))
if (why := mount(8 * largest + (64 << 20))) is not None:
    print(f"   small file system: skipped (resizing the tmpfs failed: {why})")
    sys.exit(0)
reference, duration, peak = {}, {}, {}
try:
    for name, (source, args, output, _) in COMMANDS.items():
        db = prepare(source)
        start_used = used()
        meter = Peak()
        started = time.monotonic()
        run(args(db), env=env)
        duration[name] = time.monotonic() - started
        peak[name] = meter.done() - start_used
        reference[name] = (digest(db, MESSAGES), digest(db, OUTBOX), version(db))
        keep = path("ref", name.replace(" ", "_"))
        os.makedirs(keep)
        shutil.copyfile(db, os.path.join(keep, "chats-1.db"))  # closed cleanly: no -wal to carry
    reffile = {name: os.path.join(path("ref", name.replace(" ", "_")), "chats-1.db") for name in COMMANDS}
    # The disk the runs use: the biggest need plus the 16 MiB margins of the preflight
    # checks, so that a static filler can leave room above them too.
    size = max(os.path.getsize(s) if s else 0 for s, *_ in COMMANDS.values()) + max(peak.values()) + (40 << 20)
    if (why := mount(size)) is not None:
        print(f"   small file system: skipped (resizing the tmpfs failed: {why})")
        sys.exit(0)

    counts = {n: 0 for n in COMMANDS}
    full_hits = {n: 0 for n in COMMANDS}
    codes = {n: {} for n in COMMANDS}
    early_late = {n: [0, 0] for n in COMMANDS}

    def rows_ok(name, db, before, problems):
        """No message lost that both before and the finished run hold; none that neither holds."""
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            ref = reffile[name]
            con.execute("ATTACH DATABASE ? AS ref", (f"file:{ref}?mode=ro",))
            if before:
                con.execute("ATTACH DATABASE ? AS bef", (f"file:{before}?mode=ro",))
                inv = con.execute(f"SELECT count(*) FROM (SELECT {COLUMNS} FROM main.Messages EXCEPT "
                                  f"SELECT {COLUMNS} FROM ref.Messages EXCEPT SELECT {COLUMNS} FROM bef.Messages)").fetchone()[0]
                lost = con.execute(f"SELECT count(*) FROM (SELECT {COLUMNS} FROM ref.Messages INTERSECT "
                                   f"SELECT {COLUMNS} FROM bef.Messages EXCEPT SELECT {COLUMNS} FROM main.Messages)").fetchone()[0]
            else:
                inv = con.execute(f"SELECT count(*) FROM (SELECT {COLUMNS} FROM main.Messages EXCEPT "
                                  f"SELECT {COLUMNS} FROM ref.Messages)").fetchone()[0]
                lost = 0
            if name == "evict --max-size":
                lost = 0  # the re-plan after a partial run may keep other messages (as in crash.py)
            if inv:
                problems.append(f"{inv} message row(s) neither the file before nor a finished run holds")
            if lost:
                problems.append(f"{lost} message row(s) lost that the file before and a finished run both hold")
        finally:
            con.close()

    def one(name, i, mode, leave=None, fill_at=None):
        source, args, output, allowed = COMMANDS[name]
        db = prepare(source)
        out = db + output if output else None
        outbox_before = digest(db, OUTBOX) if source else None
        what = (f"{name}, {leave // 1024} KiB free" if mode == "static" else
                f"{name}, disk filled at {fill_at * 1000:.0f} ms")
        problems = []
        filler = None
        if mode == "static":
            filler = fill("filler", leave)
            proc = subprocess.Popen([chatdb] + args(db), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env, stdin=subprocess.DEVNULL)
        else:
            proc = subprocess.Popen([chatdb] + args(db), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env, stdin=subprocess.DEVNULL)
            timer = threading.Timer(fill_at, lambda: fill_up("filler"))
            timer.start()
        try:
            stdout, stderr = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
            problems.append("did not finish in 120 s")
        if mode == "dynamic":
            timer.cancel()
            timer.join()
        rc = proc.returncode
        counts[name] += 1
        codes[name][rc] = codes[name].get(rc, 0) + 1
        lines = [l for l in stderr.splitlines() if l.strip()]
        if a.verbose:
            print(f"      {what}: exit {rc} {stderr.strip()[:250]!r}")
        if rc < 0:
            problems.append(f"killed by signal {-rc}: {stderr.strip()[-300:]!r}")
        elif rc != 0:
            full_hits[name] += 1
            early_late[name][0 if "needs about" in stderr else 1] += 1
            if rc not in allowed:
                problems.append(f"exit {rc}, not the documented code for a full disk ({' or '.join(map(str, sorted(allowed)))}):"
                                f" {stderr.strip()[:300]!r}")
            if len(lines) != 1 or not lines[0].startswith("Error: ") or mnt not in lines[0]:
                problems.append(f"stderr is not one Error line naming a file on the small file system: {stderr.strip()[:400]!r}")
            # Nothing half-written may stay behind taking the space (temporary files).
            stray = [n for n in os.listdir(os.path.dirname(db)) + os.listdir(os.path.join(mnt, "tmp"))
                     if n.startswith(".") or n.startswith("etilqs_")]
            if stray:
                problems.append(f"left behind on the full disk: {', '.join(sorted(stray))}")
        # Free the space, then the checks of crash.py.
        for n in os.listdir(mnt):
            if n.startswith("filler"):
                os.remove(os.path.join(mnt, n))
        if os.path.exists(db):
            check_full(tool, name, db, problems)
            try:
                version(db)
                if outbox_before is not None and digest(db, OUTBOX) != outbox_before:
                    problems.append("the outbox changed")
                rows_ok(name, db, source, problems)
            except Exception as e:  # noqa: BLE001
                problems.append(f"reading the file failed: {e}")
        elif source:
            problems.append("the database is gone")
        if out and out.endswith(".zst"):
            check_export(out, problems)
        if out and out.endswith(".copy") and os.path.exists(out):
            r = run(["check", "--full", "--db", out], check=False)
            if r.returncode != 0 or digest(out, MESSAGES) != reference[name][0]:
                problems.append(f"{out} exists but is not a complete copy (check --full {r.returncode})")
        for n in os.listdir(os.path.dirname(db)):
            if ".bak-v" in n and not n.endswith(("-wal", "-shm")):
                b = os.path.join(os.path.dirname(db), n)
                r = run(["check", "--full", "--db", b], check=False)
                if r.returncode != 0:
                    problems.append(f"the backup {n} exists but check --full says {r.returncode}: {r.stderr.strip()[:200]}")
                os.remove(b)  # a migrate re-run makes its own
        # Re-running with room finishes the job.
        if out and os.path.exists(out):
            os.remove(out)  # VACUUM INTO and export write a new file
        r = run(args(db), check=False, env=env)
        if r.returncode != 0:
            problems.append(f"the re-run exited {r.returncode}: {r.stderr.strip()[:300]}")
        else:
            check_rerun(tool, name, db, reference[name], max_size, problems)
            if out and not os.path.exists(out):
                problems.append(f"after the re-run there is no {out}")
        for text in problems:
            failures.append(f"{what} (exit {rc}): {text}")
            print(f"   FAIL: {what} (exit {rc}): {text}", file=sys.stderr)
        if problems:
            keep = path("failed", f"{name.replace(' ', '_')}-{i}")
            shutil.copytree(os.path.dirname(db), keep, dirs_exist_ok=True)

    started_all = time.monotonic()
    for name in COMMANDS:
        # Static fills stratified over 0 … 120% of the command's peak; then the disk
        # filled during the run, at moments stratified over its run time.
        n_static = runs_per_command // 2
        for k in range(n_static):
            # The first with the disk already full to the last byte.
            leave = 0 if k == 0 else int(rng.uniform(k / n_static, (k + 1) / n_static) * 1.2 * peak[name])
            one(name, k, "static", leave=leave)
        n_dynamic = runs_per_command - n_static
        for k in range(n_dynamic):
            one(name, n_static + k, "dynamic", fill_at=rng.uniform(k / n_dynamic, (k + 1) / n_dynamic) * duration[name])
        c = codes[name]
        print(f"   {name}: {counts[name]} runs (peak {peak[name] // 1024} KiB on the disk, {duration[name]:.2f} s), "
              f"{full_hits[name]} hit the full disk ({early_late[name][0]} at the preflight check, "
              f"{early_late[name][1]} while writing); exit codes "
              + ", ".join(f"{code}: {k}" for code, k in sorted(c.items())))
finally:
    clear_mnt() if os.path.ismount(mnt) else None
    subprocess.run(["umount", mnt], capture_output=True)

total = sum(counts.values())
hits = sum(full_hits.values())
all_codes = {}
for c in codes.values():
    for code, k in c.items():
        all_codes[code] = all_codes.get(code, 0) + k
print(f"   small file system (tmpfs, {messages:,} messages, seed {seed}): {total} runs in "
      f"{time.monotonic() - started_all:.0f} s, {hits} hit the full disk "
      f"({sum(e[0] for e in early_late.values())} at a preflight check, {sum(e[1] for e in early_late.values())} while writing); "
      "exit codes " + ", ".join(f"{code}: {k}" for code, k in sorted(all_codes.items())))
if failures:
    print(f"   small file system: {len(failures)} problem(s); files kept in {path('failed')}")
    sys.exit(1)
print("   small file system: every check passed (a documented exit code and one Error line naming the file, nothing "
      "left behind, check --full clean, outbox intact, a recorded version, no row lost or invented, no partial output "
      "that looks complete, the re-run finished the job)")
