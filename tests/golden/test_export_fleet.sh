#!/bin/bash
# export --nodes: three agents on loopback (plain HTTP on 127.0.0.1, port 0)
# serving the cluster_db node databases (rank 2 on node3 the straggler):
# one trace with a process per node, the straggler's flows reaching the
# other nodes, the fan-out clock offsets recorded; a dead agent becomes a
# warning while the others are exported; --db with --nodes is refused.
set -u
fix=$CW_BUILD/fixtures/cluster_db
check=$CW_ROOT/tests/golden/export/check.py
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
. "$CW_ROOT/tests/lib/plain_agents.sh" # $tmp, fail, plain_agent; one shared $CW_TOKEN

addrs=()
for i in 1 2 3; do
	"$fix" "$tmp/n$i.db" "node$i" $((i - 1)) --straggler-rank 2 || fail "fixture n$i"
	plain_agent "$tmp/n$i.db" --node "node$i"
	addrs+=("$ADDR")
done
nodes=$(IFS=,; echo "${addrs[*]}")

"$CW_BIN" export --nodes "$nodes" --node-timeout 5s -o "$tmp/f.json" 2> "$tmp/e" || fail "fleet export: $(cat "$tmp/e")"
grep -q 'wrote "'"$tmp"'/f.json": 3 nodes' "$tmp/e" || fail "summary: $(cat "$tmp/e")"
# The agents share this host's clock: the offsets the fan-out estimated are
# its estimates' errors, which a loaded machine makes larger than 0.5 ms.
python3 "$check" "$tmp/f.json" --min-flows 10 --aligned-allreduce --same-clock || fail "fleet trace structure"
python3 - "$tmp/f.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
if sorted(procs.values()) != ["node1", "node2", "node3"]:
    print("FAIL: processes", procs); sys.exit(1)
ends = {procs[e["pid"]] for e in ev if e["ph"] == "f" and e["name"] == "straggler"}
starts = {procs[e["pid"]] for e in ev if e["ph"] == "s" and e["name"] == "straggler"}
if starts != {"node3"} or ends != {"node1", "node2"}:
    print("FAIL: straggler flows from", starts, "to", ends); sys.exit(1)
offs = d["otherData"]["clock_offsets_ns"]
if sorted(offs) != ["node1", "node2", "node3"] or any(abs(v) > 50e6 for v in offs.values()):
    print("FAIL: clock offsets", offs); sys.exit(1)
print("fleet trace ok:", len(ev), "events")
PY

# One agent down: a warning, the other two exported.
kill "${pids[1]}"
wait "${pids[1]}" 2>/dev/null
"$CW_BIN" export --nodes "$nodes" --node-timeout 2s -o "$tmp/g.json" 2> "$tmp/e" || fail "export with a dead agent: $(cat "$tmp/e")"
grep -q 'warning: export: ' "$tmp/e" || fail "no warning for the dead agent: $(cat "$tmp/e")"
python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name")
assert names == ["node1", "node3"], names' "$tmp/g.json" || fail "nodes with one agent down"
python3 "$check" "$tmp/g.json" > /dev/null || fail "structure with one agent down"

"$CW_BIN" export --nodes "$nodes" --db "$tmp/n1.db" 2> "$tmp/e"
[ $? = 2 ] || fail "--db with --nodes accepted"
grep -q 'cannot be combined' "$tmp/e" || fail "--db with --nodes message: $(cat "$tmp/e")"
echo "ok"
