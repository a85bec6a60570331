#!/usr/bin/env bash
# Full-text search (issue 13) on a 1,000,000-message file.
#
#   scripts/bench.d/search.sh BIN_DIR WORK_DIR
#
# BIN_DIR holds a release `chatdb` and `chatdb-bench`; WORK_DIR is scratch space (about
# 2 GB). MESSAGES=N changes the size; ALTERNATIVES=1 also builds the designs not chosen
# (unicode61 alone, trigram over everything, trigram over the CJK rows) on the same rows,
# for docs/architecture.md (about 1 more minute). Prints one line per figure: what,
# figure, peer, ratio, goal, PASS/MISS. Needs chatdb, chatdb-bench, sqlite3 and python3.
set -euo pipefail
bin=${1:?usage: search.sh BIN_DIR WORK_DIR}
work=${2:?usage: search.sh BIN_DIR WORK_DIR}
messages=${MESSAGES:-1000000}
rm -rf "$work/search" && mkdir -p "$work/search"
d="$work/search"

now_s() { date +%s.%N; }
seconds() { # seconds COMMAND...: wall time of one run, output discarded
  local t0 t1
  t0=$(now_s); "$@" >/dev/null; t1=$(now_s)
  echo "$t1 - $t0" | bc -l
}
min() { if [ "$(echo "$1 < $2" | bc -l)" = 1 ]; then echo "$1"; else echo "$2"; fi; }
line() { # what figure peer ratio goal ok (also kept for scripts/bench --markdown: record.py)
  printf '   %-46s %-14s %-30s %-9s %-10s %s\n' "$1" "$2" "$3" "$4" "$5" "$6"
  python3 "$(dirname "${BASH_SOURCE[0]}")/record.py" "$([ "$1" = what ] && echo head || echo row)" search "$@" || true
}
verdict() { [ "$(echo "$1 <= $2" | bc -l)" = 1 ] && echo PASS || echo MISS; }
mib() { echo "scale=1; $1 / 1048576" | bc -l; }

# The search objects of migration 0005, dropped to make a file "without the index" (the
# writers then skip the index: SearchIndexUpkeep finds no tables).
drop_search="
DROP TRIGGER MessageSearch_before_insert; DROP TRIGGER MessageSearch_insert; DROP TRIGGER MessageSearch_delete;
DROP TRIGGER MessageSearch_before_update; DROP TRIGGER MessageSearch_update;
DROP TRIGGER RequestSearch_before_insert; DROP TRIGGER RequestSearch_insert; DROP TRIGGER RequestSearch_delete;
DROP TRIGGER RequestSearch_before_update; DROP TRIGGER RequestSearch_update;
DROP TABLE MessageSearch; DROP TABLE MessageSearchCJK; DROP TABLE RequestSearch; DROP TABLE SearchStash;
DROP VIEW MessageSearchSegments; DROP VIEW RequestSearchText;"
without_index() { # an empty file at the latest schema, without the search index
  rm -rf "$(dirname "$1")" && mkdir -p "$(dirname "$1")"
  "$bin/chatdb" migrate --db "$1" >/dev/null
  sqlite3 "$1" "$drop_search"
}

# Untimed: the history as NDJSON, for import.
gen=(generate --contacts 1000 --messages "$messages" --seed 42)
"$bin/chatdb" "${gen[@]}" --user 1 --format ndjson -o "$d/history.ndjson" >/dev/null

# 1. Generate and import with the index against without, alternately, best of 2.
gen_with=999999; gen_without=999999; imp_with=999999; imp_without=999999
for _ in 1 2; do
  without_index "$d/gen-without/chats-1.db"
  gen_without=$(min "$gen_without" "$(seconds "$bin/chatdb" "${gen[@]}" --db "$d/gen-without/chats-1.db")")
  rm -rf "$d/gen-with"
  gen_with=$(min "$gen_with" "$(seconds "$bin/chatdb" "${gen[@]}" --db "$d/gen-with/chats-1.db")")
  without_index "$d/imp-without/chats-1.db"
  imp_without=$(min "$imp_without" "$(seconds "$bin/chatdb" import --db "$d/imp-without/chats-1.db" "$d/history.ndjson")")
  rm -rf "$d/imp-with"
  imp_with=$(min "$imp_with" "$(seconds "$bin/chatdb" import --db "$d/imp-with/chats-1.db" "$d/history.ndjson")")
done
db="$d/imp-with/chats-1.db"
"$bin/chatdb" check --db "$db" >/dev/null || echo "   WARNING: chatdb check found problems in the imported file"

line "what" "chatdb" "peer" "ratio" "goal" ""
ratio=$(echo "$gen_with / $gen_without" | bc -l)
line "generate $messages, with the index" "$(printf '%.2f s' "$gen_with")" "$(printf 'without the index %.2f s' "$gen_without")" \
  "$(printf '%.2fx' "$ratio")" "<= 1.50x" "$(verdict "$ratio" 1.5)"
ratio=$(echo "$imp_with / $imp_without" | bc -l)
line "import $messages, with the index" "$(printf '%.2f s' "$imp_with")" "$(printf 'without the index %.2f s' "$imp_without")" \
  "$(printf '%.2fx' "$ratio")" "<= 1.50x" "$(verdict "$ratio" 1.5)"

# 2. Sizes (dbstat): the index beside the Messages table.
read -r table words cjk requests cjk_rows < <(sqlite3 -separator ' ' "$db" "
  SELECT (SELECT sum(pgsize) FROM dbstat WHERE name = 'Messages'),
    (SELECT sum(pgsize) FROM dbstat WHERE name GLOB 'MessageSearch_*'),
    (SELECT sum(pgsize) FROM dbstat WHERE name GLOB 'MessageSearchCJK_*'),
    (SELECT sum(pgsize) FROM dbstat WHERE name GLOB 'RequestSearch_*'),
    (SELECT count(*) FROM Messages WHERE content GLOB '*[぀-ヿ㐀-䶿一-鿿豈-﫿가-힯𠀀-𯿿]*')")
index=$((words + cjk + requests))
line "search index size" "$(mib "$index") MiB" "Messages table $(mib "$table") MiB" "$(printf '%.2fx' "$(echo "$index / $table" | bc -l)")" "" ""
echo "     words $(mib "$words") MiB, CJK $(mib "$cjk") MiB ($cjk_rows rows hold CJK), outbox $(mib "$requests") MiB"

# 3. Queries, in process: newest 50 for a rare and a common word and a CJK pair, and the
#    LIKE scan for the same text.
"$bin/chatdb-bench" search --db "$db" --owner 1 --repeat 200 >"$d/search.json"
python3 - "$d/search.json" "$(dirname "${BASH_SOURCE[0]}")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sys.path.insert(0, sys.argv[2])
import record
def line(what, figure, peer, ratio, goal, ok):
    print(f"   {what:<46} {figure:<14} {peer:<30} {ratio:<9} {goal:<10} {ok}")
    record.row("search", [what, figure, peer, ratio, goal, ok])
for key, label, goal in [("rare", f"rare word '{r['rareWord']}' ({r['rareMatches']} msgs)", 1000),
                         ("common", f"common word '{r['commonWord']}' ({r['commonMatches']:,} msgs)", 1000),
                         ("cjk", "CJK pair '你好'", None)]:
    us, like = r[key + "Micros"], r[key + "LikeMicros"]
    speedup = like / us
    ok = ""
    if goal is not None:
        ok = "PASS" if us <= goal and (key != "rare" or speedup >= 30) else "MISS"
    line(f"search newest 50: {label}", f"{us / 1000:.3f} ms", f"LIKE '%..%' {like / 1000:.1f} ms",
         f"{speedup:.0f}x", f"<= 1 ms{', >= 30x' if key == 'rare' else ''}" if goal else "", ok)
line("search, rare word: first two pages of 10", f"{r['rarePage2Micros'] / 1000:.3f} ms", "", "", "", "")
PY

# 4. Building the index of a file that holds the rows (what migration 0005 does to an
#    older file): `index apply --rebuild-search`. (A file cannot be taken back to version
#    4 by hand since migration 0006, so the migration itself is not timed here.)
cp "$db" "$d/v4.db"
migrate_s=$(seconds "$bin/chatdb" index apply --db "$d/v4.db" --rebuild-search)
line "rebuild the search index of $messages (index apply)" "$(printf '%.2f s' "$migrate_s")" "" "" "" ""

# 5. Eviction gives the index's pages back too.
before=$(python3 -c "import json,sys; print(json.load(sys.stdin)['files'][0]['result']['searchIndexBytes'])" \
  < <("$bin/chatdb" usage --db "$d/v4.db" --json))
cutoff_now=$(sqlite3 "$d/v4.db" "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', created_at, '+30 days') FROM Messages ORDER BY id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM Messages)")
evict_s=$(seconds "$bin/chatdb" evict --db "$d/v4.db" --older-than 30d --now "$cutoff_now")
after=$(python3 -c "import json,sys; print(json.load(sys.stdin)['files'][0]['result']['searchIndexBytes'])" \
  < <("$bin/chatdb" usage --db "$d/v4.db" --json))
line "evict the older half: search index" "$(mib "$before") -> $(mib "$after") MiB" "" "" "" ""
echo "     (evict took $(printf '%.2f s' "$evict_s") end to end, merging the index's segments included)"
"$bin/chatdb" check --db "$d/v4.db" >/dev/null || echo "   WARNING: chatdb check found problems after eviction"
python3 "$(dirname "${BASH_SOURCE[0]}")/record.py" note search "A writer that builds the index as it writes cannot \
come within 1.5x of one without it (FTS5's tokenizing is the cost: docs/decisions/0004); the writers' table compares \
generate and import with SQLite building the same file instead. Query times: in process, median of 200." || true

# 6. The designs not chosen, built by SQLite on the same rows (for the architecture notes).
if [ "${ALTERNATIVES:-0}" = 1 ]; then
  alt() { # alt LABEL SQL...: time and size of one FTS5 build on a copy without the index
    cp "$d/gen-without/chats-1.db" "$d/alt.db"
    local t
    t=$(seconds sqlite3 "$d/alt.db" "$2")
    line "$1" "$(printf '%.1f s' "$t")" "$(mib "$(sqlite3 "$d/alt.db" "SELECT sum(pgsize) FROM dbstat WHERE name GLOB 'alt_*'")") MiB" "" "" ""
    rm -f "$d/alt.db"
  }
  echo "   alternatives (sqlite3, $messages messages): build time, index size"
  alt "unicode61 remove_diacritics 2, all rows" \
    "CREATE VIRTUAL TABLE alt USING fts5(content, content='Messages', content_rowid='id', columnsize=0, tokenize='unicode61 remove_diacritics 2'); INSERT INTO alt(alt) VALUES ('rebuild');"
  alt "trigram, all rows" \
    "CREATE VIRTUAL TABLE alt USING fts5(content, content='Messages', content_rowid='id', columnsize=0, tokenize='trigram'); INSERT INTO alt(alt) VALUES ('rebuild');"
  alt "trigram, the rows holding CJK" \
    "CREATE VIRTUAL TABLE alt USING fts5(content, content='', columnsize=0, tokenize='trigram'); INSERT INTO alt(rowid, content) SELECT id, content FROM Messages WHERE content GLOB '*[぀-ヿ㐀-䶿一-鿿豈-﫿가-힯𠀀-𯿿]*';"
fi
rm -rf "$d/gen-with" "$d/imp-without" "$d/history.ndjson"
