#!/usr/bin/env python3
"""Keeps each bench part's figures in a machine-readable file, for `scripts/bench --markdown`.

  record.py start PART TITLE        a new results file for PART (the date, the machine)
  record.py head PART CELL...       a new table in it, with these column names
  record.py row PART CELL...        a row of the last table
  record.py note PART TEXT          a line under the last table
  record.py done PART               the part ended: how long it took

The file is $BENCH_RESULTS/PART.json; without $BENCH_RESULTS (a section run by hand)
nothing is written. The cells are the figures the section prints, as it prints them.
Python table scripts import this file and call table(PART, HEAD, ROWS, NOTES).
"""
import datetime, json, os, sys


def _path(part):
    folder = os.environ.get("BENCH_RESULTS")
    return os.path.join(folder, f"{part}.json") if folder else None


def _load(part):
    path = _path(part)
    if not path:
        return None, None
    try:
        with open(path) as f:
            return path, json.load(f)
    except FileNotFoundError:
        return path, _fresh(part, part)


def _fresh(part, title):
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return {"part": part, "title": title,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
            "messages": int(os.environ.get("MESSAGES", "0") or 0), "cores": os.cpu_count(),
            "loadAtStart": load, "started": datetime.datetime.now(datetime.timezone.utc).timestamp(),
            "seconds": None, "tables": []}


def _save(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def start(part, title):
    path = _path(part)
    if path:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _save(path, _fresh(part, title))


def head(part, cells):
    path, data = _load(part)
    if path:
        data["tables"].append({"head": list(cells), "rows": [], "notes": []})
        _save(path, data)


def row(part, cells):
    path, data = _load(part)
    if path:
        if not data["tables"]:
            data["tables"].append({"head": [], "rows": [], "notes": []})
        data["tables"][-1]["rows"].append([str(c) for c in cells])
        _save(path, data)


def note(part, text):
    path, data = _load(part)
    if path and data["tables"]:
        data["tables"][-1]["notes"].append(text)
        _save(path, data)


def done(part):
    path, data = _load(part)
    if path:
        data["seconds"] = round(datetime.datetime.now(datetime.timezone.utc).timestamp() - data["started"])
        _save(path, data)


def table(part, head_cells, rows, notes=()):
    """One whole table at once (the Python table scripts)."""
    path, data = _load(part)
    if path:
        data["tables"].append({"head": list(head_cells), "rows": [[str(c) for c in r] for r in rows],
                               "notes": list(notes)})
        _save(path, data)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    verb, part, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
    if verb == "start":
        start(part, " ".join(rest) or part)
    elif verb == "head":
        head(part, rest)
    elif verb == "row":
        row(part, rest)
    elif verb == "done":
        done(part)
    elif verb == "note":
        note(part, " ".join(rest))
    else:
        sys.exit(f"Error: unknown verb '{verb}'\n{__doc__}")
