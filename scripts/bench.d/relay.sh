#!/usr/bin/env bash
# The relay section of scripts/bench (issue 10), runnable alone:
#   scripts/bench.d/relay.sh [BIN_DIR] [DATA_DIR]
# Idle sockets (memory per connection) and 100 sender/recipient pairs (POST ->
# new_message throughput and latency) against chat-relay, beside a bare libwebsockets
# echo server as the transport's own limit. Loopback only; every run is bounded.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh
ensure_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" gcc

bin=${1:-}
if [ -z "$bin" ]; then
  swift build -c release --product chat-relay 2>&1 | tail -n 1
  bin=$(swift build -c release --show-bin-path)
fi
data=${2:-bench-data}/relay
idle=${RELAY_IDLE:-10000}
pairs=${RELAY_PAIRS:-100}
seconds=${RELAY_SECONDS:-10}
rm -rf "$data" && mkdir -p "$data"
ulimit -n "$(ulimit -Hn)"
py=/usr/bin/python3
load=scripts/bench.d/relay_load.py

gcc -O2 -o "$data/lws_echo" scripts/bench.d/lws_echo.c $(pkg-config --cflags --libs libwebsockets)

# Users 1..2×pairs, their tokens in a file for the generator.
db="$data/relay.db"
for ((user = 1; user <= 2 * pairs; user++)); do
  echo "$user $("$bin/chat-relay" user add --db "$db" --id "$user" --name "User $user" | tail -n 1)"
done >"$data/tokens"

relay_pid=""
echo_pid=""
# Never leave a server behind, whatever stops this script.
trap 'kill $relay_pid $echo_pid 2>/dev/null || true' EXIT

start_relay() {
  "$bin/chat-relay" serve --db "$db" --port 0 2>"$data/serve.log" &
  relay_pid=$!
  for _ in $(seq 100); do
    port=$(sed -n 's/^listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$data/serve.log")
    [ -n "$port" ] && return 0
    sleep 0.1
  done
  echo "chat-relay did not start" >&2
  exit 1
}

start_relay
token=$(head -n 1 "$data/tokens" | cut -d' ' -f2)
idle_json=$("$py" "$load" idle "$port" "$token" "$idle" "$relay_pid")
kill -TERM "$relay_pid"; wait "$relay_pid" || true

start_relay
pairs_json=$("$py" "$load" pairs "$port" "$data/tokens" "$pairs" "$seconds")
kill -TERM "$relay_pid"; wait "$relay_pid" || true

# The same pairs at the goal's rate, 5,000 messages/s in all (open loop): latency
# without the queue a saturating closed loop builds.
start_relay
rate_json=$("$py" "$load" pairs "$port" "$data/tokens" "$pairs" "$seconds" 5000)
kill -TERM "$relay_pid"; wait "$relay_pid" || true

"$data/lws_echo" 0 >"$data/echo.out" &
echo_pid=$!
sleep 0.5
# lws prints the configured port (0): find the one it bound.
echo_port=$(ss -ltnp 2>/dev/null | awk -v pid="$echo_pid" '$0 ~ "pid="pid"," {split($4, a, ":"); print a[length(a)]}' | head -n 1)
if [ -z "$echo_port" ]; then kill "$echo_pid"; "$data/lws_echo" 18977 >/dev/null & echo_pid=$!; echo_port=18977; sleep 0.5; fi
echo_json=$("$py" "$load" echo "$echo_port" "$pairs" "$seconds")
kill -TERM "$echo_pid"; wait "$echo_pid" || true

"$py" - "$idle_json" "$pairs_json" "$echo_json" "$rate_json" <<'PY'
import json, sys
idle, pairs, echo, rated = (json.loads(a) for a in sys.argv[1:5])
def row(*cells): print("   " + "  ".join(f"{c:<34}" if i == 0 else f"{c:>16}" for i, c in enumerate(cells)))
ok = lambda good: "✔" if good else "✘"
row("what", "chat-relay", "bare lws echo", "goal")
row(f"idle sockets: memory per connection", f"{idle['kibPerSocket']:.1f} KiB", "", f"≤ 16 KiB {ok(idle['kibPerSocket'] <= 16)}")
row(f"{pairs['pairs']} pairs: messages/s (POST→event)", f"{pairs['messagesPerSecond']:,.0f}", f"{echo['roundTripsPerSecond']:,.0f} round trips/s",
    f"≥ 5,000 {ok(pairs['messagesPerSecond'] >= 5000)}")
row("latency p50 / p99, saturated", f"{pairs['p50Ms']} / {pairs['p99Ms']} ms", f"{echo['p50Ms']} / {echo['p99Ms']} ms", "")
row(f"latency p50 / p99 at {rated['messagesPerSecond']:,.0f}/s (open loop)", f"{rated['p50Ms']} / {rated['p99Ms']} ms", "",
    f"p99 ≤ 50 ms {ok(rated['p99Ms'] <= 50)}")
print(f"   idle: {idle['sockets']:,} sockets opened in {idle['openSeconds']} s, relay RSS {idle['rssBeforeKiB']:,} → {idle['rssAfterKiB']:,} KiB")
print(f"   pairs: {pairs['posted']:,} posted, {pairs['received']:,} received, {pairs['errors']} errors in {pairs['seconds']} s; "
      f"generator CPU {pairs['generatorCpuSeconds']} s (echo: {echo['generatorCpuSeconds']} s): one Python process, so near "
      f"{pairs['seconds']:.0f} s of CPU means the generator, not the relay, is the limit")
PY
