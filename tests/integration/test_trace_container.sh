#!/bin/bash
# A CUDA process in a container-like mount namespace: its libcudart lives on
# a tmpfs mounted only in that namespace (the host sees an empty directory
# at that path), so trace must find and attach to the copy through
# /proc/PID/root. The process starts after trace (every-process mode) and
# every one of its calls must be recorded; check must list the copy too.
set -u
# --capture full: the check counts every call's row.
[ "$(id -u)" = 0 ] || { echo "needs root for BPF and mount namespaces"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v unshare >/dev/null || { echo "unshare (util-linux) is missing"; exit 1; }
D=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ct=$D/ct
mkdir -p "$ct"

# The workload: in its own mount namespace, the library copied onto the
# private tmpfs; it waits 2.5 s before its first call (the rescan finds it)
# and 3 s more before exiting, so check can look at it while it runs.
container() { # calls
	exec unshare --mount --propagation private bash -c \
		'mount -t tmpfs cwct "$1" && cp "$2" "$1/" && LD_LIBRARY_PATH="$1" exec "$3" -n "$4" -m sync -w 2500' \
		container "$ct" "$FIX/fakecuda/libcudart.so.13" "$FIX/fake_workload" "$1"
}

"$CW_BIN" trace --db "$D/t.db" --no-view --capture full --duration 8s >"$D/t.out" 2>&1 &
tp=$!; pids+=($tp)
sleep 1
container 60 >"$D/w.out" 2>&1 &
cp=$!; pids+=($cp)
# While it waits: the mapping is the namespace's own, invisible from here.
for _ in $(seq 50); do grep -q " $ct/libcudart.so.13\$" "/proc/$cp/maps" 2>/dev/null && break; sleep 0.05; done
grep -q " $ct/libcudart.so.13\$" "/proc/$cp/maps" || fail "the container process does not map its private copy"
[ -z "$(ls -A "$ct")" ] || fail "the host sees the container's tmpfs: the test would not need /proc/PID/root"
"$CW_BIN" check --json >"$D/check.json" || true
grep -q "/proc/$cp/root$ct/libcudart.so.13" "$D/check.json" || fail "check does not list the container's copy: $(grep -A3 "\"path\": \"/proc" "$D/check.json")"
wait $cp || fail "workload: $(cat "$D/w.out")"
wait $tp || fail "trace exited $?: $(cat "$D/t.out")"
got=$(sqlite3 "$D/t.db" "SELECT count(*) FROM events WHERE pid=$cp AND op='cudaStreamSynchronize'")
[ "$got" = 60 ] || fail "container process $cp: $got of 60 calls recorded ($(cat "$D/t.out"))"
echo "container process $cp: 60 of 60 calls through /proc/$cp/root$ct/libcudart.so.13"
echo ok
