#!/bin/bash
# Tenants named from real cgroup v2 directories: one per runtime's naming
# scheme (kubelet+containerd, CRI-O, Docker's systemd and cgroupfs drivers,
# Podman, a Slurm job step), each running the CUDA fixture. trace names
# every one of them (runtime, container id, pod UID and QoS, the pod name
# and namespace from the downward-API environment, the Slurm job), records
# each tenant's 40 calls, and the seed article's two per-tenant queries
# run verbatim and give per-container rows.
set -u
. "$CW_ROOT/tests/integration/tenant_lib.sh"
tenant_test_start

uid=$(pod_uid)
uid_=${uid//-/_}
uid2=$(pod_uid)
c1=$(hexid 64) c2=$(hexid 64) c3=$(hexid 64) c4=$(hexid 64) c5=$(hexid 64)
job=$((900000 + $$ % 99999))
declare -A CG RT ID
CG[containerd]=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$uid_.slice/cri-containerd-$c1.scope
CG[crio]=/kubepods/besteffort/pod$uid2/crio-$c2.scope
CG[docker]=/system.slice/docker-$c3.scope
CG[dockerfs]=/docker/$c4
CG[podman]=/machine.slice/libpod-$c5.scope
CG[slurm]=/system.slice/slurmstepd.scope/job_$job/step_0
RT=([containerd]=containerd [crio]=cri-o [docker]=docker [dockerfs]=docker [podman]=podman [slurm]=slurm)
ID=([containerd]=$c1 [crio]=$c2 [docker]=$c3 [dockerfs]=$c4 [podman]=$c5 [slurm]=slurm-job-$job)
for k in "${!CG[@]}"; do mkcg "${CG[$k]}" || fail "cannot create ${CG[$k]}"; done

export LD_LIBRARY_PATH=$FIX/fakecuda
# --capture full: every call's row carries its cgroup, counted below.
"$CW_BIN" trace --db "$D/t.db" --no-view --capture full --duration 7s >"$D/t.out" 2>&1 &
tp=$!; pids+=($tp)
sleep 1
for k in "${!CG[@]}"; do
	envs=()
	case $k in
	containerd) envs=(POD_NAME=trainer-$$-0 POD_NAMESPACE=ml-$$ HOSTNAME=trainer-$$-0) ;;
	crio) envs=(HOSTNAME=infer-$$ POD_NAMESPACE="bad ns!") ;; # a pod name from HOSTNAME; an invalid namespace is dropped
	esac
	# The first call after 2.5 s: the every-second rescan has attached to
	# the fixture's library copy by then.
	# The environment is set before the process enters its cgroup, as a
	# runtime sets a container's before its first instruction.
	env CW_FAKE_SYNC_US=5000 CW_FAKE_MODE=sleep "${envs[@]}" sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' \
		in_cg "$V2${CG[$k]}" "$FIX/fake_workload" -n 40 -m sync -w 2500 >"$D/w.$k" 2>&1 &
	pids+=($!)
done
wait "$tp" || fail "trace: $(cat "$D/t.out")"

q() { sqlite3 -separator '|' "$D/t.db" "$@"; }
for k in "${!CG[@]}"; do
	id=$(cgid "${CG[$k]}")
	row=$(q "SELECT runtime, container_id, coalesce(pod,''), coalesce(namespace,''), coalesce(pod_uid,''), coalesce(qos,''), path, first_seen_wall_ns > 0, last_seen_wall_ns >= first_seen_wall_ns FROM containers WHERE cgroup_id = $id")
	echo "$k: $row"
	IFS='|' read -r rt cid pod ns puid qos path fs ls <<<"$row"
	[ "$rt" = "${RT[$k]}" ] || fail "$k: runtime \"$rt\", want ${RT[$k]}"
	[ "$cid" = "${ID[$k]}" ] || fail "$k: container id \"$cid\", want ${ID[$k]}"
	[ "$path" = "${CG[$k]}" ] || fail "$k: path \"$path\""
	[ "$fs$ls" = 11 ] || fail "$k: first/last seen not set"
	n=$(q "SELECT count(*) FROM events WHERE cgroup_id = $id AND op = 'cudaStreamSynchronize'")
	[ "$n" = 40 ] || fail "$k: $n of 40 calls recorded in cgroup $id"
	case $k in
	containerd)
		[ "$pod|$ns|$puid|$qos" = "trainer-$$-0|ml-$$|$uid|burstable" ] || fail "containerd pod identity: $pod|$ns|$puid|$qos" ;;
	crio)
		[ "$pod|$ns|$puid|$qos" = "infer-$$||$uid2|besteffort" ] || fail "cri-o pod identity: $pod|$ns|$puid|$qos" ;;
	slurm)
		[ "$(q "SELECT slurm_job || '/' || slurm_step FROM containers WHERE cgroup_id = $id")" = "$job/0" ] || fail "slurm job/step" ;;
	*)
		[ -z "$pod$puid" ] || fail "$k: a pod where there is none" ;;
	esac
done
# The processes table carries the cgroup too.
n=$(q "SELECT count(*) FROM processes p JOIN containers c ON c.cgroup_id = p.cgroup_id WHERE c.container_id = '$c1'")
[ "$n" -ge 1 ] || fail "the containerd tenant's process row has no cgroup"

# The article's queries, verbatim.
cat >"$D/q1.sql" <<'EOF'
-- top-N cuda kernels by total time per container
SELECT container_id,
       kernel_name,
       COUNT(*)                AS launches,
       SUM(duration_ns)/1e6    AS total_ms
  FROM cuda_events e
  JOIN containers  c ON c.cgroup_id = e.cgroup_id
 GROUP BY container_id, kernel_name
 ORDER BY total_ms DESC
 LIMIT 20;
EOF
cat >"$D/q2.sql" <<'EOF'
-- per-tenant NCCL cost
SELECT container_id,
       op,
       COUNT(*)                AS calls,
       AVG(duration_ns)/1e6    AS avg_ms,
       MAX(duration_ns)/1e6    AS p100_ms
  FROM nccl_events e
  JOIN containers  c ON c.cgroup_id = e.cgroup_id
 GROUP BY container_id, op;
EOF
"$CW_BIN" query --db "$D/t.db" --csv - <"$D/q1.sql" >"$D/q1.csv" || fail "query 1: $(cat "$D/q1.csv")"
for k in "${!CG[@]}"; do
	grep -q "^${ID[$k]},cudaStreamSynchronize,40," "$D/q1.csv" || fail "query 1 has no row of 40 calls for $k: $(cat "$D/q1.csv")"
done
"$CW_BIN" query --db "$D/t.db" --csv - <"$D/q2.sql" >"$D/q2.csv" || fail "query 2: $(cat "$D/q2.csv")"
head -1 "$D/q2.csv" | grep -q '^container_id,op,calls,avg_ms,p100_ms' || fail "query 2 columns: $(cat "$D/q2.csv")"
echo "seed query 1: $(grep -c cudaStreamSynchronize,40, "$D/q1.csv") tenants with 40 calls each"
echo ok
