#!/bin/bash
# Chains on demand: SIGUSR1 to a running trace runs a chains pass now
# (docs/trace.md, "Chains while tracing"), counted in trace.chains.passes,
# and the session's end one more over the stretch since; a short trace
# that pruned nothing and was not asked runs none. At 100,000 calls/s the
# writer holds the store's write lock nearly always (a batch open from the
# first record after each commit to the next flush): passes asked for
# then still store their rows, none failing for want of the lock.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "FAIL: fixtures missing (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda CW_FAKE_SYNC_US=200
LIB=$FIX/fakecuda/libcudart.so.13
c() { sqlite3 "$1" "SELECT coalesce(sum(value), 0) FROM counters WHERE name = '$2'"; }

"$CW_BIN" trace --db "$D/a.db" --no-view --cuda-lib "$LIB" -- "$FIX/fake_workload" -T 5 -m sync >/dev/null 2>"$D/a.err" &
tp=$!
for _ in $(seq 1 100); do grep -q recording "$D/a.err" && break; sleep 0.1; done
sleep 2
kill -USR1 $tp
wait $tp || fail "trace exited $?: $(cat "$D/a.err")"
asked=$(c "$D/a.db" trace.chains.passes)
failed=$(c "$D/a.db" trace.chains.failed)
"$CW_BIN" trace --db "$D/b.db" --no-view --cuda-lib "$LIB" -- "$FIX/fake_workload" -T 2 -m sync >/dev/null 2>"$D/b.err" ||
	fail "trace b: $(cat "$D/b.err")"
unasked=$(c "$D/b.db" trace.chains.passes)
echo "passes: asked $asked (failed $failed), not asked $unasked"
[ "$asked" = 2 ] && [ "$failed" = 0 ] || fail "SIGUSR1 and the end ran $asked passes ($failed failed), not two"
[ "$unasked" = 0 ] || fail "a short trace that pruned nothing ran $unasked passes"
# A busy writer: 100,000 syncs/s, three passes asked for, one at the end.
# --capture full: the writer must hold a row per call (summary capture would
# fold most of them in the kernel and leave the writer idle).
CW_FAKE_SYNC_US=5 "$CW_BIN" trace --db "$D/c.db" --no-view --capture full --cuda-lib "$LIB" -- "$FIX/fake_workload" -T 7 -m sync -r 100000 \
	>/dev/null 2>"$D/c.err" &
tp=$!
for _ in $(seq 1 100); do grep -q recording "$D/c.err" && break; sleep 0.1; done
for _ in 1 2 3; do sleep 1.5; kill -USR1 $tp; done
wait $tp || fail "trace c exited $?: $(cat "$D/c.err")"
busy=$(c "$D/c.db" trace.chains.passes)
bfailed=$(c "$D/c.db" trace.chains.failed)
rows=$(c "$D/c.db" store.events)
echo "busy writer ($rows rows): $busy passes, $bfailed failed"
[ "$rows" -gt 100000 ] || fail "the busy trace stored only $rows rows"
[ "$busy" -ge 3 ] && [ "$bfailed" = 0 ] || fail "busy writer: $busy passes, $bfailed failed"
echo ok
