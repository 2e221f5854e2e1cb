#!/bin/bash
# trace records the Python stack of every CUDA call from a CPython process:
# on each installed pyenv CPython 3.10-3.13, tests/fixtures/py/cuda_lines.py
# calls cudaMalloc and cudaLaunchKernel through ctypes (the timing fixture
# and the real CUDA 13 runtime) from lines marked "# CALL tag function":
# nested functions, a worker thread, a call spanning several lines, a
# lambda and a comprehension. Each stored call's innermost frame must be
# that file, that line (the executing one, not the function's first) and
# that function.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
SCRIPT=$CW_ROOT/tests/fixtures/py/cuda_lines.py
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$FAKE" ] || fail "fixture $FAKE missing (make fixtures)"
REAL=$(ls /usr/local/cuda*/lib64/libcudart.so.13 2>/dev/null | head -1)
[ -n "$REAL" ] || fail "the CUDA 13 runtime is not installed (scripts/install-deps.sh)"
checked=0
for v in 3.10 3.11 3.12 3.13; do
	py=$(ls -d /root/.pyenv/versions/$v.*/bin/python3 2>/dev/null | head -1)
	[ -n "$py" ] || fail "CPython $v is not installed under /root/.pyenv"
	for lib in "$FAKE" "$REAL"; do
		db=$D/$v-$(basename "$(dirname "$lib")").db
		"$CW_BIN" trace --db "$db" --no-view --py-stacks all --cuda-lib "$lib" -- "$py" "$SCRIPT" "$lib" >"$D/out" 2>"$D/err" \
			|| fail "$v $lib: trace failed: $(cat "$D/err")"
		grep -qx done "$D/out" || fail "$v $lib: workload did not finish: $(cat "$D/out" "$D/err")"
		grep -q "capturing Python stacks" "$D/err" || fail "$v: no Python capture reported: $(cat "$D/err")"
		while IFS=: read -r line rest; do
			set -- $rest   # "# CALL tag names"
			tag=$3 names=$4
			row=$(sqlite3 -separator '|' "$db" "SELECT json_extract(p.frames,'\$[0].file'),
				json_extract(p.frames,'\$[0].line'), json_extract(p.frames,'\$[0].function')
				FROM events e JOIN py_stacks p ON p.id = e.py_stack_id
				WHERE e.op IN ('cudaMalloc','cudaLaunchKernel') AND coalesce(e.bytes, e.arg0) = $tag")
			[ -n "$row" ] || fail "$v $lib: call $tag has no Python stack: $(sqlite3 "$db" "SELECT op, bytes, arg0, py_stack_id FROM events WHERE op LIKE 'cuda%'")"
			IFS='|' read -r file got fn <<<"$row"
			[ "$file" = "$SCRIPT" ] || fail "$v: call $tag: file $file, want $SCRIPT"
			[ "$got" = "$line" ] || fail "$v: call $tag: line $got, want $line ($(sed -n "${line}p" "$SCRIPT"))"
			ok=
			IFS='|' read -ra alts <<<"$names"
			for n in "${alts[@]}"; do
				[ "$fn" = "$n" ] || [[ $fn == *".$n" ]] && ok=1
			done
			[ -n "$ok" ] || fail "$v: call $tag: function $fn, want $names"
			checked=$((checked + 1))
		done < <(grep -nE '# CALL [0-9]+ ' "$SCRIPT" | sed 's/^\([0-9]*\):.*# CALL /\1:# CALL /')
		# Calls from the worker thread are stored under its own tid.
		[ "$(sqlite3 "$db" "SELECT count(*) FROM events WHERE coalesce(bytes, arg0) IN (2001, 2002) AND tid != pid")" = 2 ] \
			|| fail "$v: worker calls not on the worker thread"
	done
	echo "$v ok"
done
[ "$checked" = 56 ] || fail "checked $checked calls, want 56 (7 calls x 4 versions x 2 libraries)"
echo "ok: $checked calls"
