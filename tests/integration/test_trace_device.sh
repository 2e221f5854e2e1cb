#!/bin/bash
# Per-thread CUDA device: each of three workers calls cudaSetDevice(2 + i)
# on the fake libcudart, then synchronizes; every call a worker makes after
# its cudaSetDevice must carry its own device, and the cudaSetDevice calls
# themselves (entered before the switch) the device the thread had before.
# The run happens in a cgroup of its own: every call also carries its
# thread's comm and that cgroup's id (the inode of its cgroup v2 directory).
# A thread that is given an exited thread's tid (pids wrap) starts with no
# device, not the dead thread's.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
CG=
cleanup() {
	[ -n "$CG" ] && rmdir "$CG" 2>/dev/null
	mountpoint -q "$D/cg2" && umount "$D/cg2"
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda

V2=$(findmnt -n -t cgroup2 -o TARGET | head -1)
if [ -z "$V2" ]; then
	mkdir "$D/cg2" && mount -t cgroup2 none "$D/cg2" || fail "cannot mount cgroup2"
	V2=$D/cg2
fi
CG=$V2/cw-test-device-$$
mkdir "$CG" || fail "cannot create cgroup $CG"
cgid=$(stat -c %i "$CG")
(
	echo $BASHPID >"$CG/cgroup.procs" || exit 99
	exec "$CW_BIN" trace --db "$D/t.db" --no-view --cuda-lib "$FIX/fakecuda/libcudart.so.13" -- "$FIX/fake_workload" -t 3 -D 2 -n 300 -m sync
) >"$D/w.out" 2>"$D/t.err" || fail "trace: $(cat "$D/t.err")"
for i in 0 1 2; do
	tid=$(awk -v i=$i '$1=="worker" && $2==i {print $3}' "$D/w.out")
	[ -n "$tid" ] || fail "worker $i did not start"
	got=$(sqlite3 "$D/t.db" "SELECT group_concat(device || ':' || n) FROM (SELECT device, count(*) n FROM events
		WHERE tid=$tid AND op='cudaStreamSynchronize' GROUP BY device)")
	echo "worker $i ($tid): syncs by device $got"
	[ "$got" = "$((2 + i)):300" ] || fail "worker $i's calls do not all carry device $((2 + i))"
	setdev=$(sqlite3 "$D/t.db" "SELECT coalesce(device, 'null') || ' ' || arg0 || ' ' || ret FROM events WHERE tid=$tid AND op='cudaSetDevice'")
	[ "$setdev" = "-1 $((2 + i)) 0" ] || [ "$setdev" = "null $((2 + i)) 0" ] || fail "worker $i's cudaSetDevice stored as '$setdev'"
	who=$(sqlite3 "$D/t.db" "SELECT group_concat(comm || ' ' || cgroup_id || ' ' || n) FROM (SELECT comm, cgroup_id, count(*) n
		FROM events WHERE tid=$tid AND source='cuda' GROUP BY 1, 2)")
	[ "$who" = "fake_workload $cgid 301" ] ||
		fail "worker $i's calls carry comm/cgroup/count '$who', want 'fake_workload $cgid 301'"
done

# Tid reuse: worker 0 sets device 5 and exits; a new thread is handed its
# tid (fake_workload -R) and synchronizes without setting a device.
"$CW_BIN" trace --db "$D/r.db" --no-view --cuda-lib "$FIX/fakecuda/libcudart.so.13" -- "$FIX/fake_workload" -t 1 -D 5 -n 3 -R >"$D/r.out" 2>"$D/r.err" \
	|| fail "trace (tid reuse): $(cat "$D/r.out" "$D/r.err")"
tid=$(awk '$1=="reused" {print $2}' "$D/r.out")
[ -n "$tid" ] || fail "no tid reuse: $(cat "$D/r.out")"
got=$(sqlite3 "$D/r.db" "SELECT group_concat(d) FROM (SELECT coalesce(device, -1) d FROM events
	WHERE tid=$tid AND op='cudaStreamSynchronize' ORDER BY mono_ns)")
echo "tid $tid reused: syncs' devices $got"
[ "$got" = "5,5,5,-1" ] || fail "the thread given tid $tid after worker 0 exited has devices '$got', want 5,5,5,-1"
echo ok
