#!/bin/bash
# docs/kernels.md's "Features by kernel version" table lists exactly the
# features trace probes (src/loader/kernel_features.c, as `check --json`
# reports them), each with the kernel the code names.
set -u
fail() { echo "FAIL: $*"; exit 1; }
J=$(mktemp)
trap 'rm -f "$J"' EXIT
"$CW_BIN" check --no-load --json >"$J" 2>/dev/null
python3 - "$J" "$CW_ROOT/docs/kernels.md" <<'PY' || exit 1
import json, re, sys
feats = json.load(open(sys.argv[1]))["kernel_features"]
doc = open(sys.argv[2]).read()
sec = doc.split("## Features by kernel version", 1)[1].split("\n## ", 1)[0]
rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z_0-9]+)` \| [^|]* \| ([^|]*) \|", sec, re.M)}
bad = []
if sorted(rows) != sorted(feats):
    bad.append("keys: doc %s, code %s" % (sorted(set(rows) - set(feats)), sorted(set(feats) - set(rows))))
for k, f in feats.items():
    if k in rows and not rows[k].strip().startswith(f["since"]):
        bad.append("%s: doc says %r, code %r" % (k, rows[k].strip(), f["since"]))
if bad:
    sys.exit("FAIL: docs/kernels.md's feature table: " + "; ".join(bad))
print("ok: %d features, each with its kernel" % len(feats))
PY
