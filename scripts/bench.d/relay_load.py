"""Load generator for scripts/bench.d/relay.sh: loopback only, bounded in count and time.

  relay_load.py idle  PORT TOKEN COUNT PID            open COUNT authenticated sockets, measure PID's RSS
  relay_load.py pairs PORT TOKENS_FILE PAIRS SECONDS [RATE]
                                                     POST -> new_message for PAIRS sender/recipient pairs;
                                                     closed loop, or RATE messages/s in all (open loop)
  relay_load.py echo  PORT SOCKETS SECONDS            round trips through a bare WebSocket echo server

Prints one JSON object. Needs Debian's python3-websockets (run with /usr/bin/python3).
"""
import asyncio
import json
import os
import resource
import sys
import time

import websockets


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


async def idle(port, token, count, pid):
    before = rss_kib(pid)
    sockets = []
    started = time.monotonic()
    url = f"ws://127.0.0.1:{port}/v1/socket/updates"
    headers = {"Authorization": f"Bearer {token}"}
    for first in range(0, count, 250):
        batch = [websockets.connect(url, extra_headers=headers, open_timeout=60, ping_interval=None, max_queue=4)
                 for _ in range(first, min(first + 250, count))]
        sockets += await asyncio.gather(*batch)
    opened = time.monotonic() - started
    await asyncio.sleep(2)
    after = rss_kib(pid)
    await asyncio.gather(*(s.close() for s in sockets))
    return {"sockets": count, "openSeconds": round(opened, 2), "rssBeforeKiB": before, "rssAfterKiB": after,
            "kibPerSocket": round((after - before) / count, 2)}


class KeepAlive:
    """One HTTP/1.1 keep-alive connection, requests one at a time."""

    def __init__(self, port, token):
        self.port, self.token = port, token

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)

    async def post(self, path, body):
        data = json.dumps(body).encode()
        self.writer.write((f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.token}\r\n"
                           f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode() + data)
        status_line = await self.reader.readline()
        length = 0
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b""):
                break
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return int(status_line.split()[1])


async def pairs(port, tokens_file, count, seconds, rate=None):
    tokens = {}
    with open(tokens_file) as f:
        for line in f:
            user, token = line.split()
            tokens[int(user)] = token
    url = f"ws://127.0.0.1:{port}/v1/socket/updates"
    sent_at = {}
    latencies = []
    received = 0
    deadline = time.monotonic() + seconds
    done = asyncio.Event()

    async def recipient(user, socket):
        nonlocal received
        pending = []
        while not done.is_set():
            try:
                raw = await asyncio.wait_for(socket.recv(), 1)
            except asyncio.TimeoutError:
                continue
            event = json.loads(raw)
            if event["type"] != "new_message":
                continue
            message = event["payload"]
            key = message["content"]
            if key in sent_at:
                latencies.append(time.monotonic() - sent_at.pop(key))
                received += 1
            pending.append(message["messageId"])
            if len(pending) >= 50:
                await socket.send(json.dumps({"type": "delivery_ack", "payload": {"messageIds": pending}}))
                pending = []

    # Request ids unique to this run: a later run on the same relay.db is not a replay.
    base = int(time.time() * 1000) * 1000

    async def sender(pair, connection):
        request = 0
        errors = 0
        interval = count / rate if rate else 0
        next_send = time.monotonic() + (pair / count) * interval
        while time.monotonic() < deadline:
            if interval:
                delay = next_send - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                next_send += interval
            request += 1
            key = f"{pair}:{request}"
            sent_at[key] = time.monotonic()
            status = await connection.post("/v1/messages", {"requestId": base + request, "toUserId": 2 * pair, "content": key})
            if status != 201:
                errors += 1
        return request, errors

    sockets = []
    for pair in range(1, count + 1):
        sockets.append(await websockets.connect(url, extra_headers={"Authorization": f"Bearer {tokens[2 * pair]}"}, ping_interval=None))
    connections = []
    for pair in range(1, count + 1):
        connection = KeepAlive(port, tokens[2 * pair - 1])
        await connection.open()
        connections.append(connection)
    cpu = time.process_time()
    started = time.monotonic()
    listeners = [asyncio.create_task(recipient(2 * p, s)) for p, s in zip(range(1, count + 1), sockets)]
    results = await asyncio.gather(*(sender(p, c) for p, c in zip(range(1, count + 1), connections)))
    await asyncio.sleep(1)  # the last events in flight
    elapsed = time.monotonic() - started
    done.set()
    await asyncio.gather(*listeners)
    for socket in sockets:
        await socket.close()
    posted = sum(r[0] for r in results)
    return {"pairs": count, "rate": rate, "seconds": round(elapsed, 2), "posted": posted, "errors": sum(r[1] for r in results),
            "received": received, "messagesPerSecond": round(received / (elapsed - 1), 1),
            "p50Ms": round(percentile(latencies, 0.5) * 1000, 2), "p99Ms": round(percentile(latencies, 0.99) * 1000, 2),
            "generatorCpuSeconds": round(time.process_time() - cpu, 2)}


async def echo(port, count, seconds):
    latencies = []
    deadline = time.monotonic() + seconds

    async def client():
        async with websockets.connect(f"ws://127.0.0.1:{port}/", ping_interval=None) as socket:
            while time.monotonic() < deadline:
                started = time.monotonic()
                await socket.send("x" * 40)
                await socket.recv()
                latencies.append(time.monotonic() - started)

    cpu = time.process_time()
    started = time.monotonic()
    await asyncio.gather(*(client() for _ in range(count)))
    elapsed = time.monotonic() - started
    return {"sockets": count, "seconds": round(elapsed, 2), "roundTrips": len(latencies),
            "roundTripsPerSecond": round(len(latencies) / elapsed, 1),
            "p50Ms": round(percentile(latencies, 0.5) * 1000, 2), "p99Ms": round(percentile(latencies, 0.99) * 1000, 2),
            "generatorCpuSeconds": round(time.process_time() - cpu, 2)}


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    mode = sys.argv[1]
    if mode == "idle":
        result = asyncio.run(asyncio.wait_for(idle(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])), 300))
    elif mode == "pairs":
        rate = float(sys.argv[6]) if len(sys.argv) > 6 else None
        result = asyncio.run(asyncio.wait_for(pairs(int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5]), rate), 300))
    else:
        result = asyncio.run(asyncio.wait_for(echo(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])), 300))
    print(json.dumps(result))


main()
