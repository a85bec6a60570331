#!/usr/bin/env bash
# The sync client's speed on loopback: two real `chat-sync run` processes through a real
# `chat-relay serve` (sustained messages/s and send-to-receive latency), and a reconnect
# storm of many sync engines after the relay is killed and restarted, with the product's
# jitter and without.
#
#   scripts/bench.d/sync.sh [--bin DIR] [--work DIR] [--messages N] [--rate R] [--seconds S]
#                           [--clients C] [--down S]
#
# Defaults: 2,000 messages for the throughput run, 50 messages/s for 10 s for the latency
# run, 500 clients in the storm, the relay down 5 s. --bin: a folder holding release
# chat-relay, chat-sync and chat-sync-bench (default: builds them, as scripts/bench does,
# honouring BENCH_SCRATCH_PATH); --work: scratch space (default bench-data, recreated as
# WORK/sync). About 1 minute with the defaults, plus the build.
#
# Two clients: users 1 (A) and 2 (B), each a `chat-sync run` on its own file, the token in
# $CHAT_SYNC_TOKEN. `chat-sync-bench send` queues A's messages to B the way `chat-sync send`
# does (ChatRepository.send, then the `outbox` nudge to A's run), from one process. A
# message's latency is B's log time of `received message <id>` (logged once it is committed
# to B's file) minus its created_at (when it was queued in A's file; the relay carries it
# and B's Messages row keeps it): wall-clock times of this one machine, each truncated to
# the millisecond (±1 ms). The latency run queues one message every 1/R s; the throughput
# run queues N at once (bursts of 100, a nudge after each): messages/s = N / (B's last
# receipt - the first created_at). The client keeps at most two batches in flight per
# conversation (in order), so this is one conversation's rate. B's file is polled read-only
# (sqlite3 -readonly) only to know when to stop.
#
# Storm: `chat-sync-bench storm` runs C SyncEngines in one process (one file each; the
# shared libwebsockets client for HTTP and the socket, as `chat-sync run`
# builds them) for users 1..C. Once all are connected and synced, the relay is killed
# (kill -9), and after --down seconds started again on the same port. An attempt is
# counted when the engine logs its outcome (`socket: connected` or `socket: cannot
# connect: ...`), timed in the log callback; a refused connect on loopback fails within a
# millisecond, so that is when it was made. Peaks are the busiest 1 s and 100 ms windows
# (sliding, so the alignment of buckets cannot split a wave); the shape is printed in 1 s
# buckets from the kill.
# "All back": the last engine's first connect after the kill (and its cursor sync).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
source scripts/lib.sh

bin=""
work=bench-data
messages=2000
rate=50
seconds=10
clients=500
down=5
number() { [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "Error: '$1' takes a whole number from 1" >&2; exit 64; }; }
text() { [ -n "${2:-}" ] || { echo "Error: '$1' takes a value" >&2; exit 64; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) text "$1" "${2:-}"; bin=$2; shift 2 ;;
    --work) text "$1" "${2:-}"; work=$2; shift 2 ;;
    --messages) number "$1" "${2:-}"; messages=$2; shift 2 ;;
    --rate) number "$1" "${2:-}"; rate=$2; shift 2 ;;
    --seconds) number "$1" "${2:-}"; seconds=$2; shift 2 ;;
    --clients) number "$1" "${2:-}"; clients=$2; shift 2 ;;
    --down) number "$1" "${2:-}"; down=$2; shift 2 ;;
    -h|--help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "Error: Unexpected argument '$1'" >&2; exit 64 ;;
  esac
done

ensure_packages "${BUILD_PACKAGES[@]}" sqlite3
py=/usr/bin/python3
if [ -z "$bin" ]; then
  scratch=()
  [ -n "${BENCH_SCRATCH_PATH:-}" ] && scratch=(--scratch-path "$BENCH_SCRATCH_PATH")
  echo "   building chat-relay, chat-sync, chat-sync-bench (release)"
  for product in chat-relay chat-sync chat-sync-bench; do
    swift build -c release "${scratch[@]}" --product "$product" 2>&1 | tail -n 1 | sed 's/^/   /'
  done
  bin=$(swift build -c release "${scratch[@]}" --show-bin-path)
fi
for tool in chat-relay chat-sync chat-sync-bench; do
  [ -x "$bin/$tool" ] || { echo "Error: no $tool in $bin" >&2; exit 1; }
done

# The storm's process holds a socket, an HTTP connection now and then, and a database
# (with its -wal and -shm) per client: raise the limit as relay.sh does.
want=$((clients * 8 + 1024))
raise_open_files "$want" "$clients clients (use --clients)"

d="$work/sync"
rm -rf "$d" && mkdir -p "$d"
started=$(date +%s)
printf '   load average at start: %s (%s cores; figures are only comparable on an idle machine)\n' \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"

# Users 1..max(C, 2) on the relay, their tokens as lines "ID TOKEN" (the token is the last
# line of `user add`); the first alone (it creates relay.db), then two at a time.
users=$((clients > 2 ? clients : 2))
add_user="'$bin/chat-relay' user add --db '$d/relay.db' --id {} --name 'User {}' | tail -n 1 | sed 's/^/{} /'"
{
  echo 1 | xargs -I{} sh -c "$add_user"
  seq 2 "$users" | xargs -P 2 -I{} sh -c "$add_user"
} >"$d/tokens.txt"
chmod 600 "$d/tokens.txt"
[ "$(wc -l <"$d/tokens.txt")" -eq "$users" ] || { echo "Error: could not add $users users" >&2; exit 1; }
token() { awk -v id="$1" '$1 == id { print $2 }' "$d/tokens.txt"; }

# A port for the relay outside the kernel's ephemeral range, so no client's own socket
# can take it while the relay is down.
port=$($py -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    p = random.randrange(10000, min(low, 32768))
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass
    finally:
        s.close()
')
[ -n "$port" ] || { echo "Error: no free port found" >&2; exit 1; }
url="http://127.0.0.1:$port"

# On the way out (an error, Ctrl-C): this script's background jobs still running.
cleanup() {
  local running
  running=$(jobs -pr)
  [ -n "$running" ] && kill -9 $running 2>/dev/null
  wait 2>/dev/null || true
}
trap cleanup EXIT
relay_pid=""
# start_relay LOG: chat-relay serve on $port in the background; waits for "listening on";
# sets relay_pid and relay_up (when the line was seen, seconds since 1970).
start_relay() {
  local log=$1
  "$bin/chat-relay" serve --db "$d/relay.db" --port "$port" 2>"$log" >/dev/null &
  relay_pid=$!
  for _ in $(seq 1000); do
    if grep -q 'listening on' "$log"; then
      relay_up=$(date +%s.%N)
      return 0
    fi
    kill -0 "$relay_pid" 2>/dev/null || break
    sleep 0.01
  done
  echo "Error: chat-relay serve --port $port did not start listening:" >&2
  tail -n 5 "$log" >&2
  exit 1
}
# stop PID: SIGTERM, then SIGKILL after 15 s.
stop() {
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 150); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
# CPU seconds (user + system, all threads) a process has used.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat" 2>/dev/null || echo 0; }
# received TAG: messages of the run TAG stored in B's file.
received() { sqlite3 -readonly "$d/b/chats-2.db" "SELECT count(*) FROM Messages WHERE from_user_id = 1 AND content LIKE '$1 %'" 2>/dev/null || echo 0; }
# wait_received TAG N TIMEOUT: until B holds N messages of the run, or TIMEOUT seconds.
wait_received() {
  local deadline=$(($(date +%s) + $3)) n
  while :; do
    n=$(received "$1")
    [ "$n" -ge "$2" ] && return 0
    if [ "$(date +%s)" -ge "$deadline" ]; then
      echo "   WARNING: B received $n of $2 '$1' messages in $3 s" >&2
      return 0
    fi
    sleep 0.1
  done
}

# ---------------------------------------------------------------------------
# 1. Two clients, end to end.
echo "   two clients: A (user 1) sends to B (user 2) through chat-relay on $url"
start_relay "$d/relay-pair.log"
pair_relay=$relay_pid
for who in a:1 b:2; do
  name=${who%%:*} id=${who##*:}
  mkdir -p "$d/$name"
  CHAT_SYNC_TOKEN=$(token "$id") "$bin/chat-sync" run --server "$url" --data-dir "$d/$name" --user "$id" \
    2>"$d/$name.log" >/dev/null &
  eval "${name}_pid=$!"
done
for log in "$d/a.log" "$d/b.log"; do
  for _ in $(seq 200); do grep -qs 'sync: ' "$log" && break; sleep 0.05; done
  grep -q 'sync: ' "$log" || { echo "Error: $log shows no sync:" >&2; tail -n 5 "$log" >&2; exit 1; }
done
send() { "$bin/chat-sync-bench" send --db "$d/a/chats-1.db" --user 1 --to 2 "$@"; }

send --count 20 --rate 100 --tag warm --out "$d/send-warm.json"
wait_received warm 20 30

latency_count=$((rate * seconds))
send --count "$latency_count" --rate "$rate" --tag lat --out "$d/send-lat.json"
wait_received lat "$latency_count" 30

sleep 0.5
cpu_before="$(cpu "$a_pid") $(cpu "$b_pid") $(cpu "$pair_relay")"
send --count "$messages" --burst 100 --tag tput --out "$d/send-tput.json"
wait_received tput "$messages" 120
cpu_after="$(cpu "$a_pid") $(cpu "$b_pid") $(cpu "$pair_relay")"
echo "$cpu_before $cpu_after" >"$d/cpu-tput.txt"
# A sender's backlog (issue 27): N queued while A's run is stopped (a device offline),
# then a new run: from its start until B stored the last, and A's CPU for all of it.
# Three rounds, one line each in backlog.txt: the table shows the median round (one
# drain takes under a second, and single runs on two shared cores spread widely).
: >"$d/backlog.txt"
for round in 1 2 3; do
  stop "$a_pid"
  send --count "$messages" --burst "$messages" --tag "backlog$round" --out "$d/send-backlog$round.json"
  # Drained: A's outbox is empty (the relay accepted every message); then B's last. One
  # Python process, started first, polls both files (backlog_wait.py): no shell per poll.
  rm -f "$d/backlog.pid" "$d/backlog.pid.ready"
  $py "$here/backlog_wait.py" "$d/a/chats-1.db" "$d/b/chats-2.db" "$d/backlog.pid" "$messages" "backlog$round" 120 \
    >"$d/backlog.wait" &
  waiter=$!
  for _ in $(seq 500); do [ -f "$d/backlog.pid.ready" ] && break; sleep 0.01; done
  backlog_start=$(date +%s.%N)
  CHAT_SYNC_TOKEN=$(token 1) "$bin/chat-sync" run --server "$url" --data-dir "$d/a" --user 1 \
    2>"$d/a-backlog$round.log" >/dev/null &
  a_pid=$!
  echo "$a_pid" >"$d/backlog.pid"
  wait "$waiter"
  read -r drained drained_cpu last <"$d/backlog.wait"
  echo "$backlog_start $last $(cpu "$a_pid") $(received "backlog$round") $drained $drained_cpu" >>"$d/backlog.txt"
  sleep 0.5
done
stop "$a_pid"
stop "$b_pid"
stop "$pair_relay"

# ---------------------------------------------------------------------------
# 2. The reconnect storm, with the product's jitter and without.
for mode in jitter fixed; do
  echo "   storm: $clients clients, $([ $mode = jitter ] && echo "the product's backoff (1 s doubling to 30 s, ±50%)" || echo "no jitter (1 s doubling to 30 s)"); relay down ${down} s"
  start_relay "$d/relay-$mode-1.log"
  flags=()
  [ "$mode" = fixed ] && flags=(--no-jitter)
  "$bin/chat-sync-bench" storm --server "$url" --tokens "$d/tokens.txt" --clients "$clients" --dir "$d/storm-$mode" \
    --ready-file "$d/storm-$mode.ready" --out "$d/storm-$mode.json" --timeout 90 "${flags[@]}" 2>"$d/storm-$mode.err" &
  driver=$!
  for _ in $(seq 1200); do
    [ -f "$d/storm-$mode.ready" ] && break
    kill -0 "$driver" 2>/dev/null || break
    sleep 0.1
  done
  if [ ! -f "$d/storm-$mode.ready" ]; then
    echo "Error: the storm driver did not get its $clients clients connected:" >&2
    tail -n 5 "$d/storm-$mode.err" >&2
    exit 1
  fi
  sleep 1
  killed=$(date +%s.%N)
  kill -9 "$relay_pid"
  wait "$relay_pid" 2>/dev/null || true
  sleep "$down"
  start_relay "$d/relay-$mode-2.log"
  # The driver writes its JSON once all are back and idle, then stops its engines.
  for _ in $(seq 1200); do
    [ -f "$d/storm-$mode.json" ] && break
    kill -0 "$driver" 2>/dev/null || break
    sleep 0.1
  done
  echo "$killed $relay_up $(cpu "$relay_pid")" >"$d/storm-$mode.times"
  wait "$driver" || { echo "Error: the storm driver failed:" >&2; tail -n 5 "$d/storm-$mode.err" >&2; exit 1; }
  stop "$relay_pid"
  rm -rf "$d/storm-$mode"
done

echo "   section took $(($(date +%s) - started)) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
$py "$here/sync_table.py" "$d" "$clients" "$down"
