#!/usr/bin/env bash
# The whole test suite under ThreadSanitizer and AddressSanitizer (issue 14).
#   scripts/torture.d/sanitize.sh [--work DIR] [--only thread|address] [--skip REGEX]
# Each sanitizer builds into a scratch path of its own (.build/tsan, .build/asan: a full
# build each, 5 to 10 minutes on 2 cores) and runs the suites in scripts/test's two
# passes. The tests start the built chatdb, chat-sync and chat-relay, which carry the
# same sanitizer: every process writes its reports to files in DIR (log_path), so a
# report from a child process is counted too. Leaks are not looked for (detect_leaks=0).
# Prints one line per sanitizer (tests run, passes, reports); exits 1 when a pass
# failed or any process wrote a report.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

work="" only="" skip=""
while [ $# -gt 0 ]; do
  case "$1" in
    --work) work=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --skip) skip=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "Error: Unexpected argument '$1'" >&2; exit 64 ;;
  esac
done
case "$only" in ""|thread|address) ;; *) echo "Error: '--only' takes thread or address" >&2; exit 64 ;; esac
[ -n "$work" ] || work=$(mktemp -d "${TMPDIR:-/tmp}/chatdb-sanitize.XXXXXX")
mkdir -p "$work"
ensure_packages "${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}"

failed=0
for sanitizer in thread address; do
  [ -z "$only" ] || [ "$only" = "$sanitizer" ] || continue
  short=$([ $sanitizer = thread ] && echo tsan || echo asan)
  scratch=".build/$short"
  reports="$work/$short"
  rm -rf "$reports" && mkdir -p "$reports"
  started=$(date +%s)
  if ! swift build --build-tests --sanitize=$sanitizer --scratch-path "$scratch" >"$work/$short-build.log" 2>&1; then
    echo "   $sanitizer: the build failed; see $work/$short-build.log"
    failed=1
    continue
  fi
  built=$(date +%s)
  export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 log_path=$reports/report"
  export ASAN_OPTIONS="detect_leaks=0 halt_on_error=1 log_path=$reports/report"
  skipping=(); [ -z "$skip" ] || skipping=(--skip "$skip")
  passes=0 bad=0 tests=0
  for pass in "--skip ChatSyncTests" "--filter ChatSyncTests"; do
    log="$work/$short-test-$passes.log"
    # shellcheck disable=SC2086
    if swift test --skip-build --sanitize=$sanitizer --scratch-path "$scratch" $pass "${skipping[@]}" >"$log" 2>&1; then :; else
      bad=$((bad + 1))
    fi
    count=$(grep -Eo 'Test run with [0-9]+ test' "$log" | grep -Eo '[0-9]+' | tail -1 || true)
    tests=$((tests + ${count:-0}))
    passes=$((passes + 1))
  done
  found=$(cat "$reports"/report.* 2>/dev/null | grep -cE '^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer)' || true)
  echo "   $sanitizer: $tests tests in $passes passes, $((passes - bad)) passed; $found report(s);" \
    "build $((built - started)) s, tests $(( $(date +%s) - built )) s (logs in $work)"
  if [ "$bad" -gt 0 ] || [ "$found" -gt 0 ]; then
    failed=1
    grep -hE '^(WARNING: ThreadSanitizer|==[0-9]+==ERROR: AddressSanitizer|SUMMARY)' "$reports"/report.* 2>/dev/null | sort | uniq -c | head -20 || true
    grep -hE '✘' "$work/$short"-test-*.log | head -20 || true
  fi
done
exit $failed
