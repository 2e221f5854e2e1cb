#!/bin/bash
# A real container runtime: runc (Debian's, no registry, no daemon) runs an
# OCI bundle whose root is assembled here (/usr read-only from the host and
# the fixtures), in the cgroup dockerd would give it
# (/system.slice/docker-<id>.scope, cgroupfs driver). trace --container
# <12-char id> records the container's CUDA calls only (all 40 of them:
# its first call waits 1.5 s, past the once-a-second rescan that allows
# the cgroup runc creates after trace started)
# while a neighbour on the host runs the same fixture; the stored identity
# names runtime docker and the full id, and query reads it back
# with the same filter.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF and runc"; exit 77; }
command -v runc >/dev/null || { echo "runc is not installed (CW_TEST_DEPS=1 scripts/install-deps.sh)"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
. "$CW_ROOT/tests/integration/tenant_lib.sh"
[ -f "$V2/cgroup.procs" ] || { echo "no cgroup v2 hierarchy"; exit 77; }
D=$(mktemp -d)
NAME=cw-runc-$$
pids=()
cleanup() {
	runc kill "$NAME" KILL 2>/dev/null
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	runc delete --force "$NAME" 2>/dev/null
	tenant_cleanup
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

id=$(hexid 64)
CG=/system.slice/docker-$id.scope
N=/system.slice/docker-$(hexid 64).scope # the neighbour, on the host
mkcg "$N" || fail "cannot create $N"
B=$D/bundle
mkdir -p "$B/rootfs"
(cd "$B/rootfs" && mkdir -p usr cw proc dev sys tmp etc && ln -s usr/lib lib && ln -s usr/lib64 lib64 &&
	ln -s usr/bin bin && ln -s usr/sbin sbin) || fail "rootfs"
(cd "$B" && runc spec) || fail "runc spec"
python3 - "$B/config.json" "$FIX" "$CG" <<'PY' || fail "config.json"
import json, sys
p, fix, cg = sys.argv[1:4]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["/cw/fake_workload", "-n", "40", "-m", "sync", "-w", "1500"]
c["process"]["env"] += ["LD_LIBRARY_PATH=/cw/fakecuda", "CW_FAKE_SYNC_US=2000", "CW_FAKE_MODE=sleep"]
c["root"]["readonly"] = True
c["mounts"] += [{"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]},
                {"destination": "/cw", "type": "bind", "source": fix, "options": ["rbind", "ro"]}]
c["linux"]["cgroupsPath"] = cg
# pid, mount, ipc and uts namespaces as a container has; the host network
# (no bridge needed) and user namespace.
c["linux"]["namespaces"] = [{"type": t} for t in ("pid", "ipc", "uts", "mount")]
json.dump(c, open(p, "w"), indent=1)
PY
export LD_LIBRARY_PATH=$FIX/fakecuda CW_FAKE_SYNC_US=2000 CW_FAKE_MODE=sleep
LIB=$FIX/fakecuda/libcudart.so.13
# --capture full: the filter is checked by counting the container's rows.
"$CW_BIN" trace --db "$D/t.db" --no-view --capture full --cuda-lib "$LIB" --duration 6s --container "${id:0:12}" >"$D/t.out" 2>&1 &
tp=$!; pids+=($tp)
sleep 1
(cd "$B" && exec runc run "$NAME") >"$D/c.out" 2>&1 &
cp=$!; pids+=($cp)
in_cg "$N" "$FIX/fake_workload" -n 40 -m sync -w 300 >/dev/null 2>&1 &
pids+=($!)
wait "$cp" || fail "runc run: $(cat "$D/c.out")"
grep -q '^calls 40$' "$D/c.out" || fail "the container's workload: $(cat "$D/c.out")"
wait "$tp" || fail "trace: $(cat "$D/t.out")"
cgid=$(sqlite3 "$D/t.db" "SELECT cgroup_id FROM cgroups WHERE path = '$CG'")
[ -n "$cgid" ] || fail "no cgroups row for $CG: $(sqlite3 "$D/t.db" 'SELECT path FROM cgroups')"
got=$(sqlite3 "$D/t.db" "SELECT runtime || ' ' || container_id FROM containers WHERE cgroup_id = $cgid")
[ "$got" = "docker $id" ] || fail "identity: '$got'"
n=$(sqlite3 "$D/t.db" "SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize' AND cgroup_id = $cgid")
all=$(sqlite3 "$D/t.db" "SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize'")
echo "runc container ${id:0:12}: $n calls in its cgroup, $all in all"
[ "$n" = 40 ] && [ "$all" = 40 ] || fail "--container: $n of 40 in the container, $all in all"
got=$("$CW_BIN" query --db "$D/t.db" --json --container "${id:0:12}" --per-tenant |
	python3 -c 'import json,sys; print(" ".join("%s=%d@%s" % (o["op"], o["count"], o["tenant"]) for o in json.load(sys.stdin) if o["op"] == "cudaStreamSynchronize"))')
[ "$got" = "cudaStreamSynchronize=40@docker container ${id:0:12}" ] || fail "query --container: $got"
echo ok
