#!/bin/bash
# A process stopped by discovery is never left stopped when the agent dies:
# the agent is frozen (SIGSTOP) so it cannot resume anything, a traced
# process then loads a library copy and is stopped by the BPF side, and the
# agent is SIGKILLed; its watchdog must resume the process, which then
# finishes. --pid keeps the hold to this test's own process.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
FAKE=$FIX/fakecuda/libcudart.so.13
[ -x "$FIX/first_call" ] && [ -f "$FAKE" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d /tmp/cw-holdwd-$$.XXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
state() { sed -n 's/^State:\s*\(.\).*/\1/p' "/proc/$1/status" 2>/dev/null; }

mkdir -p "$D/lib"
cp "$FAKE" "$D/lib/"
mkfifo "$D/fifo"
bash -c 'read -r _ <"$1"; LD_LIBRARY_PATH=$2 exec "$3" 10 >"$4"' w "$D/fifo" "$D/lib" "$FIX/first_call" "$D/calls" &
wp=$!; pids+=($wp)
"$CW_BIN" trace --db "$D/t.db" --no-view --pid "$wp" >"$D/out" 2>&1 &
tp=$!; pids+=($tp)
for _ in $(seq 200); do grep -q '^causeway: tracing' "$D/out" && break; sleep 0.05; done
grep -q '^causeway: tracing' "$D/out" || fail "trace did not start: $(cat "$D/out")"
wd=$(pgrep -P "$tp" -x causeway-resume)
[ -n "$wd" ] || fail "no watchdog process under the agent"
kill -STOP "$tp"
echo go >"$D/fifo"
for _ in $(seq 100); do [ "$(state "$wp")" = T ] && break; sleep 0.02; done
[ "$(state "$wp")" = T ] || fail "the loading process was not stopped (state $(state "$wp"))"
sleep 0.3
[ "$(state "$wp")" = T ] || fail "the process ran on while the agent was frozen"
kill -9 "$tp"
for _ in $(seq 100); do [ -s "$D/calls" ] && break; sleep 0.05; done
grep -q 'calls 10' "$D/calls" || fail "the process stayed stopped after the agent died (state $(state "$wp"))"
wait "$wp" || fail "workload failed"
for _ in $(seq 50); do kill -0 "$wd" 2>/dev/null || break; sleep 0.05; done
kill -0 "$wd" 2>/dev/null && fail "the watchdog outlived its work"
echo "held process $wp resumed by the watchdog after the agent was killed"
echo ok
