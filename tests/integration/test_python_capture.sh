#!/bin/bash
# In-BPF Python stack capture at real CUDA calls, on every supported
# CPython: a workload calls cudaMalloc of the real libcudart.so.13 through
# ctypes (no GPU needed: the call fails, the uprobe fires) from nested
# functions, a multi-line statement, a lambda, a comprehension and a worker
# thread. Each call's captured stack, resolved by the live resolver, must
# equal what the interpreter reports at the same call site (file, function,
# executing line of every frame).
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
CUDART=${CW_CUDART:-/usr/local/cuda-13.0/lib64/libcudart.so.13}
[ -f "$CUDART" ] || { echo "no CUDA runtime at $CUDART"; exit 77; }
H=$CW_BUILD/fixtures/pystack_harness
[ -x "$H" ] || { echo "FAIL: $H missing (make fixtures)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 checked=0
for py in /root/.pyenv/versions/3.1[0-3].*/bin/python3 /usr/bin/python3.11; do
	[ -x "$py" ] || continue
	if ! timeout 60 "$H" "$CUDART" "$py" "$CW_ROOT/tests/fixtures/py/cuda_calls.py" > "$tmp/out" 2> "$tmp/err"; then
		echo "FAIL $py: harness: $(tail -3 "$tmp/err")"; fail=1; continue
	fi
	python3 - "$tmp/out" "$py" <<'PY' || fail=1
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
want = lines[0]["want"]
got = {str(l["size"]): l for l in lines[1:]}
bad = []
def norm(frames):
    out = [[f, n.split(".")[-1], l] for f, n, l in frames]
    # the outermost <module> frame sits on different lines in the
    # recorder pass and the real pass; compare its name only
    if out and out[-1][1] == "<module>":
        out[-1][2] = None
    return out
for size, frames in sorted(want.items()):
    g = got.get(size)
    if g is None:
        bad.append(f"call {size}: not captured"); continue
    if not g["flags"] & 1:
        bad.append(f"call {size}: entry without CW_CALL_F_PYSTACK"); continue
    if norm(g["frames"]) != norm(frames):
        bad.append(f"call {size}: got {g['frames']}\n   want {frames}")
if len(want) != 5:
    bad.append(f"{len(want)} call sites recorded, want 5")
if bad:
    print(f"FAIL {sys.argv[2]}:\n  " + "\n  ".join(bad))
    sys.exit(1)
PY
	checked=$((checked + 1))
done
[ "$checked" -ge 4 ] || { echo "FAIL: only $checked interpreters"; fail=1; }
exit $fail
