#!/bin/bash
# Per-thread CUDA device: each of three workers calls cudaSetDevice(2 + i)
# on the fake libcudart, then synchronizes; every call a worker makes after
# its cudaSetDevice must carry its own device, and the cudaSetDevice calls
# themselves (entered before the switch) the device the thread had before.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda

"$CW_BIN" trace --db "$D/t.db" --no-view --cuda-lib "$FIX/fakecuda/libcudart.so.13" -- "$FIX/fake_workload" -t 3 -D 2 -n 300 -m sync >"$D/w.out" 2>"$D/t.err" \
	|| fail "trace: $(cat "$D/t.err")"
for i in 0 1 2; do
	tid=$(awk -v i=$i '$1=="worker" && $2==i {print $3}' "$D/w.out")
	[ -n "$tid" ] || fail "worker $i did not start"
	got=$(sqlite3 "$D/t.db" "SELECT group_concat(device || ':' || n) FROM (SELECT device, count(*) n FROM events
		WHERE tid=$tid AND op='cudaStreamSynchronize' GROUP BY device)")
	echo "worker $i ($tid): syncs by device $got"
	[ "$got" = "$((2 + i)):300" ] || fail "worker $i's calls do not all carry device $((2 + i))"
	setdev=$(sqlite3 "$D/t.db" "SELECT coalesce(device, 'null') || ' ' || arg0 || ' ' || ret FROM events WHERE tid=$tid AND op='cudaSetDevice'")
	[ "$setdev" = "-1 $((2 + i)) 0" ] || [ "$setdev" = "null $((2 + i)) 0" ] || fail "worker $i's cudaSetDevice stored as '$setdev'"
done
echo ok
