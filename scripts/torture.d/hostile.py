#!/usr/bin/env python3
"""Damaged and hostile files (issue 14): every chatdb command on each of them.

  hostile.py --chatdb BIN --work DIR

Each case is a data folder holding one chats-1.db that is not a good chat database
(an empty file, a text file, a folder, a FIFO, a truncated file, an overwritten header,
overwritten b-tree pages, a garbage -wal, the -wal of another database, a symbolic link
out of the folder, a file from a newer schema). Every command must answer within 20 s,
with one `Error: …` line naming the file (or success, where the file is usable), an
exit code from the table in docs/cli.md, no crash (no signal, no 70), and leave the file's
bytes as they were unless the command's job is to change a good file. A symbolic link
out of the folder is refused by every command with 65 (and its target left alone), but
followed when named with `--db`. `--all` runs go on past the bad file to a good one
beside it. Prints one line per case; exits 1 on
any failure.
"""
import argparse, hashlib, json, os, shutil, sqlite3, stat, subprocess, sys

from common import CHATDB_EXIT_CODES as DOCUMENTED, PAGE, damage_cases, wal_of

p = argparse.ArgumentParser()
p.add_argument("--chatdb", required=True)
p.add_argument("--work", required=True)
a = p.parse_args()
chatdb = a.chatdb
shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
failures = []


def run(args, timeout=20):
    try:
        r = subprocess.run([chatdb] + args, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return None, "", ""


# A good file to damage, and one to sit beside the bad one for --all.
os.makedirs(os.path.join(a.work, "good"))
good = os.path.join(a.work, "good", "chats-1.db")
r = subprocess.run([chatdb, "generate", "--db", good, "--contacts", "20", "--messages", "3000", "--seed", "3"],
                   capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"cannot generate the good file: {r.stderr}")
os.makedirs(os.path.join(a.work, "other"))
other = os.path.join(a.work, "other", "chats-9.db")
subprocess.run([chatdb, "migrate", "--db", other, "--to", "1"], check=True, capture_output=True)
con = sqlite3.connect(other)
con.execute("CREATE TABLE t (x)")
con.commit()
con.close()
other_wal = wal_of(other, "INSERT INTO t VALUES (randomblob(5000));")
size = os.path.getsize(good)


def damaged(name, make):
    folder = os.path.join(a.work, "cases", name)
    os.makedirs(folder)
    make(os.path.join(folder, "chats-1.db"))
    return folder


def newer(f):
    shutil.copyfile(good, f)
    con = sqlite3.connect(f)
    con.execute("INSERT INTO chatdb_migrations (version, name, checksum, applied_at) VALUES (99, 'future', 'x', '2030-01-01')")
    con.commit()
    con.close()


def link_out(f):
    outside = os.path.join(a.work, "outside.db")
    shutil.copyfile(good, outside)
    os.symlink(outside, f)


CASES = {
    **damage_cases(good, other_wal, range(3, size // PAGE, 7)),
    "symlink out of the folder": link_out,
    "newer schema": newer,
}

# Cases every command must refuse with one code: a link out of the data folder, chosen
# through --user, is never followed (65), and the file it leads to is left alone.
EXPECTED_CODE = {"symlink out of the folder": 65}
OUTSIDE = os.path.join(a.work, "outside.db")

# Commands that only read, and those that write (which may change a usable file).
READERS = [["usage"], ["check"], ["check", "--full"], ["migrate", "status"], ["index", "list"], ["index", "verify"],
           ["export", "-o", "{out}/x.ndjson.zst"], ["evict", "--older-than", "1d", "--dry-run"]]
WRITERS = [["migrate"], ["evict", "--older-than", "30d"], ["vacuum"], ["index", "apply"], ["import", "{out}/in.ndjson"],
           ["generate", "--contacts", "20", "--messages", "3000", "--seed", "3"]]

inp = os.path.join(a.work, "in.ndjson")
subprocess.run([chatdb, "export", "--db", good, "-o", inp], check=True, capture_output=True)


def fingerprint(folder):
    f = os.path.join(folder, "chats-1.db")
    h = hashlib.sha256()
    if os.path.islink(f) and os.path.exists(OUTSIDE):
        # The link's target counts too: a refused command must not have touched it.
        for suffix in ("", "-wal"):
            if os.path.exists(OUTSIDE + suffix):
                h.update(open(OUTSIDE + suffix, "rb").read())
    for suffix in ("", "-wal"):
        g = f + suffix
        if os.path.lexists(g):
            st = os.lstat(g)
            h.update(f"{suffix}:{stat.S_IFMT(st.st_mode)}:".encode())
            if stat.S_ISREG(os.stat(g).st_mode):
                h.update(open(g, "rb").read())
    return h.hexdigest()


total = 0
for case, make in CASES.items():
    bad = 0
    for command in READERS + WRITERS:
        folder = damaged(case, make) if not os.path.exists(os.path.join(a.work, "cases", case)) else os.path.join(
            a.work, "cases", case)
        before = fingerprint(folder)
        args = [x.replace("{out}", a.work) for x in command] + ["--data-dir", folder, "--user", "1"]
        code, out, err = run(args)
        total += 1
        where = f"{case}: chatdb {' '.join(command)}"
        problems = []
        if code is None:
            problems.append("did not finish in 20 s")
        else:
            lines = [l for l in err.splitlines() if l.strip()]
            if code < 0 or code >= 128:
                problems.append(f"killed by a signal ({code})")
            elif code not in DOCUMENTED:
                problems.append(f"exit {code} is not in the table in docs/cli.md")
            elif code == 70:
                problems.append(f"internal error: {err.strip()[:200]}")
            if code not in (0, 2, 3, 4, 6) and (len(lines) != 1 or not lines[0].startswith("Error: ")):
                problems.append(f"stderr is not one Error line: {err.strip()[:300]!r}")
            if code not in (0, 2, 3, 4, 6) and lines and "chats-1.db" not in lines[0] and "x.ndjson" not in lines[0]:
                problems.append(f"the error does not name the file: {lines[0][:200]}")
            if case in EXPECTED_CODE and code != EXPECTED_CODE[case]:
                problems.append(f"exit {code}, expected {EXPECTED_CODE[case]}: {err.strip()[:200]}")
        if command in READERS and fingerprint(folder) != before:
            problems.append("a read-only command changed the file")
        if code not in (0, None) and command in WRITERS and fingerprint(folder) != before:
            problems.append("a failed command changed the file")
        for text in problems:
            failures.append(f"{where}: {text}")
            print(f"   FAIL: {where}: {text}", file=sys.stderr)
            bad += 1
        shutil.rmtree(folder)
    # --all goes on past the bad file to a good one beside it.
    folder = damaged(case, make)
    shutil.copyfile(good, os.path.join(folder, "chats-2.db"))
    code, out, err = run(["check", "--all", "--json", "--data-dir", folder])
    total += 1
    try:
        files = {os.path.basename(f["path"]): f["ok"] for f in json.loads(out)["files"]}
        if files.get("chats-2.db") is not True:
            raise ValueError(f"chats-2.db not checked ok: {files}")
        if case in EXPECTED_CODE:
            codes = {os.path.basename(f["path"]): f.get("error", {}).get("exitCode") for f in json.loads(out)["files"]}
            if codes.get("chats-1.db") != EXPECTED_CODE[case] or code != 1:
                raise ValueError(f"chats-1.db not refused with {EXPECTED_CODE[case]} (exit {code}): {codes}")
    except Exception as e:  # noqa: BLE001
        failures.append(f"{case}: check --all: {e}")
        print(f"   FAIL: {case}: check --all did not carry on: {e}", file=sys.stderr)
        bad += 1
    shutil.rmtree(folder)
    print(f"   hostile files: {case}: {len(READERS) + len(WRITERS) + 1} runs, " + ("ok" if bad == 0 else f"{bad} problem(s)"))

# --db names a path by the user's own choice: a link there is followed wherever it leads.
folder = damaged("symlink out of the folder, by --db", link_out)
code, out, err = run(["check", "--db", os.path.join(folder, "chats-1.db")])
total += 1
if code != 0:
    failures.append(f"symlink named by --db: check exited {code}: {err.strip()[:200]}")
    print(f"   FAIL: symlink named by --db: check exited {code}, expected 0 (links given by --db are followed)", file=sys.stderr)
shutil.rmtree(folder)

print(f"   hostile files: {len(CASES)} cases, {total} runs, {len(failures)} problem(s)")
sys.exit(1 if failures else 0)
