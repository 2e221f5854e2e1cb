#!/bin/bash
# trace's start-up steps that start a thread fail for real when the pids
# cgroup allows no more tasks: the writer's (6), the ring buffers' consumer,
# GPU telemetry's sampler and the cgroup resolver (1 each). Each failing run
# says why in one line and exits non-zero; with enough tasks it traces.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
FIX=$CW_BUILD/fixtures
LIB=$FIX/fakecuda/libcudart.so.13
[ -f "$LIB" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
if [ -d /sys/fs/cgroup/pids ]; then
	CG=/sys/fs/cgroup/pids/cw-start-$$
elif grep -qw pids /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
	CG=/sys/fs/cgroup/cw-start-$$
else
	echo "no pids cgroup controller"; exit 77
fi
mkdir "$CG" || { echo "cannot create $CG"; exit 77; }
D=$(mktemp -d); trap 'rmdir "$CG" 2>/dev/null; rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
declare -A code
ran=0
for k in $(seq 1 12); do
	echo "$k" >"$CG/pids.max"
	rm -f "$D"/t.db*
	sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" \
		"$CW_BIN" trace --no-view --db "$D/t.db" --duration 1s --cuda-lib "$LIB" >"$D/out" 2>"$D/err"
	rc=$?
	if [ $rc = 0 ]; then
		grep -q '1 libraries' "$D/err" || fail "pids.max $k: exit 0 without tracing: $(cat "$D/err")"
		ran=1
		continue
	fi
	[ $ran = 0 ] || fail "pids.max $k: exit $rc after a smaller limit traced: $(cat "$D/err")"
	n=$(grep -c '^causeway: ' "$D/err")
	[ "$n" = 1 ] || fail "pids.max $k: exit $rc with $n lines: $(cat "$D/err")"
	for m in 'cannot write to' 'cannot read the ring buffers' 'cannot start GPU telemetry' \
		'cannot start the cgroup resolver'; do
		grep -q "^causeway: $m" "$D/err" && code[$m]=$rc
	done
done
[ $ran = 1 ] || fail "no run traced with up to 12 tasks"
[ "${code[cannot write to]:-}" = 6 ] || fail "the writer's thread: exit ${code[cannot write to]:-none}, want 6"
for m in 'cannot read the ring buffers' 'cannot start GPU telemetry' 'cannot start the cgroup resolver'; do
	[ "${code[$m]:-}" = 1 ] || fail "\"$m\": exit ${code[$m]:-none (never failed)}, want 1"
done
echo ok
