#!/bin/bash
# The CPU-contention scenario driven from Python: a CPython loop calls
# cudaStreamSynchronize (timing fixture, 1 ms of spinning) from a known
# line, pinned to one CPU, while a CPU hog arrives on that CPU. explain's
# top chain is cpu_preemption, names the hog, and points at the Python
# function and the exact line, in JSON and in text.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
SCRIPT=$CW_ROOT/tests/fixtures/py/sync_loop.py
[ -f "$FAKE" ] || { echo "FAIL: fixture $FAKE missing (make fixtures)"; exit 1; }
command -v stress-ng >/dev/null || { echo "FAIL: stress-ng not installed (scripts/install-deps.sh)"; exit 1; }
py=$(ls -d /root/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | head -1)
[ -n "$py" ] || py=$(command -v python3)
D=$(mktemp -d)
bg=()
cleanup() { for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
CPU=$(($(nproc) - 1))
line=$(grep -n '# SYNC$' "$SCRIPT" | cut -d: -f1)

# The hog arrives 1.2 s into the 3 s loop and stays 1.2 s at a higher
# weight, so it takes whole slices: a tail, not a uniform slowdown. It is
# timed from the loop's own start file, not from trace's start-up (which
# varies with the time probes take to attach: a hog that landed on the
# loop's first calls read as start-up cost).
(for _ in $(seq 1 1000); do [ -e "$D/started" ] && break; sleep 0.02; done
	sleep 1.2; exec nice -n -10 stress-ng --cpu 1 --taskset $CPU --timeout 1.2s >/dev/null 2>&1) &
bg+=($!)
SYNC_START_FILE=$D/started CW_FAKE_SYNC_US=1000 "$CW_BIN" trace --db "$D/t.db" --no-view --cuda-lib "$FAKE" -- \
	"$py" "$SCRIPT" "$FAKE" 1.2 3 $CPU >"$D/out" 2>"$D/err" || fail "trace: $(cat "$D/err")"
wait "${bg[-1]}" 2>/dev/null
grep -qx done "$D/out" || fail "workload did not finish: $(cat "$D/out" "$D/err")"

"$CW_BIN" explain --db "$D/t.db" --json --no-store >"$D/e.json" || fail "explain: $(cat "$D/e.json")"
python3 - "$D/e.json" "$SCRIPT" "$line" <<'PY' || exit 1
import json, sys
doc = json.load(open(sys.argv[1]))
chains = doc.get("chains") or []
if not chains:
    sys.exit("FAIL: no chain")
c = chains[0]
kind = c["root_cause"]["kind"]
print("top chain:", kind, "|", c["root_cause"].get("summary", ""))
if kind != "cpu_preemption":
    sys.exit("FAIL: top chain is %s, not cpu_preemption" % kind)
if "stress-ng" not in json.dumps(c):
    sys.exit("FAIL: the hog is not named")
py = c.get("python") or {}
want = (sys.argv[2], int(sys.argv[3]), "train_step")
got = (py.get("file"), py.get("line"), py.get("function"))
print("python:", got)
if got != want:
    sys.exit("FAIL: python location %r, want %r" % (got, want))
PY
"$CW_BIN" explain --db "$D/t.db" --no-store >"$D/e.txt" || fail "explain text"
grep -qF "train_step() at $SCRIPT:$line" "$D/e.txt" || fail "text does not say train_step() at $SCRIPT:$line: $(cat "$D/e.txt")"
echo ok
