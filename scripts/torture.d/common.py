"""What the torture scripts share (issue 14): chatdb run on files under a work folder,
the inputs crash.py and smallfs.py make, the checks they make after a cut-short run,
and the damaged files hostile.py and hostile_relay.py open.

Imported by the scripts beside it; not run on its own.
"""
import hashlib, json, os, shutil, sqlite3, subprocess, sys, time

# chatdb's exit codes from the table in docs/cli.md, but 7 and 69 (chat-sync's), 70 (a bug)
# and 141 (a closed stdout, which these runs never have).
CHATDB_EXIT_CODES = {0, 1, 2, 3, 4, 6, 10, 11, 12, 13, 14, 15, 16, 64, 65, 66, 74, 75, 77}

# The outbox as the user wrote it, and the messages: the columns every schema version has.
OUTBOX = "SELECT request_id, to_user_id, content, status, fail_count FROM MessageRequests ORDER BY request_id"
MESSAGES = "SELECT id, from_user_id, to_user_id, content, status, created_at FROM Messages ORDER BY id"


class Chatdb:
    """The chatdb binary, and the work folder its files live in."""

    def __init__(self, binary, work):
        self.binary, self.work = binary, work

    def run(self, args, check=True, timeout=600, env=None):
        r = subprocess.run([self.binary] + args, capture_output=True, text=True, timeout=timeout, env=env,
                           stdin=subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise RuntimeError(f"chatdb {' '.join(args)} exited {r.returncode}: {r.stderr.strip()}")
        return r

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def version(self, f):
        r = self.run(["migrate", "status", "--db", f, "--json"])
        return json.loads(r.stdout)["files"][0]["result"]["version"]


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


# --- Inputs of crash.py and smallfs.py --------------------------------------------


def make_inputs(tool, generate):
    """Under WORK/base: a generated file (`generate`: chatdb's arguments after the path),
    its export, a version-1 file with the same rows (what an old install holds, made as
    the fleet bench makes its version-1 files), a copy missing two indexes (for index
    apply), and a "now" 30 days after the median message (--older-than 30d removes the
    older half). Returns (base, export, v1, noindex, now)."""
    path, run = tool.path, tool.run
    os.makedirs(path("base"))
    base = path("base", "chats-1.db")
    run(["generate", "--db", base] + generate)
    export = path("base", "history.ndjson.zst")
    run(["export", "--db", base, "-o", export])
    os.makedirs(path("base", "template"))
    template = path("base", "template", "chats-1.db")
    run(["migrate", "--db", template, "--to", "1"])
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench.d", "fleet_v1.py"),
                    template, path("base"), path("base", "v1")], check=True)
    v1 = path("base", "v1", "chats-1.db")
    os.makedirs(path("base", "noindex"))
    noindex = path("base", "noindex", "chats-1.db")
    copy_db(base, noindex)
    con = sqlite3.connect(noindex, isolation_level=None)
    con.execute("DROP INDEX Messages_by_created_at")
    con.execute("DROP INDEX Messages_unread")
    con.close()
    median = query(base, "SELECT created_at FROM Messages ORDER BY id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM Messages)")[0][0]
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.mktime(time.strptime(median[:19], "%Y-%m-%dT%H:%M:%S"))
                                                            - time.timezone + 30 * 86400))
    return base, export, v1, noindex, now


# --- Checks after a cut-short run -------------------------------------------------


def check_full(tool, name, db, problems):
    """`check --full` is clean, or (index apply) shows only the findings the file had."""
    r = tool.run(["check", "--full", "--db", db], check=False)
    if r.returncode != 0 and not (name == "index apply" and r.returncode == 4 and "schema-missing" in r.stdout):
        problems.append(f"check --full exited {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")


def check_export(out, problems):
    """An export cut short is absent, or complete (passes `zstd -t`, ends with the trailer)."""
    if os.path.exists(out):
        z = subprocess.run(["zstd", "-t", "-q", out], capture_output=True)
        tail = subprocess.run(f"zstd -dc '{out}' | tail -n 1", shell=True, capture_output=True, text=True)
        if z.returncode != 0 or '"type":"trailer"' not in tail.stdout:
            problems.append(f"{out} exists but is not a complete export")


def check_rerun(tool, name, db, reference, max_size, problems):
    """After a re-run that exited 0: check --full is clean and the file holds the rows of
    a run never cut short (`reference`: messages, outbox and version digests)."""
    r = tool.run(["check", "--full", "--db", db], check=False)
    if r.returncode != 0:
        problems.append(f"after the re-run, check --full exited {r.returncode}")
    got = (digest(db, MESSAGES), digest(db, OUTBOX), tool.version(db))
    if name == "evict --max-size":
        # A size target is planned from the file as it is: after a cut-short run the
        # re-run plans from a file with fewer messages and unreclaimed pages, so the
        # messages it keeps may differ. Its job is the size: the file ends under it.
        pages = query(db, "SELECT (SELECT page_count FROM pragma_page_count) - (SELECT freelist_count FROM pragma_freelist_count), "
                          "(SELECT page_size FROM pragma_page_size)")[0]
        if pages[0] * pages[1] > max_size:
            problems.append(f"after the re-run the file uses {pages[0] * pages[1]} bytes, over the target {max_size}")
        got = (reference[0],) + got[1:]
    if got != reference:
        which = [w for w, x, y in zip(("messages", "outbox", "version"), got, reference) if x != y]
        problems.append(f"after the re-run the file differs from an uninterrupted run: {', '.join(which)}")


# --- Damaged files of hostile.py and hostile_relay.py ----------------------------

PAGE = 4096


def write_at(f, offset, data):
    with open(f, "r+b") as h:
        h.seek(offset)
        h.write(data)


def wal_of(path, change):
    """The -wal a connection leaves on `path` after `change`, copied before it closes."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA wal_autocheckpoint = 0")
    con.executescript(change)
    data = open(path + "-wal", "rb").read()
    con.close()
    return data


def damage_cases(good, other_wal, pages):
    """The cases both scripts share, each a function that makes one at a path: `good`
    damaged, or something else in its place. `pages`: the b-tree pages overwritten
    (`range(first, last, step)` of page numbers)."""
    size = os.path.getsize(good)
    return {
        "empty file": lambda f: open(f, "wb").close(),
        "text file": lambda f: open(f, "w").write("this is not a database\n" * 100),
        "folder": lambda f: os.mkdir(f),
        "fifo": lambda f: os.mkfifo(f),
        "truncated": lambda f: (shutil.copyfile(good, f), os.truncate(f, size // 3)),
        "overwritten header": lambda f: (shutil.copyfile(good, f), write_at(f, 0, b"\xff" * 100)),
        "overwritten b-tree pages": lambda f: (shutil.copyfile(good, f), [write_at(f, PAGE * n, os.urandom(PAGE)) for n in pages]),
        "garbage -wal": lambda f: (shutil.copyfile(good, f), open(f + "-wal", "wb").write(os.urandom(40000))),
        "-wal of another database": lambda f: (shutil.copyfile(good, f), open(f + "-wal", "wb").write(other_wal)),
    }
