#!/bin/bash
# training_stall live and after the fact: tests/fixtures/py/stall_train.py
# calls cudaStreamSynchronize (fake_cudart) every 20 ms for 2.5 s, then
# stops in one of three ways. trace (--stall-after 2s) must name the
# stall within the threshold (plus its 1 s tick) with the right state of
# the main thread, and explain must give a training_stall chain naming
# the process and that state:
#   pipe: blocked in read on a pipe, at the wait_for_batch line
#   lock: waiting on a lock (futex), at the wait_for_lock line
#   sync: inside cudaStreamSynchronize, not returned
# After the fact (trace's default 30 s floor: nothing named live; explain
# --stall-after 2s): the main thread inside cudaStreamSynchronize while a
# helper thread blocks reading a pipe (sync-pipe) or on a lock (sync-lock);
# the chain names each thread's blocking kind and line from the thread
# states trace stored at its end.
# A run that exits right after its calls is no stall.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
LIB=$FIX/fakecuda/libcudart.so.13
[ -f "$LIB" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
PY=$(ls -d /root/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | head -1)
[ -n "$PY" ] || PY=$(command -v python3)
D=$(mktemp -d /tmp/cw-gpustall-$$.XXXXXX)
tp=
cleanup() { [ -n "$tp" ] && kill "$tp" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$D/err" ] && tail -5 "$D/err"; exit 1; }
STALL=$CW_ROOT/tests/fixtures/py/stall_train.py

run_stall() { # mode
	local mode=$1 i
	CW_FAKE_SYNC_US=500 "$CW_BIN" trace --db "$D/$mode.db" --no-view --no-gpu --stall-after 2s -- \
		"$PY" "$STALL" "$LIB" 2.5 "$mode" >"$D/out" 2>"$D/err" &
	tp=$!
	for i in $(seq 1 150); do
		grep -q "training stall: pid" "$D/err" && break
		kill -0 "$tp" 2>/dev/null || break
		sleep 0.2
	done
	kill -INT "$tp" 2>/dev/null
	wait "$tp"
	tp=
	grep -q "stalling $mode" "$D/out" || fail "$mode: the fixture did not reach its stall"
	grep -q "training stall: pid" "$D/err" || fail "$mode: trace named no stall"
}

check() { # mode, expected wait class, expected description, python function or ""
	local mode=$1 wait=$2 desc=$3 fn=$4
	"$CW_BIN" explain --db "$D/$mode.db" --json --no-store >"$D/$mode.json" || fail "$mode: explain"
	sqlite3 -json "$D/$mode.db" "SELECT pid, duration_ns, detail FROM events WHERE source = 'stall'" >"$D/$mode.ev"
	python3 - "$mode" "$wait" "$desc" "$fn" "$D/$mode.json" "$D/$mode.ev" <<'PY' || fail "$mode"
import json, sys
mode, wait, desc, fn, out, ev = sys.argv[1:]
ev = json.load(open(ev))
assert len(ev) == 1, f"{mode}: {len(ev)} stall events"
d = json.loads(ev[0]["detail"])
pid = ev[0]["pid"]
# Named within the threshold (2 s) plus the 1 s tick and slack for a loaded machine.
assert 2e9 < d["silent_ns"] < 6e9, d["silent_ns"]
assert d["threshold_ns"] == 2_000_000_000 and d["last_op"] == "cudaStreamSynchronize", d
assert 15e6 < d["step_ns"] < 60e6, d["step_ns"]
main = [t for t in d["threads"] if t["tid"] == pid]
assert main and main[0]["wait"] == wait, (mode, main)
if fn:
    assert main[0]["python"].endswith(" in " + fn), main[0]
chains = [c for c in json.load(open(out))["chains"] if c["root_cause"]["kind"] == "training_stall"]
assert len(chains) == 1, f"{mode}: {len(chains)} training_stall chains"
c = chains[0]
assert c["pid"] == pid and c["severity"] == "HIGH" and c["op"] == "cudaStreamSynchronize", c
assert desc in c["root_cause"]["summary"], (desc, c["root_cause"]["summary"])
assert c["fix"], c
print(f"ok {mode}: pid {pid} named after {d['silent_ns']/1e9:.2f}s: {main[0]['wait']}")
PY
}

run_stall pipe
check pipe pipe "blocked in read on a pipe (pipe:[" wait_for_batch
run_stall lock
check lock lock "waiting on a lock (futex)" wait_for_lock
run_stall sync
check sync "cuda call" "inside cudaStreamSynchronize for" last_sync

run_quiet() { # mode helper_kind helper_function
	local mode=$1 kind=$2 fn=$3 i
	# 3 s of steps: the first second's calls are kept whole (before their
	# op's estimate), and the folded rest must span two wall-clock seconds
	# for the rhythm to show; with 2 s it fell in one second in ~1 run of 6.
	CW_FAKE_SYNC_US=500 "$CW_BIN" trace --db "$D/$mode.db" --no-view --no-gpu -- \
		"$PY" "$STALL" "$LIB" 3 "$mode" >"$D/out" 2>"$D/err" &
	tp=$!
	for i in $(seq 1 100); do
		grep -q "stalling $mode" "$D/out" && break
		kill -0 "$tp" 2>/dev/null || break
		sleep 0.1
	done
	sleep 3
	kill -INT "$tp" 2>/dev/null
	wait "$tp"
	tp=
	grep -q "stalling $mode" "$D/out" || fail "$mode: the fixture did not reach its stall"
	grep -q "training stall" "$D/err" && fail "$mode: named live below the default floor"
	"$CW_BIN" explain --db "$D/$mode.db" --json --no-store >"$D/$mode.default.json" || fail "$mode: explain"
	"$CW_BIN" explain --db "$D/$mode.db" --json --no-store --stall-after 2s >"$D/$mode.json" || fail "$mode: explain --stall-after"
	"$CW_BIN" explain --db "$D/$mode.db" --no-store --stall-after 2s >"$D/$mode.txt" || fail "$mode: explain text"
	python3 - "$mode" "$kind" "$fn" "$D/$mode.json" "$D/$mode.default.json" "$D/$mode.txt" <<'PY' || fail "$mode: $(head -c 3000 "$D/$mode.json")"
import json, sys
mode, kind, fn, path, default, txt = sys.argv[1:]
kinds = lambda p: [c["root_cause"]["kind"] for c in json.load(open(p))["chains"]]
assert "training_stall" not in kinds(default), ("below the 30 s floor", kinds(default))
c = [c for c in json.load(open(path))["chains"] if c["root_cause"]["kind"] == "training_stall"]
assert len(c) == 1, kinds(path)
c = c[0]
assert c["evidence"]["detected_live"] == 0, c["evidence"]
ts = c["thread_states"]
assert ts["from"] == "end_of_trace", ts
th = ts["threads"]
main = th[0]
assert main["tid"] == c["pid"] == c["tid"], (main, c["pid"], c["tid"])
assert main["blocked_in"] == "cuda_call" and main["in_call"] == "cudaStreamSynchronize", main
assert (main["python"] or "").endswith(" in last_sync"), main
helper = [t for t in th if (t["python"] or "").endswith(" in " + fn)]
assert len(helper) == 1, th
assert helper[0]["blocked_in"] == kind, helper[0]
if kind == "pipe":
    assert helper[0]["syscall"] == "read" and helper[0]["target"].startswith("pipe:["), helper[0]
assert c["python"]["function"] == "last_sync" if isinstance(c.get("python"), dict) else True, c.get("python")
assert "inside cudaStreamSynchronize" in c["root_cause"]["summary"], c["root_cause"]["summary"]
text = open(txt).read()
assert "threads (at the end of the trace" in text, text
want = "blocked in read on a pipe (pipe:[" if kind == "pipe" else "blocked on a futex"
assert want in text, text
print(f"ok {mode}: {main['blocked_in']} + {helper[0]['blocked_in']} at {helper[0]['python']}")
PY
}
run_quiet sync-pipe pipe wait_for_batch
run_quiet sync-lock futex wait_for_lock

# Healthy: the loop ends and the process exits: no stall named.
CW_FAKE_SYNC_US=500 "$CW_BIN" trace --db "$D/ok.db" --no-view --no-gpu --stall-after 2s -- \
	"$PY" "$CW_ROOT/tests/fixtures/py/sync_loop.py" "$LIB" 0 2.5 >"$D/out" 2>"$D/err" || fail "healthy trace"
grep -q "training stall" "$D/err" && fail "healthy run named a stall"
"$CW_BIN" explain --db "$D/ok.db" --json --no-store >"$D/ok.json" || fail "healthy explain"
python3 -c 'import json,sys; c=[x for x in json.load(open(sys.argv[1]))["chains"] if x["root_cause"]["kind"]=="training_stall"]; sys.exit(1 if c else 0)' "$D/ok.json" \
	|| fail "healthy run has a training_stall chain"
echo "ok healthy: no stall"
