#!/usr/bin/env bash
# Media (issue 30): a 1 GiB file up through a real `chat-relay serve` and back down with
# chat-sync's MediaTransfer (driven by `chat-sync-bench transfer`), each beside `cp` of the
# same file on the same disk, with both processes' peak memory; the same upload killed
# (SIGKILL) at random points 20 times, then finished; the thumbnail of a 24-megapixel
# JPEG beside ImageMagick's `convert -thumbnail`; and a store of about 20,000 media made by
# `chatdb generate --media-rate` (85 GiB logical, sparse: about 140 MiB on disk), its
# `chatdb usage --json` beside `du`, and `chatdb evict --media-max-size` to half of it
# (after a --dry-run) beside `rm` of the same files.
#
#   [MEDIA_PART=all|transfer|store] scripts/bench.d/media.sh BIN WORK
#
# BIN holds release chat-relay, chat-sync-bench and chatdb; WORK is scratch space (WORK/media
# is recreated, about 3 GiB). MEDIA_PART=transfer runs only the 1 GiB transfers and the
# thumbnail (about 1 minute), MEDIA_PART=store only the store (about 1 minute on 2 cores,
# most of it hashing the generated files); the default, all, runs both, each recording its
# own table.
#
# A transfer's time is its own (chat-sync-bench's JSON: from its first request until the
# last byte is stored, synced and checked); the file's SHA-256 is computed before (the
# media store names files by it). A thumbnail's time is the whole process's, libvips'
# loading included. Peak memory is VmHWM (relay: from /proc while it runs; the clients:
# GNU time's %M).
# Re-sent bytes: what the relay received of the upload (its log's "upload ID: N bytes
# from S" lines, every PATCH's) minus the file's size.
set -euo pipefail
bin=$1
work=$2
part=${MEDIA_PART:-all}
case $part in
  all | transfer | store) ;;
  *) echo "Error: MEDIA_PART takes 'all', 'transfer' or 'store'" >&2; exit 64 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
source scripts/lib.sh
ensure_packages time imagemagick "${RUNTIME_PACKAGES[@]}"
record() { python3 scripts/bench.d/record.py "$@"; }
best() { python3 -c "import sys; print(min(float(x) for x in sys.argv[1:]))" "$@"; }
mkdir -p "$work"
# Absolute: the store part runs rm from inside a copy of the folder.
d="$(cd "$work" && pwd)/media"
rm -rf "$d" && mkdir -p "$d"
trap 'kill -9 $(jobs -pr) 2>/dev/null || true; rm -rf "$d"' EXIT

# A store of media at scale: what `chatdb usage` and `chatdb evict` cost with ~20,000
# files. `chatdb generate --media-rate 0.2` on 100,000 messages attaches a media to about a
# fifth of them (images 0.2-4 MB, videos 5-100 MB, audio, files; sparse files named by the
# SHA-256 of their bytes). usage and du are best of 3 (warm cache); du -s --apparent-size
# stats every file of the folder, the floor of usage's folder total. The eviction runs
# once (it removes the files): a --dry-run first must plan as many files as it evicts;
# its longest write transaction is its own figure (maxChunkMillis); rm is xargs rm of the
# same files in a copy of the folder made before. Both remove files synced to disk.
store_part() {
  local s="$d/store"
  local db="$s/chats-1.db"
  mkdir -p "$s"
  local t0 t1
  t0=$(date +%s.%N)
  "$bin/chatdb" generate --db "$db" --contacts 1000 --messages 100000 --media-rate 0.2 --seed 42 \
    >/dev/null
  t1=$(date +%s.%N)
  # Settled on disk first: a file unlinked while the kernel writes its page back waits for
  # the write (an eviction right after generate took 2 to 24 s instead of 0.5).
  sync
  local generate_s usages=() dus=()
  generate_s=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$t1")
  for _ in 1 2 3; do
    /usr/bin/time -f "%e" -o "$d/time" "$bin/chatdb" usage --db "$db" --json >"$d/usage.json"
    usages+=("$(cat "$d/time")")
    /usr/bin/time -f "%e" -o "$d/time" du -s --apparent-size "$s/chats-1.media" >/dev/null
    dus+=("$(cat "$d/time")")
  done
  local half
  half=$(python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['files'][0]['result']['media']['localBytes'] // 2)" \
    "$d/usage.json")
  "$bin/chatdb" evict --db "$db" --media-max-size "${half}B" --dry-run --json >"$d/dry.json"
  cp -a --sparse=always "$s/chats-1.media" "$d/peer"
  sync
  /usr/bin/time -f "%e" -o "$d/time" "$bin/chatdb" evict --db "$db" --media-max-size "${half}B" --json >"$d/evict.json"
  local evict_s rm_s
  evict_s=$(cat "$d/time")
  python3 -c "
import sqlite3, sys
for (name,) in sqlite3.connect(sys.argv[1]).execute(\"SELECT sha256 FROM Media WHERE state = 'evicted'\"):
    print(name)" "$db" >"$d/evicted.txt"
  (cd "$d/peer" && /usr/bin/time -f "%e" -o "$d/time" xargs rm -f <"$d/evicted.txt")
  rm_s=$(cat "$d/time")
  rm -rf "$d/peer"
  "$bin/chatdb" check --db "$db" --json >"$d/check.json" || true

  python3 - "$generate_s" "$(best "${usages[@]}")" "$(best "${dus[@]}")" "$evict_s" "$rm_s" "$half" "$d" <<'PY'
import json, sys
sys.path.insert(0, "scripts/bench.d")
import record
generate_s, usage_s, du_s, evict_s, rm_s = map(float, sys.argv[1:6])
half, d = int(sys.argv[6]), sys.argv[7]
result = lambda name: json.load(open(f"{d}/{name}.json"))["files"][0]["result"]
media, dry, evicted, check = result("usage")["media"], result("dry")["media"], result("evict"), result("check")
ok = lambda good: "✔ pass" if good else "✘ miss"
gib = lambda n: f"{n / (1 << 30):.1f} GiB"
files = media["localFiles"]
rows = [
    (f"generate --media-rate 0.2: {files:,} media, {gib(media['localBytes'])} (sparse), 100,000 messages",
     f"{generate_s:.1f} s", "", "", "<= 60 s", ok(generate_s <= 60)),
    (f"usage --json with {files:,} media files", f"{usage_s:.2f} s", f"du --apparent-size {du_s:.2f} s",
     f"{usage_s / du_s:.1f}x", "<= 1 s", ok(usage_s <= 1)),
    (f"evict --media-max-size {gib(half)}: {evicted['evictedMedia']:,} files, {gib(evicted['evictedMediaBytes'])}",
     f"{evict_s:.2f} s", f"rm {rm_s:.2f} s", f"{evict_s / rm_s:.1f}x", "", ""),
    (f"  its longest write transaction (of {evicted['chunks']}; 99% under {evicted['p99ChunkMillis']} ms)",
     f"{evicted['maxChunkMillis']} ms", "", "", "<= 50 ms", ok(evicted["maxChunkMillis"] <= 50)),
    ("  --dry-run's files / the run's", f"{dry['evictFiles']:,} / {evicted['evictedMedia']:,}", "", "", "equal",
     ok(dry["evictFiles"] == evicted["evictedMedia"])),
    ("  chatdb check afterwards", "clean" if check["clean"] else f"{len(check['findings'])} finding(s)", "", "",
     "clean", ok(check["clean"])),
]
for r in rows:
    print("   " + " | ".join(r))
record.table("media", ("what", "figure", "peer", "ratio", "goal", "result"), rows, [
    "A store made by chatdb generate --media-rate 0.2 --seed 42 (1,000 contacts): images 70% (0.2-4 MB), videos 10% "
    "(5-100 MB), audio 10% (0.5-10 MB), files 10% (10 KB-20 MB), log-uniform, each a sparse file named by the SHA-256 "
    "of its bytes (generate's time is mostly hashing them, on both cores). usage and du -s --apparent-size of the "
    "folder: best of 3, warm cache. The eviction runs once, to half the media's bytes, least recently accessed "
    "first; rm is xargs rm of the same files in a copy of the folder."])
PY
}
if [ "$part" = store ]; then
  store_part
  exit 0
fi

size=$((1 << 30))
head -c "$size" /dev/urandom >"$d/file.bin"
sha=$(sha256sum "$d/file.bin" | cut -c1-64)
"$bin/chat-relay" user add --db "$d/relay.db" --id 1 --name A | tail -n 1 >"$d/token"
chmod 600 "$d/token"
"$bin/chat-relay" serve --db "$d/relay.db" --port 0 --max-media-size 2GiB 2>"$d/relay.log" >/dev/null &
relay=$!
for _ in $(seq 500); do grep -q 'listening on' "$d/relay.log" && break; sleep 0.01; done
port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$d/relay.log" | head -n 1)
[ -n "$port" ] || { echo "Error: chat-relay did not start" >&2; exit 1; }
url="http://127.0.0.1:$port"
transfer() {
  /usr/bin/time -f "%e %M" -o "$d/time" "$bin/chat-sync-bench" transfer --server "$url" --token-file "$d/token" \
    --file "$d/file.bin" --sha256 "$sha" "$@"
}
# The transfer's own seconds (its JSON), from its first request to the last byte stored.
seconds() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['seconds'])" "$1"; }

# cp of the same file on the same disk, best of 3 (cp uses copy_file_range: no bytes
# through user space, the floor for a copy here).
cps=()
for _ in 1 2 3; do
  /usr/bin/time -f "%e" -o "$d/time" cp "$d/file.bin" "$d/copy.bin"
  cps+=("$(cat "$d/time")")
  rm -f "$d/copy.bin"
done
cp_s=$(best "${cps[@]}")
# The SHA-256 of the same file (OpenSSL, SHA-NI), best of 3: every byte of a transfer is
# hashed once at least (the relay checks an upload's, the client a download's), so no
# transfer here can take less; cp / this is the best ratio any transfer could reach.
hashes=()
for _ in 1 2 3; do
  /usr/bin/time -f "%e" -o "$d/time" openssl dgst -sha256 "$d/file.bin" >/dev/null
  hashes+=("$(cat "$d/time")")
done
hash_s=$(best "${hashes[@]}")

# Up and down, best of 3 each (a new upload each time: the same bytes name the same media).
ups=() downs=() up_rss=0 down_rss=0
for round in 1 2 3; do
  rm -f "$d/state"
  transfer --state "$d/state" >"$d/up$round.json"
  read -r _ kib <"$d/time"; ups+=("$(seconds "$d/up$round.json")"); up_rss=$((kib > up_rss ? kib : up_rss))
  rm -f "$d/down.bin"
  transfer --state "$d/state" --download "$d/down.bin" >"$d/down$round.json"
  read -r _ kib <"$d/time"; downs+=("$(seconds "$d/down$round.json")"); down_rss=$((kib > down_rss ? kib : down_rss))
  cmp -s "$d/down.bin" "$d/file.bin" || { echo "Error: the downloaded file differs" >&2; exit 1; }
done
relay_rss=$(awk '/VmHWM/ {print $2}' "/proc/$relay/status")
up_s=$(best "${ups[@]}")
down_s=$(best "${downs[@]}")

# Killed 20 times at random points of uploads, each then finished: when one completes
# between kills, the next kill lands in a new upload of the same file. Re-sent bytes:
# what the relay received of each upload (its log) minus the file's size, summed.
before=$(wc -l <"$d/relay.log")
kills=0 uploads=0
rm -f "$d/state"
: >"$d/uploads.txt"
while [ "$kills" -lt 20 ]; do
  "$bin/chat-sync-bench" transfer --server "$url" --token-file "$d/token" --file "$d/file.bin" --sha256 "$sha" \
    --state "$d/state" >/dev/null 2>&1 &
  client=$!
  # Past the process's start (about 30 ms), into the upload.
  sleep "$(python3 -c "import random; print(random.uniform(0.04, 0.09))")"
  if kill -9 "$client" 2>/dev/null; then kills=$((kills + 1)); fi
  wait "$client" 2>/dev/null || true
  if [ "$(wc -w <"$d/state" 2>/dev/null || echo 0)" = 2 ]; then
    # Done before the kill: the next kills go to a new upload.
    cut -d' ' -f1 "$d/state" >>"$d/uploads.txt"
    uploads=$((uploads + 1))
    rm -f "$d/state"
  fi
done
if [ -f "$d/state" ]; then
  transfer --state "$d/state" >"$d/resumed.json"
  cut -d' ' -f1 "$d/state" >>"$d/uploads.txt"
  uploads=$((uploads + 1))
fi
resent=0
while read -r location; do
  id=${location##*/}
  received=$(tail -n +"$((before + 1))" "$d/relay.log" |
    awk -v id="$id" '$1 == "upload" && $2 == id":" {sum += $3} END {print sum + 0}')
  resent=$((resent + received - size))
done <"$d/uploads.txt"
rm -f "$d/down.bin"
transfer --state "$d/state" --download "$d/down.bin" >/dev/null
cmp -s "$d/down.bin" "$d/file.bin" && resumed_ok=yes || resumed_ok=no
kill "$relay" 2>/dev/null || true
wait "$relay" 2>/dev/null || true

# A 24-megapixel JPEG: ImageMagick's thumbnail beside ours, best of 3, peak memory.
/usr/bin/convert -size 6000x4000 plasma:fractal -blur 0x2 -quality 90 "$d/photo.jpg"
ims=() ours=() im_rss=0 our_rss=0
for _ in 1 2 3; do
  /usr/bin/time -f "%e %M" -o "$d/time" /usr/bin/convert "$d/photo.jpg" -thumbnail 320x320 "$d/im.jpg"
  read -r s kib <"$d/time"; ims+=("$s"); im_rss=$((kib > im_rss ? kib : im_rss))
  /usr/bin/time -f "%e %M" -o "$d/time" "$bin/chat-sync-bench" thumbnail --file "$d/photo.jpg" --out "$d/ours.jpg" \
    >"$d/thumb.json"
  read -r s kib <"$d/time"; ours+=("$s"); our_rss=$((kib > our_rss ? kib : our_rss))
done
im_s=$(best "${ims[@]}")
our_s=$(best "${ours[@]}")
thumb_bytes=$(stat -c %s "$d/ours.jpg")

python3 - "$size" "$cp_s" "$up_s" "$down_s" "$up_rss" "$down_rss" "$relay_rss" "$kills" "$resent" "$resumed_ok" \
  "$im_s" "$our_s" "$im_rss" "$our_rss" "$thumb_bytes" "$(cat "$d/thumb.json")" "$uploads" "$hash_s" <<'PY'
import json, sys
sys.path.insert(0, "scripts/bench.d")
import record
(size, cp_s, up_s, down_s, up_rss, down_rss, relay_rss, kills, resent, resumed_ok, im_s, our_s, im_rss, our_rss,
 thumb_bytes, thumb, uploads, hash_s) = sys.argv[1:]
size, kills, resent = int(size), int(kills), int(resent)
cp_s, up_s, down_s, im_s, our_s, hash_s = map(float, (cp_s, up_s, down_s, im_s, our_s, hash_s))
mib = lambda kib: f"{int(kib) / 1024:.1f} MiB"
ok = lambda good: "✔ pass" if good else "✘ miss"
chunk = 4 << 20
thumb = json.loads(thumb)
rows = [
    ("upload 1 GiB (tus, 4 MiB PATCHes)", f"{up_s:.2f} s", f"cp {cp_s:.2f} s", f"{cp_s / up_s:.2f}x", ">= 0.5x cp",
     ok(cp_s / up_s >= 0.5)),
    ("download 1 GiB (4 MiB ranged GETs)", f"{down_s:.2f} s", f"cp {cp_s:.2f} s", f"{cp_s / down_s:.2f}x",
     ">= 0.5x cp", ok(cp_s / down_s >= 0.5)),
    ("  the floor: SHA-256 of the file (openssl dgst), which a transfer cannot beat", f"{hash_s:.2f} s",
     f"cp {cp_s:.2f} s", f"{cp_s / hash_s:.2f}x", "", "the best ratio a checked transfer can reach here"),
    ("peak memory: client up / down", f"{mib(up_rss)} / {mib(down_rss)}", "", "", "< 64 MiB",
     ok(max(int(up_rss), int(down_rss)) < 64 * 1024)),
    ("peak memory: relay", mib(relay_rss), "", "", "< 64 MiB", ok(int(relay_rss) < 64 * 1024)),
    (f"{uploads} uploads killed {kills} times in all, each then finished: bytes the relay received twice",
     f"{resent:,}", "", "", f"<= one 4 MiB chunk a kill ({kills * chunk:,})", ok(0 <= resent <= kills * chunk)),
    ("  the last one's download matches the file", resumed_ok, "", "", "yes", ok(resumed_ok == "yes")),
    ("thumbnail of a 24-megapixel JPEG", f"{our_s:.2f} s", f"convert -thumbnail {im_s:.2f} s",
     f"{our_s / im_s:.2f}x", "<= 0.5x its time", ok(our_s / im_s <= 0.5)),
    ("  its peak memory", mib(our_rss), f"convert {mib(im_rss)}", "", "<= 64 MiB", ok(int(our_rss) <= 64 * 1024)),
    ("  the thumbnail", f"{thumb['bytes']:,} B", "", "", "<= 20 KiB", ok(thumb["bytes"] <= 20 * 1024)),
]
for r in rows:
    print("   " + " | ".join(r))
record.table("media", ("what", "figure", "peer", "ratio", "goal", "result"), rows, [
    "chat-sync-bench transfer (chat-sync's MediaTransfer over libwebsockets) against chat-relay serve on loopback, "
    "best of 3: from the first request until the last byte is stored and its SHA-256 checked (the relay hashes an "
    "upload as it arrives; the client hashes a download). cp copies with copy_file_range: no byte passes through "
    "user space. The image is ImageMagick's plasma:fractal at 6000x4000, JPEG quality 90; the thumbnail's time is "
    "the whole process, libvips' loading included."])
PY
if [ "$part" = all ]; then store_part; fi
