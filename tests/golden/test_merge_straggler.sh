#!/bin/bash
# straggler: explain on a merged cluster names the rank that enters the
# collectives last and attaches its own node's chain as the reason; a
# healthy cluster has no straggler; the clock offsets merge measured are
# what make entries comparable (node2 runs 250 ms ahead).
set -u
fix=$CW_BUILD/fixtures/cluster_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cluster() { # DIR STRAGGLER_RANK [ASYNC]
	mkdir -p "$1"
	"$fix" "$1/n1.db" node1 0 --straggler-rank "$2" --async "${3:-0}" &&
		"$fix" "$1/n2.db" node2 1 --straggler-rank "$2" --skew-ms 250 --async "${3:-0}" &&
		"$fix" "$1/n3.db" node3 2 --straggler-rank "$2" --skew-ms -40 --async "${3:-0}" &&
		"$CW_BIN" merge "$1/n1.db" "$1/n2.db" "$1/n3.db" -o "$1/c.db" > /dev/null
}
stragglers() { # DB -> "node rank kind-of-culprit" per straggler chain
	"$CW_BIN" explain --db "$1" --json --no-store | python3 -c '
import json, sys
for c in json.load(sys.stdin)["chains"]:
    if c["root_cause"]["kind"] == "straggler":
        print(c["node"], c["rank"], (c.get("culprit") or {}).get("comm"), c["op"], c["severity"])
        print(c["root_cause"]["summary"], file=sys.stderr)'
}

cluster "$tmp/s3" 2 || fail "cluster with rank 2 late"
out=$(stragglers "$tmp/s3/c.db" 2> "$tmp/summary")
[ "$out" = "node3 2 stress-ng ncclAllReduce HIGH" ] || fail "rank 2 late: got \"$out\""
grep -q 'rank 2 on node3 (pid 2002) is the straggler: it entered ncclAllReduce last in 40 of 40' "$tmp/summary" ||
	fail "summary: $(cat "$tmp/summary")"
grep -q 'on its node: cudaStreamSynchronize .* preempted .* by stress-ng' "$tmp/summary" ||
	fail "reason not attached: $(cat "$tmp/summary")"
# Each node alone has no straggler: it takes more than one rank.
[ -z "$(stragglers "$tmp/s3/n3.db" 2> /dev/null)" ] || fail "straggler on a single rank"

cluster "$tmp/s1" 0 || fail "cluster with rank 0 late"
out=$(stragglers "$tmp/s1/c.db" 2> /dev/null)
[ "$out" = "node1 0 stress-ng ncclAllReduce HIGH" ] || fail "rank 0 late: got \"$out\""

# Asynchronous collectives (PyTorch's default): every ncclAllReduce is
# short; the offsets come from the synchronize after them, the lag from
# the entries, the reason from the preempted launch on node3.
cluster "$tmp/as" 2 1 || fail "asynchronous cluster"
"$CW_BIN" merge "$tmp/as/n1.db" "$tmp/as/n2.db" "$tmp/as/n3.db" -o "$tmp/as/c2.db" --json > "$tmp/as.json" ||
	fail "merge async"
python3 -c '
import json, sys
n = {x["node"]: x for x in json.load(open(sys.argv[1]))["nodes"]}
assert abs(n["node2"]["clock_offset_ns"] - 250e6) < 1e6 and abs(n["node3"]["clock_offset_ns"] + 40e6) < 1e6, n
assert n["node2"]["skew_signal"] == "synchronize after collective", n["node2"]' "$tmp/as.json" ||
	fail "async offsets: $(cat "$tmp/as.json")"
out=$(stragglers "$tmp/as/c.db" 2> "$tmp/summary")
[ "$out" = "node3 2 stress-ng ncclAllReduce HIGH" ] || fail "async: got \"$out\""
grep -q 'returns at once (asynchronous).*on its node: cudaLaunchKernel .* by stress-ng' "$tmp/summary" ||
	fail "async summary: $(cat "$tmp/summary")"

cluster "$tmp/ok" -1 || fail "healthy cluster"
out=$(stragglers "$tmp/ok/c.db" 2> /dev/null)
[ -z "$out" ] || fail "healthy cluster has a straggler: $out"

# Without the measured offsets (node2 runs 250 ms ahead) the healthy
# cluster's collectives are mismatched and a false straggler appears: the
# offsets in meta 'merge.skew' are what the rule compares on.
cp "$tmp/ok/c.db" "$tmp/noskew.db"
sqlite3 "$tmp/noskew.db" "DELETE FROM meta WHERE key = 'merge.skew'"
out=$(stragglers "$tmp/noskew.db" 2> /dev/null)
[ -n "$out" ] || fail "offsets made no difference"
echo "ok"
