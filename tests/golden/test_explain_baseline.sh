#!/bin/bash
# Expected latency from outside the window (docs/rules.md "Expected
# latency"): explain --from/--to narrowed inside the incident demo's 15 s of
# preempted syncs still gives the HIGH cpu_preemption chain with its culprit
# and line, judged against the syncs' normal outside the window; over the
# whole store the expectation is the window's own p50; the text leads with
# the one-line form.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CW_BIN" demo incident --db "$tmp/inc.db" >/dev/null 2>&1 || fail "demo incident"
"$CW_BIN" explain --db "$tmp/inc.db" --json --no-store >"$tmp/all.json" || fail "explain exited $?"
"$CW_BIN" explain --db "$tmp/inc.db" --json --no-store --from 2026-01-01T00:00:32Z --to 2026-01-01T00:00:43Z \
	>"$tmp/in.json" || fail "explain --from/--to exited $?"
"$CW_BIN" explain --db "$tmp/inc.db" --no-store --from 2026-01-01T00:00:32Z --to 2026-01-01T00:00:43Z \
	>"$tmp/in.txt" || fail "explain --from/--to (text) exited $?"
# A window from the store's second second: too little before it, so the
# normal comes from the hour after.
"$CW_BIN" explain --db "$tmp/inc.db" --json --no-store --from 2026-01-01T00:00:02Z --to 2026-01-01T00:00:43Z \
	>"$tmp/early.json" || fail "explain early window exited $?"
python3 - "$tmp/early.json" <<'PY' || fail "baseline from after the window"
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["chains"] if c["op"] == "cudaStreamSynchronize"][0]
assert c["expected_from"] == "outside_window", c["expected_from"]
PY
python3 - "$tmp/all.json" "$tmp/in.json" <<'PY' || fail "narrowed window"
import json, sys
whole = json.load(open(sys.argv[1]))["chains"][0]
d = json.load(open(sys.argv[2]))
sync = [c for c in d["chains"] if c["op"] == "cudaStreamSynchronize"]
assert sync, [(c["root_cause"]["kind"], c["op"]) for c in d["chains"]]
c = sync[0]
assert c is d["chains"][0] or d["chains"][0]["severity"] == "HIGH", d["chains"][0]
assert (c["root_cause"]["kind"], c["severity"]) == ("cpu_preemption", "HIGH"), (c["root_cause"]["kind"], c["severity"])
assert c["culprit"]["pid"] == 9001 and c["python"]["line"] == 95, (c["culprit"], c["python"])
# Its own p50 is already slow; the expectation is the normal outside.
assert c["expected_from"] == "outside_window", c["expected_from"]
assert c["p50_ns"] > 5 * c["expected_ns"], (c["p50_ns"], c["expected_ns"])
assert abs(c["expected_ns"] - whole["p50_ns"]) <= whole["p50_ns"] * 0.1, (c["expected_ns"], whole["p50_ns"])
# The whole store has nothing outside: the window's own p50.
assert whole["expected_from"] == "window" and whole["expected_ns"] == whole["p50_ns"], whole
print("narrowed:", c["headline"])
PY
head -4 "$tmp/in.txt" | grep -q '^  train_step() at train.py:95 — cudaStreamSynchronize [0-9.]*ms (expected ~[0-9.]*ms): ' ||
	fail "text does not lead with the one-line form: $(head -4 "$tmp/in.txt")"
grep -q 'expected ~[0-9.]*ms (outside the window)' "$tmp/in.txt" || fail "text does not say where the expectation comes from"
echo ok
