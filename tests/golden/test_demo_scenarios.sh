#!/bin/bash
# Every demo scenario exits 0, writes the tables explain needs through the
# pipeline without losing a record, tags its session, and explain names the
# scenario's intended root cause in its top chain (healthy: no chain).
set -eu
BIN=${CW_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$BIN" demo --list --json > "$tmp/list.json"
# The NCCL job scenarios (several ranks, no training-loop tables) are
# checked by test_demo_nccl.sh.
scenarios=$(python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(open(sys.argv[1])) if not s["name"].startswith(("nccl-", "comm-"))))' "$tmp/list.json")
n=$(echo $scenarios | wc -w)
[ "$n" -eq 10 ] || { echo "expected 10 scenarios, got $n: $scenarios"; exit 1; }

q() { "$BIN" query --db "$1" --json "$2"; }

for s in $scenarios; do
	db="$tmp/$s.db"
	"$BIN" demo "$s" --db "$db" --json > "$tmp/$s.json" || { echo "demo $s failed"; exit 1; }
	expect=$(python3 -c 'import json,sys; print(next(x["expect"] or "none" for x in json.load(open(sys.argv[1])) if x["name"] == sys.argv[2]))' "$tmp/list.json" "$s")
	q "$db" "SELECT (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM offcpu) AS offcpu,
	         (SELECT count(*) FROM snapshots) AS snapshots, (SELECT count(*) FROM aggregates) AS aggregates,
	         (SELECT count(*) FROM py_stacks) AS py_stacks, (SELECT count(*) FROM kernel_names) AS kernel_names,
	         (SELECT count(*) FROM events WHERE source = 'proc') AS proc,
	         (SELECT count(*) FROM events WHERE op = 'page_alloc') AS page_alloc,
	         (SELECT count(*) FROM events WHERE py_stack_id IS NOT NULL AND py_stack_id > 0) AS with_py,
	         (SELECT group_concat(kind) FROM sessions) AS kinds,
	         (SELECT count(*) FROM processes WHERE pid = 4821 AND rank = 0 AND world_size = 1) AS trainer,
	         (SELECT sum(value) FROM counters WHERE name IN ('pipeline.rejected_size', 'pipeline.rejected_type',
	             'pipeline.rejected_version', 'pipeline.unpaired_returns', 'pipeline.unfinished_entries',
	             'pipeline.orphan_stacks', 'pipeline.py_unresolved', 'pipeline.write_errors')) AS lost,
	         (SELECT value FROM counters WHERE name = 'pipeline.records') AS records" > "$tmp/$s.tables.json"
	python3 - "$s" "$expect" "$tmp/$s.json" "$tmp/$s.tables.json" <<'PY'
import json, sys
name, expect, out, tables = sys.argv[1:]
o = json.load(open(out))
t = json.load(open(tables))[0]
assert o["scenario"] == name, o["scenario"]
assert o["events"] == t["events"] + t["offcpu"] + t["snapshots"], (o["events"], t)
for k in ("events", "offcpu", "snapshots", "aggregates", "py_stacks", "kernel_names", "proc", "page_alloc", "with_py"):
    assert t[k] > 0, f"{name}: table {k} is empty"
assert t["snapshots"] >= 60, f"{name}: {t['snapshots']} snapshots for a 90 s run"
assert t["kinds"] == "demo:" + name, t["kinds"]
assert t["trainer"] == 1, "trainer process row missing rank/world"
assert t["lost"] == 0, f"{name}: pipeline lost or rejected {t['lost']} records"
assert t["records"] > t["events"], t
chains = o["diagnosis"]["chains"]
if expect == "none":
    assert chains == [], f"{name}: expected no chain, got {[c['root_cause']['kind'] for c in chains]}"
else:
    assert chains, f"{name}: no chain"
    top = chains[0]
    assert top["root_cause"]["kind"] == expect, f"{name}: top chain is {top['root_cause']['kind']}, want {expect}"
    assert top["pid"] == 4821 and top["node"] == "demo-node", top
print(f"ok {name}: {t['events']} events, {t['offcpu']} off-CPU, top {chains[0]['root_cause']['kind'] if chains else 'none'}")
PY
done
# The diagnosis is stored as chain history.
[ "$(q "$tmp/incident.db" "SELECT count(*) AS n FROM chains WHERE kind = 'cpu_preemption'" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["n"])')" -ge 1 ]
