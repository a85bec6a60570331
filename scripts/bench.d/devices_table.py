#!/usr/bin/env python3
"""Prints the devices section's tables from the JSON files devices.sh left, and records them.

  devices_table.py DIR

DIR (WORK/devices) holds result-*.json: fanout-3, fanout-3-paced, fanout-1, fanout-1-paced
(devices_load.py fanout); bootstrap-fill, bootstrap-ack (fill, ack), bootstrap-run (the
new device's `chat-sync run --once`, with its log bootstrap-run.log); storage-fill,
storage-ack-30, storage-ack-0 (fill, ack) and storage-filled, storage-30, storage-0 (the
relay file measured). A part not run has no files and no table.
"""
import json, os, re, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record

d = sys.argv[1]


def load(name):
    path = os.path.join(d, f"result-{name}.json")
    return json.load(open(path)) if os.path.exists(path) else None


def text(name):
    path = os.path.join(d, name)
    return open(path).read().strip() if os.path.exists(path) else ""


def mark(ok):
    return "" if ok is None else ("✔" if ok else "✘")


def show(head, rows):
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("   " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())


ms = lambda v: "-" if v is None else f"{v:,.2f} ms"
ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "-"
mib = lambda b: f"{b / 2**20:,.1f} MiB"
load_note = f"Load average {text('load-start.txt')} at the start, {text('load-end.txt')} at the end (2 cores shared with other work)."

# ---------------------------------------------------------------------------
# 1. Fan-out
m, s, mp, sp = load("fanout-3"), load("fanout-1"), load("fanout-3-paced"), load("fanout-1-paced")
if m and s and mp and sp:
    rows = []

    def row(what, multi, single, r="", goal="", ok=None):
        rows.append((what, multi, single, r, goal, mark(ok)))

    per = lambda r: r["serverCpuSeconds"] / r["done"] * 1e6 if r["done"] else None
    tput = m["perSecond"] / s["perSecond"] if s["perSecond"] else 0
    row(f"messages/s, {m['senders']} senders, one POST in flight each", f"{m['perSecond']:,.0f}", f"{s['perSecond']:,.0f}",
        f"{tput:.2f}x", ">= 0.8x the 1-device run", tput >= 0.8 and m["lost"] == 0)
    row("  new_message frames/s (sockets a message goes to)",
        f"{m['perSecond'] * m['socketsPerMessage']:,.0f} ({m['socketsPerMessage']})",
        f"{s['perSecond'] * s['socketsPerMessage']:,.0f} ({s['socketsPerMessage']})", "")
    row("  latency p50, POST -> last socket", ms(m["latencyP50Ms"]), ms(s["latencyP50Ms"]),
        ratio(m["latencyP50Ms"], s["latencyP50Ms"]))
    row("  latency p99, POST -> last socket", ms(m["latencyP99Ms"]), ms(s["latencyP99Ms"]),
        ratio(m["latencyP99Ms"], s["latencyP99Ms"]))
    row("  POST answered, p50 / p99", f"{ms(m['postP50Ms'])} / {ms(m['postP99Ms'])}",
        f"{ms(s['postP50Ms'])} / {ms(s['postP99Ms'])}", "")
    row("  relay cores busy / generator cores busy", f"{m['serverCores']:.2f} / {m['generatorCores']:.2f}",
        f"{s['serverCores']:.2f} / {s['generatorCores']:.2f}", "")
    row("  runnable, waiting for a core: relay / generator",
        f"{m['serverRunqueueWaitSeconds']:.2f} / {m['generatorRunqueueWaitSeconds']:.2f} s",
        f"{s['serverRunqueueWaitSeconds']:.2f} / {s['generatorRunqueueWaitSeconds']:.2f} s", "")
    pm, ps = per(m), per(s)
    row("  relay CPU per message", f"{pm:,.0f} µs" if pm else "-", f"{ps:,.0f} µs" if ps else "-", ratio(pm, ps))
    row("  => messages/s if the relay had a core to itself", f"{1e6 / pm:,.0f}" if pm else "-",
        f"{1e6 / ps:,.0f}" if ps else "-", ratio(ps, pm))
    rate = mp["offeredPerSecond"]
    row(f"paced at half the 3-device rate ({rate:,.0f} msg/s): latency p99", ms(mp["latencyP99Ms"]), ms(sp["latencyP99Ms"]),
        ratio(mp["latencyP99Ms"], sp["latencyP99Ms"]), "<= 50 ms (3 devices)",
        mp["latencyP99Ms"] is not None and mp["latencyP99Ms"] <= 50 and mp["lost"] == 0)
    row("  latency p50 / max", f"{ms(mp['latencyP50Ms'])} / {ms(mp['latencyMaxMs'])}",
        f"{ms(sp['latencyP50Ms'])} / {ms(sp['latencyMaxMs'])}", "")
    row("  first socket p99 (3 devices: the first of 5)", ms(mp["firstP99Ms"]), ms(sp["firstP99Ms"]), "")
    row("  achieved messages/s; relay cores busy", f"{mp['perSecond']:,.0f}; {mp['serverCores']:.2f}",
        f"{sp['perSecond']:,.0f}; {sp['serverCores']:.2f}", "")
    head = ("what", f"{m['users']} users x {m['devicesPerUser']} devices", f"{s['users']} users x 1 device", "ratio", "goal", "")
    notes = [
        f"{m['users']} users in pairs, each user's first device posting to its partner over one keep-alive HTTP/1.1 "
        f"connection (POST /v2/messages, {m['contentBytes']}-byte content), every device a WebSocket with its own token; "
        f"{m['seconds']:g} s after {m['warmup']:g} s of warm-up, {m['workers']} generator processes. A message counts "
        f"when the last of the sockets it goes to got its new_message ({m['socketsPerMessage']} with 3 devices: the "
        "recipient's 3 and the sender's 2 others; 1 with 1 device); latency from just before the POST is written. "
        "The paced runs send at half the 3-device closed-loop rate, each sender on its own schedule, both device "
        "counts at that same rate.",
        load_note,
    ]
    print()
    print("   1. Fan-out: every device of both parties gets each message")
    show(head, rows)
    for r in (m, s, mp, sp):
        if r["lost"] or r["postErrors"] or r["strays"]:
            print(f"   WARNING: {r['devicesPerUser']} device(s){' paced' if r['offeredPerSecond'] else ''}: {r['lost']} "
                  f"messages not at every socket, {r['postErrors']} POST errors ({r['firstPostError']}), "
                  f"{r['strays']} stray events")
            notes.append(f"{r['devicesPerUser']} device(s){' paced' if r['offeredPerSecond'] else ''}: {r['lost']} "
                         f"messages did not reach every socket, {r['postErrors']} POST errors.")
    for name, r in (("3 devices", m), ("1 device", s)):
        total = r["serverCores"] + r["generatorCores"]
        if r["generatorCores"] >= 0.9 * r["workers"]:
            side = "the generator is at its processes' limit: the relay's figure is a lower bound"
        elif total >= 0.85 * r["machineCores"] or (r["serverRunqueueWaitSeconds"] + r["generatorRunqueueWaitSeconds"]
                                                   >= 0.2 * r["seconds"]):
            side = (f"the machine's {r['machineCores']} cores are the limit: relay {r['serverCores']:.2f} + generator "
                    f"{r['generatorCores']:.2f} cores busy, and both waited for a core (relay "
                    f"{r['serverRunqueueWaitSeconds']:.1f} s, generator {r['generatorRunqueueWaitSeconds']:.1f} s of "
                    f"{r['seconds']:g} s)")
        elif r["serverCores"] >= 0.8:
            side = f"the relay is CPU-bound ({r['serverCores']:.2f} of a core on its one service thread)"
        else:
            side = "neither side is at a core's limit: latency-bound (one request in flight per sender)"
        line = f"{name}, closed loop: {side}."
        print(f"   {line}")
        notes.append(line)
    record.table("devices", head, rows, notes)

# ---------------------------------------------------------------------------
# 2. Bootstrap
fill, acked, run = load("bootstrap-fill"), load("bootstrap-ack"), load("bootstrap-run")
if fill and acked and run:
    rows = []
    window = run["window"]
    rate = window / run["seconds"] if run["seconds"] else 0
    log = text("bootstrap-run.log")
    pages = re.findall(r"sync: (\d+) page\(s\)", log)
    page_size = text("page-size.txt") or "?"
    rows.append((f"window on the relay: user 1's messages", f"{window:,}", "",
                 f"posted in {fill['seconds']:.0f} s ({fill['perSecond']:,.0f}/s), half sent, half received", ""))
    rows.append(("new device: chat-sync run --once into an empty folder", f"{run['seconds']:.2f} s",
                 "", f"exit {run['exit']}; {pages[-1] if pages else '?'} pages", mark(run["exit"] == 0)))
    rows.append(("  messages/s into the file", f"{rate:,.0f}", ">= 20,000", "", mark(rate >= 20000)))
    rows.append(("  messages in the file (sqlite3 count)", f"{run['messagesInFile']:,}", f"= {window:,}", "",
                 mark(run["messagesInFile"] == window)))
    cpu = run["relayCpuSeconds"] / window * 1e6
    rows.append(("  relay CPU per message", f"{cpu:,.1f} µs", "", f"{run['relayCpuSeconds']:.2f} s over the run", ""))
    client = run["clientCpuSeconds"] / window * 1e6
    rows.append(("  chat-sync's CPU per message", f"{client:,.1f} µs", "",
                 f"{run['clientCpuSeconds']:.2f} s ({run['clientCpuSeconds'] / run['seconds']:.2f} of a core); "
                 f"peak RSS {run['clientPeakKiB'] / 1024:,.0f} MiB", ""))
    rows.append(("  cores busy: chat-sync / relay",
                 f"{run['clientCpuSeconds'] / run['seconds']:.2f} / {run['relayCpuSeconds'] / run['seconds']:.2f}", "",
                 "the next page is fetched and decoded while one is stored", ""))
    rows.append(("  the data folder after it", mib(run["folderBytes"]), "", "", ""))
    alt = load("bootstrap-run-page1000")
    if alt:
        alt_rate = window / alt["seconds"] if alt["seconds"] else 0
        rows.append(("  with --page-size 1000", f"{alt['seconds']:.2f} s", ">= 20,000",
                     f"{alt_rate:,.0f} msg/s; {alt['messagesInFile']:,} in the file", mark(alt_rate >= 20000)))
        option = "chat-sync run has --page-size (run again with 1000 above)."
    else:
        option = (f"chat-sync run has no --page-size option: the engine fetches {page_size} messages a page "
                  "(SyncEngine.Options.pageSize), the relay allows up to 1,000.")
    head = ("what", "figure", "goal", "detail", "")
    notes = [
        f"User 1 with 100 contacts: {window:,} messages posted through POST /v2/messages (keep-alive connections), "
        f"then user 1's first device fetched and acknowledged its log ({acked['deliveryAcks']:,} delivery_acks), "
        "so the window is what a second device of an active user finds. Then `chat-relay device add` and the new "
        "device's `chat-sync run --once --data-dir EMPTY --user 1 --token-file F` (0600), timed whole (process start "
        "to exit, the file created and migrated); the relay's CPU from /proc/<pid>/stat before and after. "
        + option,
        load_note,
    ]
    print()
    print("   2. Bootstrap: a new device fetches the window")
    show(head, rows)
    print(f"   {option}")
    record.table("devices", head, rows, notes)

# ---------------------------------------------------------------------------
# 3. Relay storage
fill, before, kept, gone = load("storage-fill"), load("storage-filled"), load("storage-30"), load("storage-0")
ack30, ack0 = load("storage-ack-30"), load("storage-ack-0")
if fill and before and kept and gone and ack30 and ack0:
    n = fill["messages"]
    rows = []

    def row(what, a, b, c, goal="", ok=None):
        rows.append((what, a, b, c, goal, mark(ok)))

    live = lambda r: sum(t["bytes"] for t in r["dbstat"])
    row("RelayMessages rows", f"{before['rows']['RelayMessages']:,}", f"{kept['rows']['RelayMessages']:,}",
        f"{gone['rows']['RelayMessages']:,}", f"{n:,} with 30 days (once, not per device); 0 with retention 0",
        kept["rows"]["RelayMessages"] == n and gone["rows"]["RelayMessages"] == 0)
    row("RelayRequests rows (idempotency records)", f"{before['rows']['RelayRequests']:,}",
        f"{kept['rows']['RelayRequests']:,}", f"{gone['rows']['RelayRequests']:,}", "")
    row("RelayStatusUpdates / RelayPushes rows",
        *(f"{r['rows']['RelayStatusUpdates']:,} / {r['rows']['RelayPushes']:,}" for r in (before, kept, gone)),
        "0 / 0 once acknowledged", all(r["rows"]["RelayStatusUpdates"] == 0 and r["rows"]["RelayPushes"] == 0
                                       for r in (kept, gone)))
    row("devices behind their user's log", *(f"{r['devicesBehind']:,} of {r['devices']:,}" for r in (before, kept, gone)),
        "0 once acknowledged", kept["devicesBehind"] == 0 and gone["devicesBehind"] == 0)
    row("relay.db after a checkpoint", *(mib(r["fileBytes"]) for r in (before, kept, gone)), "")
    row("  of it free pages", *(mib(r["freePages"] * r["pageSize"]) for r in (before, kept, gone)), "")
    row("  VACUUM INTO a copy", *(mib(r["vacuumedBytes"]) for r in (before, kept, gone)), "")
    row("bytes per message posted (file / messages)", *(f"{r['fileBytes'] / n:,.0f} B" for r in (before, kept, gone)), "")
    row("  in pages in use (dbstat)", *(f"{live(r) / n:,.0f} B" for r in (before, kept, gone)), "")
    row("  of it the content", *(f"{r['contentBytes'] / n:,.0f} B" for r in (before, kept, gone)), "")
    # Per table, in the order of the acknowledged file's sizes; the small ones together.
    sizes = lambda r: {t["name"]: t["bytes"] for t in r["dbstat"]}
    sb, sk, sg = sizes(before), sizes(kept), sizes(gone)
    names = sorted(set(sb) | set(sk) | set(sg), key=lambda k: -max(sk.get(k, 0), sb.get(k, 0)))
    big = [k for k in names if max(sb.get(k, 0), sk.get(k, 0), sg.get(k, 0)) >= 0.01 * live(before)]
    cell = lambda v: f"{v / n:,.1f} B ({mib(v)})"
    for k in big:
        row(f"  {k}", cell(sb.get(k, 0)), cell(sk.get(k, 0)), cell(sg.get(k, 0)), "")
    rest = [k for k in names if k not in big]
    row(f"  the {len(rest)} others (users, devices, contacts, schema, ...)",
        *(cell(sum(s.get(k, 0) for k in rest)) for s in (sb, sk, sg)), "")
    # Retention 0: what is left should be the idempotency records (kept --idempotency-days after
    # their message), beside the users, their devices and contacts.
    requests = sg.get("RelayRequests", 0) + sg.get("sqlite_autoindex_RelayRequests_1", 0)
    fixed = sum(sg.get(k, 0) for k in ("RelayUsers", "RelayDevices", "RelayDevicesByUser", "RelayDevicesByLookupKey",
                                       "RelayContacts", "sqlite_schema", "sqlite_sequence", "chatdb_migrations",
                                       "RelayCounters"))
    only = (gone["rows"]["RelayMessages"] == 0 and gone["rows"]["RelayStatusUpdates"] == 0
            and gone["rows"]["RelayPushes"] == 0 and gone["rows"]["RelayReadMarks"] == 0)
    row("left with retention 0: idempotency records", "", "",
        f"{requests / live(gone):.0%} of the pages in use ({mib(requests)}; users, devices, contacts "
        f"{mib(fixed)}; {gone['rows']['RelayRequests'] and requests / gone['rows']['RelayRequests']:,.0f} B a record)",
        "idempotency records only", only)
    head = ("what", "filled, nothing acknowledged", "all acknowledged, retention 30 days (default)",
            "all acknowledged, retention 0", "goal", "")
    users = ack30["users"]
    notes = [
        f"{n:,} messages ({fill['contentBytes']}-byte content) posted through POST /v2/messages by {users:,} users with "
        f"2 devices each (each user's devices in turn, to 20 contacts each), in {fill['seconds']:.0f} s "
        f"({fill['perSecond']:,.0f}/s), every user's first device holding a WebSocket (no push records). The file was "
        "then copied: one copy served with the default retention (30 days), the other with `--retention-days 0`, and in "
        "each every device acknowledged through the protocol: each user's first device fetched its log and sent "
        f"delivery_ack for what it received ({ack30['deliveryAcks']:,} and {ack0['deliveryAcks']:,}), then every "
        "device fetched its log and status updates and named both cursors in GET /v2/messages "
        f"({ack30['gets']:,} and {ack0['gets']:,} GETs, {ack30['seconds']:.0f} s and {ack0['seconds']:.0f} s). "
        "Sizes after the relay stopped and `PRAGMA wal_checkpoint(TRUNCATE)`; per table from dbstat (pages in use "
        "by each table or index), per message posted.",
        load_note,
    ]
    print()
    print(f"   3. Relay storage: {n:,} messages between {users:,} users with 2 devices each")
    show(head, rows)
    left = {k: v for k, v in gone["rows"].items() if v and k not in ("RelayUsers", "RelayDevices", "RelayContacts",
                                                                     "RelayCounters")}
    line = ("With retention 0, what is left besides users, devices and contacts: "
            + ", ".join(f"{k} {v:,} rows" for k, v in left.items()) + f"; {mib(gone['vacuumedBytes'])} once vacuumed.")
    print(f"   {line}")
    notes.insert(1, line)
    record.table("devices", head, rows, notes)

seconds = text("seconds.txt")
if seconds:
    print(f"   the devices section took {seconds} s")
