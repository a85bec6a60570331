#!/usr/bin/env bash
# The relay under load on loopback, beside a bare libwebsockets echo server (the transport's
# own limit): memory per idle authenticated socket, and end-to-end throughput and latency
# of POST /v2/messages -> `new_message` on the recipient's socket; then the same two runs
# with the relay serving TLS (HTTPS and WSS, a throwaway certificate made with openssl).
#
#   scripts/bench.d/relay.sh [--bin DIR] [--work DIR] [--connections N] [--pairs P]
#                            [--seconds S] [--workers K] [--perf]
#
# Defaults: 10,000 idle sockets, 100 sender/recipient pairs, 10 s measured (after 1 s of
# warm-up). --bin: a folder holding a release chat-relay (default: builds one, as
# scripts/bench does, honouring BENCH_SCRATCH_PATH); --work: scratch space (default
# bench-data, recreated as WORK/relay). --workers: generator processes (default 1).
# --perf: also profiles the relay during the pairs run (perf record -g; the top symbols
# are printed, the whole report is left in WORK/relay/perf.txt).
# The load generator is scripts/bench.d/relay_load.py (Debian's /usr/bin/python3 with
# python3-websockets); the echo server is scripts/bench.d/lws_echo.c (built with gcc).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
source scripts/lib.sh

bin=""
work=bench-data
connections=10000
pairs=100
seconds=10
workers=1
profile=0
number() { [[ $2 =~ ^[1-9][0-9]*$ ]] || { echo "Error: '$1' takes a whole number from 1" >&2; exit 64; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --connections) number "$1" "$2"; connections=$2; shift 2 ;;
    --pairs) number "$1" "$2"; pairs=$2; shift 2 ;;
    --seconds) number "$1" "$2"; seconds=$2; shift 2 ;;
    --workers) number "$1" "$2"; workers=$2; shift 2 ;;
    --perf) profile=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "Error: Unexpected argument '$1'" >&2; exit 64 ;;
  esac
done

ensure_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}" gcc
py=/usr/bin/python3
if [ -z "$bin" ]; then
  scratch=()
  [ -n "${BENCH_SCRATCH_PATH:-}" ] && scratch=(--scratch-path "$BENCH_SCRATCH_PATH")
  echo "   building chat-relay (release)"
  swift build -c release "${scratch[@]}" --product chat-relay 2>&1 | tail -n 1 | sed 's/^/   /'
  bin=$(swift build -c release "${scratch[@]}" --show-bin-path)
fi
[ -x "$bin/chat-relay" ] || { echo "Error: no chat-relay in $bin" >&2; exit 1; }

# Both sides hold one descriptor per socket: raise the limit (root can go past the hard
# limit; elsewhere, or in a container without CAP_SYS_RESOURCE, up to the hard limit).
want=$((connections + 1024))
raise_open_files "$want" "$connections sockets (use --connections)"

d="$work/relay"
rm -rf "$d" && mkdir -p "$d"
cc -O2 -Wall -o "$d/lws_echo" "$here/lws_echo.c" $(pkg-config --cflags --libs libwebsockets)

# 2 x pairs users (senders 1..P, recipients P+1..2P); the idle sockets are spread over them.
users=$((2 * pairs))
for i in $(seq 1 "$users"); do
  "$bin/chat-relay" user add --db "$d/relay.db" --id "$i" --name "User $i" --json
done | $py -c '
import json, sys
text, decoder, out, i = sys.stdin.read(), json.JSONDecoder(), [], 0
while i < len(text):
    if text[i].isspace():
        i += 1
        continue
    envelope, i = decoder.raw_decode(text, i)
    out.append(envelope["files"][0]["result"])
json.dump(out, open(sys.argv[1], "w"))
' "$d/tokens.json"

server_pid=""
stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT
# start_server LOG COMMAND...: starts it in the background, waits for its "listening on" line; sets server_pid, port.
start_server() {
  local log=$1
  shift
  "$@" 2>"$log" >/dev/null &
  server_pid=$!
  for _ in $(seq 100); do
    port=$(grep -o 'listening on https\?://127.0.0.1:[0-9]*' "$log" | head -n 1 | sed 's/.*://') || true
    [ -n "$port" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "Error: '$*' did not start listening:" >&2
  tail -n 5 "$log" >&2
  exit 1
}
load() { $py "$here/relay_load.py" "$@"; }

started=$(date +%s)
printf '   load average at start: %s (%s cores; figures are only comparable on an idle machine)\n' \
  "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"

start_server "$d/relay.err" "$bin/chat-relay" serve --db "$d/relay.db" --port 0
load idle --url "http://127.0.0.1:$port" --pid "$server_pid" --tokens "$d/tokens.json" --count "$connections" >"$d/relay-idle.json"
sleep 2 # the relay closes the idle sockets
perf_pid=""
if [ "$profile" = 1 ]; then
  perf record -q -F 499 -g -p "$server_pid" -o "$d/perf.data" -- sleep "$((seconds + 1))" 2>"$d/perf.err" &
  perf_pid=$!
fi
load pairs --url "http://127.0.0.1:$port" --pid "$server_pid" --tokens "$d/tokens.json" --pairs "$pairs" \
  --seconds "$seconds" --workers "$workers" >"$d/relay-pairs.json"
if [ -n "$perf_pid" ]; then
  wait "$perf_pid" || true
  report() { perf report -i "$d/perf.data" -g none --percent-limit 0.5 --stdio "$@" 2>/dev/null | grep -E '^ +[0-9.]+%' || true; }
  { echo "# self time by library"; report --no-children --sort dso
    echo "# chat-relay's own functions, with what they call (inclusive)"; report --children --dsos chat-relay --sort symbol
    echo "# self time by symbol"; report --no-children --sort dso,symbol; } >"$d/perf.txt"
fi
stop_server

# The same two runs over TLS (issue 28): a throwaway CA and a certificate for localhost,
# made with openssl here; the generator trusts that CA.
mkdir -p "$d/tls"
(
  cd "$d/tls"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=bench CA" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout relay.key -out relay.csr -subj "/CN=localhost" 2>/dev/null
  printf 'subjectAltName=DNS:localhost\n' >relay.ext
  openssl x509 -req -in relay.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile relay.ext \
    -out relay.crt 2>/dev/null
  chmod 600 relay.key
)
start_server "$d/relay-tls.err" "$bin/chat-relay" serve --db "$d/relay.db" --port 0 \
  --tls-cert "$d/tls/relay.crt" --tls-key "$d/tls/relay.key"
load idle --url "https://localhost:$port" --ca "$d/tls/ca.crt" --pid "$server_pid" --tokens "$d/tokens.json" \
  --count "$connections" >"$d/relay-tls-idle.json"
sleep 2
load pairs --url "https://localhost:$port" --ca "$d/tls/ca.crt" --pid "$server_pid" --tokens "$d/tokens.json" \
  --pairs "$pairs" --seconds "$seconds" --workers "$workers" >"$d/relay-tls-pairs.json"
stop_server

start_server "$d/echo.err" "$d/lws_echo" --port 0
load idle --url "http://127.0.0.1:$port" --pid "$server_pid" --ws-path / --count "$connections" >"$d/echo-idle.json"
sleep 2
load echo --url "ws://127.0.0.1:$port/" --pid "$server_pid" --clients "$pairs" --seconds "$seconds" \
  --workers "$workers" >"$d/echo.json"
stop_server

echo "   section took $(($(date +%s) - started)) s; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
$py "$here/relay_table.py" "$d"
if [ "$profile" = 1 ]; then
  echo "   chat-relay's CPU during the pairs run (perf; all of it in $d/perf.txt): self time by library,"
  sed -n '/^# self time by library/,/^# chat-relay/p' "$d/perf.txt" | grep -v '^#' | head -n 8 |
    awk '{ printf "     %7s  %s\n", $1, $2 }'
  echo "   and the relay's own functions, inclusive of what they call:"
  sed -n '/^# chat-relay/,/^# self time by symbol/p' "$d/perf.txt" | grep -v '^#' | head -n 14 |
    awk '{ printf "     %7s  %s\n", $1, $4 }' | { swift demangle --simplified 2>/dev/null || cat; } | cut -c1-150
fi
