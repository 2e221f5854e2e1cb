#!/bin/bash
# Timing-driven scenarios with the fake libcudart (calls take configured
# times): trace records them, explain names the cause.
#  a) a CPU hog pinned to the workload thread's CPU -> cpu_preemption, naming the hog
#  b) bursts of direct-I/O writes while each sync waits on its own small
#     direct write, queued behind them on a throttled loop device ->
#     io_contention
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
LA= LB= CG= MNT=
cleanup() {
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "$LA" ] && losetup -d "$LA"
	[ -n "$LB" ] && losetup -d "$LB"
	[ -n "$MNT" ] && { umount "$MNT" 2>/dev/null || umount -l "$MNT"; }
	[ -n "$CG" ] && for _ in 1 2 3 4 5; do rmdir "$CG" 2>/dev/null && break; sleep 0.2; done
	rm -rf "$D"
}
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

# b) bursts of direct-I/O writes: 250 ms of two writers, 250 ms quiet,
# for the whole loop, while each sync waits on its own 4 KiB O_DIRECT|
# O_DSYNC write. Written to the real disk, the tail depended on the disk
# (on a fast one the small write never waited and there was no chain), so
# the writes go to a loop device whose pace the kernel sets instead: loop
# A (direct I/O) is backed by loop B, backed by a file on a tmpfs of its
# own, and a cgroup-v1 blkio cgroup holding the writers and the traced
# workload throttles writes to loop B at 128 MiB/s. Loop A issues its
# requests to B from the requester's cgroup, so a sync's write waits FIFO
# in the throttle queue behind the writers' (each keeps 1 MiB queued; a
# sync took 90-100 ms in a burst here, and no disk is written), while
# loop A's requests, the writers' and its own, are in flight: the thread
# is blocked while block I/O is in flight. Between bursts a sync takes
# ~1.1 ms: its 1 ms spin keeps its own writes near 4 MiB/s, far below the
# limit, so alone it never waits.
b_setup() {
	local blkio
	blkio=$(awk '$3 == "cgroup" && $4 ~ /(^|,)blkio(,|$)/ {print $2; exit}' /proc/mounts)
	[ -n "$blkio" ] && [ -e "$blkio/blkio.throttle.write_bps_device" ] || { echo "no cgroup-v1 blkio throttling"; return 1; }
	command -v losetup >/dev/null || { echo "no losetup"; return 1; }
	MNT=$D/tmpfs
	mkdir "$MNT" && mount -t tmpfs -o size=80m cw-explain-b "$MNT" || { MNT=; echo "cannot mount a tmpfs"; return 1; }
	truncate -s 64M "$MNT/back" || return 1
	LB=$(losetup -f --show "$MNT/back") || { LB=; echo "no loop device"; return 1; }
	LA=$(losetup -f --show --direct-io=on "$LB") || { LA=; echo "no loop device"; return 1; }
	[ "$(losetup -n -O DIO "$LA" | tr -d ' ')" = 1 ] || { echo "loop device without direct I/O"; return 1; }
	# No volatile cache: O_DSYNC adds no flushes, whose sequencing runs on
	# kblockd, which a busy CPU delays (a tail with no writers at all).
	echo "write through" >"/sys/block/${LA#/dev/}/queue/write_cache" &&
		echo "write through" >"/sys/block/${LB#/dev/}/queue/write_cache" || { echo "cannot set the loop devices write-through"; return 1; }
	CG=$blkio/cw-explain-$$
	mkdir "$CG" || { CG=; echo "cannot make a blkio cgroup"; return 1; }
	echo "$(cat "/sys/block/${LB#/dev/}/dev") $((128 << 20))" >"$CG/blkio.throttle.write_bps_device" ||
		{ echo "cannot throttle $LB"; return 1; }
}
if b_setup >"$D/b.why"; then
	# The writers: one process (named in the chain as the requests' pid),
	# two threads, each rewriting 1 MiB at an offset of its own.
	( echo $BASHPID >"$CG/cgroup.procs" || exit 1
	  exec python3 - "$LA" <<'PY'
import mmap, os, sys, threading, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_DIRECT)
t0 = time.monotonic()
def writer(k):
    buf = mmap.mmap(-1, 1 << 20)
    while (t := time.monotonic() - t0) < 6:
        if int(t / 0.25) % 2:
            time.sleep(0.25 - t % 0.25)
        else:
            os.pwrite(fd, buf, (k + 1) << 24)
ts = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
for t in ts: t.start()
for t in ts: t.join()
PY
	) &
	bg+=($!)
	( echo $BASHPID >"$CG/cgroup.procs" || fail "b) cannot join $CG"
	  CW_FAKE_SYNC_US=1000 CW_FAKE_SYNC_IO=$LA run "$D/b.db" -T 3 -m sync ) || exit 1
	kill ${bg[-1]} 2>/dev/null; wait ${bg[-1]} 2>/dev/null
	explain "$D/b.db" >"$D/b.json" || fail "explain b"
	res=$(top_kind <"$D/b.json")
	echo "b) $res"
	[ "$(echo "$res" | head -1)" = io_contention ] || fail "b) top chain is not io_contention"
else
	echo "b) skipped: $(cat "$D/b.why")"
fi

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
