#!/bin/bash
# Every demo scenario exits 0, writes the tables explain needs through the
# pipeline without losing a record, tags its session, and explain names the
# scenario's intended root cause in its top chain (healthy: no chain).
# The intended causes are this table's, not the product's: `demo --list`
# must name exactly these scenarios and claim the same causes.
set -eu
BIN=${CW_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

declare -A want=(
	[incident]=cpu_preemption
	[cold-start]=cold_start
	[memcpy-bottleneck]=memcpy_bound
	[periodic-spike]=periodic_allocator
	[cpu-contention]=cpu_preemption
	[gpu-steal]=gpu_time_slicing
	[io-contention]=io_contention
	[memory-pressure]=memory_pressure
	[dataloader-starvation]=dataloader_starvation
	[throttle]=throughput_drop
	[oom-kill]=oom_kill
	[network]=network
	[graph-churn]=graph_churn
	[graph-launch-tail]=graph_launch_tail
	[host-memory]=host_memory
	[xid-fault]=xid_fault
	[thermal-throttling]=thermal_throttling
	[power-capping]=power_capping
	[gpu-memory-pressure]=gpu_memory_pressure
	[training-stall]=training_stall
	[nccl-straggler]=nccl_straggler
	[nccl-straggler-io]=nccl_straggler
	[nccl-straggler-input]=nccl_straggler
	[nccl-straggler-compute]=nccl_straggler
	[nccl-hang]=nccl_hang
	[nccl-hang-start]=nccl_hang
	[comm-bound]=comm_bound
	[healthy]=none
	[noisy-neighbour]=noisy_neighbour
	[cuda-no-device]=cuda_error
	[cuda-oom]=device_oom
	[nccl-error]=nccl_error
	[inference-ttft]=inference_latency
)

"$BIN" demo --list --json > "$tmp/list.json"
listed=$(python3 -c 'import json,sys; print("\n".join(sorted(s["name"] + " " + (s["expect"] or "none") for s in json.load(open(sys.argv[1])))))' "$tmp/list.json")
table=$(for s in "${!want[@]}"; do echo "$s ${want[$s]}"; done | sort)
[ "$listed" = "$table" ] || { echo "demo --list disagrees with the test's table:"; diff <(echo "$table") <(echo "$listed"); exit 1; }
# The NCCL job scenarios (several ranks, no training-loop tables) are
# checked by test_demo_nccl.sh, the inference server by
# test_explain_inference.sh.
scenarios=$(for s in "${!want[@]}"; do case $s in nccl-straggler* | nccl-hang* | comm-* | inference-*) ;; *) echo "$s" ;; esac; done | sort)

q() { "$BIN" query --db "$1" --json "$2"; }

for s in $scenarios; do
	db="$tmp/$s.db"
	"$BIN" demo "$s" --db "$db" --json > "$tmp/$s.json" || { echo "demo $s failed"; exit 1; }
	expect=${want[$s]}
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
[ "$(echo "$scenarios" | wc -l)" -eq $((${#want[@]} - 8)) ] || { echo "expected $((${#want[@]} - 8)) scenarios"; exit 1; }
# The diagnosis is stored as chain history.
[ "$(q "$tmp/incident.db" "SELECT count(*) AS n FROM chains WHERE kind = 'cpu_preemption'" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["n"])')" -ge 1 ]
