#!/usr/bin/env python3
"""Crash safety (issue 14): chatdb's long commands killed with SIGKILL at a random moment,
or (--faults) run with I/O errors injected into their reads, writes and syncs.

  crash.py --chatdb BIN --work DIR --kills N --seed S --messages M [--faults]

With --faults each run is under Debian's libfiu (`fiu-run`), which makes a random share
(0.01% to 5%) of the process's read, write and sync calls fail with an errno those calls
can return (EIO, ENOSPC, EFBIG, EINTR…): the command must then exit with a code from
the table in docs/cli.md and one `Error:` line naming the file, and the checks below hold
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
import argparse, os, random, shutil, signal, subprocess, sys, time

from common import CHATDB_EXIT_CODES as DOCUMENTED, MESSAGES, OUTBOX, Chatdb, check_export, check_full, check_rerun, copy_db, \
    digest, make_inputs

p = argparse.ArgumentParser()
p.add_argument("--chatdb", required=True)
p.add_argument("--work", required=True)
p.add_argument("--kills", type=int, required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--messages", type=int, required=True)
p.add_argument("--faults", action="store_true")
a = p.parse_args()
rng = random.Random(a.seed)
chatdb = a.chatdb
shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
failures = []


tool = Chatdb(chatdb, a.work)
run, path, version = tool.run, tool.path, tool.version

# --- Inputs, made once (untimed) -------------------------------------------------
base, export, v1, noindex, now = make_inputs(tool, ["--contacts", "60", "--messages", str(a.messages), "--seed", "7",
                                                    "--pending", "40", "--failed", "10"])

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
        check_full(tool, name, db, problems_here)
        try:
            version(db)
            if outbox_before is not None and digest(db, OUTBOX) != outbox_before:
                problems_here.append("the outbox changed")
        except Exception as e:  # noqa: BLE001
            problems_here.append(f"migrate status failed: {e}")
    # Outputs: either absent or complete.
    check_export(db + ".ndjson.zst", problems_here)
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
        check_rerun(tool, name, db, reference[name], os.path.getsize(base) // 2, problems_here)
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
            failures.append(f"{where}: exit {r.returncode} is not in the table in docs/cli.md: {r.stderr.strip()[:300]}")
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
