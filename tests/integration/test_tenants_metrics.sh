#!/bin/bash
# /metrics on `trace --serve` labels each process with its tenant: a Docker
# container and a Kubernetes pod (name and namespace from the downward API
# environment) each run the CUDA fixture in real cgroup v2 directories
# named as dockerd and kubelet+containerd name them; the scrape shows their
# series with container, pod and namespace labels, promtool accepts it.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF and cgroups"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v promtool >/dev/null || { echo "FAIL: promtool not installed (scripts/install-deps.sh)"; exit 1; }
. "$CW_ROOT/tests/integration/tenant_lib.sh"
. "$CW_ROOT/tests/lib/auth.sh"
[ -f "$V2/cgroup.procs" ] || { echo "no cgroup v2 hierarchy"; exit 77; }
D=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; tenant_cleanup; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

uid=$(pod_uid)
ca=$(hexid 64) cb=$(hexid 64)
A=/system.slice/docker-$ca.scope
B=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid//-/_}.slice/cri-containerd-$cb.scope
mkcg "$A" && mkcg "$B" || fail "cannot create cgroups"
export LD_LIBRARY_PATH=$FIX/fakecuda CW_FAKE_SYNC_US=1000 CW_FAKE_MODE=sleep
LIB=$FIX/fakecuda/libcudart.so.13
# Both tenants only (other tests' processes could fill the top-20 cap); the
# self-signed certificate goes to this test's own HOME.
HOME=$D "$CW_BIN" trace --db "$D/t.db" --no-view --cuda-lib "$LIB" --duration 8s --serve 127.0.0.1:0 \
	--container "${ca:0:12}" --pod "$uid" >"$D/t.out" 2>&1 &
tp=$!; pids+=($tp)
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving https:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/t.out")
	[ -n "$port" ] && break
	kill -0 $tp 2>/dev/null || break
	sleep 0.1
done
[ -n "$port" ] || fail "trace did not start serving: $(cat "$D/t.out")"
HOME=$D auth_from_file || fail "trace --serve made no token file: $(cat "$D/t.out")"
in_cg "$A" "$FIX/fake_workload" -T 5 -m sync >/dev/null 2>&1 &
pids+=($!)
in_cg "$B" env POD_NAME="trainer-$$" POD_NAMESPACE=ml "$FIX/fake_workload" -T 5 -m sync >/dev/null 2>&1 &
pids+=($!)
# The resolver names a new cgroup within 50 ms; give a loaded machine time.
ok=
for _ in $(seq 1 40); do
	sleep 0.25
	curl -sk "${AUTH[@]}" --max-time 5 "https://127.0.0.1:$port/metrics" >"$D/m.txt" || continue
	grep -q "container=\"${ca:0:12}\"" "$D/m.txt" && grep -q "pod=\"trainer-$$\",namespace=\"ml\"" "$D/m.txt" && ok=1 && break
done
[ -n "$ok" ] || fail "no tenant labels after 10 s: $(grep -E '^causeway_(op_duration_seconds_count|process_cuda_idle)' "$D/m.txt")"
grep -q "^causeway_op_duration_seconds_count{node=\"[^\"]*\",process=\"fake_workload\",container=\"${ca:0:12}\",source=\"cuda\",op=\"cudaStreamSynchronize\"} [1-9]" "$D/m.txt" ||
	fail "docker container series: $(grep '^causeway_op_duration_seconds_count' "$D/m.txt")"
grep -q "^causeway_op_duration_seconds_count{node=\"[^\"]*\",process=\"fake_workload\",container=\"${cb:0:12}\",pod=\"trainer-$$\",namespace=\"ml\",source=\"cuda\",op=\"cudaStreamSynchronize\"} [1-9]" "$D/m.txt" ||
	fail "pod series: $(grep '^causeway_op_duration_seconds_count' "$D/m.txt")"
grep -q "^causeway_process_cuda_idle_seconds{node=\"[^\"]*\",pid=\"[0-9]*\",process=\"fake_workload\",container=\"${cb:0:12}\",pod=\"trainer-$$\",namespace=\"ml\"} " "$D/m.txt" ||
	fail "idle gauge: $(grep '^causeway_process_cuda_idle_seconds' "$D/m.txt")"
promtool check metrics <"$D/m.txt" || fail "promtool: $(promtool check metrics <"$D/m.txt" 2>&1)"
wait "$tp" || fail "trace: $(cat "$D/t.out")"
echo ok
