#!/bin/bash
# Timing-driven scenarios with the fake libcudart (calls take configured
# times): trace records them, explain names the cause.
#  a) a CPU hog pinned to the workload thread's CPU -> cpu_preemption, naming the hog
#  b) bursts of direct-I/O writes while each sync waits on its own small
#     direct write -> io_contention
#  c) a clean run -> no chain
#  d) two workers, only worker 0 shares its CPU with the hog -> the
#     preemptions and the slow calls land on worker 0's tid, not worker 1's
#  e) a 3 s hog inside a 40 s loop of fast syncs (the window's p99/p50
#     stays under 3) -> cpu_preemption naming the hog, at the hog's time
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v stress-ng >/dev/null || { echo "stress-ng not installed"; exit 77; }
D=$(mktemp -d)
bg=()
cleanup() { for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ncpu=$(nproc)
CPU=$((ncpu - 1))
export LD_LIBRARY_PATH=$FIX/fakecuda

run() { # db, workload args...
	local db=$1; shift
	"$CW_BIN" trace --db "$db" --no-view -- "$FIX/fake_workload" -w 1200 "$@" >"$D/w.out" 2>"$D/t.err" \
		|| fail "trace: $(cat "$D/t.err")"
}
explain() { "$CW_BIN" explain --db "$1" --json --no-store; }
top_kind() { python3 -c 'import json,sys; c=json.load(sys.stdin).get("chains") or []; print(c[0]["root_cause"]["kind"] if c else "none"); print(c[0]["root_cause"]["summary"] if c else "")'; }

# The hog arrives 1.2 s into the 3 s loop and stays 1.2 s at a higher
# weight, so it takes whole slices: a tail, not a uniform slowdown. It is
# timed from the loop's own start (the workload's "worker 0" line, after
# its 1.2 s of setup), not from trace's start-up, which varies with the
# time probes take to attach: a hog on the loop's first calls reads as
# start-up cost. taskset pins it before stress-ng's first instruction:
# pinned only by its own --taskset, its few ms of start-up at nice -10 ran
# on whatever CPU it started on and could preempt worker 1 in d).
hog() {
	: >"$D/w.out"
	(for _ in $(seq 1 1000); do grep -q '^worker 0' "$D/w.out" && break; sleep 0.02; done
	 sleep 1.2; exec taskset -c $CPU nice -n -10 stress-ng --cpu 1 --taskset $CPU --timeout 1.2s >/dev/null 2>&1) &
	bg+=($!)
}

# a) CPU hog on the workload thread's CPU.
hog
CW_FAKE_SYNC_US=1000 run "$D/a.db" -T 3 -m sync -p $CPU
wait ${bg[-1]} 2>/dev/null
explain "$D/a.db" >"$D/a.json" || fail "explain a: $(cat "$D/a.json")"
res=$(top_kind <"$D/a.json")
echo "a) $res"
[ "$(echo "$res" | head -1)" = cpu_preemption ] || fail "a) top chain is not cpu_preemption"
echo "$res" | grep -q stress-ng || fail "a) the hog is not named"

# b) bursts of direct-I/O writes: 250 ms of two 4 MiB writers, 250 ms
# quiet, for the whole loop. Writers running throughout slow every sync
# alike on some disks (no tail, so rightly no chain) and hardly at all on
# others; bursts make a tail on any disk: syncs between bursts take
# ~100 us, syncs inside one wait behind the writers' requests.
( end=$((SECONDS + 6)); while [ $SECONDS -lt $end ]; do
	for k in 1 2; do timeout 0.25 sh -c "while :; do dd if=/dev/zero of=$D/big$k oflag=direct bs=4M count=4 2>/dev/null; done" & done
	wait; sleep 0.25
done ) &
bg+=($!)
CW_FAKE_SYNC_US=0 CW_FAKE_SYNC_IO=$D/syncfile run "$D/b.db" -T 3 -m sync
kill ${bg[-1]} 2>/dev/null; wait ${bg[-1]} 2>/dev/null
explain "$D/b.db" >"$D/b.json" || fail "explain b"
res=$(top_kind <"$D/b.json")
echo "b) $res"
[ "$(echo "$res" | head -1)" = io_contention ] || fail "b) top chain is not io_contention"

# c) clean: calls that sleep a steady 1 ms, nothing else running for them.
CW_FAKE_MODE=sleep CW_FAKE_SYNC_US=1000 run "$D/c.db" -T 2 -m sync
explain "$D/c.db" >"$D/c.json" || fail "explain c"
res=$(top_kind <"$D/c.json")
echo "c) $res"
[ "$(echo "$res" | head -1)" = none ] || fail "c) a clean run produced a chain"

# d) two workers; only worker 0 is pinned next to the hog, worker 1 to
# another CPU (left free, the scheduler could move it onto the hog's).
others=-1
[ "$CPU" -gt 0 ] && others="-o 0"
hog
CW_FAKE_SYNC_US=1000 run "$D/d.db" -T 3 -m sync -t 2 -p $CPU $others
wait ${bg[-1]} 2>/dev/null
w0=$(awk '$1=="worker" && $2==0 {print $3}' "$D/w.out")
w1=$(awk '$1=="worker" && $2==1 {print $3}' "$D/w.out")
p0=$(sqlite3 "$D/d.db" "SELECT coalesce(sum(duration_ns),0) FROM offcpu WHERE tid=$w0 AND reason='preempted' AND by_comm LIKE 'stress-ng%'")
p1=$(sqlite3 "$D/d.db" "SELECT coalesce(sum(duration_ns),0) FROM offcpu WHERE tid=$w1 AND reason='preempted' AND by_comm LIKE 'stress-ng%'")
c0=$(sqlite3 "$D/d.db" "SELECT count(*) FROM events WHERE tid=$w0 AND op='cudaStreamSynchronize'")
echo "d) worker0 $w0 preempted by the hog ${p0} ns ($c0 calls), worker1 $w1 ${p1} ns"
[ "$c0" -gt 0 ] || fail "d) no calls from worker 0"
[ "$p0" -gt $((2 * p1)) ] || fail "d) off-CPU time not on worker 0"
# The slow calls (>= 5 ms, 5x the configured 1 ms) that the hog preempted
# are worker 0's only. (Worker 1 may have slow calls too: on a VM, time the
# hypervisor takes from a vCPU stretches a spinning call without any
# off-CPU interval.)
hogged() { sqlite3 "$D/d.db" "SELECT count(*) FROM events e WHERE op='cudaStreamSynchronize' AND duration_ns >= 5000000 AND tid=$1
	AND EXISTS (SELECT 1 FROM offcpu o WHERE o.tid = e.tid AND o.by_comm LIKE 'stress-ng%'
	            AND o.start_mono_ns < e.mono_ns + e.duration_ns AND o.start_mono_ns + o.duration_ns > e.mono_ns)"; }
s0=$(hogged "$w0"); s1=$(hogged "$w1")
echo "d) slow calls preempted by the hog: worker0 $s0, worker1 $s1"
[ "$s0" -gt 0 ] && [ "$s1" -eq 0 ] || fail "d) slow calls not on worker 0"

# e) a short incident in a long window: ~150 us syncs for 40 s, the hog
# for 3 s from 20 s into the loop.
(sleep 21.2; exec taskset -c $CPU nice -n -10 stress-ng --cpu 1 --taskset $CPU --timeout 3s >/dev/null 2>&1) & bg+=($!)
hog_from=$(date +%s)
CW_FAKE_SYNC_US=150 run "$D/e.db" -T 40 -m sync -p $CPU
wait ${bg[-1]} 2>/dev/null
explain "$D/e.db" >"$D/e.json" || fail "explain e: $(cat "$D/e.json")"
python3 - "$D/e.json" "$hog_from" <<'PY' || fail "e) the short incident is not found at its time"
import json, sys
d = json.load(open(sys.argv[1]))
start = int(sys.argv[2])
c = [c for c in d["chains"] if c["root_cause"]["kind"] == "cpu_preemption" and "stress-ng" in c["root_cause"]["summary"]]
assert c, [(x["root_cause"]["kind"], x["root_cause"]["summary"]) for x in d["chains"]]
c = c[0]
assert c["severity"] == "HIGH", c["severity"]
ev = c["evidence"]
# Found in time when the window has no tail of its own (a quiet machine);
# either way the slow calls are the hog's seconds.
if "incident_from_ns" in ev:
    f, t = ev["incident_from_ns"] / 1e9, ev["incident_to_ns"] / 1e9
    assert start + 18 <= f <= start + 25 and t - f <= 6, (f - start, t - f)
print("e)", c["severity"], c["root_cause"]["summary"], "in time" if "incident_from_ns" in ev else "over the window")
PY
echo ok
