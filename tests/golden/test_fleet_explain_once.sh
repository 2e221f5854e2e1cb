#!/bin/bash
# explain --nodes against one agent that holds several ranks (a merged
# four-rank database, rank 2 the NCCL straggler) names each NCCL chain
# once, as explain on the file does (the agent's own chain and the
# fan-out's arrival analysis are one); a query every node refuses fails
# with each node's own reason; an unreachable agent is one warning.
set -u
fix=$CW_BUILD/fixtures/cluster_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
. "$CW_ROOT/tests/lib/plain_agents.sh"

for i in 1 2 3 4; do
	"$fix" "$tmp/n$i.db" "node$i" $((i - 1)) --world 4 --straggler-rank 2 --async 1 --nccl 1 || fail "fixture n$i"
done
"$CW_BIN" merge "$tmp"/n[1-4].db -o "$tmp/c.db" > /dev/null || fail "merge"
"$CW_BIN" explain --db "$tmp/c.db" --json --no-store > "$tmp/file.json" || fail "explain the file"
plain_agent "$tmp/c.db" --node agent1
port=$PORT
# A second agent that is not there: one warning, however many requests.
dead=127.0.0.1:1
"$CW_BIN" explain --nodes "http://127.0.0.1:$port,http://$dead" --node-timeout 5s --json > "$tmp/fleet.json" ||
	fail "explain --nodes"
python3 - "$tmp/file.json" "$tmp/fleet.json" <<'PY' || exit 1
import json, sys
from collections import Counter
f, g = (json.load(open(p)) for p in sys.argv[1:3])
nccl = ("nccl_straggler", "nccl_hang", "nccl_wait", "comm_bound")
def kinds(d): return Counter((c["root_cause"]["kind"], c.get("node"), c.get("rank")) for c in d["chains"]
                             if c["root_cause"]["kind"] in nccl)
a, b = kinds(f), kinds(g)
if not a:
    print("FAIL: the file has no NCCL chain", f["chains"]); sys.exit(1)
if a != b:
    print("FAIL: NCCL chains of the file", dict(a), "of the fleet", dict(b)); sys.exit(1)
w = [x for x in g["warnings"] if "127.0.0.1:1" in x]
if len(w) != 1:
    print("FAIL: the dead agent's warnings", g["warnings"]); sys.exit(1)
PY
# Every node refuses the SQL: the error carries its reason.
"$CW_BIN" query --nodes "http://127.0.0.1:$port" "SELECT avg(no_such_col) FROM events" 2> "$tmp/e" &&
	fail "a query every node refuses: exit 0"
grep -q 'none of the 1 node answered: node "http://127.0.0.1:[0-9]*": HTTP 400: sql error: no such column: "no_such_col"' "$tmp/e" || fail "query error: $(cat "$tmp/e")"
echo ok
