#!/bin/bash
# Failing calls are causes (docs/rules.md "Failing calls"): the three
# error demos give their error chain on top, with the code's name, its
# family, the process, the thread and the line; device_oom joins NVML's
# memory state and names the other holder; each diagnosis matches its
# golden file byte for byte (tests/golden/explain/<scenario>.json;
# CW_UPDATE_GOLDEN=1 rewrites them). The healthy demo has no error chain.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

for s in cuda-no-device cuda-oom nccl-error healthy; do
	"$CW_BIN" demo "$s" --db "$tmp/$s.db" >"$tmp/$s.demo" 2>&1 || fail "demo $s: $(tail -n 3 "$tmp/$s.demo")"
	"$CW_BIN" explain --db "$tmp/$s.db" --json --no-store --now 2026-01-01T00:00:00Z >"$tmp/$s.json" ||
		fail "explain $s exited $?"
	"$CW_BIN" explain --db "$tmp/$s.db" --no-store --now 2026-01-01T00:00:00Z >"$tmp/$s.txt" ||
		fail "explain $s (text) exited $?"
done

python3 - "$tmp" <<'PY' || fail "error chains"
import json, sys
tmp = sys.argv[1]
def top(s):
    return json.load(open(f"{tmp}/{s}.json"))["chains"][0]

want = {
    # scenario: kind, op, error name, code, family, tid, python line
    "cuda-no-device": ("cuda_error", "cudaLaunchKernel", "cudaErrorNoDevice", 100, "no_device", 4821,
                       ("/workspace/model.py", 138)),
    "cuda-oom": ("device_oom", "cudaMalloc", "cudaErrorMemoryAllocation", 2, "out_of_memory", 4821,
                 ("/workspace/model.py", 151)),
    "nccl-error": ("nccl_error", "ncclAllReduce", "ncclSystemError", 2, "nccl_system", 4838,
                   ("/workspace/train.py", 90)),
}
for s, (kind, op, name, code, family, tid, line) in want.items():
    c = top(s)
    assert c["root_cause"]["kind"] == kind, (s, c["root_cause"]["kind"])
    assert c["severity"] == "HIGH", (s, c["severity"])
    assert c["op"] == op, (s, c["op"])
    e = c["error"]
    assert (e["code"], e["name"], e["family"]) == (code, name, family), (s, e)
    assert op in [o["op"] for o in e["ops"]] and all(0 < o["failing_share"] <= 1 for o in e["ops"]), (s, e)
    assert c["pid"] == 4821 and c["tid"] == tid, (s, c["pid"], c["tid"])
    assert (c["python"]["file"], c["python"]["line"]) == line, (s, c["python"])
    assert name in c["root_cause"]["summary"], (s, c["root_cause"]["summary"])
    assert c["slow_count"] == c["evidence"]["failing_calls"] > 0, s
    assert c["culprit"] is None or c["culprit"]["pid"] != c["pid"], s
    print(f"{s}: {c['root_cause']['summary']}")

# No chain reads the failures as latency: the first calls of each op are
# slow (driver initialization), yet no latency chain is about an op of
# which most calls failed.
d = json.load(open(f"{tmp}/cuda-no-device.json"))
assert len(d["chains"]) == 1, [(c["root_cause"]["kind"], c["op"]) for c in d["chains"]]
assert len(d["chains"][0]["error"]["ops"]) == 5, d["chains"][0]["error"]

# device_oom: the device's memory at the failure and the other holder.
c = top("cuda-oom")
assert c["evidence"]["device_mem_used_share"] > 0.95, c["evidence"]
assert c["evidence"]["other_holder_pid"] == 5100, c["evidence"]
assert any("pid 5100" in e["text"] and "34.0 GiB" in e["text"] for e in c["timeline"]), c["timeline"]
assert c["evidence"]["request_bytes"] == 2 << 30, c["evidence"]
# The recovered/unrecovered split: nothing succeeded after the first OOM.
assert c["evidence"]["recovered"] == 0, c["evidence"]

h = json.load(open(f"{tmp}/healthy.json"))
assert not any("error" in c for c in h["chains"]), h["chains"]
PY

# MCP: causal_chains carries the same error object.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"causal_chains","arguments":{}}}' |
	"$CW_BIN" mcp --db "$tmp/cuda-oom.db" >"$tmp/mcp.out" 2>/dev/null
python3 - "$tmp/mcp.out" <<'PY' || fail "mcp causal_chains: $(tail -c 600 "$tmp/mcp.out")"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]["result"]
c = r["structuredContent"]["chains"][0]
assert c["root_cause"]["kind"] == "device_oom", c["root_cause"]
assert c["error"]["name"] == "cudaErrorMemoryAllocation" and c["error"]["family"] == "out_of_memory", c["error"]
PY

# Text output: counts and the code, never latency percentiles.
for s in cuda-no-device cuda-oom nccl-error; do
	grep -q "failing .* error " "$tmp/$s.txt" || fail "$s: no failing-calls line in text: $(head -5 "$tmp/$s.txt")"
	awk '/^\[/{top++} top==1 && /^$/{exit} top==1' "$tmp/$s.txt" | grep -q "p50 " && fail "$s: error chain prints percentiles"
	golden=$CW_ROOT/tests/golden/explain/$s.json
	[ -n "${CW_UPDATE_GOLDEN:-}" ] && cp "$tmp/$s.json" "$golden"
	diff -u "$golden" "$tmp/$s.json" || fail "$s: diagnosis differs from $golden"
done
echo "ok"
