#!/bin/bash
# The NCCL job scenarios: explain names the root cause each plants.
#   scenario -> top kind, its rank, root_cause.because, culprit comm
# plus: every waiting rank's chain points at the straggler (caused_by);
# nccl_hang names the missing rank, the sequence number and its state, and
# its threshold holds from both sides (--hang-after); comm_bound reports
# the waiting share and the bus bandwidth; --ranks lists every rank.
set -u
BIN=${CW_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# scenario            kind            rank because                culprit    ranks
table="nccl-straggler         nccl_straggler 2 cpu_preemption         stress-ng  4
nccl-straggler-io      nccl_straggler 1 io_contention          -          4
nccl-straggler-input   nccl_straggler 5 dataloader_starvation  pt_loader  8
nccl-straggler-compute nccl_straggler 7 compute                -          8
nccl-hang              nccl_hang      3 missing_rank           -          4
comm-bound             comm_bound     - collective_wait        -          4"

explain() { "$BIN" explain --db "$1" --json --no-store "${@:2}"; }

while read -r s kind rank because culprit nranks; do
	db="$tmp/$s.db"
	"$BIN" demo "$s" --db "$db" --json > /dev/null || fail "demo $s"
	explain "$db" > "$tmp/$s.json" || fail "explain $s"
	python3 - "$s" "$kind" "$rank" "$because" "$culprit" "$nranks" "$tmp/$s.json" <<'PY' || fail "$s: $(cat "$tmp/$s.json" | head -c 3000)"
import json, sys
s, kind, rank, because, culprit, nranks, path = sys.argv[1:]
d = json.load(open(path))
ch = d["chains"]
assert ch, "no chain"
top = ch[0]
rc = top["root_cause"]
assert rc["kind"] == kind, (rc["kind"], kind)
assert str(top["rank"] if top["rank"] is not None else "-") == rank, top["rank"]
assert rc.get("because") == because, rc.get("because")
assert ((top.get("culprit") or {}).get("comm") or "-") == culprit, top.get("culprit")
assert top["severity"] == "HIGH", top["severity"]
assert top["node"] == "demo-node"
if kind == "nccl_straggler":
    waits = [c for c in ch if c["root_cause"]["kind"] == "nccl_wait"]
    assert sorted(c["rank"] for c in waits) == sorted(r for r in range(int(nranks)) if r != int(rank)), waits
    for c in waits:
        assert c["caused_by"] == {"kind": "nccl_straggler", "node": "demo-node", "pid": top["pid"], "rank": int(rank)}, c
        assert c["severity"] == "LOW"
    assert top["evidence"]["late_collectives"] == 60 and top["evidence"]["collectives"] == 60, top["evidence"]
    assert top["explained_share"] >= 0.9, top["explained_share"]
    assert 20e6 < top["evidence"]["mean_lag_ns"] < 30e6, top["evidence"]
    assert top["fix"], "no fix"
    assert not d["warnings"], d["warnings"]
    if because == "compute":
        assert top["python"]["line"] == 90, top["python"]
if kind == "nccl_hang":
    assert rc["missing_ranks"] == [3] and rc["seq"] == 40, rc
    st = rc["missing_state"][0]
    assert "rank 3 (pid 4851" in st and "blocked for 15.00s" in st and "cudaLaunchKernel" in st, st
    assert "train.py:90" in st, st
    assert top["evidence"]["threshold_ns"] == 10_000_000_000, top["evidence"]
    assert "never entered by rank 3" in rc["summary"], rc["summary"]
    # The wavefront: rank 3 blocked off CPU since before #40 (its last
    # off-CPU interval reaches the end), the others inside their sync.
    wf = top["wavefront"]
    assert wf["seq"] == 40 and wf["missing_ranks"] == [3] and wf["ranks_total"] == 4, wf
    assert [r["rank"] for r in wf["ranks"]] == [3, 0, 1, 2], wf
    m = wf["ranks"][0]
    assert not m["entered"] and m["last_seq"] == 39 and m["thread_state"] == "blocked", m
    assert m["state_from"] == "offcpu" and m["off_cpu_ns"] == 15_000_000_000, m
    assert m["python"] == "/workspace/train.py:90 in train_step", m
    for w in wf["ranks"][1:]:
        assert w["entered"] and w["last_seq"] == 40 and w["last_call"] == "cudaStreamSynchronize", w
        assert w["last_call_open"] and w["thread_state"] == "in_call" and w["state_from"] == "calls", w
    # The waiting ranks' slow syncs point at the hang.
    others = [c for c in ch[1:] if c["op"] == "cudaStreamSynchronize"]
    assert all(c["caused_by"]["kind"] == "nccl_hang" and c["caused_by"]["rank"] == 3 for c in others), others
    # Each rank has a GPU of its own: their waits are not time-slicing.
    assert not any(c["root_cause"]["kind"] == "gpu_time_slicing" for c in ch), [c["root_cause"]["summary"] for c in ch]
if kind == "comm_bound":
    ev = top["evidence"]
    assert 0.6 < ev["comm_share"] < 0.75, ev
    assert ev["bytes_p50"] == 64 << 20, ev
    assert abs(ev["transfer_p50_ns"] - 60e6) < 1e6, ev
    # 64 MiB allreduce over 4 ranks in 60 ms: 2*3/4 * 67108864 / 0.06 s = 0.84 GB/s x 2
    assert abs(ev["busbw_gbps"] - 2 * 3 / 4 * 67108864 / 60e6) < 0.05, ev
    assert not any(c["root_cause"]["kind"] == "nccl_straggler" for c in ch)
print("ok", s, kind, rank, because)
PY
done <<< "$table"

# A hang right after start-up: rank 3 joined by ncclCommInitRank and never
# entered collective #1 (a member only by its init), and the others' hung
# syncs fall in the op's first second among their warm-up syncs: open
# calls are never start-up cost, so no cold_start chain, the hang on top.
"$BIN" demo nccl-hang-start --db "$tmp/hs.db" --json > /dev/null || fail "demo nccl-hang-start"
explain "$tmp/hs.db" > "$tmp/hs.json" || fail "explain nccl-hang-start"
python3 - "$tmp/hs.json" <<'PY' || fail "nccl-hang-start: $(head -c 3000 "$tmp/hs.json")"
import json, sys
d = json.load(open(sys.argv[1]))
ch = d["chains"]
kinds = [c["root_cause"]["kind"] for c in ch]
assert kinds == ["nccl_hang"], [(c["root_cause"]["kind"], c["root_cause"]["summary"][:160]) for c in ch]
top = ch[0]
rc = top["root_cause"]
assert rc["missing_ranks"] == [3] and rc["seq"] == 1 and top["rank"] == 3 and top["severity"] == "HIGH", rc
wf = top["wavefront"]
assert wf["seq"] == 1 and wf["ranks_total"] == 4 and [r["rank"] for r in wf["ranks"]] == [3, 0, 1, 2], wf
assert not wf["ranks"][0]["entered"] and wf["ranks"][0]["last_seq"] == 0, wf["ranks"][0]
for w in wf["ranks"][1:]:
    assert w["entered"] and w["last_seq"] == 1 and w["last_call_open"], w
assert not d["warnings"], d["warnings"]
PY
# The warm-up syncs and the hung ones share the op's first second.
[ "$("$BIN" query --db "$tmp/hs.db" --csv "SELECT count(DISTINCT second) FROM aggregates
	WHERE op = 'cudaStreamSynchronize'" | tail -1 | tr -d '\r')" = 1 ] || fail "nccl-hang-start: the syncs span more than one second"

# The hang threshold from both sides: 15 s of waiting is a hang above a
# 14 s floor and not above a 16 s one.
explain "$tmp/nccl-hang.db" --hang-after 14s | grep -q '"nccl_hang"' || fail "hang not found with --hang-after 14s"
explain "$tmp/nccl-hang.db" --hang-after 16s | grep -q '"nccl_hang"' && fail "hang found with --hang-after 16s"
"$BIN" explain --db "$tmp/nccl-hang.db" --no-store --hang-after x 2> "$tmp/err" && fail "bad --hang-after accepted"
grep -q 'invalid duration "x"' "$tmp/err" || fail "bad --hang-after: $(cat "$tmp/err")"

# --ranks as text: one line per rank, the straggler marked.
"$BIN" explain --db "$tmp/nccl-straggler-input.db" --no-store --ranks > "$tmp/ranks.txt" || fail "--ranks"
grep -q '^ranks (NCCL collectives)' "$tmp/ranks.txt" || fail "--ranks header: $(cat "$tmp/ranks.txt")"
[ "$(grep -cE '^[0-7] +demo-node' "$tmp/ranks.txt")" = 8 ] || fail "--ranks rows: $(tail -10 "$tmp/ranks.txt")"
grep -qE '^5 +demo-node +4871 +60 +60 .* straggler$' "$tmp/ranks.txt" || fail "--ranks straggler: $(tail -10 "$tmp/ranks.txt")"
grep -qE '^3 +demo-node .* missing$' <("$BIN" explain --db "$tmp/nccl-hang.db" --no-store --ranks) || fail "--ranks missing"

# Text report: because, caused by, missing.
"$BIN" explain --db "$tmp/nccl-straggler.db" --no-store > "$tmp/text" || fail "text"
grep -q '^  because cpu_preemption$' "$tmp/text" || fail "text because"
grep -q '^  caused by nccl_straggler: rank 2, pid 4841 on demo-node$' "$tmp/text" || fail "text caused by"
"$BIN" explain --db "$tmp/nccl-hang.db" --no-store | grep -q '^  missing rank 3 (pid 4851 on demo-node): last call cudaLaunchKernel' ||
	fail "text missing"

# Capture: the sequence numbers, bytes and communicator ids the pipeline
# stored for the job.
"$BIN" query --db "$tmp/nccl-straggler.db" --json "SELECT count(*) AS n, count(DISTINCT comm_id) AS comms,
	min(seq) AS lo, max(seq) AS hi, min(bytes) AS b, max(rank) AS r, sum(done_wall_ns IS NULL) AS undone,
	min(stream) AS stream, (SELECT count(*) FROM nccl_comms WHERE nranks = 4) AS created,
	(SELECT count(*) FROM processes WHERE rank = 2 AND world_size = 4) AS ranked FROM nccl_calls" |
	python3 -c '
import json, sys
r = json.load(sys.stdin)[0]
assert r == {"n": 240, "comms": 1, "lo": 1, "hi": 60, "b": 64 << 20, "r": 3, "undone": 0, "stream": 0x5a5a0000,
             "created": 4, "ranked": 1}, r' || fail "capture tables"
echo ok
