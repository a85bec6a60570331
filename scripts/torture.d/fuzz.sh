#!/usr/bin/env bash
# libFuzzer targets (issue 14, "Fuzzing"): builds each target in Fuzz/ with
# `-sanitize=fuzzer,address` and runs it for a bounded time on a copy of its seed corpus
# (Tests/Fuzz/corpus/<target>), printing the executions run and crashes found.
#   scripts/torture.d/fuzz.sh [--seconds N] [--target NAME]... [--keep DIR]
#   (--seconds: per target, default 20; --keep: leave corpora, crash inputs and logs in
#   DIR instead of a temporary folder that is removed)
# Exits 1 when a target crashed (the input is kept and printed; reproduce with
# `.build/fuzz/bin/fuzz-<target> <input>`), 2 when a target could not be built.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/lib.sh

seconds=20 keep="" targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --target) targets+=("$2"); shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "Error: Unexpected argument '$1'" >&2; exit 64 ;;
  esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "Error: '--seconds' takes a whole number from 1" >&2; exit 64; }
all=(records command-line relay sync)
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
  [[ " ${all[*]} " == *" $t "* ]] || { echo "Error: no fuzz target '$t' (known: ${all[*]})" >&2; exit 64; }
done

ensure_packages "${BUILD_PACKAGES[@]}"

# The package's modules, instrumented, in a build folder of their own so the normal
# build keeps its flags and cache. The three programs' modules are built too (their
# entry points are renamed <module>_main by SwiftPM, so they link beside libFuzzer's
# main); `swift build` takes one --target at a time.
build=.build/fuzz
flags=(--build-path "$build" -Xswiftc -sanitize=fuzzer,address)
mkdir -p "$build"
for module in chatdb chat-relay chat-sync; do
  if ! swift build "${flags[@]}" --target "$module" >"$build.log" 2>&1; then
    echo "Error: the instrumented build of $module failed; see $build.log" >&2
    exit 2
  fi
done
bin=$(realpath "$(swift build --build-path "$build" --show-bin-path)")
objects=()
# Only the objects of sources that exist in the module's own folder: a renamed, moved or
# deleted file's object stays in the build folder and would be linked twice
# (Migrations' source is generated).
for module in ChatStore Migrations ChatMaintenance ChatCLI ChatCommands ChatProtocol LWSSupport ChatRelay ChatSync \
  chatdb chat_relay chat_sync; do
  sources=$(find "Sources/${module//_/-}" -name '*.swift' -printf '%f\n' 2>/dev/null | sort -u || true)
  for object in "$bin/$module.build"/*.o; do
    if [ "$module" = Migrations ] || grep -qxF "$(basename "$object" .o)" <<<"$sources"; then objects+=("$object"); fi
  done
done
# CThumbnail is a C target of our own: SwiftPM made its module map and its object.
objects+=("$bin/CThumbnail.build/thumbnail.c.o")
modulemaps=(-Xcc "-fmodule-map-file=$bin/CThumbnail.build/module.modulemap" -Xcc "-ISources/CThumbnail/include")
for c in CSQLite CZstd CCrypto CMalloc CWebSockets; do modulemaps+=(-Xcc "-fmodule-map-file=Sources/$c/module.modulemap"); done
cflags=() libs=()
for f in $(pkg-config --cflags-only-I sqlite3 libzstd libcrypto libwebsockets); do cflags+=(-Xcc "$f"); done
read -r -a libs <<<"$(pkg-config --libs sqlite3 libzstd libcrypto libwebsockets)"

mkdir -p "$build/bin"
source_of() {
  case "$1" in
    records) echo Fuzz/Records.swift ;;
    command-line) echo Fuzz/CommandLine.swift ;;
    relay) echo Fuzz/Relay.swift ;;
    sync) echo Fuzz/Sync.swift ;;
  esac
}
for t in "${targets[@]}"; do
  out="$build/bin/fuzz-$t"
  if ! swiftc -sanitize=fuzzer,address -parse-as-library -g -Onone -module-name "Fuzz_${t//-/_}" \
    Fuzz/Support.swift "$(source_of "$t")" -I "$bin/Modules" -module-cache-path "$PWD/$build/fuzz-module-cache" \
    "${modulemaps[@]}" "${cflags[@]}" "${objects[@]}" "${libs[@]}" -o "$out" 2>"$out.log"; then
    grep -v "Cannot export local symbol" "$out.log" >&2 || true
    echo "Error: fuzz target $t did not build" >&2
    exit 2
  fi
done

if [ -n "$keep" ]; then work=$keep; mkdir -p "$work"; else
  work=$(mktemp -d "${TMPDIR:-/tmp}/chatdb-fuzz.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
crashed=0
for t in "${targets[@]}"; do
  corpus="$work/$t/corpus" artifacts="$work/$t/crashes/"
  mkdir -p "$corpus" "$artifacts"
  cp Tests/Fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  seeds=$(ls "$corpus" | wc -l)
  set +e
  # Swift's own backtracer off (libFuzzer reports the trap and keeps the input); no leak
  # checks (the programs keep caches for the process's life); inputs
  # up to 64 KiB, and a per-input timeout that only a hang reaches.
  SWIFT_BACKTRACE=enable=no "$build/bin/fuzz-$t" "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -detect_leaks=0 -print_final_stats=1 -artifact_prefix="$artifacts" >"$work/$t/log" 2>&1
  status=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t/log" | tail -1)
  [ -n "$runs" ] || runs=$(grep -o 'Done [0-9]* runs' "$work/$t/log" | grep -o '[0-9]*' | tail -1)
  found=$(ls "$artifacts" | wc -l)
  printf '   fuzz %-13s %10s executions in %ss, corpus %s -> %s inputs, %s crash(es)\n' \
    "$t" "${runs:-?}" "$seconds" "$seeds" "$(ls "$corpus" | wc -l)" "$found"
  if [ $status -ne 0 ] || [ "$found" -gt 0 ]; then
    crashed=$((crashed + 1))
    grep -E "ERROR:|Fatal error|fuzz invariant|SUMMARY" "$work/$t/log" | head -5 | sed 's/^/     /'
    for a in "$artifacts"*; do [ -e "$a" ] && echo "     input kept: $a"; done
    [ -n "$keep" ] || { keep_dir=$(mktemp -d "${TMPDIR:-/tmp}/chatdb-fuzz-crash.XXXXXX"); cp -r "$work/$t" "$keep_dir/"; \
      echo "     copied to $keep_dir/$t (log, crashes)"; }
  fi
done
[ $crashed -eq 0 ] || { echo "== Fuzz: $crashed target(s) crashed" >&2; exit 1; }
