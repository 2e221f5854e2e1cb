#!/bin/bash
# Kernel probes, memory: page allocations of a tracked process are summed in
# the kernel and add up to what it touched; an OOM kill in a memory-limited
# cgroup is recorded on the critical ring with the victim, its RSS and the
# cgroup's limit, and its exit carries SIGKILL.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness W=$CW_BUILD/fixtures/kp_workload
[ -x "$H" ] && [ -x "$W" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d) CG=
cleanup() { [ -n "$CG" ] && rmdir "$CG" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

# 1) 64 MiB touched -> at least 64 MiB of pages (16384 4-KiB pages) recorded.
"$H" -- "$W" alloc 64 >"$T/out" 2>"$T/err"
pid=$(tail -n 1 "$T/out" | jq .child)
pages=$(jq -s --argjson p "$pid" '[.[] | select(.rec=="mem" and .op=="page_alloc" and .pid==$p) | .pages] | add // 0' "$T/out")
wins=$(jq -s --argjson p "$pid" '[.[] | select(.rec=="mem" and .op=="page_alloc" and .pid==$p)] | length' "$T/out")
echo "alloc 64 MiB: $pages pages in $wins windows"
[ "$pages" -ge 16384 ] || { echo "expected >= 16384 pages"; exit 1; }
# Aggregated, not per page: a handful of windows, each with its length.
[ "$wins" -le 200 ] || { echo "page allocations were not aggregated ($wins records)"; exit 1; }
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="mem" and .op=="page_alloc" and .pid==$p)] | all(.bytes == .pages * 4096 and .interval_ns >= 0)' "$T/out" >/dev/null

# 2) OOM kill inside a 32 MiB memory cgroup (v2 if mounted as the root
# hierarchy, else the v1 memory controller).
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
	CG=/sys/fs/cgroup/cwkp$$; mkdir "$CG"; echo $((32 << 20)) >"$CG/memory.max"; echo 0 >"$CG/memory.swap.max" 2>/dev/null || true
elif [ -d /sys/fs/cgroup/memory ]; then
	CG=/sys/fs/cgroup/memory/cwkp$$; mkdir "$CG"; echo $((32 << 20)) >"$CG/memory.limit_in_bytes"
else
	echo "no memory cgroup controller"; exit 77
fi
"$H" -- sh -c "echo \$\$ > $CG/cgroup.procs && exec $W alloc 512" >"$T/out" 2>"$T/err" || true
pid=$(tail -n 1 "$T/out" | jq .child)
status=$(tail -n 1 "$T/out" | jq .status)
echo "oom run: pid $pid, wait status $status"
[ "$status" -eq 9 ] || { echo "expected the workload to be SIGKILLed by the OOM killer"; cat "$T/err"; exit 1; }
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="mem" and .op=="oom_kill" and .victim_pid==$p and .victim_comm=="kp_workload" and .bytes > 0)] | length >= 1' "$T/out" >/dev/null \
	|| { echo "no oom_kill record naming the victim"; jq -c 'select(.rec=="mem" and .op=="oom_kill")' "$T/out"; exit 1; }
# The victim's RSS (pages) is near the limit, and interval_ns carries the
# memory cgroup's limit in bytes (the same page counter on v1 and v2).
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="mem" and .op=="oom_kill" and .victim_pid==$p and .pages >= 4096 and .interval_ns == 33554432)] | length >= 1' "$T/out" >/dev/null \
	|| { echo "oom_kill record lacks the victim's RSS or its cgroup's limit"; jq -c 'select(.rec=="mem" and .op=="oom_kill")' "$T/out"; exit 1; }
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="proc" and .op=="exit" and .pid==$p and .exit_code==9)] | length == 1' "$T/out" >/dev/null \
	|| { echo "no exit record with SIGKILL"; exit 1; }
echo ok
