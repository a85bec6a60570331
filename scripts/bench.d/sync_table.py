#!/usr/bin/env python3
"""Prints the sync section's tables from what scripts/bench.d/sync.sh left in DIR.

  sync_table.py DIR CLIENTS DOWN_SECONDS

DIR holds a.log and b.log (the two `chat-sync run` logs), b/chats-2.db (B's file, opened
read-only), send-lat.json and send-tput.json (`chat-sync-bench send`), cpu-tput.txt, and
for the storm storm-jitter.json / storm-fixed.json (`chat-sync-bench storm`) with
storm-*.times (the kill time, the restarted relay's "listening" time, its CPU seconds).
"""
import collections, datetime, json, math, os, re, sqlite3, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record

d, clients, down = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
path = lambda name: os.path.join(d, name)


def epoch(text):
    """ISO 8601 UTC with milliseconds (the store's and the logs' form) -> seconds since 1970."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()


def quantile(values, q):
    """Nearest rank, as SyncMetrics does; None when empty."""
    if not values:
        return None
    s = sorted(values)
    return s[min(max(math.ceil(q * len(s)) - 1, 0), len(s) - 1)]


def log_times(name, pattern):
    """{message id: log time} for the lines of a `run` log matching pattern (first group: the id)."""
    out = {}
    line_re = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) " + pattern)
    for line in open(path(name), encoding="utf-8", errors="replace"):
        m = line_re.match(line)
        if m:
            out.setdefault(int(m.group(2)), epoch(m.group(1)))
    return out


def print_table(head, rows):
    record.table("sync", head, rows)
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("   " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())


ms = lambda v: "-" if v is None else f"{v * 1000:,.1f} ms"
sec = lambda v: "-" if v is None else f"{v:,.2f} s"

# ---------------------------------------------------------------------------
# Two clients.
received = log_times("b.log", r"received message (\d+) from user 1")
acked = log_times("a.log", r"sent request \d+ to user 2 as message (\d+)")
db = sqlite3.connect(f"file:{path('b/chats-2.db')}?mode=ro", uri=True)


def run(tag):
    rows = db.execute("SELECT id, created_at FROM Messages WHERE from_user_id = 1 AND content LIKE ? || ' %'", (tag,)).fetchall()
    sent = json.load(open(path(f"send-{tag}.json")))
    created = {i: epoch(c) for i, c in rows}
    latency = [received[i] - created[i] for i in created if i in received]
    to_ack = [acked[i] - created[i] for i in created if i in acked]
    first = min(created.values()) if created else None
    last = max((received[i] for i in created if i in received), default=None)
    # A's sends (the relay's 201 stored), in queue order: the rate over the first and the
    # last quarter shows whether the cost of a send depends on the backlog behind it.
    acks = sorted(acked[i] for i in created if i in acked)
    quarter = len(acks) // 4
    rate = lambda part: (len(part) - 1) / (part[-1] - part[0]) if len(part) > 1 and part[-1] > part[0] else None
    return {
        "ackRates": (rate(acks[:quarter]), rate(acks[-quarter:])) if quarter > 1 else (None, None),
        "sent": sent, "count": len(rows), "latency": latency, "toAck": to_ack, "first": first, "last": last,
        "unlogged": sum(1 for i in created if i not in received),
        "perSecond": len(latency) / (last - first) if latency and last > first else None,
    }


lat, tput = run("lat"), run("tput")
a0, b0, r0, a1, b1, r1 = map(float, open(path("cpu-tput.txt")).read().split())
span = (tput["last"] - tput["first"]) if tput["perSecond"] else None

rows = []
row = lambda *cells: rows.append(tuple(cells))
n = tput["sent"]["count"]
# Issue 27's goals for a sender's backlog (protocol v2 batches): it drains (the sender's
# outbox empties) at >= 5,000 messages/s, with <= 150 µs of the sender's CPU a message.
verdict = lambda ok: "✔ pass" if ok else "✘ miss"
row(f"messages/s, A -> B, {n:,} queued while A runs (one conversation)",
    f"{tput['perSecond']:,.0f}" if tput["perSecond"] else "-", "reported")
row("  first queued -> last stored by B", sec(span), "")
row("  the sender queued them in", sec(tput["sent"]["seconds"]), "")
row("  latency p50 / p99 there (includes the backlog)",
    f"{ms(quantile(tput['latency'], .5))} / {ms(quantile(tput['latency'], .99))}", "")
first_q, last_q = tput["ackRates"]
if first_q and last_q:
    row("  A's sends/s over the first / last quarter of the queue", f"{first_q:,.0f} / {last_q:,.0f}", "")
if span:
    row("  cores busy: A / B / relay",
        f"{(a1 - a0) / span:.2f} / {(b1 - b0) / span:.2f} / {(r1 - r0) / span:.2f}", "")
    row("  A's CPU per message", f"{(a1 - a0) / n * 1e6:,.0f} µs", "")
if os.path.exists(path("backlog.txt")):
    rounds = [list(map(float, line.split())) for line in open(path("backlog.txt")) if line.strip()]
    rate = lambda r: n / (r[4] - r[0]) if r[4] > r[0] else 0
    rounds.sort(key=rate)
    start, end, cpu_a, got, drained, drained_cpu = rounds[len(rounds) // 2]
    drain = rate(rounds[len(rounds) // 2])
    row(f"backlog: {n:,} queued while A was stopped, then A's run: drained at (messages/s)", f"{drain:,.0f}",
        f">= 5,000 ({verdict(drain >= 5000)})")
    if len(rounds) > 1:
        row(f"  the median of {len(rounds)} rounds; each round's rate",
            " / ".join(f"{rate(r):,.0f}" for r in rounds), "")
    row("  from A's start to an empty outbox (the relay accepted all)", sec(drained - start) if drained else "-", "")
    row("  A's CPU per message until then (start, catch-up, sends)", f"{drained_cpu / n * 1e6:,.0f} µs",
        f"<= 150 µs ({verdict(0 < drained_cpu / n * 1e6 <= 150)})")
    row("  from A's start to B's last (B online throughout)", sec(end - start), "")
    row("  end to end, messages/s", f"{got / (end - start):,.0f}" if end > start else "-", "")
row(f"send-to-receive latency p50, {lat['sent']['rate']} msgs/s for {lat['sent']['count'] / lat['sent']['rate']:g} s",
    ms(quantile(lat["latency"], .5)), "reported")
row("send-to-receive latency p99", ms(quantile(lat["latency"], .99)), "reported")
row("  latency max", ms(max(lat["latency"], default=None)), "")
row("  queued -> A stored the relay's 201, p50 / p99",
    f"{ms(quantile(lat['toAck'], .5))} / {ms(quantile(lat['toAck'], .99))}", "")
print_table(("what", "figure", "goal"), rows)
print("   Latency: B's log time of 'received message <id>' (after the commit) minus the message's created_at")
print("   (queued in A's file); both wall-clock times of this machine, each truncated to the ms.")
print(f"   Latency run: {lat['count']:,} of {lat['sent']['count']:,} stored by B, one message every "
      f"{1000 / lat['sent']['rate']:g} ms (sender at most {max(0, lat['sent']['maxLateSeconds']) * 1000:.0f} ms late). "
      f"Throughput run: {tput['count']:,} of {n:,} stored.")
if first_q and last_q and first_q < 0.75 * last_q:
    print(f"   A's send rate rose from {first_q:,.0f}/s to {last_q:,.0f}/s over the run: the first quarter goes while")
    print(f"   chat-sync-bench is still queueing ({sec(tput['sent']['seconds'])} in bursts of 100), the three processes sharing two cores.")
for r, name in ((lat, "latency"), (tput, "throughput")):
    if r["unlogged"] or r["count"] < r["sent"]["count"]:
        print(f"   WARNING: {name} run: {r['sent']['count'] - r['count']} message(s) missing in B's file, "
              f"{r['unlogged']} stored without a 'received' log line")
for name in ("a.log", "b.log"):
    lines = open(path(name), errors="replace").read().split("\n")
    lines = lines[:next((i for i, l in enumerate(lines) if "stopping (signal" in l), len(lines))]
    bad = [l.strip() for l in lines if re.search(r"failed|cannot|error|refused|closed|stopped:", l) and "metrics:" not in l]
    if bad:
        print(f"   NOTE: {name}: {len(bad)} line(s) about failures, first: {bad[0][:150]}")

# ---------------------------------------------------------------------------
# The storm.
print()


def storm(mode):
    r = json.load(open(path(f"storm-{mode}.json")))
    killed, up, relay_cpu = map(float, open(path(f"storm-{mode}.times")).read().split())
    events = [(c, t, k) for c, t, k in r["events"] if t >= killed]
    attempts = [t for c, t, k in events if k in ("connected", "failed")]
    per_second = collections.Counter(int((t - killed) // 1) for t in attempts)
    attempts.sort()

    def busiest(width):
        # The most attempts in any window [t, t + width) starting at an attempt, and that t.
        best, at, lo = 0, 0.0, 0
        for hi, t in enumerate(attempts):
            while attempts[lo] <= t - width:
                lo += 1
            if hi - lo + 1 > best:
                best, at = hi - lo + 1, attempts[lo] - killed
        return best, at

    first = lambda kind: {c: t for c, t, k in sorted(events, key=lambda e: -e[1]) if k == kind}
    connected, synced, closed = first("connected"), first("synced"), first("closed")
    peak_s, peak_t = busiest(1.0), busiest(0.1)
    return {
        "r": r, "killed": killed, "up": up, "relayCpu": relay_cpu, "attempts": len(attempts),
        "failed": sum(1 for c, t, k in events if k == "failed"),
        "peakSecond": peak_s, "peakTenth": peak_t, "perSecond": per_second,
        "allBack": max(connected.values()) - killed if len(connected) == r["clients"] else None,
        "allSynced": max(synced.values()) - killed if len(synced) == r["clients"] else None,
        "back": len(connected), "closedBy": max(closed.values()) - killed if closed else None,
        "firstBack": min(connected.values()) - killed if connected else None,
    }


j, f = storm("jitter"), storm("fixed")
ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "-"
rows = []
row = lambda what, a, b, ratio_text="": rows.append((what, a, b, ratio_text))
row("peak connection attempts per second (busiest 1 s)", f"{j['peakSecond'][0]:,}", f"{f['peakSecond'][0]:,}",
    ratio(j["peakSecond"][0], f["peakSecond"][0]))
row("  that second starts after the kill at", sec(j["peakSecond"][1]), sec(f["peakSecond"][1]))
row("peak attempts in the busiest 100 ms", f"{j['peakTenth'][0]:,}", f"{f['peakTenth'][0]:,}",
    ratio(j["peakTenth"][0], f["peakTenth"][0]))
row("connection attempts after the kill (failed)", f"{j['attempts']:,} ({j['failed']:,})", f"{f['attempts']:,} ({f['failed']:,})",
    ratio(j["attempts"], f["attempts"]))
row(f"time until all {clients} connected again, from the kill", sec(j["allBack"]), sec(f["allBack"]),
    ratio(j["allBack"], f["allBack"]))
row(f"  from the relay listening again ({down} s down)", sec(j["allBack"] and j["allBack"] - (j["up"] - j["killed"])),
    sec(f["allBack"] and f["allBack"] - (f["up"] - f["killed"])),
    ratio(j["allBack"] and j["allBack"] - (j["up"] - j["killed"]), f["allBack"] and f["allBack"] - (f["up"] - f["killed"])))
row("  first one back, from the kill", sec(j["firstBack"]), sec(f["firstBack"]))
row(f"time until all {clients} synced again, from the kill", sec(j["allSynced"]), sec(f["allSynced"]),
    ratio(j["allSynced"], f["allSynced"]))
row("all sockets seen closed within", ms(j["closedBy"]), ms(f["closedBy"]))
row("restarted relay's CPU until all were back", f"{j['relayCpu']:.2f} s", f"{f['relayCpu']:.2f} s")
row(f"driver's CPU ({clients} engines), kill to all back",
    f"{j['r']['cpuStormSeconds']:.2f} s", f"{f['r']['cpuStormSeconds']:.2f} s")
row("  then idle, connected", f"{j['r']['cpuIdleSeconds'] / j['r']['idleSeconds'] * 100:.1f}% of a core",
    f"{f['r']['cpuIdleSeconds'] / f['r']['idleSeconds'] * 100:.1f}% of a core")
print_table(("what", "with jitter (±50%)", "without jitter", "with/without"), rows)
for name, s in (("with jitter", j), ("without jitter", f)):
    last = max(s["perSecond"], default=0)
    print(f"   attempts per second from the kill, {name}: " + " ".join(str(s["perSecond"].get(i, 0)) for i in range(last + 1)))
print(f"   {clients} SyncEngines in one process (one file each), all connected and synced, then the relay was killed")
print(f"   (kill -9) and restarted on the same port {down} s later; backoff 1 s doubling to 30 s. An attempt is")
print("   counted when the engine logs its outcome ('socket: connected' / 'socket: cannot connect').")
print(f"   Starting the {clients} engines took {j['r']['startSeconds']:.1f} s / {f['r']['startSeconds']:.1f} s "
      f"(connect and first sync) after {j['r']['createSeconds']:.1f} s / {f['r']['createSeconds']:.1f} s making their files.")
for name, s in (("with jitter", j), ("without jitter", f)):
    r = s["r"]
    if r["timedOut"] or s["back"] < clients:
        print(f"   WARNING ({name}): only {s['back']} of {clients} engines came back before the driver's timeout")
    def when(reason):
        times = r.get("failureTimes", {}).get(reason, [])
        if not times or r["failures"][reason] > len(times):
            return ""
        return " at " + ", ".join(f"{t - s['killed']:.2f}" for t in times) + " s"
    reasons = ", ".join(f"{v} x '{k[:90]}'{when(k)}" for k, v in sorted(r["failures"].items(), key=lambda kv: -kv[1])[:3])
    if reasons:
        print(f"   {name}: failed attempts: {reasons}")
    for key, label in (("syncFailures", "sync errors"), ("otherLines", "other log lines")):
        lines = {k: v for k, v in r[key].items() if not k.startswith("contact ")}  # presence of users 1 and 2
        if lines:
            print(f"   NOTE ({name}): {label}: " + ", ".join(f"{v} x '{k[:90]}'" for k, v in sorted(lines.items(), key=lambda kv: -kv[1])[:3]))
