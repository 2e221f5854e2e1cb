#!/bin/bash
# A hang in a merged file whose other node traced longer: the demo's
# nccl-hang (the ranks wait 15 s in collective #40 until the trace ends)
# merged with training-stall on another node (a trace 76 s longer). The
# hang's clock and its unfinished calls end where their own node's trace
# ended: hung 15 s, not 90 s, and the wavefront keeps each rank's state at
# that end (rank 3 blocked off CPU, the others inside their synchronize).
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CW_BIN" demo nccl-hang --db "$tmp/a.db" >/dev/null || fail "demo nccl-hang"
"$CW_BIN" demo training-stall --db "$tmp/b.db" >/dev/null || fail "demo training-stall"
"$CW_BIN" merge "$tmp/a.db" "$tmp/b.db" -o "$tmp/m.db" --force-node "$tmp/b.db=node-b" >/dev/null 2>&1 || fail "merge"
[ "$(sqlite3 "$tmp/m.db" "SELECT (SELECT max(ended_wall_ns) FROM sessions WHERE node = 'node-b' AND kind != 'merge')
	- (SELECT max(ended_wall_ns) FROM sessions WHERE node = 'demo-node' AND kind != 'merge') > 60000000000")" = 1 ] ||
	fail "node-b's trace does not end later"
"$CW_BIN" explain --db "$tmp/m.db" --json --no-store >"$tmp/m.json" || fail "explain"
"$CW_BIN" explain --db "$tmp/m.db" --no-store >"$tmp/m.txt" || fail "explain text"
python3 - "$tmp/m.json" "$tmp/m.txt" <<'PY' || fail "$(head -c 3000 "$tmp/m.json")"
import json, sys
d = json.load(open(sys.argv[1]))
h = [c for c in d["chains"] if c["root_cause"]["kind"] == "nccl_hang"]
assert len(h) == 1, [c["root_cause"]["kind"] for c in d["chains"]]
h = h[0]
assert h["root_cause"]["missing_ranks"] == [3] and h["root_cause"]["seq"] == 40, h["root_cause"]
hung = h["evidence"]["hung_for_ns"]
assert 14.9e9 < hung < 15.1e9, hung
assert "entered by 3 of 4 ranks 15.00s ago" in h["root_cause"]["summary"], h["root_cause"]["summary"]
ranks = {r["rank"]: r for r in h["wavefront"]["ranks"]}
assert sorted(ranks) == [0, 1, 2, 3], ranks
m = ranks[3]
assert m["thread_state"] == "blocked" and m["state_from"] == "offcpu" and m["off_cpu_ns"] == 15000000000, m
assert 14.9e9 < m["last_call_ago_ns"] < 15.1e9, m
for r in (0, 1, 2):
    w = ranks[r]
    assert w["last_call_open"] and w["thread_state"] == "in_call" and 14.9e9 < w["last_call_ago_ns"] < 15.1e9, w
text = open(sys.argv[2]).read()
assert "rank 3 (pid %d): missing, last entered #39; last call cudaLaunchKernel, 15.03s before the end; thread %d blocked, off CPU for 15.00s" % (m["pid"], m["pid"]) in text, text
print("ok", h["root_cause"]["summary"][:90])
PY
echo ok
