#!/bin/bash
# Calls from a thread without Python frames carry the line of the Python
# thread waiting on them, marked as attributed (docs/python.md, "Threads
# without Python frames"). tests/fixtures/py/native_launch.c makes cudaMalloc
# calls (the timing fixture, 1 ms each) from its own pthread while the
# Python thread waits in pthread_join at the line marked "# WAIT"; its
# first calls are slow (a cold start). Every call of the
# native thread is stored with the WAIT line and python_via = the waiting
# thread's TID (py_stacks.python_via); the Python thread's own calls are
# never marked; explain's chain (on the native thread) names the WAIT line
# with python_via in JSON and "attributed" in text, and the same file
# rewritten as schema v7 (the marker in the frames JSON only) reads the
# same.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
SCRIPT=$CW_ROOT/tests/fixtures/py/native_thread.py
[ -f "$FAKE" ] || { echo "FAIL: fixture $FAKE missing (make fixtures)"; exit 1; }
py=$(ls -d /root/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | head -1)
[ -n "$py" ] || py=$(command -v python3)
D=$(mktemp -d)
bg=()
cleanup() { for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
CPU=$(($(nproc) - 1))
N=500
wait_line=$(grep -n '# WAIT$' "$SCRIPT" | cut -d: -f1)
own_line=$(grep -n '# OWN$' "$SCRIPT" | cut -d: -f1)
cc -shared -fPIC -O1 -o "$D/libnative_launch.so" "$CW_ROOT/tests/fixtures/py/native_launch.c" -lpthread -ldl \
	|| fail "cannot build the native library"

# The native thread's first calls are slow (40 ms, as a first allocation
# that maps memory is), then the fake runtime is told to answer in 1 ms:
# a cold_start chain on the native thread, timed from the workload's own
# start file, not from trace's start-up (which varies).
echo CW_FAKE_MALLOC_US=40000 >"$D/ctl"
(for _ in $(seq 1 1000); do [ -e "$D/started" ] && break; sleep 0.02; done
	sleep 0.3; echo CW_FAKE_MALLOC_US=1000 >"$D/ctl.new"; mv "$D/ctl.new" "$D/ctl") &
bg+=($!)
NATIVE_START_FILE=$D/started CW_FAKE_CTL=$D/ctl "$CW_BIN" trace --db "$D/t.db" --no-view --py-stacks all -- \
	taskset -c $CPU "$py" "$SCRIPT" "$D/libnative_launch.so" "$FAKE" $N >"$D/out" 2>"$D/err" \
	|| fail "trace: $(cat "$D/err")"
kill "${bg[-1]}" 2>/dev/null; wait "${bg[-1]}" 2>/dev/null
grep -qx done "$D/out" || fail "workload did not finish: $(cat "$D/out" "$D/err")"

q() { sqlite3 -separator '|' "$D/t.db" "$1"; }
pid=$(q "SELECT pid FROM events WHERE op = 'cudaMalloc' AND bytes = 6000")
[ -n "$pid" ] || fail "the Python thread's own call is missing"
# every native-thread call: attributed to the waiting line, via the main thread
bad=$(q "SELECT count(*) FROM events e LEFT JOIN py_stacks p ON p.id = e.py_stack_id
	WHERE e.op = 'cudaMalloc' AND e.bytes BETWEEN 7000 AND 7000 + $N - 1 AND (e.tid = e.pid
	OR p.user_line IS NOT $wait_line OR p.user_function IS NOT 'backward'
	OR p.python_via IS NOT $pid OR json_extract(p.frames, '\$[#-1].python_via') IS NOT $pid)")
total=$(q "SELECT count(*) FROM events WHERE op = 'cudaMalloc' AND bytes BETWEEN 7000 AND 7000 + $N - 1")
[ "$total" = $N ] || fail "$total native calls stored, want $N"
[ "$bad" = 0 ] || fail "$bad of $N native calls lack the attributed WAIT line: $(q "SELECT e.tid, p.user_line, p.frames
	FROM events e LEFT JOIN py_stacks p ON p.id = e.py_stack_id WHERE e.bytes BETWEEN 7000 AND 7010")"
# the Python thread's own calls: its own line (when captured), never marked
marked=$(q "SELECT count(*) FROM events e JOIN py_stacks p ON p.id = e.py_stack_id
	WHERE e.bytes IN (6000, 6001) AND (json_extract(p.frames, '\$[#-1].python_via') IS NOT NULL
	OR p.python_via IS NOT NULL OR p.user_line IS NOT $own_line)")
[ "$marked" = 0 ] || fail "the Python thread's own calls are marked as attributed"
[ "$(q "SELECT p.user_line FROM events e JOIN py_stacks p ON p.id = e.py_stack_id WHERE e.bytes = 6001")" = "$own_line" ] \
	|| fail "the Python thread's own call lacks its line"

check_explain() { # DB
	"$CW_BIN" explain --db "$1" --json --no-store >"$D/e.json" || fail "explain: $(cat "$D/e.json")"
	python3 - "$D/e.json" "$SCRIPT" "$wait_line" "$pid" <<-'PY' || exit 1
	import json, sys
	doc = json.load(open(sys.argv[1]))
	chains = [c for c in doc.get("chains") or [] if c.get("tid") and c.get("tid") != c.get("pid")]
	if not chains:
	    sys.exit("FAIL: no chain on the native thread: %s" % [(c["root_cause"]["kind"], c.get("tid")) for c in doc.get("chains") or []])
	py = chains[0].get("python") or {}
	want = (sys.argv[2], int(sys.argv[3]), "backward", int(sys.argv[4]))
	got = (py.get("file"), py.get("line"), py.get("function"), py.get("python_via"))
	print("python:", got)
	if got != want:
	    sys.exit("FAIL: python %r, want %r" % (got, want))
	PY
	"$CW_BIN" explain --db "$1" --no-store >"$D/e.txt" || fail "explain text"
	grep -qF "backward() at $SCRIPT:$wait_line  (attributed: thread $pid waits on this call's thread)" "$D/e.txt" \
		|| fail "text does not mark the attributed line: $(cat "$D/e.txt")"
}
check_explain "$D/t.db"

# an older store: schema v7 keeps python_via in the frames JSON only
cp "$D/t.db" "$D/v7.db"
sqlite3 "$D/v7.db" "ALTER TABLE py_stacks DROP COLUMN python_via; PRAGMA user_version = 7" || fail "rewriting as v7"
check_explain "$D/v7.db"
[ "$(sqlite3 "$D/v7.db" 'PRAGMA user_version')" = 7 ] || fail "explain migrated the v7 file"
echo ok
