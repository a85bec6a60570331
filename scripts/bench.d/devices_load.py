#!/usr/bin/python3
"""The load generator of scripts/bench.d/devices.sh: loopback only, bounded in count and time.

  devices_load.py fanout --url URL --pid PID --devices FILE [--seconds S] [--warmup W]
                         [--workers K] [--rate R]
  devices_load.py fill   --url URL --pid PID --devices FILE --messages N --shape focus|spread
                         [--connections C] [--workers K] [--contacts M]
  devices_load.py ack    --url URL --pid PID --devices FILE [--users U] [--concurrency C]

Prints one JSON object of results on stdout. FILE is a JSON list of users, each
{"userId": n, "tokens": ["<device 1's token>", "<device 2's>", ...]}.

fanout: the users are paired (1st with 2nd, 3rd with 4th, ...); every device of every user
  holds a WebSocket (RawSocket, raw asyncio: a `new_message` frame's key is read from its
  bytes with one regular expression, json.loads only for a rendering the expression does
  not know, so that the generator spends little per frame); each user's first device
  posts to its partner over one keep-alive HTTP/1.1 connection (raw asyncio), one request
  at a time (as fast as the answers come, or with --rate R paced at R messages/s over all
  senders, each on its own schedule). A message is done when its `new_message` reached
  every socket it goes to: the recipient's devices and the sender's other devices
  (D + D - 1 sockets with D devices a user). Latency: from just before the POST is written
  to the last of them. Messages/s: the messages done inside the S-second window (after W s
  of warm-up). Also the CPU of process PID and of the generator over the window, and the
  time each spent runnable but waiting for a core (relay_load.py's measures).
fill: posts N messages through POST /v2/messages as fast as C keep-alive connections per
  worker take them (requestIds unique per device), while every user's first device holds
  a WebSocket (RawSocket: the frames are counted and skipped, pings answered), so no
  recipient is offline (no push records). Content: 80 bytes. --shape focus: every message
  is between the first user of FILE and one of the others, in turn sent and received (the
  first user's window); --shape spread: from every user (its devices in turn) to one of
  its M contacts.
ack: every device of the first U users (default all) acknowledges its log as chat-sync
  does, in two rounds. 1: each user's first device fetches its log (GET /v2/messages,
  1,000 a page, each page naming the previous page's cursor) and acknowledges the
  messages to it that no device stored yet (`delivery_ack` on its socket, 500 ids a frame,
  waiting for `delivery_acknowledged`; these sockets are python3-websockets'). 2: once
  every delivery is recorded, every device fetches what it has not (the whole log for the
  other devices) and the status updates the deliveries made, then names both cursors
  (GET /v2/messages?lastSyncedMessage=&lastSyncedUpdate=, answered once the
  acknowledgement is committed).

Runs with Debian's /usr/bin/python3 (3.11) on python3-uvloop's event loop; ack also needs
python3-websockets (10.4).
"""
import argparse, asyncio, base64, json, multiprocessing as mp, os, random, re, sys, time
from urllib.parse import urlsplit

import uvloop  # Debian's python3-uvloop: the event loop in C, so the generator's cost per frame stays small

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from relay_load import Window, cpu_seconds, own_cpu, percentile, run_processes, runqueue_wait  # noqa: E402

CONTENT_BYTES = 80
asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def load_devices(path):
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------------------------
# A keep-alive HTTP/1.1 client on raw asyncio streams: one request at a time.


class Http:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.reader = self.writer = None

    async def request(self, method, path, token, body=None):
        """(status, body bytes). Reconnects when the relay closed the connection."""
        for attempt in range(2):
            if self.writer is None:
                self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
            head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                    f"Authorization: Bearer {token}\r\n")
            if body is not None:
                head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            try:
                self.writer.write(head.encode() + b"\r\n" + (body or b""))
                answer = await self.reader.readuntil(b"\r\n\r\n")
            except (ConnectionError, asyncio.IncompleteReadError):
                self.close()
                if attempt:
                    raise
                continue
            length, chunked, close = 0, False, False
            for line in answer.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                name = name.strip().lower()
                if name == b"content-length":
                    length = int(value)
                elif name == b"transfer-encoding" and b"chunked" in value.lower():
                    chunked = True
                elif name == b"connection" and b"close" in value.lower():
                    close = True
            if chunked:
                data = bytearray()
                while True:
                    size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    data += await self.reader.readexactly(size + 2)
                    del data[len(data) - 2:]
                    if size == 0:
                        break
                data = bytes(data)
            else:
                data = await self.reader.readexactly(length) if length else b""
            if close:
                self.close()
            return int(answer[9:12]), data
        raise ConnectionError("unreachable")

    def close(self):
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def padded(prefix):
    return prefix + " " + "x" * max(0, CONTENT_BYTES - len(prefix) - 1)


# ---------------------------------------------------------------------------
# A client WebSocket on a bare asyncio protocol: the upgrade written by hand, the relay's
# frames parsed from the chunks the event loop hands over (no task woken per chunk, no
# object per frame), pings answered. Cheap per frame, so that a fan-out run measures the
# relay rather than the generator.


def client_frame(first_byte, payload):
    """A masked client frame (RFC 6455 asks clients to mask) of at most 125 bytes: a pong, a close."""
    mask = os.urandom(4)
    return bytes([first_byte, 0x80 | len(payload)]) + mask + bytes(c ^ mask[j % 4] for j, c in enumerate(payload))


class RawSocket(asyncio.Protocol):
    """One socket; open it with `open_raw_socket`. `on_text(payload, t)` is called for each
    complete text message (payload: bytes; t: time.monotonic() when the chunk that
    completed it arrived, read once per chunk: a chunk's frames arrived together).
    `finished` is done once the relay closed the socket (`closed_by_relay`: with a close
    frame) or the connection ended; `pings`: the pings answered; `error`: an exception
    `on_text` raised (the socket is then closed), else None."""

    def __init__(self, request, on_text):
        loop = asyncio.get_running_loop()
        self.request, self.on_text = request, on_text
        self.opened, self.finished = loop.create_future(), loop.create_future()
        self.transport = None
        self.upgraded = False
        self.head = b""  # the upgrade's answer, until it is whole
        self.rest = b""  # the start of a frame not whole yet
        self.fragments = None  # the parts so far of a fragmented text message
        self.pings, self.closed_by_relay, self.error = 0, False, None

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)

    def connection_lost(self, exc):
        if not self.opened.done():
            self.opened.set_exception(exc or ConnectionError("closed before the upgrade's answer"))
        if not self.finished.done():
            self.finished.set_result(None)

    def data_received(self, data):
        if not self.upgraded:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            if not self.head.startswith(b"HTTP/1.1 101"):
                status = self.head.split(b"\r\n", 1)[0].decode(errors="replace")
                self.opened.set_exception(RuntimeError(f"upgrade refused: {status}"))
                self.transport.close()
                return
            self.upgraded = True
            data, self.head = self.head[end + 4:], b""
            self.opened.set_result(None)
        if self.finished.done():
            return
        t = time.monotonic()
        if self.rest:
            data = self.rest + data
        try:
            self.rest = self.frames(data, t)
        except Exception as e:  # noqa: BLE001 - kept for the socket's owner
            self.error = e
            self.transport.close()

    def frames(self, data, t):
        """Handles the whole frames of data; returns the rest (the start of the next frame)."""
        on_text = self.on_text
        i, size = 0, len(data)
        while size - i >= 2:
            b0, n, h = data[i], data[i + 1] & 0x7F, 2
            if n == 126:
                if size - i < 4:
                    break
                n, h = int.from_bytes(data[i + 2:i + 4], "big"), 4
            elif n == 127:
                if size - i < 10:
                    break
                n, h = int.from_bytes(data[i + 2:i + 10], "big"), 10
            end = i + h + n
            if end > size:
                break
            op = b0 & 0x0F
            if op == 0x1:
                if b0 & 0x80:
                    on_text(data[i + h:end], t)
                else:
                    self.fragments = [data[i + h:end]]
            elif op == 0x0:  # a continuation (of a binary message when fragments is None: skipped)
                if self.fragments is not None:
                    self.fragments.append(data[i + h:end])
                    if b0 & 0x80:
                        payload, self.fragments = b"".join(self.fragments), None
                        on_text(payload, t)
            elif op == 0x9:  # ping: a pong with the same payload (at most 125 bytes)
                self.transport.write(client_frame(0x8A, data[i + h:end]))
                self.pings += 1
            elif op == 0x8:
                self.closed_by_relay = True
                self.finished.set_result(None)
                return b""
            i = end
        return data[i:] if i < size else b""

    async def close(self):
        """Sends a close frame (1000, normal) and closes the connection, without waiting for
        the relay's close frame; returns once the connection is closed (at most 1 s)."""
        if not self.transport.is_closing():
            if self.upgraded:
                self.transport.write(client_frame(0x88, b"\x03\xe8"))
            self.transport.close()
        await asyncio.wait([self.finished], timeout=1)
        if not self.finished.done():
            self.transport.abort()


async def open_raw_socket(host, port, token, on_text):
    """A RawSocket on GET /v2/socket/updates authenticated with token, once the relay
    answered the upgrade with 101; raises otherwise (RuntimeError naming the status)."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /v2/socket/updates HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Authorization: Bearer {token}\r\n\r\n").encode()
    _, sock = await asyncio.get_running_loop().create_connection(lambda: RawSocket(request, on_text), host, port)
    try:
        await sock.opened
    except BaseException:
        sock.transport.abort()
        raise
    return sock


# ---------------------------------------------------------------------------
# fanout: one worker process runs a slice of the pairs

# The relay renders an event with sorted keys and no spaces (RelayJSON.swift):
# {"payload":{"content":"<t0> <user>:<seq> xxx…","createdAt":…},"type":"new_message"}.
NEW_MESSAGE_END = b',"type":"new_message"}'
NEW_MESSAGE_KEY = re.compile(rb'\{"payload":\{"content":"[^ "]* (\d+:\d+) ')


def new_message_key(payload):
    """The key in a `new_message` event's content (bytes) by json.loads, for a rendering
    NEW_MESSAGE_KEY does not match; None for another event."""
    event = json.loads(payload)
    if event.get("type") != "new_message":
        return None
    return event["payload"]["content"].split(" ", 2)[1].encode()


async def fanout_worker(args, pairs, ready, go_time):
    u = urlsplit(args.url)
    devices = {user["userId"]: user["tokens"] for pair in pairs for user in pair}
    per_user = len(next(iter(devices.values())))
    expected = 2 * per_user - 1  # the recipient's devices and the sender's other devices
    state = {"posted": 0, "sent": 0, "done": 0, "doneInWindow": 0, "errors": 0, "firstError": None,
             "events": 0, "strays": 0, "late": 0, "latency": [], "first": [], "post": []}
    pending = {}  # b"user:seq" -> [events still to come, t0, first event's time]
    window = None  # set at the start, before the first POST

    def receive(payload, t):
        """A text frame of a device's socket (RawSocket's on_text), at t."""
        m = NEW_MESSAGE_KEY.match(payload) if payload.endswith(NEW_MESSAGE_END) else None
        if m is not None:
            key = m.group(1)
        elif b'"new_message"' in payload:  # a rendering the expression does not know
            key = new_message_key(payload)
            if key is None:
                return
        else:
            return  # another event (contact_status_update, ...)
        state["events"] += 1
        entry = pending.get(key)
        if entry is None:
            state["strays"] += 1
            return
        if entry[2] is None:
            entry[2] = t
        entry[0] -= 1
        if entry[0] == 0:
            del pending[key]
            state["done"] += 1
            if window.inside(entry[1]):
                state["latency"].append(t - entry[1])
                state["first"].append(entry[2] - entry[1])
            if window.inside(t):
                state["doneInWindow"] += 1

    sockets = []
    for user_id, tokens in devices.items():
        for token in tokens:
            sockets.append(await open_raw_socket(u.hostname, u.port, token, receive))
    ready.put(os.getpid())
    loop = asyncio.get_running_loop()
    start = await loop.run_in_executor(None, go_time.get)
    window = Window(start, args.warmup, args.seconds)
    go = asyncio.Event()

    total_senders = args.total_senders
    interval = total_senders / args.rate if args.rate else 0.0

    async def send(user_id, token, partner):
        http = Http(u.hostname, u.port)
        request_id = time.time_ns() // 1000  # unique per device across runs against one relay.db
        await go.wait()
        next_at = start + random.random() * interval
        seq = 0
        while True:
            if interval:
                now = time.monotonic()
                if next_at >= window.end:
                    break
                if next_at > now:
                    await asyncio.sleep(next_at - now)
                elif now - next_at > 0.01:
                    state["late"] += 1
                next_at += interval
            elif time.monotonic() >= window.end:
                break
            request_id += 1
            seq += 1
            key = f"{user_id}:{seq}"
            t0 = time.monotonic()
            pending[key.encode()] = [expected, t0, None]
            body = json.dumps({"requestId": request_id, "toUserId": partner,
                               "content": padded(f"{t0!r} {key}")}).encode()
            status, _ = await http.request("POST", "/v2/messages", token, body)
            t1 = time.monotonic()
            if status != 201:
                pending.pop(key.encode(), None)
                state["errors"] += 1
                if state["firstError"] is None:
                    state["firstError"] = f"HTTP {status}"
                await asyncio.sleep(0.01)
                continue
            state["posted"] += 1
            if window.inside(t0):
                state["sent"] += 1
                state["post"].append(t1 - t0)
        http.close()

    senders = []
    for a, b in pairs:
        senders.append(asyncio.ensure_future(send(a["userId"], a["tokens"][0], b["userId"])))
        senders.append(asyncio.ensure_future(send(b["userId"], b["tokens"][0], a["userId"])))
    await asyncio.sleep(max(0, start - time.monotonic()))
    go.set()
    await asyncio.sleep(max(0, window.begin - time.monotonic()))
    cpu0, wait0 = own_cpu(), runqueue_wait(os.getpid())
    await asyncio.sleep(max(0, window.end - time.monotonic()))
    cpu1, wait1 = own_cpu(), runqueue_wait(os.getpid())
    await asyncio.gather(*senders)
    deadline = time.monotonic() + args.drain
    while pending and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.gather(*(sock.close() for sock in sockets))
    failed = next((sock.error for sock in sockets if sock.error is not None), None)
    if failed is not None:
        raise RuntimeError(f"a socket's frame handling failed: {failed!r}")
    state["lost"] = len(pending)
    state["cpu"], state["wait"] = cpu1 - cpu0, wait1 - wait0
    state["expected"] = expected
    return state


def fanout_entry(args, pairs, ready, go_time, out):
    try:
        out.put(asyncio.run(fanout_worker(args, pairs, ready, go_time)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        ready.put(None)
        out.put({"fatal": repr(e)})


def fanout(args):
    users = load_devices(args.devices)
    if len(users) % 2:
        raise SystemExit("devices_load.py fanout: an even number of users is needed (they are paired)")
    pairs = list(zip(users[0::2], users[1::2]))
    args.total_senders = len(users)
    k = max(1, min(args.workers, len(pairs)))
    slices = [pairs[i::k] for i in range(k)]
    results, (server0, swait0, server1, swait1) = run_processes(
        fanout_entry, (), args, slices, "devices_load.py")
    ms = lambda v: None if v is None else round(v * 1000, 3)
    total = lambda key: sum(r[key] for r in results)
    latency = sorted(x for r in results for x in r["latency"])
    first = sorted(x for r in results for x in r["first"])
    post = sorted(x for r in results for x in r["post"])
    return {
        "mode": "fanout", "users": len(users), "devicesPerUser": len(users[0]["tokens"]),
        "socketsPerMessage": results[0]["expected"], "senders": len(users), "workers": k,
        "seconds": args.seconds, "warmup": args.warmup, "contentBytes": CONTENT_BYTES,
        "offeredPerSecond": args.rate or None, "late": total("late"),
        "done": total("doneInWindow"), "perSecond": round(total("doneInWindow") / args.seconds, 1),
        "postedInWindow": total("sent"), "postedPerSecond": round(total("sent") / args.seconds, 1),
        "events": total("events"), "strays": total("strays"),
        "latencyP50Ms": ms(percentile(latency, 50)), "latencyP99Ms": ms(percentile(latency, 99)),
        "latencyMaxMs": ms(latency[-1] if latency else None), "latencySamples": len(latency),
        "firstP50Ms": ms(percentile(first, 50)), "firstP99Ms": ms(percentile(first, 99)),
        "postP50Ms": ms(percentile(post, 50)), "postP99Ms": ms(percentile(post, 99)),
        "posted": total("posted"), "lost": total("lost"), "postErrors": total("errors"),
        "firstPostError": next((r["firstError"] for r in results if r["firstError"]), None),
        "serverCpuSeconds": round(server1 - server0, 3), "serverCores": round((server1 - server0) / args.seconds, 3),
        "generatorCpuSeconds": round(total("cpu"), 3), "generatorCores": round(total("cpu") / args.seconds, 3),
        "serverRunqueueWaitSeconds": round(swait1 - swait0, 3),
        "generatorRunqueueWaitSeconds": round(total("wait"), 3), "machineCores": os.cpu_count(),
    }


# ---------------------------------------------------------------------------
# fill


async def drain_socket(host, port, token, stats, stop, gate):
    """An authenticated WebSocket (RawSocket) that counts its text frames and skips them,
    answers pings, until stop is set."""
    def count(payload, t):
        stats["frames"] += 1

    async with gate:
        sock = await open_raw_socket(host, port, token, count)
    stats["open"] += 1
    await stop.wait()
    stats["pings"] += sock.pings
    stats["closed"] += sock.closed_by_relay
    await sock.close()


def fill_plan(args, users, i):
    """(sender index, sender's device, recipient index) of message i."""
    if args.shape == "focus":
        other = 1 + (i // 2 * 7919) % (len(users) - 1)
        return (0, 0, other) if i % 2 == 0 else (other, 0, 0)
    n = len(users)
    m = min(args.contacts, n - 1)
    sender, turn = (i * 7919) % n, i // n
    contact = (sender + 1 + (turn % m) * max(1, (n - 1) // m)) % n  # M contacts, spread over the users
    return sender, (turn // m) % len(users[sender]["tokens"]), contact


async def fill_worker(args, w, k):
    u = urlsplit(args.url)
    users = load_devices(args.devices)
    stats = {"open": 0, "frames": 0, "pings": 0, "closed": 0}
    stop = asyncio.Event()
    # Each worker holds the sockets of its share of the users' first devices.
    gate = asyncio.Semaphore(100)  # handshakes at once
    holders = [asyncio.ensure_future(drain_socket(u.hostname, u.port, user["tokens"][0], stats, stop, gate))
               for user in users[w::k]]
    while stats["open"] < len(holders):
        failed = [h for h in holders if h.done() and h.exception()]
        if failed:
            raise failed[0].exception()
        await asyncio.sleep(0.05)
    counters = {}
    state = {"posted": 0, "errors": 0, "firstError": None}
    mine = range(w, args.messages, k)
    share = [mine[c::args.connections] for c in range(args.connections)]

    async def connection(indexes):
        http = Http(u.hostname, u.port)
        for i in indexes:
            s, d, r = fill_plan(args, users, i)
            key = (s, d)
            counters[key] = counters.get(key, 0) + 1
            request_id = counters[key] * k + w  # unique per device over the workers
            body = json.dumps({"requestId": request_id, "toUserId": users[r]["userId"],
                               "content": padded(f"m{i}")}).encode()
            status, answer = await http.request("POST", "/v2/messages", users[s]["tokens"][d], body)
            if status == 201:
                state["posted"] += 1
            else:
                state["errors"] += 1
                if state["firstError"] is None:
                    state["firstError"] = f"HTTP {status} {answer[:200]!r}"
        http.close()

    await asyncio.gather(*(connection(s) for s in share))
    await asyncio.sleep(0.5)  # the last events reach the sockets
    stop.set()
    await asyncio.gather(*holders, return_exceptions=True)
    state.update(stats)
    state["cpu"] = own_cpu()
    return state


def fill_entry(args, w, k, out):
    try:
        out.put(asyncio.run(fill_worker(args, w, k)))
    except BaseException as e:  # noqa: BLE001
        out.put({"fatal": repr(e)})


def fill(args):
    k = max(1, args.workers)
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    server0 = cpu_seconds(args.pid)
    started = time.monotonic()
    procs = [ctx.Process(target=fill_entry, args=(args, w, k, out)) for w in range(k)]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    seconds = time.monotonic() - started
    fatal = [r["fatal"] for r in results if "fatal" in r]
    if fatal:
        raise SystemExit(f"devices_load.py fill: a worker failed: {fatal[0]}")
    total = lambda key: sum(r[key] for r in results)
    if total("errors"):
        raise SystemExit(f"devices_load.py fill: {total('errors')} POSTs failed; first: "
                         f"{next(r['firstError'] for r in results if r['firstError'])}")
    return {"mode": "fill", "shape": args.shape, "messages": total("posted"), "seconds": round(seconds, 3),
            "perSecond": round(total("posted") / seconds, 1), "contentBytes": CONTENT_BYTES,
            "socketsHeld": total("open"), "framesSkipped": total("frames"), "pingsAnswered": total("pings"),
            "socketsClosedByRelay": total("closed"), "serverCpuSeconds": round(cpu_seconds(args.pid) - server0, 3),
            "generatorCpuSeconds": round(total("cpu"), 3)}


# ---------------------------------------------------------------------------
# ack


async def ack(args):
    import websockets  # python3-websockets: only this mode (not timed) needs it

    u = urlsplit(args.url)
    users = load_devices(args.devices)[:args.users or None]
    # Few deliverers at once: a delivery's `message_delivered` goes to every open socket of
    # the sender, and the relay writes one frame per socket a turn, so sockets held open
    # together slow each other's `delivery_acknowledged`. Round 2 is HTTP only.
    gate = asyncio.Semaphore(args.concurrency)
    settle_gate = asyncio.Semaphore(2 * args.concurrency)
    state = {"gets": 0, "fetched": 0, "delivered": 0, "updates": 0, "devices": 0}
    cursors = {}  # (user index, device) -> message cursor

    async def page_through(http, user_id, token, cursor, update_cursor, on_page):
        while True:
            status, body = await http.request(
                "GET", f"/v2/messages?lastSyncedMessage={cursor}&lastSyncedUpdate={update_cursor}&limit=1000", token)
            if status != 200:
                raise RuntimeError(f"GET /v2/messages for user {user_id}: HTTP {status} {body[:200]!r}")
            page = json.loads(body)
            state["gets"] += 1
            state["fetched"] += len(page["messages"])
            for update in page["statusUpdates"]:
                update_cursor = max(update_cursor, update["sequence"])
            await on_page(page)
            cursor = page["cursor"]
            if not page["hasMore"]:
                return cursor, update_cursor

    async def deliver(index):
        user = users[index]
        me, token = user["userId"], user["tokens"][0]
        async with gate:
            http = Http(u.hostname, u.port)
            ws = await websockets.connect(
                f"ws://{u.hostname}:{u.port}/v2/socket/updates", extra_headers={"Authorization": f"Bearer {token}"},
                compression=None, ping_interval=None, max_size=2 ** 22)
            confirmed = asyncio.Queue()

            async def listen():
                async for frame in ws:
                    event = json.loads(frame)
                    if event.get("type") == "delivery_acknowledged":
                        confirmed.put_nowait(len(event["payload"]["messageIds"]))
                    elif event.get("type") == "error":
                        raise RuntimeError(f"user {me}: {event['payload']}")

            listener = asyncio.ensure_future(listen())

            async def on_page(page):
                ids = [m["messageId"] for m in page["messages"] if m["toUserId"] == me and m["status"] == "SYNCED"]
                frames = 0
                for b in range(0, len(ids), 500):
                    await ws.send(json.dumps({"type": "delivery_ack", "payload": {"messageIds": ids[b:b + 500]}}))
                    frames += 1
                for _ in range(frames):
                    got = confirmed.get()
                    done, _ = await asyncio.wait([asyncio.ensure_future(got), listener], timeout=60,
                                                 return_when=asyncio.FIRST_COMPLETED)
                    if listener in done:
                        listener.result()
                        raise RuntimeError(f"user {me}: the socket closed")
                    if not done:
                        raise RuntimeError(f"user {me}: no delivery_acknowledged within 60 s")
                state["delivered"] += len(ids)

            cursor, _ = await page_through(http, me, token, 0, 0, on_page)
            cursors[(index, 0)] = cursor
            listener.cancel()
            await ws.close()
            http.close()

    async def settle(index, device):
        user = users[index]
        me, token = user["userId"], user["tokens"][device]
        async with settle_gate:
            http = Http(u.hostname, u.port)

            async def on_page(page):
                state["updates"] += len(page["statusUpdates"])

            cursor, update_cursor = await page_through(http, me, token, cursors.get((index, device), 0), 0, on_page)
            # Both cursors named: the relay records the device's place before it answers.
            status, body = await http.request(
                "GET", f"/v2/messages?lastSyncedMessage={cursor}&lastSyncedUpdate={update_cursor}&limit=1", token)
            if status != 200:
                raise RuntimeError(f"GET /v2/messages for user {me}: HTTP {status} {body[:200]!r}")
            state["gets"] += 1
            state["devices"] += 1
            http.close()

    started = time.monotonic()
    server0 = cpu_seconds(args.pid)
    await asyncio.gather(*(deliver(i) for i in range(len(users))))
    delivered_in = time.monotonic() - started
    await asyncio.gather(*(settle(i, d) for i in range(len(users)) for d in range(len(users[i]["tokens"]))))
    seconds = time.monotonic() - started
    return {"mode": "ack", "users": len(users), "devices": state["devices"], "gets": state["gets"],
            "messagesFetched": state["fetched"], "deliveryAcks": state["delivered"],
            "statusUpdatesFetched": state["updates"], "deliverSeconds": round(delivered_in, 3),
            "seconds": round(seconds, 3), "serverCpuSeconds": round(cpu_seconds(args.pid) - server0, 3),
            "generatorCpuSeconds": round(own_cpu(), 3)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("mode", choices=["fanout", "fill", "ack"])
    p.add_argument("--url", required=True, help="http://127.0.0.1:PORT")
    p.add_argument("--pid", type=int, required=True, help="the relay process, for its CPU")
    p.add_argument("--devices", required=True, help='JSON list of {"userId", "tokens": [...]}')
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--drain", type=float, default=3.0, help="fanout: seconds to wait for events after the window")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--rate", type=float, default=0.0, help="fanout: messages/s over all senders (0: closed loop)")
    p.add_argument("--messages", type=int, default=0, help="fill: messages to post")
    p.add_argument("--shape", choices=["focus", "spread"], default="spread")
    p.add_argument("--connections", type=int, default=50, help="fill: keep-alive connections per worker")
    p.add_argument("--contacts", type=int, default=20, help="fill --shape spread: contacts per user")
    p.add_argument("--users", type=int, default=0, help="ack: the first U users only (0: all)")
    p.add_argument("--concurrency", type=int, default=4, help="ack: deliverers at once (round 2: twice that)")
    args = p.parse_args()
    if args.mode == "fanout":
        result = fanout(args)
    elif args.mode == "fill":
        result = fill(args)
    else:
        result = asyncio.run(ack(args))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
