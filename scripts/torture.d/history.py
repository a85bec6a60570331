#!/usr/bin/env python3
"""A history checker for chat-sync and chat-relay under faults (issue 14's torture suite).

  history.py --bin DIR --work DIR --seed N [--long] [--users K] [--messages M]
  history.py --self-test

K users (short: 4, --long: 10) each run `chat-sync run` against a real `chat-relay
serve` started with `--faults`, through a loopback proxy of this script's own that
answers some catch-up requests (`GET /v2/messages`) and WebSocket upgrades with a 503
or drops them. Each user queues M messages (short: 20, --long: 200) with `chat-sync
send` to random others (unique contents `h<seed>-u<from>-n<k>`), some while its `run`
is down, and runs `chat-sync read --with` at random moments. Meanwhile the relay and
the clients are killed (SIGKILL or SIGTERM) and restarted, and another process holds
relay.db's write lock, every other time for 1 to 5 s, else for 10.5 to 13 s (the
relay's busy timeout is 5 s, and it serves one call at a time), with a client restarted
meanwhile so that it upgrades its socket while the lock is held. A sampler reads
every client file read-only about once a second.

Then the faults stop (relay restarted without them, proxy faults and lock holder off),
the outboxes empty, every user reads every conversation until nothing changes, the
clients stop with SIGTERM, and the checks run, all pure functions over what was
collected (`check_final`, `check_history`, `check_processes`):
  lost, duplicated, misplaced (in a third user's file), id_mismatch (sender's and
  recipient's ids differ), misattributed (from/to not the queuing user and its
  recipient, or content nobody sent), reordered (recipient's id order is not the
  sender's queue order), status_backwards and vanished (in the samples),
  premature_delivered / premature_read (a sender sample shows DELIVERED/READ while the
  recipient's next sample does not have the message / has not read it),
  not_read_at_end, outbox_left, relay_left (RelayMessages rows), check_failed (`chatdb
  check --full`, `PRAGMA integrity_check`), client_exit / relay_exit (a `run` or the
  relay that exited without being told to, or a non-zero exit on SIGTERM).
Prints one summary line and the counts per kind; each anomaly (the first few of each
kind) on stderr. Exits 1 on any anomaly. `--self-test` plants every kind in synthetic
data and exits 0 only when the same checks catch each one.
"""
import argparse, os, random, shutil, signal, socket, sqlite3, subprocess, sys, threading, time

RANK = {"SYNCED": 0, "DELIVERED": 1, "READ": 2}
NAME = {-1: "absent", 0: "SYNCED", 1: "DELIVERED", 2: "READ"}
KINDS = ["lost", "duplicated", "misplaced", "id_mismatch", "misattributed", "reordered", "status_backwards", "vanished",
         "premature_delivered", "premature_read", "not_read_at_end", "outbox_left", "relay_left", "check_failed",
         "client_exit", "relay_exit"]
MESSAGES_SQL = "SELECT id, from_user_id, to_user_id, content, status FROM Messages ORDER BY id"
OUTBOX_SQL = "SELECT request_id, to_user_id, content, status FROM MessageRequests ORDER BY request_id"
RELAY_BUSY_TIMEOUT = 5.0  # Database.defaultBusyTimeout, used by RelayStore


def new_anomalies():
    return {k: [] for k in KINDS}


# --- The history of samples (compact: per file, per message, the status changes) -----


class History:
    """Rounds of samples. rounds[r] = (start, end) times; files[uid] = {"sampled": [r…],
    "changes": {id: [(r, rank)…]} (rank -1: absent), "meta": {id: (from, to, content)},
    "state": {id: rank} (the last sample)}."""

    def __init__(self, users):
        self.rounds = []
        self.files = {u: {"sampled": [], "changes": {}, "meta": {}, "state": {}} for u in users}

    def begin(self):
        self.rounds.append([time.monotonic(), None])
        return len(self.rounds) - 1

    def end(self, r):
        self.rounds[r][1] = time.monotonic()

    def record(self, r, uid, snapshot):
        """snapshot: {id: (from, to, content, status)} of one file at round r, or None (unreadable)."""
        if snapshot is None:
            return
        f = self.files[uid]
        f["sampled"].append(r)
        state, changes = f["state"], f["changes"]
        for mid, (frm, to, content, status) in snapshot.items():
            rank = RANK.get(status, 99)
            f["meta"].setdefault(mid, (frm, to, content))
            if state.get(mid, -1) != rank:
                changes.setdefault(mid, []).append((r, rank))
                state[mid] = rank
        for mid in [m for m in state if m not in snapshot and state[m] != -1]:
            changes[mid].append((r, -1))
            state[mid] = -1


def rank_at(changes, r):
    """A message's rank in a file at round r (-1 when absent), from its change list."""
    rank = -1
    for cr, crank in changes or ():
        if cr > r:
            break
        rank = crank
    return rank


def next_sampled(sampled, r):
    for s in sampled:  # sorted; short enough to scan
        if s > r:
            return s
    return None


def check_history(h, anomalies):
    """status_backwards, vanished, premature_delivered, premature_read over the samples."""
    for uid, f in h.files.items():
        for mid, changes in f["changes"].items():
            last = None
            for r, rank in changes:
                if rank == -1:
                    anomalies["vanished"].append(f"user {uid}'s file: message {mid} {f['meta'][mid]} gone in round {r}")
                    break
                if last is not None and rank < last:
                    anomalies["status_backwards"].append(
                        f"user {uid}'s file: message {mid} went {NAME[last]} -> {NAME[rank]} in round {r}")
                    break
                last = rank
    by_content = {uid: {meta[2]: mid for mid, meta in f["meta"].items()} for uid, f in h.files.items()}
    for s, f in h.files.items():
        for mid, changes in f["changes"].items():
            frm, to, content = f["meta"][mid]
            if frm != s or to not in h.files:
                continue
            rf = h.files[to]
            rid = mid if mid in rf["meta"] else by_content[to].get(content, mid)
            first_delivered = next(((r, k) for r, k in changes if k >= 1), None)
            first_read = next((r for r, k in changes if k == 2), None)
            if first_delivered and first_delivered[1] == 1:
                r = first_delivered[0]
                later = next_sampled(rf["sampled"], r)
                if later is not None and rank_at(rf["changes"].get(rid), later) < 0:
                    anomalies["premature_delivered"].append(
                        f"message {mid} ({content}, {frm}->{to}): DELIVERED at the sender in round {r}, "
                        f"not in the recipient's file in round {later}")
            if first_read is not None:
                later = next_sampled(rf["sampled"], first_read)
                if later is not None:
                    have = rank_at(rf["changes"].get(rid), later)
                    if have != 2:
                        anomalies["premature_read"].append(
                            f"message {mid} ({content}, {frm}->{to}): READ at the sender in round {first_read}, "
                            f"{NAME.get(have, have)} in the recipient's file in round {later}")


# --- The end state ------------------------------------------------------------------


def check_final(sent, maybe, final, relay_left, failed_checks, anomalies):
    """sent: [(content, from, to)] in queue order per sender; maybe: contents whose send
    failed (they may or may not exist); final: {uid: {"messages": [(id, from, to, content,
    status)], "outbox": [(request_id, to, content, status)]}}; relay_left: RelayMessages
    rows; failed_checks: ["what failed"]."""
    index = {u: {} for u in final}
    for u, f in final.items():
        for row in f["messages"]:
            index[u].setdefault(row[3], []).append(row)
    expected = {c: (s, r) for c, s, r in sent}
    order = {}
    for c, s, r in sent:
        copies = {u: index.get(u, {}).get(c, []) for u in (s, r)}
        for u, rows in copies.items():
            who = "sender" if u == s else "recipient"
            if not rows:
                anomalies["lost"].append(f"{c} ({s}->{r}): not in the {who}'s file (user {u})")
            elif len(rows) > 1:
                anomalies["duplicated"].append(f"{c} ({s}->{r}): {len(rows)} times in the {who}'s file (user {u}), ids {[x[0] for x in rows]}")
        if len(copies[s]) == 1 and len(copies[r]) == 1 and copies[s][0][0] != copies[r][0][0]:
            anomalies["id_mismatch"].append(f"{c} ({s}->{r}): id {copies[s][0][0]} at the sender, {copies[r][0][0]} at the recipient")
        for u in final:
            if u not in (s, r) and c in index[u]:
                anomalies["misplaced"].append(f"{c} ({s}->{r}): also in user {u}'s file, ids {[x[0] for x in index[u][c]]}")
        for u in (s, r):
            for row in copies[u]:
                if (row[1], row[2]) != (s, r):
                    anomalies["misattributed"].append(
                        f"{c}: queued by user {s} to {r}, stored in user {u}'s file as message {row[0]} from {row[1]} to {row[2]}")
        if len(copies[r]) == 1:
            order.setdefault((s, r), []).append((c, copies[r][0][0]))
    for u, f in final.items():
        for row in f["messages"]:
            if row[3] not in expected and row[3] not in maybe:
                anomalies["misattributed"].append(f"user {u}'s file: message {row[0]} from {row[1]} to {row[2]} ({row[3]!r}) was never sent")
            elif row[4] != "READ" and row[3] in expected:
                anomalies["not_read_at_end"].append(f"user {u}'s file: message {row[0]} ({row[3]}, {row[1]}->{row[2]}) is {row[4]}")
        for row in f["outbox"]:
            anomalies["outbox_left"].append(f"user {u}'s outbox: request {row[0]} to {row[1]} ({row[2]}) is {row[3]}")
    for (s, r), seq in order.items():
        for (c1, i1), (c2, i2) in zip(seq, seq[1:]):
            if i2 <= i1:
                anomalies["reordered"].append(f"{s}->{r}: {c1} queued before {c2}, but ids {i1} >= {i2} in the recipient's file")
    for row in relay_left:
        anomalies["relay_left"].append(f"relay.db: RelayMessages row {row}")
    for text in failed_checks:
        anomalies["check_failed"].append(text)


def check_processes(events, anomalies):
    """events: [(kind, text)] recorded while running: a process that ended untold."""
    for kind, text in events:
        anomalies[kind].append(text)


def report(anomalies, limit=5):
    for k in KINDS:
        for text in anomalies[k][:limit]:
            print(f"   {k}: {text}", file=sys.stderr)
        if len(anomalies[k]) > limit:
            print(f"   {k}: … and {len(anomalies[k]) - limit} more", file=sys.stderr)
    return " ".join(f"{k}={len(anomalies[k])}" for k in KINDS)


# --- Self-test: every kind planted, every kind caught ----------------------------------


def self_test():
    users = [1, 2, 3]
    sent = [("a", 1, 2), ("b", 1, 2), ("c", 2, 1), ("d", 3, 1), ("e", 1, 2)]
    ids = {"a": 101, "b": 102, "c": 103, "d": 104, "e": 105}

    def good_final():
        msgs = {u: [] for u in users}
        for c, s, r in sent:
            for u in (s, r):
                msgs[u].append((ids[c], s, r, c, "READ"))
        return {u: {"messages": sorted(msgs[u]), "outbox": []} for u in users}

    def snapshots_of(final_state):
        return {u: {row[0]: row[1:] for row in f["messages"]} for u, f in final_state.items()}

    def good_rounds():
        """Five rounds: queued; stored at the sender SYNCED; at the recipient; DELIVERED; READ."""
        rounds = []
        for stage in range(5):
            snap = {u: {} for u in users}
            for c, s, r in sent:
                if stage >= 1:
                    snap[s][ids[c]] = (s, r, c, ["SYNCED", "SYNCED", "SYNCED", "DELIVERED", "READ"][stage])
                if stage >= 2:
                    snap[r][ids[c]] = (s, r, c, ["SYNCED", "SYNCED", "DELIVERED", "DELIVERED", "READ"][stage])
            rounds.append(snap)
        return rounds

    def run(final=None, rounds=None, relay_left=(), failed=(), events=(), maybe=()):
        final = final or good_final()
        rounds = rounds or good_rounds()
        h = History(users)
        for snap in rounds + [snapshots_of(final)]:
            r = h.begin()
            for u in users:
                h.record(r, u, snap.get(u))
            h.end(r)
        a = new_anomalies()
        check_final(sent, set(maybe), final, list(relay_left), list(failed), a)
        check_history(h, a)
        check_processes(list(events), a)
        return a

    def plant(fn):
        f = good_final()
        fn(f)
        return f

    def rounds_with(fn):
        rs = good_rounds()
        fn(rs)
        return rs

    def drop(f, u, c):
        f[u]["messages"] = [m for m in f[u]["messages"] if m[3] != c]

    def swap_ids(f, u, c1, c2):
        m = {row[3]: row for row in f[u]["messages"]}
        a, b = m[c1], m[c2]
        f[u]["messages"] = sorted([row for row in f[u]["messages"] if row[3] not in (c1, c2)]
                                  + [(b[0],) + a[1:], (a[0],) + b[1:]])

    def set_status(snap, u, mid, status):
        snap[u][mid] = snap[u][mid][:3] + (status,)

    cases = {
        "lost": run(final=plant(lambda f: drop(f, 2, "a"))),
        "duplicated": run(final=plant(lambda f: f[2]["messages"].append((999, 1, 2, "a", "READ")))),
        "misplaced": run(final=plant(lambda f: f[3]["messages"].append((101, 1, 2, "a", "READ")))),
        "id_mismatch": run(final=plant(lambda f: (drop(f, 2, "e"), f[2]["messages"].append((998, 1, 2, "e", "READ"))))),
        "misattributed": run(final=plant(lambda f: (drop(f, 1, "d"), drop(f, 3, "d"),
                                                     f[1]["messages"].append((104, 2, 1, "d", "READ")),
                                                     f[3]["messages"].append((104, 2, 1, "d", "READ"))))),
        "reordered": run(final=plant(lambda f: (swap_ids(f, 2, "a", "b"), swap_ids(f, 1, "a", "b")))),
        "status_backwards": run(rounds=rounds_with(lambda rs: set_status(rs[4], 2, 101, "SYNCED"))),
        "vanished": run(rounds=rounds_with(lambda rs: rs[3][2].pop(102))),
        "premature_delivered": run(rounds=rounds_with(lambda rs: (set_status(rs[1], 1, 105, "DELIVERED"),
                                                                 set_status(rs[2], 1, 105, "DELIVERED"), rs[2][2].pop(105)))),
        "premature_read": run(rounds=rounds_with(lambda rs: (set_status(rs[2], 1, 101, "READ"), set_status(rs[3], 1, 101, "READ")))),
        "not_read_at_end": run(final=plant(lambda f: f[1]["messages"].__setitem__(0, f[1]["messages"][0][:4] + ("DELIVERED",)))),
        "outbox_left": run(final=plant(lambda f: f[1]["outbox"].append((7, 2, "f", "FAILED")))),
        "relay_left": run(relay_left=[(105, 1, 2)]),
        "check_failed": run(failed=["chatdb check --full of user 2's file exited 4"]),
        "client_exit": run(events=[("client_exit", "chat-sync run for user 2 exited 77")]),
        "relay_exit": run(events=[("relay_exit", "chat-relay serve exited 70")]),
    }
    baseline = run()
    ok = True
    if any(baseline.values()):
        ok = False
        print(f"   self-test: the clean history reports {report(baseline)}", file=sys.stderr)
    for kind in KINDS:
        got = cases[kind]
        caught = len(got[kind]) > 0
        also = [k for k in KINDS if k != kind and got[k]]
        print(f"   self-test: {kind:20s} {'caught' if caught else 'MISSED'}: {got[kind][0] if caught else ''}"
              + (f" (also: {', '.join(also)})" if also else ""))
        ok &= caught
    # A message missing from the recipient while the sender shows it READ (bug 1's shape).
    both = run(final=plant(lambda f: drop(f, 2, "e")), rounds=rounds_with(lambda rs: [snap[2].pop(105, None) for snap in rs]))
    shape = bool(both["lost"]) and bool(both["premature_read"])
    print(f"   self-test: lost while READ at the sender: {'caught' if shape else 'MISSED'} (lost={len(both['lost'])}, premature_read={len(both['premature_read'])})")
    print(f"== History self-test: {'every planted anomaly caught' if ok and shape else 'FAILED'}")
    return 0 if ok and shape else 1


# --- The loopback proxy ---------------------------------------------------------------


class Proxy:
    """Between the clients and the relay: parses requests (keep-alive, Content-Length,
    never pipelined), answers some `GET /v2/messages` and socket upgrades itself with a 503
    (Connection: close) or drops them; after an upgrade, pipes bytes both ways."""

    BODY_503 = b'{"error":{"code":"unavailable","message":"proxy fault"}}'

    def __init__(self, upstream_port, seed, sync_503, sync_drop, ws_503, ws_drop):
        self.upstream_port = upstream_port
        self.rng, self.rng_lock = random.Random(seed), threading.Lock()
        self.p = {"sync": (sync_503, sync_drop), "ws": (ws_503, ws_drop)}
        self.faults_on = True
        self.counts = {"sync 503": 0, "sync drop": 0, "upgrade 503": 0, "upgrade drop": 0}
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        self.socks, self.socks_lock = set(), threading.Lock()
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def close(self):
        self.closed = True
        try:
            self.listener.close()
        except OSError:
            pass
        with self.socks_lock:
            for s in list(self.socks):
                self.kill(s)

    def kill(self, s):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass
        with self.socks_lock:
            self.socks.discard(s)

    def accept_loop(self):
        while not self.closed:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def decide(self, which):
        if not self.faults_on:
            return None
        p503, pdrop = self.p[which]
        with self.rng_lock:
            x = self.rng.random()
        return "503" if x < p503 else "drop" if x < p503 + pdrop else None

    def pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        self.kill(src)
        self.kill(dst)

    def handle(self, c):
        try:
            u = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
            u.settimeout(None)
        except OSError:
            c.close()
            return
        with self.socks_lock:
            self.socks.update((c, u))
        threading.Thread(target=self.pump, args=(u, c), daemon=True).start()
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = c.recv(65536)
                    if not data:
                        raise EOFError
                    buf += data
                    if len(buf) > 65536:  # not a request head this proxy understands: pipe it
                        u.sendall(buf)
                        return self.pump(c, u)
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target = (lines[0].split(" ") + ["", ""])[:2]
                headers = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                path = target.split("?")[0]
                upgrade = "websocket" in headers.get("upgrade", "").lower()
                which = "ws" if upgrade and path == "/v2/socket/updates" else "sync" if method == "GET" and path == "/v2/messages" else None
                fault = self.decide(which) if which else None
                if fault:
                    label = ("upgrade " if which == "ws" else "sync ") + fault
                    self.counts[label] += 1
                    if fault == "503":
                        c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: "
                                  + str(len(self.BODY_503)).encode() + b"\r\nConnection: close\r\n\r\n" + self.BODY_503)
                    raise EOFError
                u.sendall(head + b"\r\n\r\n")
                if "transfer-encoding" in headers or upgrade:
                    u.sendall(buf)
                    return self.pump(c, u)
                need = int(headers.get("content-length", "0") or 0)
                while need > 0:
                    if not buf:
                        buf = c.recv(65536)
                        if not buf:
                            raise EOFError
                    part, buf = buf[:need], buf[need:]
                    u.sendall(part)
                    need -= len(part)
        except (EOFError, OSError, ValueError):
            pass
        self.kill(c)
        self.kill(u)


# --- The run --------------------------------------------------------------------------


class Proc:
    """A background process with its log: start, kill (SIGKILL or SIGTERM), exit status."""

    def __init__(self, label, argv, env, work):
        self.label, self.argv, self.env, self.work = label, argv, env, work
        self.proc, self.starts, self.expected_down, self.log = None, 0, True, None

    def start(self):
        self.starts += 1
        self.log = os.path.join(self.work, f"{self.label}-{self.starts}.log")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                         env={**os.environ, **self.env}, start_new_session=True)
        self.expected_down = False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Stops it (expected); returns the exit status."""
        self.expected_down = True
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return f"{self.proc.returncode} (no exit within {timeout} s of {signal.Signals(sig).name}; killed)"

    def tail(self, n=2):
        """Its last lines, or the last line saying why it stopped."""
        try:
            lines = [l.strip() for l in open(self.log, errors="replace").read().splitlines()]
        except OSError:
            return ""
        why = [l for l in lines if "Error:" in l or "stopped:" in l]
        return why[-1] if why else " | ".join(lines[-n:])


def read_file(db):
    """(snapshot {id: (from, to, content, status)}, outbox rows) of a client file, read-only; None when unreadable."""
    if not os.path.exists(db):
        return {}, []
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            con.execute("BEGIN")
            msgs = con.execute(MESSAGES_SQL).fetchall()
            outbox = con.execute(OUTBOX_SQL).fetchall()
            con.execute("COMMIT")
        finally:
            con.close()
    except sqlite3.Error:
        return None, None
    return {m[0]: m[1:] for m in msgs}, outbox


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin")
    p.add_argument("--work")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--long", action="store_true")
    p.add_argument("--users", type=int)
    p.add_argument("--messages", type=int)
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    if not a.bin or not a.work:
        p.error("--bin and --work are needed (or --self-test)")
    users = list(range(1, (a.users or (10 if a.long else 4)) + 1))
    per_user = a.messages or (200 if a.long else 20)
    min_relay_kills, min_client_kills = (20, 30) if a.long else (3, 4)
    rng = random.Random(a.seed)
    BIN = {n: os.path.join(os.path.abspath(a.bin), n) for n in ("chatdb", "chat-sync", "chat-relay")}
    for n, f in BIN.items():
        if not os.access(f, os.X_OK):
            sys.exit(f"Error: no {n} in {a.bin}")
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    started = time.monotonic()
    relay_db = os.path.join(work, "relay.db")
    events = []  # (kind, text): processes that ended untold
    procs = []
    transient, transient_lock = set(), threading.Lock()  # chat-sync send/read running now
    stop_all = threading.Event()
    threads = []
    proxy = None
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    def log(text):
        print(f"   [{time.monotonic() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    try:
        # --- relay, users, tokens
        tokens = {}
        for u in users:
            r = subprocess.run([BIN["chat-relay"], "user", "add", "--db", relay_db, "--id", str(u), "--name", f"User{u}"],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                sys.exit(f"chat-relay user add: {r.stderr}")
            tokens[u] = os.path.join(work, f"token-{u}")
            fd = os.open(tokens[u], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, r.stdout.strip().splitlines()[-1].encode() + b"\n")
            os.close(fd)
        faults = (f"drop-response={rng.uniform(0.05, 0.15):.2f},error-503={rng.uniform(0.05, 0.15):.2f},"
                  f"throttle-429={rng.uniform(0.02, 0.08):.2f},duplicate-event={rng.uniform(0.05, 0.2):.2f},"
                  f"close-socket={rng.choice([0.02, 0.05, 0.1, 0.2, 0.3])},delay-event={rng.choice([0, 5, 20])}ms")
        relay = Proc("relay", [], {}, work)
        procs.append(relay)
        port = [0]
        relay_kills = {"SIGKILL": 0, "SIGTERM": 0}

        def start_relay(with_faults):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                relay.argv = [BIN["chat-relay"], "serve", "--db", relay_db, "--port", str(port[0]), "--ping-seconds", "5"]
                if with_faults:
                    relay.argv += ["--faults", faults, "--faults-seed", str(a.seed + relay.starts)]
                relay.start()
                t = time.monotonic()
                while time.monotonic() - t < 15:
                    text = open(relay.log, errors="replace").read()
                    if "listening on http://127.0.0.1:" in text:
                        port[0] = int(text.split("listening on http://127.0.0.1:")[1].split()[0].split("(")[0])
                        return
                    if not relay.alive():
                        break
                    time.sleep(0.02)
                relay.stop(signal.SIGKILL)
                time.sleep(0.3)
            raise RuntimeError(f"chat-relay did not start within 60 s: {relay.tail(3)}")

        start_relay(True)
        proxy = Proxy(port[0], a.seed * 7919 + 1, sync_503=0.2, sync_drop=0.15, ws_503=0.07, ws_drop=0.05)
        server = f"http://127.0.0.1:{proxy.port}"
        clients, dirs = {}, {}
        for u in users:
            dirs[u] = os.path.join(work, f"user{u}")
            os.makedirs(dirs[u], mode=0o700)
            clients[u] = Proc(f"sync{u}", [BIN["chat-sync"], "run", "--data-dir", dirs[u], "--user", str(u),
                                           "--server", server, "--token-file", tokens[u]], {}, work)
            procs.append(clients[u])
            clients[u].start()
        dbs = {u: os.path.join(dirs[u], f"chats-{u}.db") for u in users}

        def client_cmd(u, args, timeout=60):
            """`chat-sync send/read` as user u; killed on timeout and when this script ends."""
            if stop_all.is_set() and args[0] != "read":
                raise SystemExit
            pr = subprocess.Popen([BIN["chat-sync"]] + args[:1] + ["--data-dir", dirs[u], "--user", str(u)] + args[1:],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
            with transient_lock:
                transient.add(pr)
            try:
                out, err = pr.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                pr.kill()
                out, err = pr.communicate()
            finally:
                with transient_lock:
                    transient.discard(pr)
            return subprocess.CompletedProcess(pr.args, pr.returncode, out, err)

        # --- sampler
        history = History(users)
        latest = {}
        sample_lock = threading.Lock()

        def sample_round():
            with sample_lock:
                r = history.begin()
                for u in users:
                    snap, outbox = read_file(dbs[u])
                    history.record(r, u, snap)
                    if snap is not None:
                        latest[u] = (snap, outbox)
                history.end(r)

        def sampler():
            while not stop_all.is_set():
                sample_round()
                stop_all.wait(1.0)

        # --- lock holder
        lock_stop = threading.Event()
        kick = threading.Event()
        holds = []

        def lock_holder():
            lrng = random.Random(a.seed * 31 + 7)
            while not lock_stop.wait(lrng.uniform(4, 12)):
                # Half the holds outlast the relay's busy timeout twice over (the relay serves
                # one call at a time: a call queued behind one that waited its 5 s still meets
                # the lock); during those a client is killed and restarted, so that it
                # upgrades while the lock is held.
                long_hold = len(holds) % 2 == 0
                hold = lrng.uniform(2 * RELAY_BUSY_TIMEOUT + 0.5, 2 * RELAY_BUSY_TIMEOUT + 3) if long_hold else lrng.uniform(1, RELAY_BUSY_TIMEOUT)
                try:
                    con = sqlite3.connect(relay_db, timeout=2, isolation_level=None)
                    try:
                        con.execute("BEGIN IMMEDIATE")
                        t = time.monotonic()
                        if long_hold:
                            time.sleep(0.3)
                            kick.set()
                        time.sleep(hold)
                        con.execute("COMMIT")
                        holds.append(time.monotonic() - t)
                    finally:
                        con.close()
                except sqlite3.Error:
                    pass

        # --- senders and readers
        client_kills = {"SIGKILL": 0, "SIGTERM": 0}
        downs = {}  # uid -> time to restart its run
        sent_lock = threading.Lock()
        sent, maybe = [], set()
        sends_left = [len(users)]
        send_failures = []
        reads_off = threading.Event()

        def sender(u):
            srng = random.Random(a.seed * 1000 + u)
            try:
                for k in range(per_user):
                    if stop_all.is_set():
                        return
                    time.sleep(srng.uniform(0.2, 2.0) if a.long else srng.uniform(1.0, 5.0))
                    to = srng.choice([v for v in users if v != u])
                    away = [v for v in list(downs) if v != u]
                    if away and srng.random() < 0.6:  # a message for someone whose run is down
                        to = srng.choice(away)
                    content = f"h{a.seed}-u{u}-n{k}"
                    for attempt in range(40):
                        r = client_cmd(u, ["send", "--server", server, "--token-file", tokens[u], "--to", str(to), content])
                        if r.returncode != 75:
                            break
                        time.sleep(0.25)
                    with sent_lock:
                        if r.returncode == 0:
                            sent.append((content, u, to))
                        else:
                            maybe.add(content)
                            send_failures.append(f"user {u}: chat-sync send {content} exited {r.returncode}: {r.stderr.strip()[:200]}")
            finally:
                with sent_lock:
                    sends_left[0] -= 1

        def reader(u):
            rrng = random.Random(a.seed * 1000 + 500 + u)
            while not stop_all.wait(rrng.uniform(0.5, 3.0)) and not reads_off.is_set():
                client_cmd(u, ["read", "--with", str(rrng.choice([v for v in users if v != u]))])

        def reap():
            """A process that ended untold is an anomaly; it is started again."""
            if not relay.expected_down and not relay.alive():
                events.append(("relay_exit", f"chat-relay serve exited {relay.proc.returncode} untold "
                                             f"({relay.log}: {relay.tail()})"))
                log(f"relay exited {relay.proc.returncode} untold; restarting")
                start_relay(proxy.faults_on)
            for u, c in clients.items():
                if not c.expected_down and not c.alive():
                    events.append(("client_exit", f"chat-sync run for user {u} exited {c.proc.returncode} untold "
                                                  f"({c.log}: {c.tail()})"))
                    log(f"chat-sync run for user {u} exited {c.proc.returncode} untold; restarting")
                    c.start()

        for target in [sampler, lock_holder] + [lambda u=u: sender(u) for u in users] + [lambda u=u: reader(u) for u in users]:
            t = threading.Thread(target=target, daemon=True)
            t.start()
            threads.append(t)

        # --- chaos (this thread): kills and restarts
        crng = random.Random(a.seed * 17 + 3)
        relay_share = crng.uniform(0.2, 0.35) if a.long else crng.uniform(0.1, 0.35)  # of the kills, the relay's (fewer: sockets live longer)

        def wait(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                reap()
                if kick.is_set():
                    kick.clear()
                    up = [v for v in users if v not in downs]
                    if up and not lock_stop.is_set():
                        time.sleep(crng.uniform(0, 0.5))
                        u = crng.choice(up)
                        clients[u].stop(signal.SIGKILL)
                        client_kills["SIGKILL"] += 1
                        clients[u].start()
                for u, t in list(downs.items()):
                    if time.monotonic() >= t:
                        del downs[u]
                        clients[u].start()
                time.sleep(0.05)

        chaos_deadline = time.monotonic() + (3600 if a.long else 600)
        while time.monotonic() < chaos_deadline:
            with sent_lock:
                senders_done = sends_left[0] == 0
            if senders_done and sum(relay_kills.values()) >= min_relay_kills and sum(client_kills.values()) >= min_client_kills:
                break
            wait(crng.uniform(1.0, 4.0) if a.long else crng.uniform(1.0, 3.0))
            sig = crng.choice([signal.SIGKILL, signal.SIGTERM])
            if crng.random() < relay_share or len(downs) >= len(users) - 1:
                relay.stop(sig)
                relay_kills[sig.name] += 1
                wait(crng.uniform(0, 1.0))
                start_relay(True)
            else:
                u = crng.choice([v for v in users if v not in downs])
                status = clients[u].stop(sig)
                client_kills[sig.name] += 1
                if sig == signal.SIGTERM and status != 0:
                    events.append(("client_exit", f"chat-sync run for user {u} exited {status} on SIGTERM ({clients[u].log}: {clients[u].tail()})"))
                downs[u] = time.monotonic() + crng.uniform(0, 5.0)
        chaos_end = time.monotonic()
        log(f"chaos over: {len(sent)} messages queued, {sum(relay_kills.values())} relay kills, {sum(client_kills.values())} client kills")

        # --- quiet: no faults, every client running
        lock_stop.set()
        reads_off.set()
        for t in threads[1:2]:
            t.join(timeout=15)
        proxy.faults_on = False
        relay.stop(signal.SIGTERM)
        start_relay(False)
        for u in list(downs):
            del downs[u]
            clients[u].start()
        wait(0.5)

        def all_outboxes_empty():
            return all(u in latest and not latest[u][1] for u in users)

        deadline = time.monotonic() + (600 if a.long else 150)
        while time.monotonic() < deadline and not all_outboxes_empty():
            wait(1.0)
        if not all_outboxes_empty():
            log("outboxes not empty after the wait")

        def relay_rows():
            try:
                con = sqlite3.connect(f"file:{relay_db}?mode=ro", uri=True, timeout=10)
                try:
                    return con.execute("SELECT id, from_user_id, to_user_id FROM RelayMessages WHERE delivered_at IS NULL ORDER BY id").fetchall()
                finally:
                    con.close()
            except sqlite3.Error as e:
                return [("unreadable", str(e))]

        def state_key():
            return tuple((u, tuple(sorted((m, v[3]) for m, v in latest[u][0].items())), len(latest[u][1])) for u in users)

        def settled():
            expected = {c for c, _, _ in sent}
            for u in users:
                mine = [v for v in latest[u][0].values() if v[2] in expected]
                if latest[u][1] or any(v[3] != "READ" for v in mine):
                    return False
            return not relay_rows()

        deadline = time.monotonic() + (300 if a.long else 120)
        last_key, last_change = None, time.monotonic()
        while time.monotonic() < deadline:
            for u in users:
                for v in users:
                    if v != u:
                        client_cmd(u, ["read", "--with", str(v)])
            wait(1.5)
            sample_round()
            if settled():
                break
            key = state_key()
            if key != last_key:
                last_key, last_change = key, time.monotonic()
            elif time.monotonic() - last_change > 50:
                # Longer than a client's longest reconnect backoff (30 s + 50% jitter).
                break
        log("settled" if settled() else "steady, but not everything is read/delivered")

        # --- stop and collect
        stop_all.set()
        threads[0].join(timeout=10)
        for u, c in clients.items():
            status = c.stop(signal.SIGTERM)
            if status != 0:
                events.append(("client_exit", f"chat-sync run for user {u} exited {status} on the final SIGTERM ({c.log}: {c.tail()})"))
        reap_status = relay.stop(signal.SIGTERM)
        if reap_status != 0:
            events.append(("relay_exit", f"chat-relay serve exited {reap_status} on the final SIGTERM ({relay.log}: {relay.tail()})"))
        sample_round()
        final, failed = {}, []
        for u in users:
            snap, outbox = read_file(dbs[u])
            if snap is None:
                failed.append(f"user {u}'s file is unreadable")
                snap, outbox = {}, []
            final[u] = {"messages": [(m,) + v for m, v in sorted(snap.items())], "outbox": outbox}
            r = subprocess.run([BIN["chatdb"], "check", "--full", "--db", dbs[u]], capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                failed.append(f"chatdb check --full of user {u}'s file exited {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")
        for f in [dbs[u] for u in users] + [relay_db]:
            try:
                con = sqlite3.connect(f"file:{f}?mode=ro", uri=True, timeout=10)
                res = con.execute("PRAGMA integrity_check").fetchall()
                con.close()
            except sqlite3.Error as e:
                res = [(str(e),)]
            if res != [("ok",)]:
                failed.append(f"PRAGMA integrity_check of {f}: {res[:3]}")
        left = relay_rows()

        anomalies = new_anomalies()
        check_final(sent, maybe, final, left, failed, anomalies)
        check_history(history, anomalies)
        check_processes(events, anomalies)
        for text in send_failures[:5]:
            print(f"   note: {text}", file=sys.stderr)
        counts = report(anomalies)
        over = sum(1 for x in holds if x > RELAY_BUSY_TIMEOUT)
        print(f"== History: seed {a.seed}, {len(users)} users x {per_user} messages ({len(sent)} queued), "
              f"{sum(relay_kills.values())} relay kills ({relay_kills['SIGKILL']} SIGKILL), "
              f"{sum(client_kills.values())} client kills ({client_kills['SIGKILL']} SIGKILL), "
              f"{len(holds)} lock holds ({over} over {RELAY_BUSY_TIMEOUT:.0f} s), proxy faults "
              f"{sum(proxy.counts.values())}, relay faults {faults}, {len(history.rounds)} samples, "
              f"{time.monotonic() - started:.0f} s (chaos {chaos_end - started:.0f} s)")
        print(f"   {counts}")
        if any(anomalies.values()):
            print(f"   history: anomalies found; files and logs in {work}")
            return 1
        return 0
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("   history: interrupted; stopping everything it started", file=sys.stderr)
        return 130
    finally:
        stop_all.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for pr in procs:
            if pr.alive():
                try:
                    os.killpg(pr.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                pr.proc.wait()
        with transient_lock:
            for pr in list(transient):
                try:
                    pr.kill()
                except OSError:
                    pass
        if proxy:
            proxy.close()


if __name__ == "__main__":
    sys.exit(main())
