#!/usr/bin/env python3
"""Checks one fleet run of scripts/bench from its --json envelope; exits 1 with the reason.

  fleet_check.py ENVELOPE.json EXIT_CODE FILES [--messages N] [--clean] [--changed N]

Always: the envelope parses, summary.files == FILES, summary.failed == 0, every file
ok, and the exit code is 0 and matches the envelope's. --messages: summary.messages
== N (generate). --clean: no file with findings (check). --changed: summary.changed
== N (migrate: 0 when the files were already at the latest version).
"""
import json, sys

path, rc, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
want = {}
args = sys.argv[4:]
while args:
    flag = args.pop(0)
    if flag == "--clean":
        want["withFindings"] = 0
    elif flag in ("--messages", "--changed"):
        want[flag[2:]] = int(args.pop(0))
    else:
        sys.exit(f"fleet_check.py: unknown option {flag}")

def fail(reason):
    print(f"   FAILED: {path}: {reason}", file=sys.stderr)
    sys.exit(1)

try:
    envelope = json.load(open(path))
except (OSError, ValueError) as e:
    fail(f"no JSON envelope ({e})")
summary = envelope.get("summary", {})
bad = [f"{f.get('path')}: {f.get('error', {}).get('message')}" for f in envelope.get("files", []) if not f.get("ok")]
if bad:
    fail(f"{len(bad)} file(s) failed, first: {bad[0]}")
if summary.get("failed") != 0:
    fail(f"summary.failed is {summary.get('failed')}, not 0")
if summary.get("files") != files or len(envelope.get("files", [])) != files:
    fail(f"summary.files is {summary.get('files')} ({len(envelope.get('files', []))} listed), not {files}")
for key, value in want.items():
    if summary.get(key) != value:
        fail(f"summary.{key} is {summary.get(key)}, not {value}")
if rc != 0 or envelope.get("exitCode") != 0 or envelope.get("ok") is not True:
    fail(f"exit code {rc}, envelope exitCode {envelope.get('exitCode')}, ok {envelope.get('ok')}")
