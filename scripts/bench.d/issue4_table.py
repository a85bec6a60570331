#!/usr/bin/env python3
"""Prints scripts/bench's issue-4 table from the timings it recorded.

  issue4_table.py RESULTS.tsv SIZES.tsv MESSAGES MEMORY_MESSAGES|0

RESULTS.tsv: key, runs, wall s, user s, sys s, RSS KB of the median run, max RSS KB
over the runs (one line per measurement, from /usr/bin/time). SIZES.tsv: key, bytes.
"""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record

results, sizes = {}, {}
for line in open(sys.argv[1]):
    key, runs, wall, user, sys_, rss, rss_max = line.split("\t")
    results[key] = dict(runs=int(runs), wall=float(wall), cpu=float(user) + float(sys_), rss=int(rss),
                        rss_max=int(rss_max))
# A key measured in two rounds (KEY and KEY_2, taking turns with the others): the faster
# run stands for it, and both are shown.
rounds = {}
for key in [k for k in results if k.endswith("_2") and k[:-2] in results]:
    first, second = results[key[:-2]], results.pop(key)
    rounds[key[:-2]] = (first["wall"], second["wall"])
    if second["wall"] < first["wall"]:
        results[key[:-2]] = dict(second, rss_max=max(first["rss_max"], second["rss_max"]))
    else:
        first["rss_max"] = max(first["rss_max"], second["rss_max"])
for line in open(sys.argv[2]):
    key, size = line.split("\t")
    sizes[key] = int(size)
messages, big = int(sys.argv[3]), int(sys.argv[4])
LIMIT_KB = 64 * 1024  # 64 MiB; /usr/bin/time's %M is in KiB

def secs(key):
    r = results[key]
    if key in rounds:
        return f"{r['wall']:.2f} s (best of {rounds[key][0]:.2f}, {rounds[key][1]:.2f})"
    return f"{r['wall']:.2f} s" + ("*" if r["runs"] == 1 else "")

def mb(n):
    return f"{n / 1e6:.1f} MB"

def kb(n):
    return f"{n / 1024:.1f} MiB"

rows = []

def row(what, figure, peer, ratio, goal, ok, cpu=""):
    rows.append((what, figure, peer, ratio, goal, "" if ok is None else ("PASS" if ok else "MISS"), cpu))

def versus(what, key, peer_label, peer, limit, faster_than=False):
    """chatdb's time over the peer's: PASS when at most `limit` (below 1 when faster_than)."""
    if key not in results or peer not in results:
        return
    a, b = results[key], results[peer]
    ratio, cpu = a["wall"] / b["wall"], a["cpu"] / b["cpu"]
    ok = ratio < limit if faster_than else ratio <= limit
    goal = "faster (< 1x)" if faster_than else f"<= {limit:.2f}x"
    shown = f"{ratio:.3f}x" if abs(ratio - limit) < 0.005 else f"{ratio:.2f}x"  # no "1.50x MISS" for 1.502
    row(what, secs(key), f"{peer_label} {secs(peer)}", shown, goal, ok, f"{cpu:.2f}x")

raw = "raw_insert"
# Issue 12: against SQLite copying the same rows into the same schema with its indexes:
# ATTACH + INSERT SELECT, then FTS5 building the search index (migration 0005) the
# fastest way it can, so both files end the same (chatdb check --full agrees).
versus("generate -> database (issue 12)", "generate_db", "ATTACH copy + FTS5 build", "attach_copy_indexed", 1.30)
versus("import NDJSON (issue 12)", "import_plain", "ATTACH copy + FTS5 build", "attach_copy_indexed", 1.50)
versus("import NDJSON.zst (issue 12)", "import_zst", "ATTACH copy + FTS5 build", "attach_copy_indexed", 1.50)
# For reference: the rows alone (the anchor before the search index existed), and the C
# raw insert of issue 4, which writes no search index either.
def info(what, key, peer_label, peer):
    if key in results and peer in results:
        a, b = results[key], results[peer]
        row(what, secs(key), f"{peer_label} {secs(peer)}", f"{a['wall'] / b['wall']:.2f}x", "", None,
            f"{a['cpu'] / b['cpu']:.2f}x")
info("generate -> database (info)", "generate_db", "ATTACH copy, rows only", "attach_copy")
info("import NDJSON (info)", "import_plain", "ATTACH copy, rows only", "attach_copy")
info("generate -> database (info)", "generate_db", "C raw insert, rows only", raw)
info("import NDJSON (info)", "import_plain", "C raw insert, rows only", raw)
info("import NDJSON.zst (info)", "import_zst", "C raw insert, rows only", raw)
# The shell's .import runs with triggers off and builds no search index: for reference.
info("import NDJSON (info)", "import_plain", "sqlite3 .import CSV, rows only", "sqlite3_import")
# sqlite-utils inserts through Python's sqlite3, which cannot turn triggers off: its rows
# go through the summary and search triggers, so it ends with the same file.
versus("import NDJSON", "import_plain", "sqlite-utils --nl", "sqlite_utils", 1.0, faster_than=True)
for what, key in (("generate -> database (info)", "generate_db"), ("import NDJSON (info)", "import_plain")):
    if key in results and "raw_insert_tuned" in results:
        a, b = results[key], results["raw_insert_tuned"]
        row(what, secs(key), f"C, wal_autocheckpoint=16384 {secs('raw_insert_tuned')}", f"{a['wall'] / b['wall']:.2f}x",
            "", None, f"{a['cpu'] / b['cpu']:.2f}x")

if "export" in results and "dump" in results:
    e, d, j = results["export"], results["dump"], results.get("json")
    speedup = d["wall"] / e["wall"]
    shown = f"{speedup:.3f}x" if abs(speedup - 1.5) < 0.005 else f"{speedup:.2f}x"
    row("export -> .ndjson.zst", secs("export"), f".dump | zstd -3 {secs('dump')}", f"{shown} faster",
        ">= 1.50x faster", speedup >= 1.5, f"{d['cpu'] / e['cpu']:.2f}x")
    row("export size", mb(sizes["export"]), f".dump | zstd -3 {mb(sizes['dump'])}",
        f"{sizes['export'] / sizes['dump']:.3f}x", "<= 1x (no larger)", sizes["export"] <= sizes["dump"])
    if j:
        row("export (info)", secs("export"), f"sqlite3 -json | zstd -3 {secs('json')}",
            f"{j['wall'] / e['wall']:.2f}x faster", "", None, f"{j['cpu'] / e['cpu']:.2f}x")
        row("export size (info)", mb(sizes["export"]), f"sqlite3 -json | zstd -3 {mb(sizes['json'])}",
            f"{sizes['export'] / sizes['json']:.3f}x", "", None)

for what, key in (("import", "import_plain"), ("export", "export")):
    if key not in results:
        continue
    small = results[key]["rss_max"]
    row(f"{what} peak RSS, {messages:,} msgs", kb(small), "", "", "< 64 MiB", small < LIMIT_KB)
    bigkey = f"{key}_big"
    if big and bigkey in results:
        large = results[bigkey]["rss_max"]
        row(f"{what} peak RSS, {big:,} msgs", kb(large), f"at {messages:,}: {kb(small)}", f"{large / small:.3f}x",
            "within 10%, < 64 MiB", abs(large / small - 1) <= 0.10 and large < LIMIT_KB)
    elif not big:
        row(f"{what} peak RSS, {5 * messages:,} msgs", "not run", "", "", "(scripts/bench --memory-check)", None)

if "generate_ndjson" in results:
    row("generate -> NDJSON (info)", secs("generate_ndjson"), f"{mb(sizes['ndjson'])} written", "", "", None)
if big and "generate_ndjson_big" in results:
    row(f"generate -> NDJSON, {big:,} msgs (info)", secs("generate_ndjson_big"), "", "", "", None)

head = ("what", "chatdb", "peer", "ratio", "goal", "result", "cpu ratio")
widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
for r in [head] + rows:
    print("   " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
print("   * one run (it took 5 s or more); \"best of\": the faster of two rounds, taken in turn with the anchor's;"
      " other times are the median of 3 runs (by wall time).")
print("   ratio: wall-clock time of chatdb over the peer's (export: the peer's over chatdb's);"
      " cpu ratio: the same with user+system CPU seconds.")
record.table("writers", head[:6], [r[:6] for r in rows], [
    "ratio: wall-clock time of chatdb over the peer's (export: the peer's over chatdb's); "
    "\"best of\": the faster of two rounds taken in turn with the anchor's; * one run; other times: median of 3."])
missed = [r[0] + (f" vs {r[2].split(' (best of')[0].rsplit(' ', 2)[0]}" if r[2] else "") for r in rows if r[5] == "MISS"]
print(f"   goals missed: {len(missed)}" + (" (" + "; ".join(missed) + ")" if missed else ""))
