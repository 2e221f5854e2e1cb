#!/bin/bash
# trace --container / --pod / --slurm-job / --cgroup record the named
# tenant's CUDA calls only, filtered in BPF, while another tenant runs the
# same fixture at the same time; a tenant whose cgroup appears after trace
# started (a container started later) is traced from its first call.
set -u
. "$CW_ROOT/tests/integration/tenant_lib.sh"
tenant_test_start

uid=$(pod_uid)
ca=$(hexid 64) cb=$(hexid 64)
job=$((800000 + $$ % 99999))
A=/system.slice/docker-$ca.scope
B=/kubepods.slice/kubepods-pod${uid//-/_}.slice/cri-containerd-$cb.scope
S=/system.slice/slurmstepd.scope/job_$job/step_0
mkcg "$A" && mkcg "$B" && mkcg "$S" || fail "cannot create cgroups"
export LD_LIBRARY_PATH=$FIX/fakecuda CW_FAKE_SYNC_US=2000 CW_FAKE_MODE=sleep
# --cuda-lib attaches the fixture's library at once (no rescan wait).
LIB=$FIX/fakecuda/libcudart.so.13

# run DB FILTER...: trace with the filter while A, B and the Slurm step
# each run the fixture (40 calls); A starts its cgroup's process after
# trace (it is allowed at the first walk: the directory exists).
run() {
	local db=$1; shift
	# --capture full: the filter is checked by counting each tenant's rows.
	"$CW_BIN" trace --db "$db" --no-view --capture full --cuda-lib "$LIB" --duration 5s "$@" >"$D/t.out" 2>&1 &
	local tp=$!; pids+=($tp)
	sleep 1
	for cg in "$A" "$B" "$S"; do
		in_cg "$cg" "$FIX/fake_workload" -n 40 -m sync -w 500 >/dev/null 2>&1 &
		pids+=($!)
	done
	wait "$tp" || fail "trace $*: $(cat "$D/t.out")"
}
count() { sqlite3 "$1" "SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize' AND cgroup_id = $(cgid "$2")"; }
all() { sqlite3 "$1" "SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize'"; }

run "$D/a.db" --container "${ca:0:12}"
echo "--container ${ca:0:12}: A $(count "$D/a.db" "$A"), B $(count "$D/a.db" "$B"), slurm $(count "$D/a.db" "$S"), all $(all "$D/a.db")"
[ "$(count "$D/a.db" "$A")" = 40 ] || fail "--container: A's calls not all recorded: $(cat "$D/t.out")"
[ "$(all "$D/a.db")" = 40 ] || fail "--container: calls of other tenants recorded"
allowed=$(sqlite3 "$D/a.db" "SELECT value FROM counters WHERE name = 'trace.cgroups.allowed'")
[ "$allowed" = 1 ] || fail "--container: $allowed cgroups allowed, want 1"

run "$D/b.db" --pod "$uid"
echo "--pod $uid: B $(count "$D/b.db" "$B"), all $(all "$D/b.db")"
[ "$(count "$D/b.db" "$B")" = 40 ] && [ "$(all "$D/b.db")" = 40 ] || fail "--pod: wrong calls recorded"

run "$D/s.db" --slurm-job "$job"
echo "--slurm-job $job: step $(count "$D/s.db" "$S"), all $(all "$D/s.db")"
[ "$(count "$D/s.db" "$S")" = 40 ] && [ "$(all "$D/s.db")" = 40 ] || fail "--slurm-job: wrong calls recorded"

# --cgroup on a parent: its descendants are allowed, including one
# created after trace started.
P=/system.slice/slurmstepd.scope/job_$job
L=$P/step_1
"$CW_BIN" trace --db "$D/c.db" --no-view --cuda-lib "$LIB" --duration 5s --cgroup "$V2$P" >"$D/t.out" 2>&1 &
tp=$!; pids+=($tp)
sleep 1
mkcg "$L" || fail "cannot create $L"
sleep 1.5 # the next walk allows it
in_cg "$L" "$FIX/fake_workload" -n 40 -m sync >/dev/null 2>&1 &
pids+=($!)
in_cg "$A" "$FIX/fake_workload" -n 40 -m sync >/dev/null 2>&1 &
pids+=($!)
wait "$tp" || fail "trace --cgroup: $(cat "$D/t.out")"
echo "--cgroup $P: new step $(count "$D/c.db" "$L"), all $(all "$D/c.db")"
[ "$(count "$D/c.db" "$L")" = 40 ] && [ "$(all "$D/c.db")" = 40 ] || fail "--cgroup: a descendant created later is not traced alone"

# Bad values are refused before anything is loaded.
out=$("$CW_BIN" trace --container XYZ --duration 1s 2>&1) && fail "a bad --container was accepted"
echo "$out" | grep -q 'bad --container "XYZ"' || fail "bad --container message: $out"
out=$("$CW_BIN" trace --cgroup /a/../b --duration 1s 2>&1) && fail "a traversing --cgroup was accepted"
echo ok
