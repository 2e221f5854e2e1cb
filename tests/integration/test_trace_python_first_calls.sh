#!/bin/bash
# A Python program whose CUDA calls come a few ms after its interpreter
# starts: every call carries its Python line, on every installed pyenv
# CPython, three runs each. trace registers a launched interpreter within
# 10 ms of its start (src/trace/python.c); tried every 100 ms, most of
# these runs had no Python stack at all.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
LIB=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$LIB" ] || fail "fixture $LIB missing (make fixtures)"
SCRIPT=$CW_ROOT/tests/fixtures/py_first_calls.py
LINE=$(grep -n 'FIRST-CALLS-LINE' "$SCRIPT" | cut -d: -f1)
PYS=$(ls -d /root/.pyenv/versions/3.1[0-3]*/bin/python3 2>/dev/null)
[ -n "$PYS" ] || fail "no pyenv CPython 3.10-3.13 installed (tests/setup installs them)"
N=40
runs=0
for py in $PYS; do
	for run in 1 2 3; do
		db=$D/r$runs.db
		"$CW_BIN" trace --db "$db" --no-view --py-stacks all --cuda-lib "$LIB" -- "$py" "$SCRIPT" "$LIB" $N \
			>"$D/out" 2>"$D/err" || fail "$py: trace failed: $(cat "$D/err")"
		grep -qx done "$D/out" || fail "$py: workload did not finish: $(cat "$D/out")"
		got=$(sqlite3 "$db" "SELECT count(*), count(e.py_stack_id), coalesce(sum(p.user_line = $LINE), 0)
			FROM events e LEFT JOIN py_stacks p ON p.id = e.py_stack_id WHERE e.op = 'cudaMalloc'")
		[ "$got" = "$N|$N|$N" ] || fail "$py run $run: calls|with a Python stack|at line $LINE: $got, want $N|$N|$N"
		runs=$((runs + 1))
	done
	echo "$py: $N of $N calls at line $LINE, 3 runs"
done
echo "ok ($runs runs)"
