#!/bin/bash
# The command lines the published articles about this kind of tool print
# (fleet tracing, kernel-to-Python-line), with the binary's name replaced,
# work as printed: run against demo databases, or, where they need root,
# a network or a GPU, checked by the command's own parser (--check-args:
# exit 0 when the flags parse, 2 when not).
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1
causeway() { "$CW_BIN" "$@"; }

# Parsed only: root (trace). The fleet lines (query/explain --nodes) and
# the MCP calls run against four agents in test_article_fleet.sh.
nodes=gpu-node-01:8080,gpu-node-02:8080,gpu-node-03:8080,gpu-node-04:8080
parsed() { # a command line the articles show that cannot run here
	"$CW_BIN" --check-args "$@" 2>"$tmp/err" || fail "causeway $* does not parse: $(cat "$tmp/err")"
}
parsed trace --node gpu-node-01
# the check itself: a flag the parser does not know fails it
"$CW_BIN" --check-args explain --nodez $nodes 2>/dev/null && fail "--check-args accepted --nodez"

# Run: the offline merge, the short -d, the default database, the demo.
causeway demo --no-gpu incident >"$tmp/demo.out" 2>"$tmp/err" || fail "demo --no-gpu incident: $(cat "$tmp/err")"
grep -q '^causeway demo: incident' "$tmp/demo.out" || fail "demo --no-gpu incident printed: $(head -3 "$tmp/demo.out")"
# two nodes of a job whose rank 1 (gpu-node-02) is preempted before every
# collective (the cluster fixture: small, so the merge is quick)
fix=$CW_BUILD/fixtures/cluster_db
[ -x "$fix" ] || fail "fixture $fix not built (make fixtures)"
"$fix" node-01.db gpu-node-01 0 --straggler-rank 1 --steps 40 >/dev/null || fail "node-01.db"
"$fix" node-02.db gpu-node-02 1 --straggler-rank 1 --steps 40 >/dev/null || fail "node-02.db"
causeway merge node-01.db node-02.db -o cluster.db >/dev/null 2>"$tmp/err" || fail "merge: $(cat "$tmp/err")"
causeway explain -d cluster.db >"$tmp/explain.out" 2>"$tmp/err" || fail "explain -d cluster.db: $(cat "$tmp/err")"
grep -q '^\[HIGH\] straggler  ncclAllReduce (nccl) on gpu-node-02' "$tmp/explain.out" ||
	fail "explain -d cluster.db did not name the straggler: $(head -5 "$tmp/explain.out")"
cp cluster.db causeway.db
causeway explain --since 5m >"$tmp/since.out" 2>"$tmp/err" || fail "explain --since 5m: $(cat "$tmp/err")"
grep -q '^\[\(HIGH\|MEDIUM\|LOW\)\]' "$tmp/since.out" || fail "explain --since 5m found no chain"
causeway export --format perfetto >"$tmp/trace.json" 2>"$tmp/err" || fail "export --format perfetto: $(cat "$tmp/err")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert {e["args"]["name"] for e in d["traceEvents"] if e["name"] == "process_name"} == {"gpu-node-01", "gpu-node-02"}' \
	"$tmp/trace.json" || fail "export --format perfetto: not one process per node"
echo "ok"
