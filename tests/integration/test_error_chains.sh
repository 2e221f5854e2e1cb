#!/bin/bash
# Failing calls under trace are causes, on real libraries: the real CUDA 13
# runtime on this GPU-less host fails cudaMalloc with its own code, and the
# real NCCL refuses an all-reduce on no communicator; explain names each
# code (as the program saw it), its family, the process, the thread and the
# Python line. The test double's out-of-memory mode gives device_oom; the
# same loop without failures gives no error chain. (docs/rules.md "Failing
# calls")
set -u
. "$CW_ROOT/tests/lib/auth.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
PYFIX=$CW_ROOT/tests/fixtures/py/cuda_failing.py
CUDA=/usr/local/cuda-13.0
PY=$(command -v python3)
line_of() { grep -n "# $1\$" "$PYFIX" | cut -d: -f1; }

run() { # name mode lib [env...]
	local name=$1 mode=$2 lib=$3
	shift 3
	env "$@" "$CW_BIN" trace --db "$tmp/$name.db" --no-view -- "$PY" "$PYFIX" "$mode" 3 "$lib" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" || fail "$name: trace exited $?: $(tail -3 "$tmp/$name.err")"
	"$CW_BIN" explain --db "$tmp/$name.db" --json --no-store >"$tmp/$name.json" || fail "$name: explain exited $?"
}

check() { # name kind op family line
	python3 - "$tmp/$1.json" "$tmp/$1.out" "$2" "$3" "$4" "$5" "$PYFIX" <<'PY' || fail "$1: wrong chain"
import json, sys
d = json.load(open(sys.argv[1]))
ret = int(open(sys.argv[2]).read().split()[1])
kind, op, family, line, path = sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), sys.argv[7]
c = d["chains"][0] if d["chains"] else None
assert c and c["root_cause"]["kind"] == kind, [x["root_cause"]["kind"] for x in d["chains"]]
assert c["op"] == op and c["severity"] == "HIGH", (c["op"], c["severity"])
assert c["error"]["code"] == ret and c["error"]["family"] == family, (c["error"], ret)
assert c["error"]["name"] and c["error"]["name"] in c["root_cause"]["summary"], c
assert c["python"]["file"] == path and c["python"]["line"] == line, c["python"]
assert c["pid"] and c["tid"] == c["pid"] and c["comm"].startswith("python"), (c["pid"], c["tid"], c["comm"])
assert c["slow_count"] > 100 and c["evidence"]["failing_share"] == 1, c["evidence"]
# Failing calls carry their Python stack whatever their time (--py-stacks
# slow walks failures too): nearly every one, not a sample.
import sqlite3
db = sqlite3.connect(sys.argv[1].replace(".json", ".db"))
n, withpy = db.execute("SELECT count(*), count(py_stack_id) FROM events WHERE op = ? AND ret = ?", (op, ret)).fetchone()
assert withpy >= 0.9 * n, (n, withpy)
print(f"{sys.argv[1].split('/')[-1]}: {c['root_cause']['summary']}")
PY
}

# The real runtime on a host without a GPU: no_device, whatever its code.
run real alloc "$CUDA/lib64/libcudart.so.13"
check real cuda_error cudaMalloc no_device "$(line_of ALLOC_LINE)"

# The session records the host's cgroup layout, which decides the cgroup
# files a fix may name (stat is the oracle).
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then want=2
elif [ "$(stat -f -c %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then want=1
else want=0; fi
got=$(sqlite3 "$tmp/real.db" "SELECT value FROM counters WHERE name = 'host.cgroup_layout'")
[ "$got" = "$want" ] || fail "host.cgroup_layout $got, want $want"

# The real NCCL refusing a call: the code NCCL returned, its family.
run nccl nccl "$CUDA/lib/libnccl.so.2"
fam=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["chains"]; print(c[0]["error"]["family"] if c else "none")' "$tmp/nccl.json")
check nccl nccl_error ncclAllReduce "$fam" "$(line_of NCCL_LINE)"
case $fam in nccl_usage | nccl_internal | nccl_system | nccl_cuda) ;; *) fail "nccl: family $fam";; esac

# A full device (the test double told to fail allocations): device_oom,
# and live on /metrics by code and family while the trace runs.
echo CW_FAKE_MALLOC_FAIL=1 >"$tmp/ctl"
auth_shared
CW_FAKE_CTL="$tmp/ctl" "$CW_BIN" trace --db "$tmp/oom.db" --no-view --serve 127.0.0.1:0 -- \
	"$PY" "$PYFIX" alloc 4 "$FIX/fakecuda/libcudart.so.13" >"$tmp/oom.out" 2>"$tmp/oom.err" &
tp=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving https\?:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/oom.err")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { kill $tp; fail "trace --serve did not start: $(cat "$tmp/oom.err")"; }
sleep 2
curl -sk --max-time 5 "${AUTH[@]}" "https://127.0.0.1:$port/metrics" >"$tmp/metrics.txt" || fail "scrape /metrics"
wait $tp || fail "oom: trace exited $?: $(tail -3 "$tmp/oom.err")"
grep -E '^causeway_op_failures_total\{.*op="cudaMalloc",error="cudaErrorMemoryAllocation",family="out_of_memory"\} [1-9]' \
	"$tmp/metrics.txt" || fail "/metrics has no failure count by code: $(grep failures "$tmp/metrics.txt")"
"$CW_BIN" explain --db "$tmp/oom.db" --json --no-store >"$tmp/oom.json" || fail "oom: explain exited $?"
check oom device_oom cudaMalloc out_of_memory "$(line_of ALLOC_LINE)"

# The same loop succeeding: no error chain.
run ok alloc "$FIX/fakecuda/libcudart.so.13"
python3 - "$tmp/ok.json" <<'PY' || fail "healthy loop has an error chain"
import json, sys
d = json.load(open(sys.argv[1]))
assert not any("error" in c for c in d["chains"]), d["chains"]
PY
echo ok
