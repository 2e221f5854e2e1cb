#!/bin/bash
# --speed X paces the generation at X times real time and reports progress
# on stderr once it runs longer than a second; the result is the same rows.
set -eu
BIN=${CW_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$BIN" demo periodic-spike --db "$tmp/fast.db" --json > "$tmp/fast.json"
start=$(date +%s.%N)
# ~92 s of synthetic time at 40x: about 2.3 s.
"$BIN" demo periodic-spike --db "$tmp/paced.db" --speed 40 --json > "$tmp/paced.json" 2> "$tmp/err"
took=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$start" "$(date +%s.%N)")
python3 -c "import sys; t=float(sys.argv[1]); assert 1.8 <= t <= 20, t" "$took" || { echo "paced run took $took s, want ~2.3"; exit 1; }
grep -q 'demo: .* s of .* s synthetic time' "$tmp/err" || { echo "no progress line on stderr:"; cat "$tmp/err"; exit 1; }
python3 - "$tmp/fast.json" "$tmp/paced.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["events"] == b["events"], (a["events"], b["events"])
assert a["diagnosis"]["chains"] == b["diagnosis"]["chains"]
PY
echo "ok paced run took $took s"
