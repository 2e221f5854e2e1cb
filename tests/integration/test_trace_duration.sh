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
