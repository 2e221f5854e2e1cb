#!/bin/bash
# trace a Python (ctypes) program calling the real CUDA 13 runtime, driver
# and NCCL, on every installed pyenv CPython: each call is stored with its
# arguments and return code, under the python process.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
PYS=$(ls -d /root/.pyenv/versions/3.1[0-3]*/bin/python3 2>/dev/null)
[ -n "$PYS" ] || PYS=$(command -v python3)
[ -n "$PYS" ] || { echo "no python3 installed"; exit 77; }
n=0
for py in $PYS; do
	db=$D/p$n.db
	"$CW_BIN" trace --db "$db" --no-view -- "$py" "$CW_ROOT/tests/fixtures/cuda_ctypes.py" >"$D/out" 2>"$D/err" \
		|| fail "$py: trace failed: $(cat "$D/err")"
	grep -qx done "$D/out" || fail "$py: workload did not finish: $(cat "$D/out")"
	while read -r _ name ret; do
		op=${name%_v2}
		[ "$(sqlite3 "$db" "SELECT count(*) FROM events WHERE op='$op' AND ret=$ret AND comm LIKE 'python%'")" -ge 1 ] \
			|| fail "$py: $name ret $ret missing: $(sqlite3 "$db" "SELECT op, ret, comm FROM events WHERE op='$op'")"
	done < <(grep '^call ' "$D/out")
	q() { [ "$(sqlite3 "$db" "SELECT count(*) FROM events WHERE $1")" -ge 1 ] || fail "$py: $1"; }
	q "op='cudaSetDevice' AND arg0=1"
	q "op='cudaMalloc' AND bytes=31337"
	q "op='cudaMemcpy' AND bytes=4242 AND detail='DtoH'"
	q "op='cudaStreamSynchronize' AND arg0=49"
	q "op='cuMemAlloc' AND bytes=8888"
	q "op='cuMemcpyHtoD' AND bytes=1212"
	q "op='ncclAllReduce' AND arg0=640 AND arg1=7 AND arg2=0"
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	[ "$(sqlite3 "$db" "SELECT python FROM sessions")" = "$ver" ] || fail "$py: session python \"$(sqlite3 "$db" "SELECT python FROM sessions")\", want $ver"
	echo "$py ok"
	n=$((n + 1))
done
echo "ok ($n interpreters)"
