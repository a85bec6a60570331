#!/usr/bin/env bash
# Several devices per user (protocol version 2, issue 27) on loopback, through a real
# `chat-relay serve`:
#   1. fan-out: U users with 3 devices each, every device a WebSocket; each user's first
#      device posts to its partner for S seconds, one request in flight: messages/s and
#      latency from the POST to the last of the 5 sockets the message goes to (the
#      recipient's 3 devices, the sender's 2 others), beside the same load with 1 device a
#      user; then the 3-device load paced at half its measured rate (p99 there), and the
#      1-device load at that same rate.
#   2. bootstrap: a relay holding a window of W messages of one user (posted through the
#      HTTP API, half sent, half received, acknowledged by the user's first device), then a
#      new device of that user: `chat-sync run --once` into an empty folder: seconds,
#      messages/s into the file, the relay's CPU per message, and the file's count.
#   3. relay storage: N messages between 1,000 users with 2 devices each, every one
#      delivered and acknowledged by every device through the protocol (devices_load.py
#      ack): bytes per retained message in relay.db (after a checkpoint; per table from
#      dbstat), and the same with `serve --retention-days 0`: what is left.
#
#   scripts/bench.d/devices.sh [--bin DIR] [--work DIR] [--users U] [--seconds S] [--workers K]
#                              [--window W] [--messages N] [--storage-users M] [--only PARTS]
#
# Defaults: 100 users, 10 s (after 1 s of warm-up), 2 generator processes; a window of
# 100,000 messages; 1,000,000 messages over 1,000 users (scripts/bench --messages N sets
# N). --only fanout,bootstrap,storage runs some of the three. --bin: a folder holding
# release chat-relay and chat-sync (default: builds them, as scripts/bench does, honouring
# BENCH_SCRATCH_PATH); --work: scratch space (default bench-data, recreated as
# WORK/devices). The load generator is scripts/bench.d/devices_load.py (Debian's
# /usr/bin/python3 with python3-uvloop and python3-websockets); the table, devices_table.py.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
source scripts/lib.sh

bin=""
work=bench-data
users=100
seconds=10
workers=2
window=100000
messages=${MESSAGES:-1000000}
storage_users=1000
parts=fanout,bootstrap,storage
number() { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "Error: '$1' takes a whole number from 1" >&2; exit 64; }; }
text() { [ -n "${2:-}" ] || { echo "Error: '$1' takes a value" >&2; exit 64; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) text "$1" "${2:-}"; bin=$2; shift 2 ;;
    --work) text "$1" "${2:-}"; work=$2; shift 2 ;;
    --users) number "$1" "${2:-}"; users=$2; shift 2 ;;
    --seconds) number "$1" "${2:-}"; seconds=$2; shift 2 ;;
    --workers) number "$1" "${2:-}"; workers=$2; shift 2 ;;
    --window) number "$1" "${2:-}"; window=$2; shift 2 ;;
    --messages) number "$1" "${2:-}"; messages=$2; shift 2 ;;
    --storage-users) number "$1" "${2:-}"; storage_users=$2; shift 2 ;;
    --only) text "$1" "${2:-}"; parts=$2; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "Error: Unexpected argument '$1'" >&2; exit 64 ;;
  esac
done
[ $((users % 2)) -eq 0 ] || { echo "Error: '--users' takes an even number (the users are paired)" >&2; exit 64; }
[ "$storage_users" -ge 2 ] || { echo "Error: '--storage-users' takes 2 or more" >&2; exit 64; }
want() { [[ ,$parts, == *,$1,* ]]; }

ensure_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" python3-uvloop sqlite3 time
py=/usr/bin/python3
if [ -z "$bin" ]; then
  scratch=()
  [ -n "${BENCH_SCRATCH_PATH:-}" ] && scratch=(--scratch-path "$BENCH_SCRATCH_PATH")
  echo "   building chat-relay, chat-sync (release)"
  for product in chat-relay chat-sync; do
    swift build -c release "${scratch[@]}" --product "$product" 2>&1 | tail -n 1 | sed 's/^/   /'
  done
  bin=$(swift build -c release "${scratch[@]}" --show-bin-path)
fi
for tool in chat-relay chat-sync; do
  [ -x "$bin/$tool" ] || { echo "Error: no $tool in $bin" >&2; exit 1; }
done
# A socket per device in the fan-out (3 x users) and per user in the storage fill.
raise_open_files $((3 * users + storage_users + 2048)) "the devices' sockets (use --users, --storage-users)"

d="$work/devices"
rm -rf "$d" && mkdir -p "$d"
started=$(date +%s)
printf '   load average at start: %s (%s cores; figures are only comparable on an idle machine)\n' \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
cut -d' ' -f1-3 /proc/loadavg >"$d/load-start.txt"

# make_users DB COUNT DEVICES OUT: users 1..COUNT on the relay file DB, each with DEVICES
# devices (`user add` makes the first, `device add` the others; a token is the last line
# of their output), written to OUT as [{"userId", "tokens": [...]}, ...].
make_users() {
  local db=$1 count=$2 per=$3 out=$4 list="$d/tokens-$(basename "$1").txt"
  local add_user="'$bin/chat-relay' user add --db '$db' --id {} --name 'User {}' | tail -n 1 | sed 's/^/{} 1 /'"
  {
    echo 1 | xargs -I{} sh -c "$add_user"
    [ "$count" -gt 1 ] && seq 2 "$count" | xargs -P 2 -I{} sh -c "$add_user"
    for k in $(seq 2 "$per"); do
      seq 1 "$count" | xargs -P 2 -I{} sh -c \
        "'$bin/chat-relay' device add --db '$db' --user {} --name 'device $k' | tail -n 1 | sed 's/^/{} $k /'"
    done
  } >"$list"
  chmod 600 "$list"
  [ "$(wc -l <"$list")" -eq $((count * per)) ] || { echo "Error: could not add $count users x $per devices" >&2; exit 1; }
  $py -c '
import json, sys
users = {}
for line in open(sys.argv[1]):
    user, device, token = line.split()
    users.setdefault(int(user), {})[int(device)] = token
json.dump([{"userId": u, "tokens": [t for _, t in sorted(ds.items())]} for u, ds in sorted(users.items())],
          open(sys.argv[2], "w"))
' "$list" "$out"
}

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT
# start_server LOG ARGS...: chat-relay serve ARGS in the background on a free port; waits
# for its "listening on" line; sets server_pid, port, url.
start_server() {
  local log=$1
  shift
  "$bin/chat-relay" serve --port 0 "$@" 2>"$log" >/dev/null &
  server_pid=$!
  for _ in $(seq 200); do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$log" | head -n 1 | sed 's/.*://') || true
    [ -n "$port" ] && { url="http://127.0.0.1:$port"; return 0; }
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "Error: 'chat-relay serve $*' did not start listening:" >&2
  tail -n 5 "$log" >&2
  exit 1
}
load() { $py "$here/devices_load.py" "$@"; }
# CPU seconds (user + system, all threads) a process has used.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"; }

# ---------------------------------------------------------------------------
# 1. Fan-out.
if want fanout; then
  echo "   fan-out: $users users x 3 devices and x 1 device, $seconds s each"
  make_users "$d/fanout-3.db" "$users" 3 "$d/fanout-3.json"
  make_users "$d/fanout-1.db" "$users" 1 "$d/fanout-1.json"
  fan() { load fanout --url "$url" --pid "$server_pid" --seconds "$seconds" --workers "$workers" "$@"; }
  start_server "$d/relay-fanout-3.err" --db "$d/fanout-3.db"
  fan --devices "$d/fanout-3.json" >"$d/fanout-3.json.out"
  half=$($py -c 'import json, sys; print(round(json.load(open(sys.argv[1]))["perSecond"] / 2))' "$d/fanout-3.json.out")
  [ "$half" -ge 1 ] || { echo "Error: the 3-device run delivered nothing" >&2; exit 1; }
  fan --devices "$d/fanout-3.json" --rate "$half" >"$d/fanout-3-paced.json.out"
  stop_server
  start_server "$d/relay-fanout-1.err" --db "$d/fanout-1.db"
  fan --devices "$d/fanout-1.json" >"$d/fanout-1.json.out"
  fan --devices "$d/fanout-1.json" --rate "$half" >"$d/fanout-1-paced.json.out"
  stop_server
  for f in fanout-3 fanout-3-paced fanout-1 fanout-1-paced; do mv "$d/$f.json.out" "$d/result-$f.json"; done
fi

# ---------------------------------------------------------------------------
# 2. Bootstrap of a new device.
if want bootstrap; then
  echo "   bootstrap: a window of $window messages of user 1 (with 100 contacts), then a new device"
  make_users "$d/bootstrap.db" 101 1 "$d/bootstrap.json"
  start_server "$d/relay-bootstrap.err" --db "$d/bootstrap.db"
  load fill --url "$url" --pid "$server_pid" --devices "$d/bootstrap.json" --messages "$window" --shape focus \
    --workers "$workers" >"$d/result-bootstrap-fill.json"
  # The user's first device has them all: it acknowledges its log (and delivers what it received).
  load ack --url "$url" --pid "$server_pid" --devices "$d/bootstrap.json" --users 1 >"$d/result-bootstrap-ack.json"
  "$bin/chat-relay" device add --db "$d/bootstrap.db" --user 1 --name "new device" | tail -n 1 >"$d/new-device.token"
  chmod 600 "$d/new-device.token"
  # bootstrap_run NAME [OPTIONS...]: the new device's first `chat-sync run --once` into an empty folder.
  bootstrap_run() {
    local name=$1 before after t0 t1 status=0
    shift
    rm -rf "$d/$name" && mkdir -p "$d/$name"
    sync
    before=$(cpu "$server_pid")
    t0=$(date +%s.%N)
    CHAT_SYNC_SERVER="$url" /usr/bin/time -f '%U %S %M' -o "$d/$name.time" "$bin/chat-sync" run --once \
      --data-dir "$d/$name" --user 1 --token-file "$d/new-device.token" --json "$@" >"$d/$name.out" 2>"$d/$name.log" ||
      status=$?
    t1=$(date +%s.%N)
    after=$(cpu "$server_pid")
    local count
    count=$(sqlite3 -readonly "$d/$name/chats-1.db" "SELECT count(*) FROM Messages" 2>/dev/null || echo 0)
    $py -c '
import json, sys
name, options, status, t0, t1, before, after, count, window, size, timing = sys.argv[1:]
user, system, rss = open(timing).read().split()[-3:]
print(json.dumps({"name": name, "options": options, "exit": int(status), "seconds": round(float(t1) - float(t0), 3),
                  "relayCpuSeconds": round(float(after) - float(before), 3), "messagesInFile": int(count),
                  "clientCpuSeconds": round(float(user) + float(system), 3), "clientPeakKiB": int(rss),
                  "window": int(window), "folderBytes": int(size)}))
' "$name" "$*" "$status" "$t0" "$t1" "$before" "$after" "$count" "$window" \
      "$(du -b "$d/$name" | tail -n 1 | cut -f1)" "$d/$name.time" >"$d/result-$name.json"
    [ "$status" = 0 ] || { echo "   WARNING: chat-sync run --once exited $status:" >&2; tail -n 3 "$d/$name.log" >&2; }
  }
  bootstrap_run bootstrap-run
  # The client's page size, as its source sets it (for the table).
  grep -o 'public var pageSize = [0-9]*' Sources/ChatSync/Engine/SyncEngine.swift | grep -o '[0-9]*$' >"$d/page-size.txt" || true
  # A page size option, should chat-sync have one (it has none: SyncEngine.Options.pageSize, 200).
  if "$bin/chat-sync" run --help 2>&1 | grep -q -- '--page-size'; then
    bootstrap_run bootstrap-run-page1000 --page-size 1000
  fi
  stop_server
fi

# ---------------------------------------------------------------------------
# 3. What the relay's file holds.
# measure DB OUT: row counts, file size after a checkpoint, and bytes per table (dbstat).
measure() {
  local db=$1 out=$2
  sqlite3 "$db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
  sqlite3 -json "$db" "SELECT name, sum(pgsize) AS bytes, count(*) AS pages FROM dbstat GROUP BY name ORDER BY 2 DESC" \
    >"$out.dbstat"
  sqlite3 "$db" "VACUUM INTO '$out.vacuumed'"
  $py - "$db" "$out" <<'PY'
import json, os, sqlite3, sys
db, out = sys.argv[1:]
c = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
one = lambda q: c.execute(q).fetchone()[0]
tables = [r[0] for r in c.execute("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'Relay%'")]
result = {
    "fileBytes": os.path.getsize(db), "walBytes": os.path.getsize(db + "-wal") if os.path.exists(db + "-wal") else 0,
    "pageSize": one("PRAGMA page_size"), "pages": one("PRAGMA page_count"), "freePages": one("PRAGMA freelist_count"),
    "vacuumedBytes": os.path.getsize(out + ".vacuumed"),
    "rows": {t: one(f"SELECT count(*) FROM {t}") for t in tables},
    "devices": one("SELECT count(*) FROM RelayDevices"),
    "undelivered": one("SELECT count(*) FROM RelayMessages WHERE delivered_at IS NULL"),
    "contentBytes": one("SELECT total(length(CAST(content AS BLOB))) FROM RelayMessages"),
    # Devices whose acknowledged place is below the newest message of their user's log on the relay.
    "devicesBehind": one("""SELECT count(*) FROM RelayDevices d WHERE d.synced_message <
        coalesce((SELECT max(id) FROM RelayMessages m WHERE m.from_user_id = d.user_id OR m.to_user_id = d.user_id), 0)"""),
    "dbstat": json.load(open(out + ".dbstat")) if os.path.getsize(out + ".dbstat") else [],
}
os.remove(out + ".vacuumed")
os.remove(out + ".dbstat")
json.dump(result, open(out, "w"))
PY
}
if want storage; then
  echo "   storage: $messages messages between $storage_users users with 2 devices each"
  make_users "$d/storage.db" "$storage_users" 2 "$d/storage.json"
  start_server "$d/relay-storage-fill.err" --db "$d/storage.db"
  load fill --url "$url" --pid "$server_pid" --devices "$d/storage.json" --messages "$messages" --shape spread \
    --workers "$workers" >"$d/result-storage-fill.json"
  stop_server
  # The same file twice: acknowledged under the default retention window and under retention 0.
  sqlite3 "$d/storage.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
  cp "$d/storage.db" "$d/storage-0.db"
  measure "$d/storage.db" "$d/result-storage-filled.json"
  for mode in 30 0; do
    db="$d/storage.db"
    [ "$mode" = 0 ] && db="$d/storage-0.db"
    start_server "$d/relay-storage-$mode.err" --db "$db" --retention-days "$mode"
    load ack --url "$url" --pid "$server_pid" --devices "$d/storage.json" >"$d/result-storage-ack-$mode.json"
    stop_server
    measure "$db" "$d/result-storage-$mode.json"
  done
  rm -f "$d/storage-0.db"*
fi

echo "   section took $(($(date +%s) - started)) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
cut -d' ' -f1-3 /proc/loadavg >"$d/load-end.txt"
echo $(($(date +%s) - started)) >"$d/seconds.txt"
$py "$here/devices_table.py" "$d"
