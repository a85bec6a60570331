#!/usr/bin/env python3
"""Prints the relay section's table from the JSON objects relay_load.py wrote.

  relay_table.py DIR

DIR holds relay-idle.json, relay-pairs.json (the relay), relay-tls-idle.json,
relay-tls-pairs.json (the relay serving TLS) and echo-idle.json, echo.json (the bare
libwebsockets echo server).
"""
import json, os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record

d = sys.argv[1]
load = lambda name: json.load(open(os.path.join(d, name)))
ri, rp, ei, ee = load("relay-idle.json"), load("relay-pairs.json"), load("echo-idle.json"), load("echo.json")

rows = []


def row(what, relay, echo, ratio, goal="", ok=None):
    rows.append((what, relay, echo, ratio, goal, "" if ok is None else ("✔" if ok else "✘")))


kib = lambda b: f"{b / 1024:,.1f} KiB"
ms = lambda v: "-" if v is None else f"{v:,.2f} ms"
ratio = lambda a, b: f"{a / b:.2f}x" if a and b else "-"

rk, ek = ri["bytesPerConnection"], ei["bytesPerConnection"]
row(f"memory per idle socket ({ri['opened']:,} open)", kib(rk) if rk is not None else "-",
    kib(ek) if ek is not None else "-", ratio(rk, ek), "<= 16 KiB",
    rk is not None and ri["failed"] == 0 and rk <= 16 * 1024)
row("  RSS before -> after", f"{ri['rssBeforeBytes'] / 2**20:.1f} -> {ri['rssAfterBytes'] / 2**20:.1f} MiB",
    f"{ei['rssBeforeBytes'] / 2**20:.1f} -> {ei['rssAfterBytes'] / 2**20:.1f} MiB", "")
row("  time to open them", f"{ri['openSeconds']:.1f} s", f"{ei['openSeconds']:.1f} s", ratio(ri["openSeconds"], ei["openSeconds"]))
row(f"messages/s ({rp['clients']} pairs; echo: round trips)", f"{rp['perSecond']:,.0f}", f"{ee['perSecond']:,.0f}",
    ratio(rp["perSecond"], ee["perSecond"]), ">= 5,000", rp["perSecond"] >= 5000 and rp["lost"] == 0)
row("latency p50", ms(rp["latencyP50Ms"]), ms(ee["latencyP50Ms"]), ratio(rp["latencyP50Ms"], ee["latencyP50Ms"]))
row("latency p99", ms(rp["latencyP99Ms"]), ms(ee["latencyP99Ms"]), ratio(rp["latencyP99Ms"], ee["latencyP99Ms"]),
    "<= 50 ms", rp["latencyP99Ms"] is not None and rp["latencyP99Ms"] <= 50)
row("latency max", ms(rp["latencyMaxMs"]), ms(ee["latencyMaxMs"]), "")
row("  POST answered, p50 / p99", f"{ms(rp['postP50Ms'])} / {ms(rp['postP99Ms'])}", "", "")
row("  server cores busy", f"{rp['serverCores']:.2f}", f"{ee['serverCores']:.2f}", "")
row(f"  generator cores busy ({rp['workers']} process{'es' if rp['workers'] > 1 else ''})",
    f"{rp['generatorCores']:.2f}", f"{ee['generatorCores']:.2f}", "")
per = lambda r: r["serverCpuSeconds"] / (r["perSecond"] * r["seconds"]) * 1e6 if r["perSecond"] else None
rpm, epm = per(rp), per(ee)
row("  server CPU per message (echo: per round trip)", f"{rpm:,.0f} µs" if rpm else "-", f"{epm:,.0f} µs" if epm else "-",
    ratio(rpm, epm))
row("  => messages/s if the server had one core to itself", f"{1e6 / rpm:,.0f}" if rpm else "-",
    f"{1e6 / epm:,.0f}" if epm else "-", "")
row("  runnable, waiting for a core: server / generator",
    f"{rp['serverRunqueueWaitSeconds']:.2f} / {rp['generatorRunqueueWaitSeconds']:.2f} s",
    f"{ee['serverRunqueueWaitSeconds']:.2f} / {ee['generatorRunqueueWaitSeconds']:.2f} s", "")

# The relay over TLS beside itself in plaintext (issue 28's goals).
if os.path.exists(os.path.join(d, "relay-tls-pairs.json")):
    ti, tp = load("relay-tls-idle.json"), load("relay-tls-pairs.json")
    tk = ti["bytesPerConnection"]
    row(f"TLS: memory per idle socket ({ti['opened']:,} open; plaintext in column 3)",
        kib(tk) if tk is not None else "-", kib(rk) if rk is not None else "-", ratio(tk, rk), "<= 32 KiB",
        tk is not None and ti["failed"] == 0 and tk <= 32 * 1024)
    row("TLS: messages/s (plaintext in column 3)", f"{tp['perSecond']:,.0f}", f"{rp['perSecond']:,.0f}",
        ratio(tp["perSecond"], rp["perSecond"]), ">= 0.8x plaintext",
        tp["perSecond"] >= 0.8 * rp["perSecond"] and tp["lost"] == 0)
    row("TLS: latency p50 / p99", f"{ms(tp['latencyP50Ms'])} / {ms(tp['latencyP99Ms'])}",
        f"{ms(rp['latencyP50Ms'])} / {ms(rp['latencyP99Ms'])}", ratio(tp["latencyP99Ms"], rp["latencyP99Ms"]))
    tpm = per(tp)
    row("TLS:   server CPU per message", f"{tpm:,.0f} µs" if tpm else "-", f"{rpm:,.0f} µs" if rpm else "-",
        ratio(tpm, rpm))
    row("TLS:   => messages/s if the server had one core to itself", f"{1e6 / tpm:,.0f}" if tpm else "-",
        f"{1e6 / rpm:,.0f}" if rpm else "-", ratio(rpm, tpm))
    row("TLS:   generator cores busy", f"{tp['generatorCores']:.2f}", f"{rp['generatorCores']:.2f}", "")

head = ("what", "chat-relay", "lws echo", "ratio", "goal", "")
widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
for r in [head] + rows:
    print("   " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())

record.table("relay", head, rows, [
    f"Idle: authenticated sockets over {ri['users']} users, RSS of the server (after - before) / sockets. "
    f"Pairs: {rp['clients']} keep-alive HTTP/1.1 senders, one POST in flight each, {rp['seconds']:g} s; "
    "latency from the POST to the recipient's new_message."])
print("   (server and generator cores busy are CPU seconds over the measured window, all threads.)")
print(f"   Idle: authenticated sockets over {ri['users']} users, RSS of the server process (after - before) / sockets.")
print(f"   Pairs: {rp['clients']} keep-alive HTTP/1.1 senders, one POST in flight each, {rp['seconds']:g} s after "
      f"{rp['warmup']:g} s of warm-up; latency from the POST to the recipient's new_message.")
print(f"   {rp['posted']:,} messages answered 201, {rp['delivered']:,} delivered, {rp['lost']:,} lost, "
      f"{rp['postErrors']:,} POST errors{' (first: ' + rp['firstPostError'] + ')' if rp['firstPostError'] else ''}.")
for name, r in (("chat-relay", rp), ("lws echo", ee)):
    total = r["serverCores"] + r["generatorCores"]
    if r["generatorCores"] >= 0.9 * r["workers"]:
        side = "the generator saturates (it is at its cores' limit): the server's figure is a lower bound"
    elif total >= 0.9 * r["machineCores"]:
        side = f"the machine's {r['machineCores']} cores are saturated (server + generator = {total:.2f})"
    elif r["serverRunqueueWaitSeconds"] >= 0.1 * r["seconds"]:
        side = (f"the server waited {r['serverRunqueueWaitSeconds']:.1f} s of {r['seconds']:g} s for a core: "
                "CPU contention (the generator, or other load on the machine) limits it")
    elif r["serverCores"] >= 0.8:
        side = (f"the server is CPU-bound ({r['serverCores']:.2f} of a core; one service thread does the work): "
                f"{per(r):,.0f} µs of CPU per message")
    else:
        side = "neither side is at a core's limit: latency-bound (one request in flight per client)"
    print(f"   {name}: {side}.")
if ri["failed"] or ei["failed"]:
    print(f"   WARNING: {ri['failed']} relay / {ei['failed']} echo idle sockets failed to open; first: "
          f"{ri['firstError'] or ei['firstError']}")
