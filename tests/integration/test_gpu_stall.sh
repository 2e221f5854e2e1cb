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

# Healthy: the loop ends and the process exits: no stall named.
CW_FAKE_SYNC_US=500 "$CW_BIN" trace --db "$D/ok.db" --no-view --no-gpu --stall-after 2s -- \
	"$PY" "$CW_ROOT/tests/fixtures/py/sync_loop.py" "$LIB" 0 2.5 >"$D/out" 2>"$D/err" || fail "healthy trace"
grep -q "training stall" "$D/err" && fail "healthy run named a stall"
"$CW_BIN" explain --db "$D/ok.db" --json --no-store >"$D/ok.json" || fail "healthy explain"
python3 -c 'import json,sys; c=[x for x in json.load(open(sys.argv[1]))["chains"] if x["root_cause"]["kind"]=="training_stall"]; sys.exit(1 if c else 0)' "$D/ok.json" \
	|| fail "healthy run has a training_stall chain"
echo "ok healthy: no stall"
