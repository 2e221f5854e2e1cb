#!/bin/bash
# nccl_straggler across nodes: four one-rank nodes (node2's clock 250 ms
# ahead, node4's 40 ms behind) merged into one store; the arrival analysis
# matches collectives by (communicator, sequence number), removes merge's
# clock offsets, names rank 2 on node3, the cause on that rank (preempted
# by stress-ng) and points the other ranks' chains at it. Without the
# offsets, node2's rank looks late instead: the offsets are what it uses.
set -u
fix=$CW_BUILD/fixtures/cluster_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cluster() { # DIR STRAGGLER_RANK ASYNC
	mkdir -p "$1"
	"$fix" "$1/n1.db" node1 0 --world 4 --straggler-rank "$2" --async "$3" --nccl 1 &&
		"$fix" "$1/n2.db" node2 1 --world 4 --straggler-rank "$2" --skew-ms 250 --async "$3" --nccl 1 &&
		"$fix" "$1/n3.db" node3 2 --world 4 --straggler-rank "$2" --async "$3" --nccl 1 &&
		"$fix" "$1/n4.db" node4 3 --world 4 --straggler-rank "$2" --skew-ms -40 --async "$3" --nccl 1 &&
		"$CW_BIN" merge "$1/n1.db" "$1/n2.db" "$1/n3.db" "$1/n4.db" -o "$1/c.db" > /dev/null
}
nccl() { # DB -> "kind node rank because culprit caused_by_rank" per NCCL chain
	"$CW_BIN" explain --db "$1" --json --no-store | python3 -c '
import json, sys
for c in json.load(sys.stdin)["chains"]:
    rc = c["root_cause"]
    if rc["kind"].startswith("nccl_") or rc["kind"] == "comm_bound":
        cb = c.get("caused_by")
        print(rc["kind"], c["node"], c["rank"], rc.get("because"), (c.get("culprit") or {}).get("comm"),
              cb["rank"] if cb else "-")'
}

for async in 0 1; do
	cluster "$tmp/s$async" 2 $async || fail "cluster (async $async)"
	[ "$(sqlite3 "$tmp/s$async/c.db" "SELECT count(*) FROM nccl_calls")" = 160 ] || fail "merge lost nccl_calls rows"
	out=$(nccl "$tmp/s$async/c.db")
	echo "$out" | grep -qx "nccl_straggler node3 2 cpu_preemption stress-ng -" ||
		fail "async $async: straggler not named: $out"
	for r in 0 1 3; do
		echo "$out" | grep -q "^nccl_wait node[0-9] $r nccl_straggler None 2$" ||
			fail "async $async: rank $r does not point at the straggler: $out"
	done
	[ "$(echo "$out" | grep -c '^nccl_straggler')" = 1 ] || fail "more than one straggler: $out"
	# The older arrival-order chain of the same rank is replaced.
	"$CW_BIN" explain --db "$tmp/s$async/c.db" --json --no-store |
		python3 -c 'import json,sys; k=[c["root_cause"]["kind"] for c in json.load(sys.stdin)["chains"]]; sys.exit("straggler" in k)' ||
		fail "async $async: the straggler chain is still there next to nccl_straggler"
done

# Healthy: nobody is late.
cluster "$tmp/ok" -1 0 || fail "healthy cluster"
out=$(nccl "$tmp/ok/c.db")
echo "$out" | grep -q nccl_straggler && fail "healthy cluster has a straggler: $out"

# Without merge's offsets node2 (250 ms ahead) looks late in every collective.
cp "$tmp/ok/c.db" "$tmp/noskew.db"
sqlite3 "$tmp/noskew.db" "DELETE FROM meta WHERE key = 'merge.skew'"
out=$(nccl "$tmp/noskew.db")
echo "$out" | grep -q "^nccl_straggler node2 1 " || fail "offsets made no difference: $out"

# --ranks: every rank, the straggler marked.
"$CW_BIN" explain --db "$tmp/s0/c.db" --json --no-store --ranks | python3 -c '
import json, sys
r = json.load(sys.stdin)["ranks"]
assert [x["rank"] for x in r] == [0, 1, 2, 3], r
assert [x["straggler"] for x in r] == [False, False, True, False], r
assert all(x["collectives"] == 40 and x["last_seq"] == 40 for x in r), r
assert r[2]["late"] == 40 and r[2]["mean_lag_ns"] > 10_000_000, r[2]' || fail "--ranks"
echo ok
