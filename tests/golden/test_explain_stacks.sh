#!/bin/bash
# explain --stacks on the demo incident: each chain prints the stack of its
# representative slow call, and the chain's python location (the first
# frame in user code) is one of its Python frames; --json carries the same
# frames under "stack".
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CW_BIN" demo incident --db "$tmp/d.db" >/dev/null || fail "demo"
"$CW_BIN" explain --help | grep -q -- "--stacks" || fail "--help lacks --stacks"
"$CW_BIN" explain --db "$tmp/d.db" --no-store --stacks >"$tmp/text" || fail "explain --stacks"
grep -q '^  stack (representative slow call, innermost first)$' "$tmp/text" || fail "no stack section: $(cat "$tmp/text")"
grep -q '^    \[py\] /workspace/train.py:95 in train_step$' "$tmp/text" || fail "no [py] frame: $(cat "$tmp/text")"
"$CW_BIN" explain --db "$tmp/d.db" --no-store >"$tmp/plain" || fail "explain"
grep -q 'stack (' "$tmp/plain" && fail "stacks printed without --stacks"
"$CW_BIN" explain --db "$tmp/d.db" --no-store --json >"$tmp/j" || fail "explain --json"
python3 - "$tmp/j" <<'PY' || exit 1
import json, sys
c = json.load(open(sys.argv[1]))["chains"][0]
st = c["stack"]
py = [f for f in st if f["kind"] == "py"]
if not py:
    sys.exit("FAIL: no python frames in stack: %r" % st)
want = (c["python"]["file"], c["python"]["line"], c["python"]["function"])
if want not in [(f["file"], f["line"], f["function"]) for f in py]:
    sys.exit("FAIL: the chain's python %r is not in its stack %r" % (want, py))
print("stack:", [(f["file"], f["line"], f["function"]) for f in py])
PY
echo ok
