#!/bin/bash
# Summary capture with its fold tables full: a call that finds no room in
# the kernel's per-(pid, tid, op, second) slots and map keeps its full row
# and is counted (trace.cuda.fold_map_full), never lost. The tables are
# shrunk to 2 entries together (1 slot, 1 map entry) with the testing knob
# CW_FOLD_MAP_ENTRIES (docs/trace.md, "Capture"); four threads need up to
# twelve (three open seconds each), so the one slot is drained and reused
# each second: it must start from zero every time. query's
# per-tenant summary (from rows) counts the folded calls too.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda
N=20000 T=4
c() { sqlite3 "$D/m.db" "SELECT coalesce((SELECT value FROM counters WHERE name='$1'), 0)"; }

# A bad knob is refused before anything loads.
out=$(CW_FOLD_MAP_ENTRIES=0 "$CW_BIN" trace -- true 2>&1); rc=$?
[ $rc = 2 ] && echo "$out" | grep -q 'bad CW_FOLD_MAP_ENTRIES "0"' || fail "bad CW_FOLD_MAP_ENTRIES: rc $rc: $out"

CW_FOLD_MAP_ENTRIES=2 CW_FAKE_SYNC_US=20 "$CW_BIN" trace --db "$D/m.db" --no-view -- \
	"$FIX/fake_workload" -w 1200 -n $N -t $T -m sync >"$D/w.out" 2>"$D/t.err" || fail "trace: $(cat "$D/t.err")"
calls=$(awk '$1=="calls" {print $2}' "$D/w.out")
[ "$calls" = $((N * T)) ] || fail "workload: $(cat "$D/w.out")"
rows=$(sqlite3 "$D/m.db" "SELECT count(*) FROM events WHERE op='cudaStreamSynchronize'")
agg=$(sqlite3 "$D/m.db" "SELECT coalesce(sum(count + errors), 0) FROM aggregates WHERE op='cudaStreamSynchronize'")
folded=$(c trace.cuda.folded) full=$(c trace.cuda.fold_map_full)
first=$(c trace.cuda.kept_first) sampled=$(c trace.cuda.kept_sampled) slow=$(c trace.cuda.kept_slow)
echo "calls $calls: rows $rows (first $first, sampled $sampled, slow $slow, map full $full), folded $folded, aggregated $agg"
[ "$full" -gt 0 ] || fail "a 2-entry fold map never filled"
[ "$folded" -gt 0 ] || fail "nothing folded into the 2 entries there were"
[ $((rows + folded)) = "$calls" ] || fail "rows $rows + folded $folded != calls $calls"
[ $((first + sampled + slow + full)) = "$rows" ] || fail "kept $first + $sampled + $slow + map full $full != rows $rows"
[ "$agg" = "$calls" ] || fail "aggregates count $agg calls, the loop made $calls"
[ "$(c trace.cuda.fold_lost)" = 0 ] || fail "folds lost"
# query's per-tenant summary, read from the rows, adds the folded calls.
pt=$("$CW_BIN" query --db "$D/m.db" --per-tenant --json | python3 -c 'import json, sys
print(sum(r["count"] + r["failed"] for r in json.load(sys.stdin) if r["op"] == "cudaStreamSynchronize"))')
[ "$pt" = "$calls" ] || fail "query --per-tenant counts $pt calls, the loop made $calls"
grep -q "fold map full $full," "$D/t.err" || fail "trace does not print the map-full count: $(tail -1 "$D/t.err")"

# One thread for five seconds: the one slot is drained and claimed again
# as the seconds pass, and every call is still a row or folded, once.
CW_FOLD_MAP_ENTRIES=2 CW_FAKE_SYNC_US=20 "$CW_BIN" trace --db "$D/r.db" --no-view -- \
	"$FIX/fake_workload" -T 5 -r 4000 -m sync >"$D/r.out" 2>"$D/r.err" || fail "trace: $(cat "$D/r.err")"
calls=$(awk '$1=="calls" {print $2}' "$D/r.out")
rows=$(sqlite3 "$D/r.db" "SELECT count(*) FROM events WHERE op='cudaStreamSynchronize'")
folded=$(sqlite3 "$D/r.db" "SELECT coalesce((SELECT value FROM counters WHERE name='trace.cuda.folded'), 0)")
secs=$(sqlite3 "$D/r.db" "SELECT count(DISTINCT second) FROM folded WHERE op='cudaStreamSynchronize'")
echo "one thread, 5 s: calls $calls: rows $rows, folded $folded over $secs seconds"
[ "$secs" -ge 4 ] || fail "folded calls in $secs seconds, the loop ran 5"
[ $((rows + folded)) = "$calls" ] || fail "one thread: rows $rows + folded $folded != calls $calls"
echo ok
