#!/bin/bash
# Two jobs whose NCCL communicators have the same id (the demo's nccl-hang
# recorded twice, merged under two node names): explain reads them apart
# by node, with a warning, so the hang names a job of 4 ranks with one
# rank 3 missing, not a job of 8 with two of each rank.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CW_BIN" demo nccl-hang --db "$tmp/a.db" >/dev/null || fail "demo"
cp "$tmp/a.db" "$tmp/b.db"
"$CW_BIN" merge "$tmp/a.db" "$tmp/b.db" -o "$tmp/m.db" --force-node "$tmp/b.db=node-b" >/dev/null 2>&1 || fail "merge"
"$CW_BIN" explain --db "$tmp/m.db" --json --no-store >"$tmp/m.json" || fail "explain"
python3 - "$tmp/m.json" <<'PY' || fail "$(head -c 3000 "$tmp/m.json")"
import json, sys
d = json.load(open(sys.argv[1]))
h = [c for c in d["chains"] if c["root_cause"]["kind"] == "nccl_hang"]
assert len(h) == 1, [c["root_cause"]["kind"] for c in d["chains"]]
h = h[0]
rc = h["root_cause"]
assert rc["missing_ranks"] == [3] and rc["seq"] == 40, rc
assert "entered by 3 of 4 ranks" in rc["summary"], rc["summary"]
wf = h["wavefront"]
assert wf["ranks_total"] == 4 and len(wf["ranks"]) == 4, wf
assert sorted(r["rank"] for r in wf["ranks"]) == [0, 1, 2, 3], wf
assert len({r["pid"] for r in wf["ranks"]}) == 4, wf
w = [x for x in d["warnings"] if "two jobs with the same communicator id" in x]
assert len(w) == 1 and "demo-node" in w[0] and "node-b" in w[0], d["warnings"]
print("ok", rc["summary"][:100])
PY
echo ok
