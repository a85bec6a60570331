#!/usr/bin/python3
"""The load generator of scripts/bench.d/relay.sh: loopback only, bounded in count and time.

  relay_load.py idle  --url URL --pid PID --count N [--tokens FILE] [--ws-path P] [--concurrency C]
  relay_load.py pairs --url URL --pid PID --tokens FILE --pairs P [--seconds S] [--warmup W] [--workers K]
  relay_load.py echo  --url URL --pid PID --clients P [--seconds S] [--warmup W] [--workers K]

Prints one JSON object of results on stdout.

idle: opens N WebSocket connections to /v2/socket/updates, authenticated (the tokens of
  FILE in turn, several sockets per user), on raw asyncio streams (the upgrade request and
  its 101 answer, nothing else), holds them, and reports the RSS of process PID before and
  after (from /proc), per connection. Then closes them.
pairs: FILE's first P tokens send, the next P receive: each recipient holds one WebSocket
  (python3-websockets), each sender posts to its recipient over one keep-alive HTTP/1.1
  connection (raw asyncio), one request at a time, as fast as the answers come, for S
  seconds after W seconds of warm-up. Latency: from just before the POST is written to
  the recipient's `new_message` (the send time travels in the content).
echo: P WebSockets (python3-websockets) to a WebSocket echo server, each sending a frame
  and waiting for it to come back, for S seconds after W seconds of warm-up.
pairs and echo also report the CPU time of process PID and of the generator itself over
the measured window, to show which side saturates, and the time each spent runnable but
waiting for a core (from /proc/*/schedstat: other load on the machine shows there). With --workers K the clients are
split over K processes.

Runs with Debian's /usr/bin/python3 (python3-websockets 10.4).
"""
import argparse, asyncio, ssl, base64, json, multiprocessing as mp, os, resource, sys, time
from urllib.parse import urlsplit

import websockets

CLK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_seconds(pid):
    """user + system CPU seconds of process PID (all its threads)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def runqueue_wait(pid):
    """Seconds the threads of process PID spent runnable but waiting for a core (schedstat)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[1])
        except OSError:
            pass
    return total / 1e9


def own_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def load_tokens(path):
    with open(path) as f:
        return json.load(f)  # [{"userId": n, "token": "..."}, ...]


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    i = min(len(sorted_values) - 1, max(0, round(p / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[i]


# ---------------------------------------------------------------------------
# idle


def tls_context(args):
    """An ssl context trusting --ca for an https:// URL (the relay's TLS), else None."""
    if urlsplit(args.url).scheme not in ("https", "wss"):
        return None
    return ssl.create_default_context(cafile=args.ca)


async def open_idle(host, port, path, token, key, tls=None):
    reader, writer = await asyncio.open_connection(host, port, ssl=tls)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    writer.write(
        (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
         f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{auth}\r\n").encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 101"):
        status = head.split(b"\r\n", 1)[0].decode(errors="replace")
        raise RuntimeError(f"upgrade refused: {status}")
    return writer


async def idle(args):
    u = urlsplit(args.url)
    path = args.ws_path
    tokens = [t["token"] for t in load_tokens(args.tokens)] if args.tokens else [None]
    tls = tls_context(args)
    before = rss_bytes(args.pid)
    gate = asyncio.Semaphore(args.concurrency)
    writers = [None] * args.count

    async def one(i):
        async with gate:
            key = base64.b64encode(os.urandom(16)).decode()
            writers[i] = await open_idle(u.hostname, u.port, path, tokens[i % len(tokens)], key, tls)

    started = time.monotonic()
    results = await asyncio.gather(*(one(i) for i in range(args.count)), return_exceptions=True)
    opened_in = time.monotonic() - started
    failures = [r for r in results if isinstance(r, BaseException)]
    await asyncio.sleep(args.settle)  # let the server finish its bookkeeping
    after = rss_bytes(args.pid)
    cpu = cpu_seconds(args.pid)
    for w in writers:
        if w is not None:
            w.close()
    await asyncio.sleep(0.5)
    opened = args.count - len(failures)
    return {
        "mode": "idle", "requested": args.count, "opened": opened, "failed": len(failures),
        "firstError": repr(failures[0]) if failures else None,
        "users": len(tokens), "openSeconds": round(opened_in, 3),
        "rssBeforeBytes": before, "rssAfterBytes": after,
        "bytesPerConnection": round((after - before) / opened, 1) if opened else None,
        "serverCpuSecondsTotal": cpu,
    }


# ---------------------------------------------------------------------------
# pairs and echo: one worker process runs a slice of the clients


class Window:
    """The measured window in CLOCK_MONOTONIC seconds (the same clock in every process)."""

    def __init__(self, start, warmup, seconds):
        self.begin = start + warmup
        self.end = self.begin + seconds

    def inside(self, t):
        return self.begin <= t < self.end


async def sender(host, port, token, to_user, window, state, padding, tls=None):
    reader, writer = await asyncio.open_connection(host, port, ssl=tls)
    head_prefix = (f"POST /v2/messages HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
                   "Content-Type: application/json\r\nContent-Length: ").encode()
    # Unique per sender across runs against the same relay.db (a reused one would be 409 conflict).
    request_id = time.time_ns() // 1000
    await state["go"].wait()
    while time.monotonic() < window.end:
        request_id += 1
        t0 = time.monotonic()
        body = json.dumps({"requestId": request_id, "toUserId": to_user,
                           "content": f"{t0!r} {padding}"}).encode()
        writer.write(head_prefix + str(len(body)).encode() + b"\r\n\r\n" + body)
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line[:15].lower() == b"content-length:":
                length = int(line[15:])
        if length:
            await reader.readexactly(length)
        t1 = time.monotonic()
        if head[9:12] != b"201":
            state["errors"] += 1
            if state["firstError"] is None:
                state["firstError"] = head.split(b"\r\n", 1)[0].decode(errors="replace")
            await asyncio.sleep(0.01)
            continue
        if window.inside(t0):
            state["sent"] += 1
            state["post"].append(t1 - t0)
        state["posted"] += 1
    writer.close()


async def recipient(ws, window, state):
    async for frame in ws:
        t = time.monotonic()
        event = json.loads(frame)
        if event.get("type") != "new_message":
            continue
        t0 = float(event["payload"]["content"].split(" ", 1)[0])
        state["delivered"] += 1
        if window.inside(t0):
            state["latency"].append(t - t0)
        if window.inside(t):
            state["received"] += 1


async def echo_client(ws, window, state, padding):
    await state["go"].wait()
    while time.monotonic() < window.end:
        t0 = time.monotonic()
        await ws.send(f"{t0!r} {padding}")
        await ws.recv()
        t = time.monotonic()
        if window.inside(t0):
            state["latency"].append(t - t0)
        if window.inside(t):
            state["received"] += 1
        state["sent"] += 1


async def worker_main(mode, args, slice_, ready, go_time):
    u = urlsplit(args.url)
    state = {"sent": 0, "posted": 0, "delivered": 0, "received": 0, "errors": 0, "firstError": None,
             "latency": [], "post": [], "go": asyncio.Event()}
    padding = "x" * max(0, args.content_bytes - 22)
    sockets, tasks = [], []
    tls = tls_context(args)
    ws_url = f"{'wss' if tls else 'ws'}://{u.hostname}:{u.port}"
    if mode == "pairs":
        for sender_tok, recipient_tok in slice_:
            ws = await websockets.connect(
                ws_url + "/v2/socket/updates", extra_headers={"Authorization": f"Bearer {recipient_tok['token']}"},
                compression=None, ping_interval=None, max_size=2 ** 21, ssl=tls)
            sockets.append(ws)
    else:
        for _ in slice_:
            ws = await websockets.connect(ws_url + (u.path or "/"), compression=None, ping_interval=None)
            sockets.append(ws)
    ready.put(os.getpid())
    # The parent sets the common start time once every worker is connected.
    loop = asyncio.get_running_loop()
    start = await loop.run_in_executor(None, go_time.get)
    window = Window(start, args.warmup, args.seconds)
    if mode == "pairs":
        for ws in sockets:
            tasks.append(asyncio.ensure_future(recipient(ws, window, state)))
        senders = [asyncio.ensure_future(sender(u.hostname, u.port, s["token"], r["userId"], window, state, padding,
                                                tls))
                   for s, r in slice_]
    else:
        senders = [asyncio.ensure_future(echo_client(ws, window, state, padding)) for ws in sockets]
    await asyncio.sleep(max(0, start - time.monotonic()))
    state["go"].set()
    await asyncio.sleep(max(0, window.begin - time.monotonic()))
    cpu0, wait0 = own_cpu(), runqueue_wait(os.getpid())
    await asyncio.sleep(max(0, window.end - time.monotonic()))
    cpu1, wait1 = own_cpu(), runqueue_wait(os.getpid())
    await asyncio.gather(*senders)
    if mode == "pairs":
        # Drain: every answered POST should reach its recipient.
        deadline = time.monotonic() + args.drain
        while state["delivered"] < state["posted"] and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    del state["go"]
    state["cpu"] = cpu1 - cpu0
    state["wait"] = wait1 - wait0
    return state


def worker_entry(mode, args, slice_, ready, go_time, out):
    try:
        out.put(asyncio.run(worker_main(mode, args, slice_, ready, go_time)))
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        ready.put(None)
        out.put({"fatal": repr(e)})


def run_processes(entry, extra, args, slices, label):
    """Starts one forked worker per slice (`entry(*extra, args, slice, ready, go, out)`), lets
    them all go at one instant, samples the server's CPU and run-queue wait over the
    measured window, and returns the workers' results and those samples."""
    ctx = mp.get_context("fork")
    ready, out = ctx.Queue(), ctx.Queue()
    go_queues = [ctx.Queue() for _ in slices]
    procs = [ctx.Process(target=entry, args=(*extra, args, s, ready, g, out)) for s, g in zip(slices, go_queues)]
    for p in procs:
        p.start()
    for _ in procs:
        if ready.get(timeout=120) is None:
            break
    start = time.monotonic() + 0.3
    for g in go_queues:
        g.put(start)
    window = Window(start, args.warmup, args.seconds)
    time.sleep(max(0, window.begin - time.monotonic()))
    server0, swait0 = cpu_seconds(args.pid), runqueue_wait(args.pid)
    time.sleep(max(0, window.end - time.monotonic()))
    server1, swait1 = cpu_seconds(args.pid), runqueue_wait(args.pid)
    results = [out.get(timeout=args.seconds + args.drain + 120) for _ in procs]
    for p in procs:
        p.join()
    fatal = [r["fatal"] for r in results if "fatal" in r]
    if fatal:
        raise SystemExit(f"{label}: a worker failed: {fatal[0]}")
    return results, (server0, swait0, server1, swait1)


def run_workers(mode, args, clients):
    k = max(1, min(args.workers, len(clients)))
    slices = [clients[i::k] for i in range(k)]
    results, (server0, swait0, server1, swait1) = run_processes(
        worker_entry, (mode,), args, slices, "relay_load.py")
    latency = sorted(x for r in results for x in r["latency"])
    post = sorted(x for r in results for x in r["post"])
    ms = lambda v: None if v is None else round(v * 1000, 3)
    total = lambda key: sum(r[key] for r in results)
    summary = {
        "mode": mode, "clients": len(clients), "workers": k, "seconds": args.seconds, "warmup": args.warmup,
        "contentBytes": args.content_bytes,
        "received": total("received"), "perSecond": round(total("received") / args.seconds, 1),
        "latencyP50Ms": ms(percentile(latency, 50)), "latencyP99Ms": ms(percentile(latency, 99)),
        "latencyMaxMs": ms(latency[-1] if latency else None), "latencySamples": len(latency),
        "serverCpuSeconds": round(server1 - server0, 3),
        "serverCores": round((server1 - server0) / args.seconds, 3),
        "generatorCpuSeconds": round(total("cpu"), 3),
        "generatorCores": round(total("cpu") / args.seconds, 3),
        # Time runnable but waiting for a core: high when something else competes for the CPU.
        "serverRunqueueWaitSeconds": round(swait1 - swait0, 3),
        "generatorRunqueueWaitSeconds": round(total("wait"), 3),
        "machineCores": os.cpu_count(),
    }
    if mode == "pairs":
        summary.update({
            "posted": total("posted"), "delivered": total("delivered"), "postErrors": total("errors"),
            "firstPostError": next((r["firstError"] for r in results if r["firstError"]), None),
            "lost": total("posted") - total("delivered"),
            "postP50Ms": ms(percentile(post, 50)), "postP99Ms": ms(percentile(post, 99)),
        })
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("mode", choices=["idle", "pairs", "echo"])
    p.add_argument("--url", required=True,
                   help="http://127.0.0.1:PORT, or https://localhost:PORT with --ca (echo: ws://127.0.0.1:PORT/)")
    p.add_argument("--ca", help="the CA certificate (PEM) an https:// relay's certificate chains to")
    p.add_argument("--pid", type=int, required=True, help="the server process, for its RSS and CPU")
    p.add_argument("--tokens", help='JSON list of {"userId", "token"}')
    p.add_argument("--count", type=int, default=10000, help="idle: connections")
    p.add_argument("--ws-path", default="/v2/socket/updates", help="idle: the WebSocket path")
    p.add_argument("--concurrency", type=int, default=200, help="idle: handshakes in flight")
    p.add_argument("--settle", type=float, default=1.0, help="idle: seconds to wait before reading RSS")
    p.add_argument("--pairs", type=int, default=100)
    p.add_argument("--clients", type=int, default=100, help="echo: sockets")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--drain", type=float, default=3.0, help="pairs: seconds to wait for events after the window")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--content-bytes", type=int, default=64)
    args = p.parse_args()
    if args.mode == "idle":
        result = asyncio.run(idle(args))
    elif args.mode == "pairs":
        tokens = load_tokens(args.tokens)
        if len(tokens) < 2 * args.pairs:
            raise SystemExit(f"relay_load.py: {args.pairs} pairs need {2 * args.pairs} tokens, {args.tokens} has {len(tokens)}")
        result = run_workers("pairs", args, list(zip(tokens[:args.pairs], tokens[args.pairs:2 * args.pairs])))
    else:
        result = run_workers("echo", args, list(range(args.clients)))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
