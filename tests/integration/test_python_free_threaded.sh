#!/bin/bash
# Free-threaded CPython (3.14t) live: no free-threaded interpreter is
# packaged for Debian, so tests/fixtures/py/ft_python.c is a process laid
# out as 3.14t holds one (its _Py_DebugOffsets says free_threaded = 1;
# 32-byte object headers, byte-wide str interned, f_executable tagged
# Py_TAG_DEFERRED, a worker thread running its own thread-local copy of the
# bytecode through co_tlbc->entries[tlbc_index]). Then:
#  - where: both threads at their exact lines (main 42 on the inline
#    bytecode, the worker 45 on its own copy);
#  - trace --py-stacks all (the BPF capture): the main thread's cudaMalloc
#    calls at 42, the worker's cudaStreamSynchronize calls at 45;
#  - explain, with a CPU hog arriving on the worker's CPU: the top chain is
#    cpu_preemption and names train.py:45 in Trainer.step.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$FAKE" ] || { echo "FAIL: fixture $FAKE missing (make fixtures)"; exit 1; }
command -v stress-ng >/dev/null || { echo "FAIL: stress-ng not installed (scripts/install-deps.sh)"; exit 1; }
D=$(mktemp -d)
bg=()
cleanup() { for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
PY=$D/python3.14t
cc -O1 -Wall -Wextra -Werror -I "$CW_ROOT/tests/unit" -o "$PY" "$CW_ROOT/tests/fixtures/py/ft_python.c" -lpthread -ldl \
	|| fail "cannot build the fixture"
CPU=$(($(nproc) - 1))

# where, on the process holding still
"$PY" "$FAKE" 0 0 30 >"$D/hold.out" 2>&1 &
bg+=($!)
for _ in $(seq 1 100); do grep -qx done "$D/hold.out" && break; sleep 0.05; done
"$CW_BIN" where "${bg[-1]}" --no-native --json >"$D/w.json" 2>"$D/w.err" || fail "where: $(cat "$D/w.err")"
python3 - "$D/w.json" "${bg[-1]}" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
got = sorted((t["tid"] == int(sys.argv[2]), [(f["file"], f["line"], f["function"]) for f in t["python"]])
             for t in d["threads"])
want = [(False, [("/srv/ft/train.py", 45, "Trainer.step")]), (True, [("/srv/ft/train.py", 42, "Trainer.step")])]
print("where:", got)
if got != want or d.get("free_threaded") is not True:
    sys.exit("FAIL: where %r (free_threaded %r), want %r" % (got, d.get("free_threaded"), want))
PY
"$CW_BIN" where "${bg[-1]}" --no-native | head -1 | grep -q "(python 3.14.10 free-threaded, $PY)" \
	|| fail "where text lacks the free-threaded build: $("$CW_BIN" where "${bg[-1]}" --no-native | head -1)"
kill "${bg[-1]}"; wait "${bg[-1]}" 2>/dev/null

# trace: the hog is timed from the process's own start (1.2 s set-up,
# then 3 s of calls), as test_trace_python_explain_container's
(for _ in $(seq 1 400); do pgrep -x python3.14t >/dev/null && break; sleep 0.025; done
 sleep 1.8; exec nice -n -10 stress-ng --cpu 1 --taskset $CPU --timeout 1.2s >/dev/null 2>&1) &
bg+=($!)
CW_FAKE_SYNC_US=1000 "$CW_BIN" trace --db "$D/t.db" --no-view --py-stacks all -- "$PY" "$FAKE" 1.2 3 0 $CPU \
	>"$D/out" 2>"$D/err" || fail "trace: $(cat "$D/err")"
wait "${bg[-1]}" 2>/dev/null
grep -qx done "$D/out" || fail "workload did not finish: $(cat "$D/out" "$D/err")"
grep -q "capturing Python stacks" "$D/err" || fail "not attached: $(cat "$D/err")"
for c in "cudaMalloc 42" "cudaStreamSynchronize 45"; do
	set -- $c
	got=$(sqlite3 "$D/t.db" "SELECT count(*), count(e.py_stack_id), total(p.user_file = '/srv/ft/train.py'
		AND p.user_line = $2 AND p.user_function = 'Trainer.step') FROM events e LEFT JOIN py_stacks p
		ON p.id = e.py_stack_id WHERE e.op = '$1'")
	echo "$1: calls|with a stack|at line $2: $got"
	IFS='|' read -r calls stacks at <<<"$got"
	[ "$calls" -gt 0 ] && [ $((2 * stacks)) -ge "$calls" ] && [ "${at%.0}" = "$stacks" ] \
		|| fail "$1: want at least half of the calls with a stack, every one at line $2"
done

"$CW_BIN" explain --db "$D/t.db" --json --no-store >"$D/e.json" || fail "explain"
python3 - "$D/e.json" <<'PY' || exit 1
import json, sys
chains = json.load(open(sys.argv[1])).get("chains") or []
if not chains:
    sys.exit("FAIL: no chain")
c = chains[0]
py = c.get("python") or {}
got = (c["root_cause"]["kind"], py.get("file"), py.get("line"), py.get("function"))
print("explain:", got)
if got != ("cpu_preemption", "/srv/ft/train.py", 45, "Trainer.step"):
    sys.exit("FAIL: top chain %r" % (got,))
PY
echo ok
