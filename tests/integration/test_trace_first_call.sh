#!/bin/bash
# Library copies outside the standard directories are attached before their
# first call (docs/trace.md, "Discovery"): a program calling a copy from
# main's first statement (LD_LIBRARY_PATH), one that dlopens a copy and
# calls it at once, one whose private mount namespace holds the copy, and
# one on a copy of the real libcudart.so.13. Every call must be recorded,
# exactly, under `trace -- CMD`, `trace --pid` (a process waiting on a fifo,
# and one started stopped) and system-wide tracing. Counts are per pid of
# this test's own processes (others trace on this machine too).
set -u
# --capture full: the checks count every call's row per process.
[ "$(id -u)" = 0 ] || { echo "needs root for BPF and mount namespaces"; exit 77; }
FIX=$CW_BUILD/fixtures
FAKE=$FIX/fakecuda/libcudart.so.13
[ -x "$FIX/first_call" ] && [ -f "$FAKE" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v unshare >/dev/null || { echo "unshare (util-linux) is missing"; exit 1; }
REAL=$(ls /usr/local/cuda*/targets/*/lib/libcudart.so.13 /usr/local/cuda*/lib64/libcudart.so.13 2>/dev/null | head -1)
[ -n "$REAL" ] || { echo "the CUDA 13 runtime is missing"; exit 1; }
D=$(mktemp -d /tmp/cw-firstcall-$$.XXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
counter() { sqlite3 "$1" "SELECT value FROM counters WHERE name='$2'"; }

# The workloads of one mode, each on fresh copies (new inodes: nothing is
# attached at start). Each prints "pid P calls N" into $1/calls.
cat >"$D/work.sh" <<'EOF'
set -e
dir=$1 fix=$2 fake=$3 real=$4
mkdir -p "$dir/ld" "$dir/dl" "$dir/ct" "$dir/real"
cp "$fake" "$dir/ld/"
cp "$fake" "$dir/dl/"
cp -L "$real" "$dir/real/libcudart.so.13"
LD_LIBRARY_PATH=$dir/ld "$fix/first_call" 25 >>"$dir/calls"
"$fix/first_call" -d "$dir/dl/libcudart.so.13" 30 >>"$dir/calls"
LD_LIBRARY_PATH=$dir/real "$fix/first_call" 20 >>"$dir/calls"
# Container-like: the copy lives on a tmpfs mounted in a private mount
# namespace only; the host sees an empty directory there.
unshare --mount --propagation private bash -c \
	'mount -t tmpfs cwfc "$1" && cp "$2" "$1/" && LD_LIBRARY_PATH="$1" exec "$3" 35' \
	ct "$dir/ct" "$fake" "$fix/first_call" >>"$dir/calls"
EOF

# check DB DIR: every "pid P calls N" line of DIR/calls has N events.
check() {
	local db=$1 dir=$2 n=0 pid want got
	while read -r _ pid _ want; do
		got=$(sqlite3 "$db" "SELECT count(*) FROM events WHERE pid=$pid AND op='cudaStreamSynchronize'")
		[ "$got" = "$want" ] || fail "$dir: pid $pid made $want calls, $got recorded"
		n=$((n + 1))
	done <"$dir/calls"
	echo "$n"
}

# Waits until trace's stderr ($1) says it is tracing.
ready() {
	for _ in $(seq 200); do grep -q '^causeway: tracing' "$1" && return 0; sleep 0.05; done
	fail "trace did not start: $(cat "$1")"
}

# 1. trace -- CMD: the launched command and its children.
m=$D/cmd; mkdir -p "$m"
"$CW_BIN" trace --db "$m/t.db" --no-view --capture full -- bash "$D/work.sh" "$m" "$FIX" "$FAKE" "$REAL" >"$m/out" 2>&1 ||
	fail "trace -- exited $?: $(cat "$m/out")"
[ "$(check "$m/t.db" "$m")" = 4 ] || fail "trace --: workloads missing: $(cat "$m/calls")"
[ "$(counter "$m/t.db" trace.discovery.late)" = 0 ] || fail "trace --: late attaches counted"
[ "$(counter "$m/t.db" trace.discovery.held)" -ge 4 ] || fail "trace --: fewer than 4 holds"
echo "trace --: every call of 4 workloads recorded; $(grep -o 'discovery: .*' "$m/out")"

# 2. trace --pid: one process waiting on a fifo, one started stopped.
m=$D/pid; mkdir -p "$m/stopped"
cp "$FAKE" "$m/stopped/"
mkfifo "$m/fifo"
bash -c 'read -r _ <"$1"; exec bash "$2" "$3" "$4" "$5" "$6"' w "$m/fifo" "$D/work.sh" "$m" "$FIX" "$FAKE" "$REAL" &
wp=$!; pids+=($wp)
bash -c 'kill -STOP $$; LD_LIBRARY_PATH=$1 exec "$2" 15 >"$3"' s "$m/stopped" "$FIX/first_call" "$m/stopped.calls" &
sp=$!; pids+=($sp)
for _ in $(seq 100); do grep -q '^State:.*T' "/proc/$sp/status" && break; sleep 0.02; done
"$CW_BIN" trace --db "$m/t.db" --no-view --capture full --pid "$wp,$sp" >"$m/out" 2>&1 &
tp=$!; pids+=($tp)
ready "$m/out"
echo go >"$m/fifo"
kill -CONT "$sp"
wait "$wp" || fail "--pid workload failed"
wait "$sp" || fail "--pid stopped workload failed"
wait "$tp" || fail "trace --pid exited $?: $(cat "$m/out")"
cat "$m/stopped.calls" >>"$m/calls"
[ "$(check "$m/t.db" "$m")" = 5 ] || fail "trace --pid: workloads missing: $(cat "$m/calls")"
[ "$(counter "$m/t.db" trace.discovery.late)" = 0 ] || fail "trace --pid: late attaches counted"
echo "trace --pid: every call of 5 workloads recorded; $(grep -o 'discovery: .*' "$m/out")"

# 3. System-wide: processes started after trace.
m=$D/all; mkdir -p "$m"
"$CW_BIN" trace --db "$m/t.db" --no-view --capture full --duration 60s >"$m/out" 2>&1 &
tp=$!; pids+=($tp)
ready "$m/out"
bash "$D/work.sh" "$m" "$FIX" "$FAKE" "$REAL" || fail "system-wide workload failed"
kill -INT "$tp"
wait "$tp" || fail "system-wide trace exited $?: $(cat "$m/out")"
[ "$(check "$m/t.db" "$m")" = 4 ] || fail "system-wide: workloads missing: $(cat "$m/calls")"
echo "system-wide: every call of 4 workloads recorded; $(grep -o 'discovery: .*' "$m/out")"
echo ok
