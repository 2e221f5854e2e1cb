#!/bin/bash
# /api/v1/ops?per_node=1 on a merged file of two nodes: one row per node
# and op, named, with that node's own calls, time and wall share (its
# total over the window, so one node's shares never sum past what its
# threads spent); without per_node, the summary stays one row per op;
# per_node with by=line is refused.
set -u
. "$CW_ROOT/tests/lib/plain_agents.sh"

"$CW_BIN" demo thermal-throttling --db "$tmp/t.db" > /dev/null 2>&1 || fail "demo thermal-throttling"
"$CW_BIN" demo incident --db "$tmp/i.db" > /dev/null 2>&1 || fail "demo incident"
"$CW_BIN" merge "$tmp/t.db" --force-node n-a "$tmp/i.db" --force-node n-b -o "$tmp/m.db" > /dev/null ||
	fail "merge"
plain_agent "$tmp/m.db"
get() { curl -s --max-time 20 -H "Authorization: Bearer $CW_TOKEN" -w '\n%{http_code}' "$ADDR/api/v1/$1"; }
get 'ops?per_node=1' > "$tmp/per.json"
get 'ops' > "$tmp/all.json"
[ "$(tail -1 "$tmp/per.json")" = 200 ] || fail "per_node: $(head -c 300 "$tmp/per.json")"
[ "$(get 'ops?per_node=1&by=line' | tail -1)" = 400 ] || fail "per_node with by=line not refused"
sqlite3 -json "$tmp/m.db" "SELECT node, source, op, sum(count) AS n, sum(sum_ns) AS t FROM aggregates
	GROUP BY node, source, op" > "$tmp/agg.json" || fail "sqlite3"
python3 - "$tmp/per.json" "$tmp/all.json" "$tmp/agg.json" << 'EOF' || fail "per-node rows"
import json, sys
per, allops = (json.loads(open(f).read().rsplit("\n", 1)[0]) for f in sys.argv[1:3])
agg = {(r["node"], r["source"], r["op"]): r for r in json.load(open(sys.argv[3]))}
rows = {(o["node"], o["source"], o["op"]): o for o in per["ops"]}
assert len(rows) == len(per["ops"]), "a (node, op) twice"
assert set(rows) == set(agg), (sorted(set(rows) ^ set(agg)))
for k, o in rows.items():
    assert o["count"] == agg[k]["n"] and o["total_ns"] == agg[k]["t"], (k, o, agg[k])
    assert abs(o["wall_share"] - o["total_ns"] / per["window_ns"]) < 1e-9, (k, o)
share = {}
for (node, _, _), o in rows.items():
    share[node] = share.get(node, 0) + o["wall_share"]
assert sorted(share) == ["n-a", "n-b"] and all(0 < s <= 1 for s in share.values()), share
# The plain summary: one row per op, no node, its calls those of both nodes.
assert all("node" not in o for o in allops["ops"])
for o in allops["ops"]:
    assert o["count"] == sum(r["count"] for r in per["ops"] if (r["source"], r["op"]) == (o["source"], o["op"])), o
print("per node:", {n: round(s, 4) for n, s in share.items()}, len(rows), "rows")
EOF
echo ok
