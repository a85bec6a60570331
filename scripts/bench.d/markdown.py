#!/usr/bin/env python3
"""Writes docs/performance.md from the bench parts' results files (scripts/bench --markdown).

  markdown.py RESULTS_DIR OUTPUT.md

RESULTS_DIR holds <part>.json as scripts/bench.d/record.py writes them. Each part is
rendered with the date it ran; a part never run is named as such. Nothing else is kept:
the previous figures are replaced, not appended to.
"""
import json, os, sys

PARTS = [  # (part, how to run it alone)
    ("reads", "scripts/bench --only storage"),
    ("writers", "scripts/bench --only storage"),
    ("storage", "scripts/bench --only storage"),
    ("search", "scripts/bench --only search"),
    ("fleet", "scripts/bench --only fleet"),
    ("relay", "scripts/bench --only relay"),
    ("devices", "scripts/bench --only devices"),
    ("sync", "scripts/bench --only sync"),
    ("migrate", "scripts/bench --only migrate"),
    ("media", "scripts/bench --only media"),
]
MARKER = "<!-- Written by scripts/bench --markdown from bench-data/results/*.json: do not edit by hand. -->"
RESULT = {"PASS": "✔ pass", "MISS": "✘ miss", "✔": "✔ pass", "✘": "✘ miss"}


def cell(text):
    text = RESULT.get(text.strip(), text.strip())
    return text.replace("|", "\\|") or " "


def render(folder):
    out = [MARKER, "", "# Performance", "",
           "`scripts/bench` builds in release mode and measures each goal beside its peer on the same",
           "machine (the sqlite3 shell, sqlite-utils, a C program at SQLite's own limit, a bare",
           "libwebsockets server). `scripts/bench --markdown` writes this page from the figures each part",
           "keeps in `bench-data/results/<part>.json`; a part run alone (`--only`) replaces its own",
           "figures and date. Ratios are chatdb's time over the peer's unless the row says otherwise.",
           "Each part says when it ran and the machine's load average as it started: above the number",
           "of cores, other work shared the machine and both sides of each ratio ran slower than on an",
           "idle one, so compare ratios, not absolute times. Tests never assert timings; these goals are",
           "checked here only. Why the code is tuned as it is: [decisions](decisions/).", ""]
    for part, alone in PARTS:
        path = os.path.join(folder, f"{part}.json")
        if not os.path.exists(path):
            out += [f"## {part}", "", f"Not measured yet: `{alone}`.", ""]
            continue
        data = json.load(open(path))
        out += [f"## {data['title']}", ""]
        facts = [f"Measured {data['date']}", f"{data['cores']} cores", f"load average at start {data['loadAtStart']}"]
        if data.get("messages") and part in ("reads", "writers", "storage", "search", "devices"):
            facts.insert(1, f"{data['messages']:,} messages")
        out += ["; ".join(facts) + f" (`{alone}`).", ""]
        if not data["tables"]:
            out += ["The part did not finish: no figures.", ""]
        for table in data["tables"]:
            head = [c or "result" for c in table["head"]] or ["what"] * max(len(r) for r in table["rows"])
            width = len(head)
            out.append("| " + " | ".join(cell(c) for c in head) + " |")
            out.append("|" + " --- |" * width)
            for row in table["rows"]:
                row = (row + [""] * width)[:width]
                out.append("| " + " | ".join(cell(c) for c in row) + " |")
            out.append("")
            for note in table["notes"]:
                out += [note, ""]
    return "\n".join(out).rstrip("\n") + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    text = render(sys.argv[1])
    with open(sys.argv[2], "w") as f:
        f.write(text)
