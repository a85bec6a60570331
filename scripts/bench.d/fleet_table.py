#!/usr/bin/env python3
"""Prints scripts/bench's fleet table from the timings fleet.sh recorded.

  fleet_table.py RESULTS.tsv FILES CORES

RESULTS.tsv: key, jobs, runs, and of the median run: wall s (date), user s and sys s (/usr/bin/time).
"""
import os, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import record

files, cores = int(sys.argv[2]), int(sys.argv[3])
results = {}
for line in open(sys.argv[1]):
    key, jobs, runs, wall, user, sys_ = line.split("\t")
    results[key, int(jobs)] = dict(runs=int(runs), wall=float(wall), cpu=float(user) + float(sys_))

labels = {
    "generate": "generate --users (2,000 msgs each)",
    "usage": "usage --all",
    "check": "check --all",
    "migrate": "migrate --all (already latest)",
    "migrate_v1": "migrate --all (from version 1)",
}

def secs(r):
    return (f"{r['wall']:.2f} s" if r["wall"] >= 1 else f"{r['wall']:.3f} s") + ("*" if r["runs"] == 1 else "")

rows = []
for key, label in labels.items():
    one, many = results.get((key, 1)), results.get((key, cores))
    if not one or not many:
        continue
    rate = lambda r: f"{files / r['wall']:,.0f}" if r["wall"] > 0 else "-"
    rows.append((label, secs(one), rate(one), secs(many), rate(many),
                 f"{one['wall'] / many['wall']:.2f}x" if many["wall"] > 0 else "-",
                 f"{one['cpu'] / one['wall']:.2f} / {many['cpu'] / many['wall']:.2f}" if one["wall"] > 0 and many["wall"] > 0 else "-"))

head = ("what", "--jobs 1", "files/s", f"--jobs {cores}", "files/s", "speed-up", "cores busy (1 / N)")
widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
for r in [head] + rows:
    print("   " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
record.table("fleet", head, rows, [f"{files:,} files; speed-up: wall time at --jobs 1 over --jobs {cores}; "
                                   "cores busy: CPU s over wall s; * one run, other times: median of 3."])
print(f"   {files:,} files. * one run (it took 5 s or more); other times are the median of 3 runs (by wall time).")
print(f"   speed-up: wall time at --jobs 1 over wall time at --jobs {cores}; cores busy: (user + system CPU s) / wall s.")
