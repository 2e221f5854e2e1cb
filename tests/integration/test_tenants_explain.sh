#!/bin/bash
# Tenants in explain, on real cgroups and real scheduling:
#  a) a CPU hog in a Docker container's cgroup, pinned to the CPU of a
#     workload in a Kubernetes pod's containerd cgroup -> noisy_neighbour
#     naming both tenants (the workload's container and the hog's);
#  b) a workload whose own CPU quota throttles it (cgroup v1 cpu controller
#     on this hybrid host: cpu.cfs_quota_us; cpu.max on unified hosts) ->
#     cfs_throttling: told it is throttled by its own quota, with the
#     throttling sampled into cgroup_pressure.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF and cgroups"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v stress-ng >/dev/null || { echo "stress-ng not installed"; exit 77; }
. "$CW_ROOT/tests/integration/tenant_lib.sh"
[ -f "$V2/cgroup.procs" ] || { echo "no cgroup v2 hierarchy"; exit 77; }
D=$(mktemp -d)
bg=()
V1=""
cleanup() {
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null
	tenant_cleanup
	[ -n "$V1" ] && { while read -r p; do kill -9 "$p" 2>/dev/null; done <"$V1/cgroup.procs"; sleep 0.1; rmdir "$V1"; }
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda
CPU=0
uid=$(pod_uid)
cw=$(hexid 64) ch=$(hexid 64)
W=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid//-/_}.slice/cri-containerd-$cw.scope
H=/system.slice/docker-$ch.scope
mkcg "$W" && mkcg "$H" || fail "cannot create cgroups"
j() { python3 -c "import json,sys; c=(json.load(open('$1'))['chains'] or [{}])[0]; print($2)"; }

# a) The hog arrives 0.6 s into the 3 s loop and stays 2 s, busy half the
# time in 5 ms slices at real-time priority (SCHED_FIFO: on a shared
# machine no other task takes the workload's CPU as often), from the
# Docker container's cgroup. The traced launcher starts it, so its timing
# does not depend on trace's start-up.
CW_FAKE_SYNC_US=1000 "$CW_BIN" trace --db "$D/a.db" --no-view -- \
	env POD_NAME=victim-$$ POD_NAMESPACE=ml sh -c 'echo $$ > "$1/cgroup.procs" || exit 1
	(sleep 1.8; exec sh -c "echo \$\$ > $2/cgroup.procs && exec chrt -f 1 stress-ng --cpu 1 --cpu-load 50 --cpu-load-slice 5 --taskset $3 --timeout 2s") >/dev/null 2>&1 &
	exec "$5" -w 1200 -T 3 -m sync -p "$3"' \
	w "$V2$W" "$V2$H" "$CPU" $$ "$FIX/fake_workload" >/dev/null 2>"$D/a.err" || fail "trace a: $(cat "$D/a.err")"
"$CW_BIN" explain --db "$D/a.db" --json --no-store >"$D/a.json" || fail "explain a"
kind=$(j "$D/a.json" 'c.get("root_cause", {}).get("kind")')
echo "a) $kind: $(j "$D/a.json" 'c.get("root_cause", {}).get("summary")')"
[ "$kind" = noisy_neighbour ] || fail "a) top chain is not noisy_neighbour"
[ "$(j "$D/a.json" 'c["container"]["id"] + " " + c["container"]["pod"] + " " + c["container"]["runtime"]')" = "$cw victim-$$ containerd" ] ||
	fail "a) the workload's container is not named: $(j "$D/a.json" 'c["container"]')"
[ "$(j "$D/a.json" 'c["culprit"]["container"]["id"] + " " + c["culprit"]["container"]["runtime"]')" = "$ch docker" ] ||
	fail "a) the hog's container is not named: $(j "$D/a.json" 'c["culprit"]')"
j "$D/a.json" 'c["culprit"]["comm"]' | grep -q stress-ng || fail "a) the hog is not the culprit"
j "$D/a.json" '"\n".join(c["fix"])' | grep -q "docker update --cpus 1 --cpu-shares 256 ${ch:0:12}" || fail "a) no docker fix"

# b) 0.1 CPU of quota for a thread that spins 2 ms per call.
V1=/sys/fs/cgroup/cpu/cwtest-tenant-$$
if [ -f /sys/fs/cgroup/cpu/cpu.cfs_quota_us ]; then
	mkdir "$V1" || fail "cannot create $V1"
	echo 100000 >"$V1/cpu.cfs_period_us" && echo 10000 >"$V1/cpu.cfs_quota_us" || fail "cannot set the quota"
	QUOTA=$V1/cgroup.procs
elif [ -f "$V2/cgroup.controllers" ] && grep -qw cpu "$V2/cgroup.controllers"; then
	V1=""
	echo +cpu >"$V2${W%/*}/cgroup.subtree_control" 2>/dev/null
	echo '10000 100000' >"$V2$W/cpu.max" || fail "cannot set cpu.max"
	QUOTA=/dev/null
else
	echo "b) skipped: no cpu controller"; echo ok; exit 0
fi
CW_FAKE_SYNC_US=2000 "$CW_BIN" trace --db "$D/b.db" --no-view -- \
	sh -c 'echo $$ > "$1/cgroup.procs" && echo $$ > "$2" && shift 2 && exec "$@"' w "$V2$W" "$QUOTA" \
	"$FIX/fake_workload" -T 4 -m sync >/dev/null 2>"$D/b.err" || fail "trace b: $(cat "$D/b.err")"
th=$(sqlite3 "$D/b.db" "SELECT max(nr_throttled) - min(nr_throttled) FROM cgroup_pressure WHERE cgroup_id = $(cgid "$W")")
echo "b) sampled: throttled $th times"
[ -n "$th" ] && [ "$th" -gt 0 ] || fail "b) no throttling sampled"
"$CW_BIN" explain --db "$D/b.db" --json --no-store >"$D/b.json" || fail "explain b"
kind=$(j "$D/b.json" 'c.get("root_cause", {}).get("kind")')
echo "b) $kind: $(j "$D/b.json" 'c.get("root_cause", {}).get("summary")')"
[ "$kind" = cfs_throttling ] || fail "b) top chain is not cfs_throttling"
j "$D/b.json" 'c["root_cause"]["summary"]' | grep -q "throttled by its own CPU quota (quota 10000 us per 100000 us" || fail "b) summary does not name the quota"
echo ok
