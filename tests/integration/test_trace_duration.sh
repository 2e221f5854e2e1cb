#!/bin/bash
# --duration counts from the "attached" line, not from trace's start:
# loading the probes takes part of a second here and seconds on a busy
# host, and none of it is traced. The stop line says how long trace traced.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# The launched command is held until the probes are attached, and calls
# without pause from then on: its first and last stored calls span what
# was traced, measured from the store and not from trace's own words.
LD_LIBRARY_PATH=$FIX/fakecuda "$CW_BIN" trace --db "$D/a.db" --no-view --capture full --duration 3s -- \
	"$FIX/fake_workload" -T 30 -m sync >"$D/w.out" 2>"$D/a.err"
rc=$?
# The workload, stopped by trace's SIGTERM, passes its status through.
[ $rc = 0 ] || [ $rc = 143 ] || fail "trace exited $rc: $(cat "$D/a.err")"
startup=$(sqlite3 "$D/a.db" "SELECT value FROM counters WHERE name='trace.startup_ms'")
traced=$(sqlite3 "$D/a.db" "SELECT value FROM counters WHERE name='trace.traced_ms'")
span=$(sqlite3 "$D/a.db" "SELECT max(wall_ns + coalesce(duration_ns, 0)) - min(wall_ns) FROM events WHERE source='cuda'")
echo "startup ${startup} ms, traced ${traced} ms, calls span $((span / 1000000)) ms"
[ -n "$span" ] && [ "$span" -ge 2900000000 ] ||
	fail "calls span $((span / 1000000)) ms of --duration 3s (startup ${startup} ms): the clock started before the attach"
[ "$span" -le 6000000000 ] || fail "calls span $((span / 1000000)) ms, past --duration 3s"
[ -n "$traced" ] && [ "$traced" -ge 2950 ] && [ "$traced" -le 4500 ] || fail "trace.traced_ms '$traced' for --duration 3s"
line=$(grep '^causeway: stopped after tracing ' "$D/a.err") || fail "no stop line saying how long: $(cat "$D/a.err")"
secs=$(sed -n 's/^causeway: stopped after tracing \([0-9.]*\)s;.*/\1/p' <<<"$line")
awk -v s="$secs" 'BEGIN { exit !(s >= 2.95 && s <= 4.5) }' || fail "stop line says '$secs' s: $line"
echo "duration from attach: ok"

# Under a flood (two threads calling without pause, every call stored, a
# small cap that makes the writer prune all along) the ring never empties:
# --duration is still kept, and so is the stop (the reader thread used to
# hold its lock for as long as the flood lasted, 30 s here).
start=$(date +%s%N)
CW_FAKE_SYNC_US=0 LD_LIBRARY_PATH=$FIX/fakecuda "$CW_BIN" trace --db "$D/f.db" --no-view --capture full \
	--size-cap 4MiB --duration 3s -- "$FIX/fake_workload" -T 30 -m sync -t 2 >"$D/f.out" 2>"$D/f.err"
rc=$?
took=$((($(date +%s%N) - start) / 1000000))
[ $rc = 0 ] || [ $rc = 143 ] || fail "flood: trace exited $rc: $(cat "$D/f.err")"
traced=$(sqlite3 "$D/f.db" "SELECT value FROM counters WHERE name='trace.traced_ms'")
echo "flood: traced ${traced} ms, trace ran ${took} ms"
[ -n "$traced" ] && [ "$traced" -ge 2950 ] && [ "$traced" -le 4500 ] || fail "flood: trace.traced_ms '$traced' for --duration 3s"
[ "$took" -le 15000 ] || fail "flood: trace ran ${took} ms for --duration 3s"
echo "duration under a flood: ok"
