#!/bin/bash
# A Ctrl-C (SIGINT) or SIGTERM that comes while the probes are still
# attaching ends the trace once they are attached: the stop line, the
# session closed in the store, the launched command stopped, and not the
# workload's whole run (20 s here). Before, SIGINT killed trace halfway
# (no stop line, the session never ended). SIGINT is set back to its
# default first: a background job of a script starts with it ignored.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for sig in INT TERM; do
	db=$D/$sig.db
	env --default-signal=INT "$CW_BIN" trace --db "$db" --no-view --cuda-lib "$FIX/fakecuda/libcudart.so.13" -- \
		"$FIX/fake_workload" -T 20 -m sync >"$D/$sig.out" 2>"$D/$sig.err" &
	pid=$!
	# Well inside the attach (~0.5 s here): nothing said yet.
	sleep 0.1
	grep -q 'probes attached' "$D/$sig.err" && fail "SIG$sig: the probes were attached before the signal; no test"
	kill -"$sig" $pid
	start=$SECONDS
	wait $pid
	rc=$?
	took=$((SECONDS - start))
	[ $took -le 10 ] || fail "SIG$sig during the attach: trace ran on ${took} s"
	grep -q '^causeway: stopped after tracing ' "$D/$sig.err" ||
		fail "SIG$sig during the attach: no stop line (exit $rc): $(cat "$D/$sig.err")"
	ended=$(sqlite3 "$db" "SELECT count(*) FROM sessions WHERE ended_wall_ns IS NOT NULL")
	[ "$ended" = 1 ] || fail "SIG$sig during the attach: session not ended ($ended)"
	pgrep -f "$FIX/fake_workload -T 20" >/dev/null && fail "SIG$sig: the workload still runs"
	echo "SIG$sig during the attach: stopped in ${took} s, exit $rc: $(grep '^causeway: stopped' "$D/$sig.err" | cut -c1-60)"
done
echo ok
