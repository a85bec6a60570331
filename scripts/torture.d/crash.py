#!/usr/bin/env python3
"""Crash safety (issue 14): chatdb's long commands killed with SIGKILL at a random moment,
or (--faults) run with I/O errors injected into their reads, writes and syncs.

  crash.py --chatdb BIN --work DIR --kills N --seed S --messages M [--faults]

With --faults each run is under Debian's libfiu (`fiu-run`), which makes a random share
(0.01% to 5%) of the process's read, write and sync calls fail with an errno those calls
can return (EIO, ENOSPC, EFBIG, EINTR…): the command must then exit with a code from
the README's table and one `Error:` line naming the file, and the checks below hold
as after a kill.

Each kill starts one command on a fresh copy of a generated file (or, for import, a new
file), sends SIGKILL at a time drawn between 0 and the command's measured run time, then
checks what the issue asks:
  - `chatdb check --full` is clean (exit 0), at whatever migration version the file is;
  - the outbox (MessageRequests) is there byte for byte, as before the command;
  - the file is at a recorded migration version (migrate status), never between two;
  - an export or backup that was cut short does not look complete (no file at the
    target, or one that passes `zstd -t` and ends with the trailer);
  - running the same command again finishes the job: exit 0, then check clean, and
    the rows are those of a run that was never killed.
Prints one line per command with its kill count and a summary; exits 1 on any failure.
"""
import argparse, hashlib, json, os, random, shutil, signal, sqlite3, subprocess, sys, time

p = argparse.ArgumentParser()
p.add_argument("--chatdb", required=True)
p.add_argument("--work", required=True)
p.add_argument("--kills", type=int, required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--messages", type=int, required=True)
p.add_argument("--faults", action="store_true")
a = p.parse_args()
DOCUMENTED = {0, 1, 2, 3, 4, 6, 10, 11, 12, 13, 14, 15, 16, 64, 65, 66, 74, 75, 77}
rng = random.Random(a.seed)
chatdb = a.chatdb
shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
failures = []


def run(args, check=True, timeout=600):
    r = subprocess.run([chatdb] + args, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"chatdb {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
    return r


def path(*parts):
    return os.path.join(a.work, *parts)


def remove_db(f):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(f + suffix):
            os.remove(f + suffix)


def copy_db(src, dst):
    remove_db(dst)
    shutil.copyfile(src, dst)


def query(f, sql):
    con = sqlite3.connect(f"file:{f}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def digest(f, sql):
    return hashlib.sha256(repr(query(f, sql)).encode()).hexdigest()


# The outbox as the user wrote it: the columns every schema version has.
OUTBOX = "SELECT request_id, to_user_id, content, status, fail_count FROM MessageRequests ORDER BY request_id"
MESSAGES = "SELECT id, from_user_id, to_user_id, content, status, created_at FROM Messages ORDER BY id"


def version(f):
    r = run(["migrate", "status", "--db", f, "--json"])
    return json.loads(r.stdout)["files"][0]["result"]["version"]


# --- Inputs, made once (untimed) -------------------------------------------------
base = path("base", "chats-1.db")
os.makedirs(path("base"))
run(["generate", "--db", base, "--contacts", "60", "--messages", str(a.messages), "--seed", "7", "--pending", "40",
     "--failed", "10"])
export = path("base", "history.ndjson.zst")
run(["export", "--db", base, "-o", export])
# A version-1 file with the same rows, for migrate (what an old install holds), made as
# the fleet bench makes its version-1 files.
os.makedirs(path("base", "template"))
template = path("base", "template", "chats-1.db")
run(["migrate", "--db", template, "--to", "1"])
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench.d", "fleet_v1.py"),
                template, path("base"), path("base", "v1")], check=True)
v1 = path("base", "v1", "chats-1.db")
# A file missing two of its indexes, for index apply.
os.makedirs(path("base", "noindex"))
noindex = path("base", "noindex", "chats-1.db")
copy_db(base, noindex)
con = sqlite3.connect(noindex, isolation_level=None)
con.execute("DROP INDEX Messages_by_created_at")
con.execute("DROP INDEX Messages_unread")
con.close()

cutoff_now = query(base, "SELECT created_at FROM Messages ORDER BY id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM Messages)")[0][0]
# "now" 30 days after the median message: --older-than 30d removes the older half.
now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.mktime(time.strptime(cutoff_now[:19], "%Y-%m-%dT%H:%M:%S"))
                                                        - time.timezone + 30 * 86400))

# Each command: (name, source file or None for a new file, arguments with {db}, what a
# finished run leaves (checked against the killed-then-rerun file), whether it may
# change the outbox).
COMMANDS = {
    "import": (None, lambda db: ["import", "--db", db, export]),
    "generate": (None, lambda db: ["generate", "--db", db, "--contacts", "60", "--messages", str(a.messages), "--seed",
                                   "7", "--pending", "40", "--failed", "10"]),
    "evict": (base, lambda db: ["evict", "--db", db, "--older-than", "30d", "--now", now]),
    "evict --max-size": (base, lambda db: ["evict", "--db", db, "--max-size", f"{os.path.getsize(base) // 2}B"]),
    "migrate": (v1, lambda db: ["migrate", "--db", db]),
    "migrate --all": (v1, lambda db: ["migrate", "--all", "--data-dir", os.path.dirname(db)]),
    "export": (base, lambda db: ["export", "--db", db, "-o", db + ".ndjson.zst"]),
    "vacuum": (base, lambda db: ["vacuum", "--db", db]),
    "vacuum --into": (base, lambda db: ["vacuum", "--db", db, "--into", db + ".copy"]),
    "index apply": (noindex, lambda db: ["index", "apply", "--db", db]),
}

# A finished run of each, never killed: the reference, and how long it takes.
reference, duration = {}, {}
for name, (source, args) in COMMANDS.items():
    d = path("ref", name.replace(" ", "_").replace("-", ""))
    os.makedirs(d)
    db = os.path.join(d, "chats-1.db")
    if source:
        copy_db(source, db)
    started = time.monotonic()
    run(args(db))
    duration[name] = time.monotonic() - started
    reference[name] = (digest(db, MESSAGES), digest(db, OUTBOX), version(db))

counts = {name: 0 for name in COMMANDS}
failed_runs = {name: 0 for name in COMMANDS}
exits = {}
problems = {name: 0 for name in COMMANDS}


def check_after(name, db, outbox_before, killed_at):
    where = (f"{name} with {killed_at:.1%} of I/O calls failing" if a.faults else f"{name}, killed at {killed_at * 1000:.0f} ms")
    problems_here = []
    if os.path.exists(db):
        r = run(["check", "--full", "--db", db], check=False)
        # Clean, or (index apply) the findings the file had before: never new ones.
        if r.returncode != 0 and not (name == "index apply" and r.returncode == 4 and "schema-missing" in r.stdout):
            problems_here.append(f"check --full exited {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")
        try:
            v = version(db)
            if outbox_before is not None and digest(db, OUTBOX) != outbox_before:
                problems_here.append("the outbox changed")
        except Exception as e:  # noqa: BLE001
            problems_here.append(f"migrate status failed: {e}")
    # Outputs: either absent or complete.
    for out in (db + ".ndjson.zst",):
        if os.path.exists(out):
            z = subprocess.run(["zstd", "-t", "-q", out], capture_output=True)
            tail = subprocess.run(f"zstd -dc '{out}' | tail -n 1", shell=True, capture_output=True, text=True)
            if z.returncode != 0 or '"type":"trailer"' not in tail.stdout:
                problems_here.append(f"{out} exists but is not a complete export")
    copy = db + ".copy"
    if os.path.exists(copy):
        r = run(["check", "--full", "--db", copy], check=False)
        if r.returncode != 0:
            problems_here.append(f"{copy} exists but check --full says {r.returncode}: {r.stderr.strip()[:200]}")
    # Re-running finishes the job, and the result is the never-killed run's.
    source, args = COMMANDS[name]
    if name == "vacuum --into" and os.path.exists(copy):
        os.remove(copy)  # VACUUM INTO refuses an existing target by design
    if name == "export" and os.path.exists(db + ".ndjson.zst"):
        os.remove(db + ".ndjson.zst")
    r = run(args(db), check=False)
    if r.returncode != 0:
        problems_here.append(f"the re-run exited {r.returncode}: {r.stderr.strip()[:300]}")
    else:
        r = run(["check", "--full", "--db", db], check=False)
        if r.returncode != 0:
            problems_here.append(f"after the re-run, check --full exited {r.returncode}")
        got = (digest(db, MESSAGES), digest(db, OUTBOX), version(db))
        if name == "evict --max-size":
            # A size target is planned from the file as it is: after a cut-short run the
            # re-run plans from a file with fewer messages and unreclaimed pages, so the
            # messages it keeps may differ. Its job is the size: the file ends under it.
            target = os.path.getsize(base) // 2
            pages = query(db, "SELECT (SELECT page_count FROM pragma_page_count) - (SELECT freelist_count FROM pragma_freelist_count), "
                              "(SELECT page_size FROM pragma_page_size)")[0]
            if pages[0] * pages[1] > target:
                problems_here.append(f"after the re-run the file uses {pages[0] * pages[1]} bytes, over the target {target}")
            got = (reference[name][0],) + got[1:]
        if got != reference[name]:
            which = [w for w, x, y in zip(("messages", "outbox", "version"), got, reference[name]) if x != y]
            problems_here.append(f"after the re-run the file differs from an uninterrupted run: {', '.join(which)}")
    for text in problems_here:
        failures.append(f"{where}: {text}")
        print(f"   FAIL: {where}: {text}", file=sys.stderr)
    if problems_here:
        problems[name] += 1
        keep = path("failed", f"{name.replace(' ', '_')}-{counts[name]}")
        shutil.copytree(os.path.dirname(db), keep, dirs_exist_ok=True)


names = list(COMMANDS)
started_all = time.monotonic()
for i in range(a.kills):
    name = names[i % len(names)]
    source, args = COMMANDS[name]
    d = path("kill", str(i))
    os.makedirs(d)
    db = os.path.join(d, "chats-1.db")
    if source:
        copy_db(source, db)
    outbox_before = digest(db, OUTBOX) if source else None
    if a.faults:
        share = rng.choice([0.0001, 0.0005, 0.002, 0.01, 0.05])
        fiu = ["fiu-run", "-x", "-c", f"enable_random name=posix/io/rw/*,probability={share}",
               "-c", f"enable_random name=posix/io/sync/*,probability={share}"]
        try:
            r = subprocess.run(fiu + [chatdb] + args(db), capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            failures.append(f"{name} with {share:.1%} of I/O calls failing: did not finish in 120 s")
            print(f"   FAIL: {failures[-1]}", file=sys.stderr)
            continue
        counts[name] += 1
        where = f"{name} with {share:.1%} of I/O calls failing"
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        if r.returncode not in DOCUMENTED:
            failures.append(f"{where}: exit {r.returncode} is not in the README's table: {r.stderr.strip()[:300]}")
        elif r.returncode != 0 and "--all" in name:
            if d not in r.stdout + r.stderr:
                failures.append(f"{where}: the --all report does not name the file: {(r.stdout + r.stderr).strip()[:300]!r}")
        elif r.returncode != 0 and lines and (len(lines) != 1 or not lines[0].startswith("Error: ") or a.work not in lines[0]):
            # The line names the file that failed: the database, or the input or output
            # file. (No line at all is allowed: writing it may be one of the failing calls.)
            failures.append(f"{where}: stderr is not one Error line naming a file: {r.stderr.strip()[:300]!r}")
        if r.returncode != 0:
            failed_runs[name] += 1
            exits[r.returncode] = exits.get(r.returncode, 0) + 1
        for text in failures[len(failures) - (1 if failures and failures[-1].startswith(where) else 0):]:
            if text.startswith(where):
                print(f"   FAIL: {text}", file=sys.stderr)
        check_after(name, db, outbox_before, share)
    else:
        killed_at = rng.uniform(0, duration[name])
        proc = subprocess.Popen([chatdb] + args(db), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=killed_at)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        counts[name] += 1
        check_after(name, db, outbox_before, killed_at)
    shutil.rmtree(d)

section = "I/O faults" if a.faults else "crash safety"
runs = "runs under fiu-run" if a.faults else "kills"
print(f"   {section}: {a.kills} {runs} in {time.monotonic() - started_all:.0f} s; "
      + ", ".join(f"{n} {counts[n]}" + (f" ({failed_runs[n]} failed)" if a.faults else "") for n in names))
if a.faults:
    print(f"   {section}: exit codes of the failed runs: " + (", ".join(f"{c}: {n}" for c, n in sorted(exits.items())) or "none"))
if failures:
    print(f"   {section}: {len(failures)} problem(s); files kept in {path('failed')}")
    sys.exit(1)
print(f"   {section}: every check passed (" + ("a documented exit code and one Error line naming the file; " if a.faults else "")
      + "check --full clean, outbox intact, a recorded version, no partial output that looks complete, "
      "the re-run finished the job with the uninterrupted run's rows)")
