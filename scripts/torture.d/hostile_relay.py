#!/usr/bin/env python3
"""Damaged and hostile relay files (issue 14): every chat-relay command on each of them.

  hostile_relay.py --bin DIR --work DIR

The relay's own file, damaged the ways hostile.py damages a chats-1.db: a good
relay.db made by `chat-relay user add`, then an empty file, a text file, a folder, a
FIFO, a truncated file, an overwritten header, overwritten b-tree pages, a garbage
-wal, the -wal of another (non-relay) database, the -wal of another relay file, a
symbolic link (followed: `--db` is the user's own choice) and a file from a newer
relay schema. Each case is run under every command that opens the file: `user list`,
`push list` and `device list` (read-only), `user add`, `user remove`, `user token`,
`device add`, `device remove` and `serve`
(started on a free loopback port: it must exit with an error, or start, answer
`GET /v2/health` and stop with 0 on SIGTERM). Every run must end within 20 s, with a
code from the table in docs/cli.md (no signal, no 70) and, when it fails, one `Error: …`
line on stderr naming the file; a read-only command, and a command that fails, must
leave the bytes (the file, its -wal, a link's target) as they were. A case's six
commands run side by side, each on its own copy, so a hang costs 20 s once.

Product bugs this script found are listed in KNOWN: a run that fails only in the way
its entry describes is printed as KNOWN and does not fail the suite (one that passes
is pointed out, so the entry can go). Prints one line per case; exits 1 on any other
failure.
"""
import argparse, concurrent.futures, hashlib, os, re, shutil, signal, sqlite3, stat, subprocess, sys, time, urllib.error, urllib.request

from common import PAGE, damage_cases, wal_of

p = argparse.ArgumentParser()
p.add_argument("--bin", required=True)
p.add_argument("--work", required=True)
a = p.parse_args()
relay = os.path.join(a.bin, "chat-relay")
if not os.access(relay, os.X_OK):
    sys.exit(f"Error: no chat-relay in {a.bin}")
shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
TIMEOUT = 20

# The exit codes documented in the table in docs/cli.md (70 is there, but it is a bug).
cli_doc = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "cli.md")).read()
table = cli_doc.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
DOCUMENTED = {int(c) for c in re.findall(r"^\| (\d+) \|", table, re.M)} - {70}
if not {0, 65, 66, 74}.issubset(DOCUMENTED):
    sys.exit(f"Error: cannot read the exit-code table from docs/cli.md (found {sorted(DOCUMENTED)})")

# Product bugs found by this script, (case, command) -> (text every problem contains, what
# is wrong). Empty since the three it found were fixed (2026-12-01): a FIFO named by --db
# blocked every command for ever; the -wal of another database was replayed into
# relay.db by the read-write open before the identity check refused it; `user list` and
# `push list` opened the file read-write (writing the schema into an empty file, deleting
# a garbage -wal, checkpointing another relay's -wal into it).
HANG = "did not finish in 20 s"
COMMANDS = ("user list", "push list", "user add", "user remove", "user token", "serve")
KNOWN = {}


def run(args):
    try:
        r = subprocess.run([relay] + args, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        return r.returncode, r.stdout, r.stderr, None
    except subprocess.TimeoutExpired:
        return None, "", "", None


def serve(db):
    """Starts `serve` on a free loopback port. Returns (code, stderr, note): it must exit
    by itself with an error, or start, answer GET /v2/health and stop on SIGTERM."""
    log = os.path.join(os.path.dirname(os.path.dirname(db)), "serve.log")
    with open(log, "w") as out:
        proc = subprocess.Popen([relay, "serve", "--db", db, "--host", "127.0.0.1", "--port", "0"],
                                stdout=subprocess.DEVNULL, stderr=out, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + TIMEOUT
    note = None
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            text = open(log).read()
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", text)
            if m:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{m.group(1)}/v2/health", timeout=5) as answer:
                        note = f"started, health answered {answer.status}"
                except urllib.error.HTTPError as e:
                    note = f"started, health answered {e.code}"
                except Exception as e:  # noqa: BLE001
                    note = f"started, but health did not answer: {e}"
                proc.send_signal(signal.SIGTERM)
                break
            time.sleep(0.05)
        code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        code = None
    return code, open(log).read(), note


# A good relay file, made by the relay itself.
goodfolder = os.path.join(a.work, "good")
os.makedirs(goodfolder)
good = os.path.join(goodfolder, "relay.db")
for uid in range(1, 13):
    r = subprocess.run([relay, "user", "add", "--db", good, "--id", str(uid), "--name", f"User {uid}"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(f"Error: cannot make the good relay file: {r.stderr.strip()}")
if os.path.exists(good + "-wal"):
    sys.exit("Error: the good relay file kept a -wal after the relay closed it")
size = os.path.getsize(good)


# The -wal of another SQLite database (not a relay file), and of another relay file.
other_wal = wal_of(os.path.join(a.work, "other.db"), "CREATE TABLE t (x); INSERT INTO t VALUES (randomblob(5000));")
shutil.copyfile(good, os.path.join(a.work, "other-relay.db"))
other_relay_wal = wal_of(os.path.join(a.work, "other-relay.db"), "UPDATE RelayUsers SET name = 'Somebody else';")


def outside(f):
    """Where the link of run folder RUN/data/relay.db leads: RUN/outside/relay.db."""
    return os.path.join(os.path.dirname(os.path.dirname(f)), "outside", "relay.db")


def newer(f):
    shutil.copyfile(good, f)
    con = sqlite3.connect(f)
    con.execute("INSERT INTO chatdb_migrations (version, name, checksum, applied_at) "
                "VALUES (99, 'relay_future', 'x', '2030-01-01T00:00:00Z')")
    con.execute("PRAGMA user_version = 99")
    con.commit()
    con.close()


def link(f):
    os.makedirs(os.path.dirname(outside(f)))
    shutil.copyfile(good, outside(f))
    os.symlink(outside(f), f)


CASES = {
    **damage_cases(good, other_wal, range(2, size // PAGE, 3)),
    "-wal of another relay file": lambda f: (shutil.copyfile(good, f), open(f + "-wal", "wb").write(other_relay_wal)),
    "symlink": link,
    "newer schema": newer,
}

READERS = [["user", "list"], ["push", "list"], ["device", "list", "--user", "1"]]
WRITERS = [["user", "add", "--id", "99", "--name", "New"], ["user", "remove", "--id", "1"], ["user", "token", "--id", "1"],
           ["device", "add", "--user", "1", "--name", "laptop"], ["device", "remove", "--user", "1", "--device", "1"],
           ["serve"]]


def fingerprint(f):
    h = hashlib.sha256()
    for g in ([outside(f), outside(f) + "-wal"] if os.path.islink(f) else []) + [f, f + "-wal"]:
        if os.path.lexists(g):
            st = os.lstat(g)
            h.update(f"{g}:{stat.S_IFMT(st.st_mode)}:".encode())
            if stat.S_ISREG(st.st_mode):
                h.update(open(g, "rb").read())
    return h.hexdigest()




def attempt(case, make, command, n):
    """One command on a fresh copy of one case, in its own folder; returns what went wrong."""
    label = " ".join(command[:2]) if command[0] != "serve" else "serve"
    folder = os.path.join(a.work, "cases", case.replace(" ", "-"), str(n))
    os.makedirs(os.path.join(folder, "data"))
    db = os.path.join(folder, "data", "relay.db")
    make(db)
    before = fingerprint(db)
    started = time.monotonic()
    note = None
    if command == ["serve"]:
        code, err, note = serve(db)
    else:
        code, _, err, _ = run(command + ["--db", db])
    took = time.monotonic() - started
    problems = []
    if code is None:
        problems.append(HANG)
    else:
        lines = [l for l in err.splitlines() if l.strip()]
        if code < 0 or code >= 128:
            problems.append(f"killed by a signal ({code})")
        elif code == 70:
            problems.append(f"an internal error (70): {err.strip()[:200]!r}")
        elif code not in DOCUMENTED:
            problems.append(f"exit {code} is not in the table in docs/cli.md: {err.strip()[:200]!r}")
        if note and code != 0:
            problems.append(f"serve started, then exited {code} on SIGTERM: {err.strip()[-300:]!r}")
        elif code != 0 and (len(lines) != 1 or not lines[0].startswith("Error: ")):
            problems.append(f"stderr is not one Error line: {err.strip()[:300]!r}")
        elif code != 0 and "relay.db" not in lines[0] and not re.match(
                r"Error: (device \d+ of )?user \d+ does not exist$", lines[0]):
            # (A usable file without the user or device is an error about them, not the file.)
            problems.append(f"the error does not name the file: {lines[0][:200]}")
        if note and "health answered 200" not in note:
            problems.append(note)
        if code == 0 and command == ["serve"] and not note:
            problems.append("serve exited 0 without starting")
    if command in READERS and fingerprint(db) != before:
        problems.append("a read-only command changed the file")
    elif code not in (0, None) and command in WRITERS and fingerprint(db) != before:
        problems.append("a failed command changed the file")
    shutil.rmtree(folder)
    summary = f"{label} " + ("hung" if code is None else f"{code}") + (" served" if note else "")
    return label, code, took, problems, summary


failures, known, total = [], [], 0
commands = READERS + WRITERS
with concurrent.futures.ThreadPoolExecutor(max_workers=len(commands)) as pool:
    for case, make in CASES.items():
        # A case's commands run side by side (each on its own copy): a hang costs 20 s once.
        runs = list(pool.map(lambda x: attempt(case, make, x[1], x[0]), enumerate(commands)))
        bad = 0
        for command, (label, code, took, problems, _) in zip(commands, runs):
            total += 1
            where = f"{case}: chat-relay {' '.join(command)} --db …/relay.db"
            entry = KNOWN.get((case, label))
            if entry and problems and all(entry[0] in x for x in problems):
                known.append(where)
                print(f"   KNOWN: {where}: {'; '.join(problems)}: {entry[1]}", file=sys.stderr)
                continue
            if entry and not problems:
                print(f"   note: {where} now passes; drop its entry from KNOWN", file=sys.stderr)
            for text in problems:
                failures.append(f"{where}: {text}")
                print(f"   FAIL: {where}: {text} (exit {code}, {took:.1f} s)", file=sys.stderr)
                bad += 1
        print(f"   hostile relay files: {case}: {len(runs)} runs ({', '.join(r[4] for r in runs)}), "
              + ("ok" if bad == 0 else f"{bad} problem(s)") + (f", {sum(1 for w in known if w.startswith(case + ':'))} known"
                                                            if any(w.startswith(case + ':') for w in known) else ""))

print(f"   hostile relay files: {len(CASES)} cases, {total} runs, {len(failures)} problem(s), "
      f"{len(known)} run(s) hit a known product bug (KNOWN in {os.path.basename(__file__)})")
sys.exit(1 if failures else 0)
