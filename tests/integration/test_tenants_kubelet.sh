#!/bin/bash
# tenants.kubelet_url: trace names a pod's cgroup from the kubelet's pod
# list, served on loopback (a canned /pods body from a real HTTP server),
# and the list wins over the container's own POD_NAME/POD_NAMESPACE (which
# the workload can set to anything); a pod the list does not name keeps
# its environment's name; the fetches are counted.
set -u
. "$CW_ROOT/tests/integration/tenant_lib.sh"
tenant_test_start

ua=$(pod_uid)
ub=$(pod_uid)
A=/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${ua//-/_}.slice/cri-containerd-$(hexid 64).scope
B=/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${ub//-/_}.slice/cri-containerd-$(hexid 64).scope
mkcg "$A" && mkcg "$B" || fail "cannot create cgroups"
mkdir -p "$D/www"
cat >"$D/www/pods" <<JSON
{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[
 {"metadata":{"name":"trainer-$$","namespace":"ml","uid":"$ua"},"spec":{"containers":[{"name":"t"}]}},
 {"metadata":{"name":"Bad Name","namespace":"ml","uid":"$ub"}}]}
JSON
python3 -m http.server --bind 127.0.0.1 --directory "$D/www" 0 >"$D/http.log" 2>&1 &
pids+=($!)
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$D/http.log" | head -1)
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || fail "http server: $(cat "$D/http.log")"
cat >"$D/cw.yaml" <<YAML
tenants:
  kubelet_url: http://127.0.0.1:$port/pods
YAML
export LD_LIBRARY_PATH=$FIX/fakecuda CW_FAKE_SYNC_US=1000 CW_FAKE_MODE=sleep
LIB=$FIX/fakecuda/libcudart.so.13
"$CW_BIN" --config "$D/cw.yaml" trace --db "$D/t.db" --no-view --cuda-lib "$LIB" --duration 4s \
	--pod "$ua" --pod "$ub" >"$D/t.out" 2>&1 &
tp=$!; pids+=($tp)
sleep 1
POD_NAME=liar POD_NAMESPACE=kube-system in_cg "$A" "$FIX/fake_workload" -T 2 -m sync >/dev/null 2>&1 &
pids+=($!)
POD_NAME="own-$$" POD_NAMESPACE=batch in_cg "$B" "$FIX/fake_workload" -T 2 -m sync >/dev/null 2>&1 &
pids+=($!)
wait "$tp" || fail "trace: $(cat "$D/t.out")"
got=$(sqlite3 "$D/t.db" "SELECT pod || '/' || namespace FROM cgroups WHERE pod_uid = '$ua'")
[ "$got" = "trainer-$$/ml" ] || fail "pod from the kubelet list: '$got'"
got=$(sqlite3 "$D/t.db" "SELECT pod || '/' || namespace FROM cgroups WHERE pod_uid = '$ub'")
[ "$got" = "own-$$/batch" ] || fail "pod the list refuses to name: '$got'"
n=$(sqlite3 "$D/t.db" "SELECT value FROM counters WHERE name = 'trace.kubelet.fetches'")
[ -n "$n" ] && [ "$n" -ge 1 ] && [ "$n" -le 3 ] || fail "trace.kubelet.fetches: '$n'"
grep -q "GET /pods" "$D/http.log" || fail "the kubelet was not asked: $(cat "$D/http.log")"
# A bad URL in the config is refused when the config is read.
printf 'tenants:\n  kubelet_url: file:///etc/passwd\n' >"$D/bad.yaml"
out=$("$CW_BIN" --config "$D/bad.yaml" query --db "$D/t.db" 2>&1) && fail "file:// accepted"
echo "$out" | grep -q '"tenants.kubelet_url": "file:///etc/passwd" is not an http:// or https:// URL' || fail "message: $out"
echo ok
