#!/bin/bash
# The BPF capture clears _PyStackRef tag bits from f_executable
# (src/bpf/pystack.bpf.h code_mask). On Debian sid's CPython 3.14 and 3.15
# a frame's f_executable carries Py_TAG_REFCNT when its code object is
# immortal (the free-threaded build tags every code object: deferred
# refcounts); tests/fixtures/py/immortal_code.py makes one function's code
# immortal and calls cudaMalloc (the timing fixture) from it every 2 ms for
# 3 s. Calls are captured in BPF (--py-stacks all) once trace has attached
# to the interpreter (its start-up varies): at least half of them must
# carry a stack, and every stack must be that line. An unmasked pointer is
# odd and resolves to nothing.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
. "$CW_ROOT/tests/lib/debian_root.sh"
root=$(debian_root sid amd64 python3.14 python3.15) || { echo "FAIL: no Debian sid root (mmdebstrap)"; exit 1; }
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
SCRIPT=$CW_ROOT/tests/fixtures/py/immortal_code.py
[ -f "$FAKE" ] || { echo "FAIL: fixture $FAKE missing (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
line=$(grep -n '# TAGGED$' "$SCRIPT" | cut -d: -f1)
mkdir -p "$D/src"
cp "$SCRIPT" "$FAKE" "$D/src/"
fail=0
for v in 3.14 3.15; do
	rm -f "$D/t.db"*
	"$CW_BIN" trace --db "$D/t.db" --no-view --py-stacks all -- \
		unshare --mount --fork --propagation private bash -c \
		'mount -t tmpfs cw "$1/mnt" && cp "$2"/* "$1/mnt/" &&
		 exec chroot "$1" "$3" /mnt/immortal_code.py /mnt/libcudart.so.13 3' \
		ctr "$root" "$D/src" "python$v" >"$D/out" 2>"$D/err" || { echo "FAIL $v: trace: $(cat "$D/err")"; fail=1; continue; }
	n=$(sed -n 's/^done \([0-9]*\)$/\1/p' "$D/out")
	[ -n "$n" ] || { echo "FAIL $v: workload did not finish: $(cat "$D/out" "$D/err")"; fail=1; continue; }
	got=$(sqlite3 "$D/t.db" "SELECT count(*), count(e.py_stack_id), total(p.user_file = '/mnt/immortal_code.py'
		AND p.user_line = $line AND p.user_function = 'step') FROM events e LEFT JOIN py_stacks p
		ON p.id = e.py_stack_id WHERE e.op = 'cudaMalloc' AND e.bytes BETWEEN 9000 AND 9999")
	echo "$v: calls|with a stack|at the tagged line: $got (workload: $n calls)"
	IFS='|' read -r calls stacks at <<<"$got"
	at=${at%.0}
	if [ "$calls" != "$n" ] || [ $((2 * stacks)) -lt "$n" ] || [ "$at" != "$stacks" ]; then
		echo "FAIL $v: want $n calls, at least half with a stack, every stack at line $line"
		fail=1
	fi
done
exit $fail
