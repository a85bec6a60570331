#!/usr/bin/env python3
"""Crash safety of the two servers (issue 14): `chat-relay serve` and two `chat-sync run`
clients killed with SIGKILL at random moments while traffic flows, then restarted.

  crash_sync.py --bin DIR --work DIR --kills N --seed S

The traffic, all the time: user 1 queues messages to user 2 with `chat-sync send` (its
`chat-sync run` sends them through the relay), and a plain HTTP sender (user 3, Python's
urllib) posts messages to user 2, retrying each with the same requestId until the relay
answers 201. User 2's `chat-sync run` receives both streams into its file.

Each kill picks one of the three processes, sends SIGKILL at a random moment, checks,
and restarts it:
  - a client's file: `chatdb check --full` is clean, and every outbox request seen just
    before the kill is still in the outbox byte for byte (recipient, content) or was
    acknowledged (it is a message carrying its request id, with the same content);
  - the relay's file: `PRAGMA integrity_check` is ok, `chat-relay user list` opens it,
    and every message the relay had answered 201 for before the kill is still there
    (its idempotency record, with the same id and content): nothing acknowledged lost.
At the end, with every process running again: user 1's outbox empties, the relay holds
nothing undelivered for user 2, and user 2's file has every message user 1 queued and
every message the relay answered 201 for, once each; then both files pass
`chatdb check --full` after a clean stop.
Prints one line with the kill counts per process; exits 1 on any failure.
"""
import argparse, hashlib, json, os, random, shutil, signal, sqlite3, subprocess, sys, threading, time, urllib.error, urllib.request

p = argparse.ArgumentParser()
p.add_argument("--bin", required=True)
p.add_argument("--work", required=True)
p.add_argument("--kills", type=int, required=True)
p.add_argument("--seed", type=int, required=True)
a = p.parse_args()
rng = random.Random(a.seed)
BIN = {name: os.path.join(a.bin, name) for name in ("chatdb", "chat-sync", "chat-relay")}
shutil.rmtree(a.work, ignore_errors=True)
os.makedirs(a.work)
failures = []
started_all = time.monotonic()


def fail(text):
    failures.append(text)
    print(f"   FAIL: {text}", file=sys.stderr)


def path(*parts):
    return os.path.join(a.work, *parts)


def run(name, args, env=None, timeout=60):
    return subprocess.run([BIN[name]] + args, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def query(f, sql, args=()):
    con = sqlite3.connect(f"file:{f}?mode=ro", uri=True, timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


# --- The relay and its users -------------------------------------------------------
relay_db = path("relay.db")
tokens = {}
for uid, name in ((1, "Ada"), (2, "Bob"), (3, "Cy")):
    r = run("chat-relay", ["user", "add", "--db", relay_db, "--id", str(uid), "--name", name])
    if r.returncode != 0:
        sys.exit(f"chat-relay user add: {r.stderr}")
    tokens[uid] = r.stdout.strip().splitlines()[-1]


class Server:
    """One background process with its log; `kill9` and `start` again."""

    def __init__(self, label, argv, env=None):
        self.label, self.argv, self.env, self.proc, self.starts = label, argv, env or {}, None, 0

    def start(self):
        self.starts += 1
        log = open(path(f"{self.label}-{self.starts}.log"), "w")
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                     env={**os.environ, **self.env})
        self.log = log.name

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        return self.proc.returncode if self.proc else None


port = 0
relay = Server("relay", [])


def start_relay():
    """Starts the relay (on the port it had, retrying while the old socket lingers)."""
    global port
    deadline = time.monotonic() + 30
    while True:
        relay.argv = [BIN["chat-relay"], "serve", "--db", relay_db, "--port", str(port), "--ping-seconds", "5"]
        relay.start()
        while time.monotonic() < deadline:
            text = open(relay.log).read()
            if "listening on http://127.0.0.1:" in text:
                port = int(text.split("listening on http://127.0.0.1:")[1].split()[0].split("(")[0])
                return
            if relay.proc.poll() is not None:
                break
            time.sleep(0.02)
        if time.monotonic() >= deadline:
            sys.exit(f"chat-relay did not start: {open(relay.log).read()[-500:]}")
        time.sleep(0.2)


start_relay()
url = f"http://127.0.0.1:{port}"
clients = {}
for uid in (1, 2):
    folder = path(f"user{uid}")
    os.makedirs(folder)
    clients[uid] = Server(f"sync{uid}", [BIN["chat-sync"], "run", "--data-dir", folder, "--user", str(uid)],
                          {"CHAT_SYNC_SERVER": url, "CHAT_SYNC_TOKEN": tokens[uid]})
    clients[uid].db = os.path.join(folder, f"chats-{uid}.db")
    clients[uid].folder = folder
    clients[uid].start()

# --- Traffic ----------------------------------------------------------------------
stop_traffic = threading.Event()
queued_by_1 = []  # contents `chat-sync send` queued (exit 0)
acked = {}  # HTTP sender: requestId -> (messageId, content), once the relay answered 201
acked_lock = threading.Lock()
pending_http = []  # requestIds not yet answered 201


def send_as_1():
    n = 0
    while not stop_traffic.is_set():
        content = f"from 1 #{n} " + "é" * (n % 7)
        r = run("chat-sync", ["send", "--data-dir", clients[1].folder, "--user", "1", "--to", "2", content], timeout=60)
        if r.returncode == 0:
            queued_by_1.append(content)
        elif r.returncode != 75:  # a busy file is a documented, retryable answer
            fail(f"chat-sync send exited {r.returncode}: {r.stderr.strip()[:300]}")
        n += 1
        time.sleep(0.05)


def post(request_id, content):
    body = json.dumps({"requestId": request_id, "toUserId": 2, "content": content}).encode()
    req = urllib.request.Request(f"{url}/v2/messages", data=body, method="POST", headers={
        "Authorization": f"Bearer {tokens[3]}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as answer:
            if 200 <= answer.status < 300:
                return json.loads(answer.read())["message"]["messageId"]
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return None
    return None


def http_sender():
    n = 1
    while not stop_traffic.is_set() or pending_http:
        if not stop_traffic.is_set() and len(pending_http) < 3:
            pending_http.append(n)
            n += 1
        request_id = pending_http[0]
        message_id = post(request_id, f"from 3 #{request_id}")
        if message_id is None:
            time.sleep(0.1)
            continue
        with acked_lock:
            if request_id in acked and acked[request_id][0] != message_id:
                fail(f"the relay answered request {request_id} with message {message_id}, earlier {acked[request_id][0]}")
            acked[request_id] = (message_id, f"from 3 #{request_id}")
        pending_http.pop(0)
        time.sleep(0.03)


threads = [threading.Thread(target=send_as_1, daemon=True), threading.Thread(target=http_sender, daemon=True)]
for t in threads:
    t.start()

# --- Kills --------------------------------------------------------------------------
OUTBOX = "SELECT request_id, to_user_id, content FROM MessageRequests"
ACKNOWLEDGED = "SELECT request_id, to_user_id, content FROM Messages WHERE request_id IS NOT NULL"
counts = {"chat-relay serve": 0, "chat-sync run (sender)": 0, "chat-sync run (receiver)": 0}


def outbox_rows(db):
    try:
        return set(query(db, OUTBOX))
    except sqlite3.Error:
        return set()  # not created yet


def check_client(uid, outbox_before, where):
    db = clients[uid].db
    if not os.path.exists(db):
        return
    r = run("chatdb", ["check", "--full", "--db", db])
    if r.returncode != 0:
        fail(f"{where}: chatdb check --full exited {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")
    kept = set(query(db, OUTBOX)) | set(query(db, ACKNOWLEDGED))
    lost = outbox_before - kept
    if lost:
        fail(f"{where}: {len(lost)} outbox request(s) neither in the outbox as they were nor acknowledged, e.g. {sorted(lost)[:2]}")


def check_relay(acked_before, where):
    r = run("chat-relay", ["user", "list", "--db", relay_db])
    if r.returncode != 0:
        fail(f"{where}: chat-relay user list exited {r.returncode}: {r.stderr.strip()[:300]}")
    integrity = query(relay_db, "PRAGMA integrity_check")
    if integrity != [("ok",)]:
        fail(f"{where}: relay.db integrity_check: {integrity[:3]}")
    # An idempotency record keeps the message id and the content's SHA-256 (records made
    # before relay migration 0003 keep the content itself).
    held = {row[0]: (row[1], row[2], row[3]) for row in query(
        relay_db, "SELECT request_id, message_id, content, content_digest FROM RelayRequests WHERE from_user_id = 3")}

    def kept(rid, answer):
        message_id, content = answer
        record = held.get(rid)
        return record is not None and record[0] == message_id and (
            record[1] == content or record[2] == hashlib.sha256(content.encode()).digest())
    lost = [rid for rid, answer in acked_before.items() if not kept(rid, answer)]
    if lost:
        fail(f"{where}: {len(lost)} message(s) answered 201 are not on the relay as answered, e.g. request {lost[0]}")


targets = ["relay", 1, 2]
for i in range(a.kills):
    target = targets[i % 3] if i < 3 else rng.choice(targets)
    time.sleep(rng.uniform(0.1, 1.5))
    if target == "relay":
        with acked_lock:
            acked_before = dict(acked)
        at = time.monotonic() - started_all
        relay.kill9()
        counts["chat-relay serve"] += 1
        start_relay()
        check_relay(acked_before, f"relay killed at {at:.1f} s")
    else:
        label = "chat-sync run (sender)" if target == 1 else "chat-sync run (receiver)"
        outbox_before = outbox_rows(clients[target].db)
        at = time.monotonic() - started_all
        clients[target].kill9()
        counts[label] += 1
        check_client(target, outbox_before, f"{label} killed at {at:.1f} s")
        clients[target].start()

# --- Everything arrives ---------------------------------------------------------------
time.sleep(0.5)
stop_traffic.set()
for t in threads:
    t.join(timeout=120)
if any(t.is_alive() for t in threads):
    fail("the traffic did not stop within 120 s (the HTTP sender could not get its last messages answered)")


def missing():
    expected = set(queued_by_1) | {content for _, content in acked.values()}
    try:
        have = [row[0] for row in query(clients[2].db, "SELECT content FROM Messages WHERE to_user_id = 2")]
        outbox = query(clients[1].db, "SELECT count(*) FROM MessageRequests")[0][0]
        undelivered = query(relay_db, "SELECT count(*) FROM RelayMessages WHERE to_user_id = 2 AND delivered_at IS NULL")[0][0]
    except sqlite3.Error as e:
        return expected, 0, 0, [str(e)]
    doubles = [c for c in set(have) if have.count(c) > 1]
    return expected - set(have), outbox, undelivered, doubles


deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    gone, outbox, undelivered, doubles = missing()
    if not gone and outbox == 0 and undelivered == 0:
        break
    time.sleep(0.25)
gone, outbox, undelivered, doubles = missing()
if gone or outbox or undelivered:
    fail(f"after 120 s: {len(gone)} message(s) missing from user 2's file (e.g. {sorted(gone)[:2]}), {outbox} left in "
         f"user 1's outbox, {undelivered} undelivered on the relay")
if doubles:
    fail(f"user 2's file has {len(doubles)} message(s) twice, e.g. {doubles[:2]}")
for uid in (1, 2):
    status = clients[uid].stop()
    if status != 0:
        fail(f"chat-sync run for user {uid} exited {status} on SIGTERM: {open(clients[uid].log).read()[-300:]}")
    r = run("chatdb", ["check", "--full", "--db", clients[uid].db])
    if r.returncode != 0:
        fail(f"at the end: chatdb check --full of user {uid}'s file exited {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")
relay.stop()
integrity = query(relay_db, "PRAGMA integrity_check") if os.path.exists(relay_db) else []
if integrity != [("ok",)]:
    fail(f"at the end: relay.db integrity_check: {integrity[:3]}")

total = len(set(queued_by_1)) + len(acked)
print(f"   servers: {a.kills} kills in {time.monotonic() - started_all:.0f} s; "
      + ", ".join(f"{n} {c}" for n, c in counts.items())
      + f"; {len(queued_by_1)} messages through chat-sync, {len(acked)} answered 201 over HTTP")
if failures:
    print(f"   servers: {len(failures)} problem(s); files in {a.work}")
    sys.exit(1)
print(f"   servers: every check passed (check --full clean, outboxes intact or acknowledged, nothing answered 201 lost, "
      f"all {total} messages in the receiver's file once)")
