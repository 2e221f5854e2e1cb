#!/bin/bash
# scripts/run-tests.sh leaves nothing running: a test that leaves a process
# behind (in its process group, or escaped with setsid) fails and the
# process is listed and killed; a test that times out is killed with all
# it started, a child ignoring SIGTERM included; a test that stops what it
# started passes; a runner stopped by SIGTERM kills the test it was running.
# Runs the runner on a scratch tree of four tiny tests.
set -u
tmp=$(mktemp -d)
m=$$$RANDOM # marks this run's sleeps: "sleep 100N.<m>"
cleanup() { pkill -KILL -f "sleep 100[0-9]\.$m" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
left() { pgrep -f "sleep 100[0-9]\.$m"; }

mkdir -p "$tmp/scripts" "$tmp/tests/golden" "$tmp/tests/integration"
cp "$CW_ROOT/scripts/run-tests.sh" "$tmp/scripts/"
: >"$tmp/tests/integration/beside.list"
g=$tmp/tests/golden
cat >"$g/test_a_ok.sh" <<T
sleep 1000.$m & p=\$!
kill \$p; wait \$p
echo ok
T
cat >"$g/test_b_leak.sh" <<T
sleep 1001.$m &
echo "started a sleep and forgot it"
T
cat >"$g/test_c_escape.sh" <<T
setsid sleep 1002.$m &
T
cat >"$g/test_d_timeout.sh" <<T
bash -c 'trap "" TERM; sleep 1003.$m' &
sleep 1004.$m
T
CW_TEST_TIMEOUT=2 CW_TEST_GRACE=1 CW_TEST_JOBS=2 CW_NO_FUZZ=1 bash "$tmp/scripts/run-tests.sh" "$tmp/build" \
	>"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ $rc = 1 ] || fail "runner exited $rc"
[ "$(tail -n 1 "$tmp/out")" = "1 passed, 3 failed, 0 skipped" ] || fail "summary: $(tail -n 1 "$tmp/out")"
grep -q '^ok    golden/test_a_ok ' "$tmp/out" || fail "a test that stops its daemon failed"
grep -q '^FAIL  golden/test_b_leak .*rc=1 ' "$tmp/out" || fail "a leak passed"
grep -q '^FAIL  golden/test_c_escape .*rc=1 ' "$tmp/out" || fail "a leak escaped with setsid passed"
grep -q '^FAIL  golden/test_d_timeout .*rc=124 ' "$tmp/out" || fail "the timeout was not reported"
for n in b_leak:1001 c_escape:1002 d_timeout:1003; do
	grep -q "left 1 process(es) running" "$tmp/build/test-logs/golden_test_${n%:*}.log" &&
		grep -q "sleep ${n#*:}\.$m" "$tmp/build/test-logs/golden_test_${n%:*}.log" ||
		fail "test_${n%:*}: leftover not listed: $(cat "$tmp/build/test-logs/golden_test_${n%:*}.log")"
done
[ -z "$(left)" ] || fail "left running after the runner: $(left | xargs ps -o pid=,args= -p)"

# The runner stopped while a test runs: the test and its children go too.
rm -f "$g"/test_*.sh
cat >"$g/test_e_long.sh" <<T
setsid sleep 1005.$m &
sleep 1006.$m
T
CW_TEST_TIMEOUT=60 CW_NO_FUZZ=1 bash "$tmp/scripts/run-tests.sh" "$tmp/build" >"$tmp/out2" 2>&1 &
runner=$!
for _ in $(seq 50); do [ "$(left | wc -l)" = 2 ] && break; sleep 0.1; done
[ "$(left | wc -l)" = 2 ] || fail "the long test did not start: $(cat "$tmp/out2")"
kill -TERM $runner
wait $runner
for _ in $(seq 20); do [ -z "$(left)" ] && break; sleep 0.1; done
[ -z "$(left)" ] || fail "left running after the runner was stopped: $(left | xargs ps -o pid=,args= -p)"
echo ok
