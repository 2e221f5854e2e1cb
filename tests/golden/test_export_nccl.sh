#!/bin/bash
# export: an nccl_straggler chain draws, for each collective the straggler
# entered last (at most 50), an arrow from its entry to every other rank's
# track, landing inside that rank's cudaStreamSynchronize that waited for
# the same collective (matched by communicator and sequence number), and
# marks the entry.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$CW_BIN" demo nccl-straggler --db "$tmp/s.db" >/dev/null || { echo "FAIL: demo"; exit 1; }
"$CW_BIN" export --db "$tmp/s.db" -o "$tmp/s.json" --since 10m 2>/dev/null || { echo "FAIL: export"; exit 1; }
python3 - "$tmp/s.json" <<'PY' || exit 1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
starts = {e["id"]: e for e in ev if e.get("ph") == "s" and e["name"] == "nccl_straggler"}
ends = {e["id"]: e for e in ev if e.get("ph") == "f" and e["name"] == "nccl_straggler"}
marks = [e for e in ev if e.get("ph") == "i" and e["name"] == "nccl_straggler"]
assert len(marks) == 50 and len(starts) == len(ends) == 150, (len(marks), len(starts), len(ends))
assert {e["tid"] for e in starts.values()} == {4841}, "arrows start on rank 2's track"
assert sorted({e["tid"] for e in ends.values()}) == [4821, 4831, 4851], "and end on the others'"
slices = [e for e in ev if e.get("ph") == "X"]
for i, f in ends.items():
    s = starts[i]
    assert f["ts"] >= s["ts"], (s, f)
    # The start is the straggler's ncclAllReduce, the end inside a waiting sync.
    assert any(x["tid"] == s["tid"] and x["name"] == "ncclAllReduce" and x["ts"] == s["ts"] for x in slices), s
    assert any(x["tid"] == f["tid"] and x["name"] == "cudaStreamSynchronize" and x["ts"] <= f["ts"] <= x["ts"] + x["dur"]
               for x in slices), f
print("ok", len(ends), "arrows")
PY
