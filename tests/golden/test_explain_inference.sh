#!/bin/bash
# inference_latency on the inference-ttft demo (docs/rules.md,
# docs/demo.md): explain names the slow requests of the served route
# (method, path, TTFT, duration), the server's preempted thread and the
# process that held its CPU (backup.sh, pid 4410, cpu 3), in text and
# JSON; the diagnosis matches tests/golden/explain/inference-ttft.json
# byte for byte (CW_UPDATE_GOLDEN=1 rewrites it); the chain is stored as
# history and counted on /metrics' causeway_chains; the health checks
# (too few for a baseline, within the objectives) are not named; a
# window without the incident names nothing.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CW_BIN" demo inference-ttft --db "$tmp/d.db" >"$tmp/demo.txt" 2>&1 || fail "demo: $(tail -n 3 "$tmp/demo.txt")"
grep -q "291 requests" "$tmp/demo.txt" || fail "demo: $(head -n 5 "$tmp/demo.txt")"
"$CW_BIN" explain --db "$tmp/d.db" --json --no-store --now 2026-01-01T00:00:00Z >"$tmp/x.json" || fail "explain --json"
"$CW_BIN" explain --db "$tmp/d.db" --no-store --now 2026-01-01T00:00:00Z >"$tmp/x.txt" || fail "explain"

python3 - "$tmp/x.json" <<'PY' || fail "json (above)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["window"]["requests_analysed"] == 291, d["window"]
assert len(d["chains"]) == 1, [c["op"] for c in d["chains"]]
c = d["chains"][0]
assert c["root_cause"]["kind"] == "inference_latency" and c["root_cause"]["because"] == "cpu_preemption", c["root_cause"]
assert c["severity"] == "HIGH" and c["source"] == "http" and c["op"] == "POST /v1/chat/completions", c
assert (c["pid"], c["tid"], c["comm"]) == (5120, 5120, "llama-server"), (c["pid"], c["tid"], c["comm"])
cu = c["culprit"]
assert (cu["comm"], cu["pid"], cu["cpu"]) == ("backup.sh", 4410, 3), cu
assert cu["container"]["cgroup"] == "/system.slice/backup.service", cu["container"]
r = c["requests"]
assert (r["method"], r["path"], r["baseline"]["from"]) == ("POST", "/v1/chat/completions", "route"), r
assert c["slow_count"] == 5 and c["count"] == 282, (c["slow_count"], c["count"])
ttft = sorted(q["ttft_ns"] for q in r["slow"] if q["slow"] == "ttft")
assert len(ttft) >= 2 and all(9e9 < t < 10.5e9 for t in ttft), ttft
assert c["explained_share"] > 0.9 and c["evidence"]["culprit_share"] == 1, (c["explained_share"], c["evidence"])
s = c["root_cause"]["summary"]
for part in ("POST /v1/chat/completions: 5 requests slow (TTFT p50 9.59s vs 35.1ms usual; worst at 00:00:32, TTFT 9.77s",
             "was preempted for 97 % of it, 100 % of that by backup.sh (pid 4410, cpu 3)"):
    assert part in s, (part, s)
assert "renice +19 -p 4410" in c["fix"], c["fix"]
print("inference-ttft:", s)
PY

grep -q '^\[HIGH\] inference_latency  POST /v1/chat/completions (http)' "$tmp/x.txt" || fail "text: $(head -n 5 "$tmp/x.txt")"
grep -q 'by backup.sh (pid 4410, cpu 3)' "$tmp/x.txt" || fail "text names no culprit"
grep -Eq '^  slow    POST /v1/chat/completions at 00:00:3[0-9]\.[0-9]{3}Z: TTFT 9\.[0-9]{2}s, ' "$tmp/x.txt" ||
	fail "text names no slow request: $(grep '^  slow' "$tmp/x.txt")"
grep -q '; 291 requests)' "$tmp/x.txt" || fail "text header: $(head -n 1 "$tmp/x.txt")"
grep -q 'GET /health' "$tmp/x.txt" && fail "the health checks are named"

golden=$CW_ROOT/tests/golden/explain/inference-ttft.json
[ -n "${CW_UPDATE_GOLDEN:-}" ] && cp "$tmp/x.json" "$golden"
diff -u "$golden" "$tmp/x.json" || fail "diagnosis differs from $golden"

# Before the backup ran: nothing slow, nothing named.
"$CW_BIN" explain --db "$tmp/d.db" --json --no-store --from 2026-01-01T00:00:00Z --to 2026-01-01T00:00:30Z >"$tmp/early.json" ||
	fail "explain --from/--to"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["chains"] == [], d["chains"]; assert d["window"]["requests_analysed"] > 100' "$tmp/early.json" ||
	fail "a window without the incident names a chain"

# The demo stored its diagnosis: history and /metrics count it.
[ "$(sqlite3 "$tmp/d.db" "SELECT count(*) FROM chains WHERE kind = 'inference_latency' AND op = 'POST /v1/chat/completions'")" -ge 1 ] ||
	fail "no stored inference_latency chain"
echo ok
