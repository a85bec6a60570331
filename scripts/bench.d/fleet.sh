#!/usr/bin/env bash
# The --all runner over a fleet of files, at --jobs 1 and at the number of cores.
#
#   scripts/bench.d/fleet.sh BIN_DIR WORK_DIR USERS
#
# BIN_DIR holds a release `chatdb`; WORK_DIR is scratch space (the fleet goes to
# WORK_DIR/fleet, about 0.5 MB a file, and is removed at the end). Times, at both job
# counts: generate --users USERS --messages 2000 --contacts 50 (into an empty folder),
# usage --all, check --all, migrate --all (files already at the latest version: the
# read-only pass) and migrate --all over the same histories at schema version 1 (made
# untimed by fleet_v1.py). Every run's --json envelope is checked (fleet_check.py): a
# failed file, a missing file or a wrong count stops the bench. Self-contained: needs
# only chatdb, python3, bc and /usr/bin/time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?usage: fleet.sh BIN_DIR WORK_DIR USERS}
work=${2:?usage: fleet.sh BIN_DIR WORK_DIR USERS}
users=${3:?usage: fleet.sh BIN_DIR WORK_DIR USERS}
cores=$(nproc)
d="$work/fleet"
rm -rf "$d" && mkdir -p "$d/runs"
fleet="$d/data"
results="$d/results.tsv"
: >"$results"
started=$(date +%s)
messages=2000
contacts=50

# timed KEY JOBS CHECK SETUP COMMAND...: runs SETUP (untimed, through eval), then COMMAND
# --jobs JOBS --json under /usr/bin/time after a sync, its envelope checked by
# fleet_check.py with the arguments in CHECK. A run under 5 s is repeated up to 3 times
# and the median (by wall time) kept. Appends "KEY JOBS RUNS WALL USER SYS" to $results.
timed() {
  local key=$1 jobs=$2 check=$3 setup=$4 n=0 rc out tm t0 t1
  shift 4
  while :; do
    eval "$setup"
    sync
    out="$d/runs/$key-j$jobs.$n.json"
    tm="$d/runs/$key-j$jobs.$n.time"
    rc=0
    t0=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$tm.cpu" "$@" --jobs "$jobs" --json >"$out" 2>"$out.err" || rc=$?
    t1=$(date +%s.%N)
    # Wall time from date (to the millisecond; /usr/bin/time's %e has 10 ms steps), CPU from time.
    echo "$(echo "$t1 - $t0" | bc -l) $(tail -n 1 "$tm.cpu")" >"$tm"
    # shellcheck disable=SC2086 # CHECK is a list of options
    if ! python3 "$here/fleet_check.py" "$out" "$rc" "$users" $check; then
      echo "Error: '$* --jobs $jobs --json' (exit $rc) did not do what was asked; output in $d/runs:" >&2
      tail -n 5 "$out.err" "$tm" >&2
      exit 1
    fi
    n=$((n + 1))
    [ $n -ge 3 ] && break
    awk '{ exit !($1 < 5) }' <(tail -n 1 "$d/runs/$key-j$jobs.0.time") || break
  done
  local median
  median=$(for i in $(seq 0 $((n - 1))); do tail -n 1 "$d/runs/$key-j$jobs.$i.time"; done | sort -n | sed -n "$(((n + 1) / 2))p")
  printf '%s\t%s\t%s\t%s\n' "$key" "$jobs" "$n" "$(tr ' ' '\t' <<<"$median")" >>"$results"
}

echo "   $users files of $messages messages over $contacts contacts; --jobs 1 and --jobs $cores ($cores cores)"
printf '   load average at start: %s (timings are only comparable on an idle machine)\n' "$(cut -d' ' -f1-3 /proc/loadavg)"

gen=(generate --users "$users" --messages "$messages" --contacts "$contacts" --seed 42 --data-dir "$fleet")
# The read-only passes run over the fleet of the last generate (the --jobs $cores one);
# with the fleet in the page cache, so they measure CPU and locking, not the disk.
for jobs in 1 "$cores"; do
  timed generate "$jobs" "--messages $((users * messages))" "rm -rf $fleet" "$bin/chatdb" "${gen[@]}"
done
du -sh "$fleet" | awk '{ printf "   fleet: %s on disk\n", $1 }'
for jobs in 1 "$cores"; do
  timed usage "$jobs" "" "" "$bin/chatdb" usage --all --data-dir "$fleet"
done
for jobs in 1 "$cores"; do
  timed check "$jobs" "--clean" "" "$bin/chatdb" check --all --data-dir "$fleet"
done
for jobs in 1 "$cores"; do
  timed migrate "$jobs" "--changed 0" "" "$bin/chatdb" migrate --all --data-dir "$fleet"
done
# The same histories at schema version 1 (the seed's), remade before every run; each
# migrate writes its backup (<file>.bak-v1) and applies 0002 and 0003.
"$bin/chatdb" migrate --db "$d/template/chats-1.db" --to 1 --json >/dev/null
for jobs in 1 "$cores"; do
  timed migrate_v1 "$jobs" "--changed $users" "python3 $here/fleet_v1.py $d/template/chats-1.db $fleet $d/v1" \
    "$bin/chatdb" migrate --all --data-dir "$d/v1"
done

echo "   load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); section took $(($(date +%s) - started)) s"
python3 "$here/fleet_table.py" "$results" "$users" "$cores"
rm -rf "$d"
