#!/bin/bash
# A traced process that serves its own CUDA library from a FUSE mount, and
# stops answering causeway once tracing runs (tests/fixtures/stall_fs.py):
# naming its native stacks opens and reads that file. Before, the open
# waited on the thread that drains the ring buffers: the trace never
# stopped (no --duration, no SIGTERM), every ring dropped. Now the names
# come from a thread of their own with a deadline: trace stops on time,
# stores what it saw and counts the stacks it could not name. The process
# itself cannot exit while a thread of it waits on the mount (the kernel
# waits for the server's answer): it does once the mount is gone.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF and FUSE"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
/usr/bin/python3 -c 'import fusepy' 2>/dev/null || { echo "FAIL: python3-fusepy missing (scripts/install-deps.sh)"; exit 1; }
[ -c /dev/fuse ] || { echo "FAIL: no /dev/fuse"; exit 1; }
D=$(mktemp -d)
FS=
TP=
cleanup() {
	[ -n "$FS" ] && kill -9 "$FS" 2>/dev/null
	# A mount whose server died fails mountpoint's stat: unmount anyway.
	umount -l "$D/mnt" 2>/dev/null
	[ -n "$TP" ] && kill -9 "$TP" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
mkdir -p "$D/src" "$D/mnt"
cp "$FIX/fakecuda/libcudart.so.13" "$D/src/"
/usr/bin/python3 "$CW_ROOT/tests/fixtures/stall_fs.py" "$D/src" "$D/mnt" "$D/trigger" >"$D/fs.log" 2>&1 &
FS=$!
for _ in $(seq 100); do [ -f "$D/mnt/libcudart.so.13" ] && break; sleep 0.05; done
[ -f "$D/mnt/libcudart.so.13" ] || fail "the FUSE mount did not come up: $(cat "$D/fs.log")"

LD_LIBRARY_PATH=$D/mnt "$CW_BIN" trace --db "$D/t.db" --no-view --native-stacks --duration 4s \
	--cuda-lib "$D/mnt/libcudart.so.13" -- "$FIX/fake_workload" -T 10 -m sync >"$D/out" 2>"$D/err" &
TP=$!
for _ in $(seq 300); do grep -q 'probes attached' "$D/err" && break; sleep 0.05; done
grep -q 'probes attached' "$D/err" || fail "trace did not attach: $(cat "$D/err")"
sleep 0.5
touch "$D/trigger"
for _ in $(seq 200); do grep -q '^causeway: stopped after tracing' "$D/err" && break; sleep 0.1; done
grep -q '^causeway: stopped after tracing' "$D/err" ||
	fail "trace did not stop within 20 s of a --duration 4s: wedged on the mount: $(cat "$D/err")"
echo "stopped: $(grep '^causeway: stopped' "$D/err" | cut -c1-70)"
# The mount gone, the waiting thread gets its answer and trace exits.
kill -9 "$FS"; wait "$FS" 2>/dev/null; FS=
umount -l "$D/mnt" 2>/dev/null
for _ in $(seq 100); do kill -0 "$TP" 2>/dev/null || break; sleep 0.1; done
kill -0 "$TP" 2>/dev/null && fail "trace still runs 10 s after the mount went"
wait "$TP"; rc=$?; TP=
[ $rc = 0 ] || [ $rc = 143 ] || fail "trace exited $rc: $(cat "$D/err")"
q() { sqlite3 "$D/t.db" "$1"; }
calls=$(q "SELECT count(*) FROM events WHERE source='cuda'")
stalled=$(q "SELECT coalesce(sum(value), 0) FROM counters WHERE name='trace.native_stacks_unnamed.stalled'")
skipped=$(q "SELECT coalesce(sum(value), 0) FROM counters WHERE name='trace.native_stacks_unnamed.skipped'")
named=$(q "SELECT count(*) FROM stacks WHERE frames LIKE 'libcudart.so.13!%'")
echo "calls $calls, stacks named before the stall $named, stalled $stalled, not tried after it $skipped"
[ "$calls" -gt 1000 ] || fail "only $calls calls stored"
[ "$stalled" -ge 1 ] || fail "no stalled stack counted"
[ "$named" -ge 1 ] || fail "no stack named before the stall"
echo ok
