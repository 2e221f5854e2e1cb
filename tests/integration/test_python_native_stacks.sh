#!/bin/bash
# Native stacks through `causeway where`: a C program built with frame
# pointers shows its callers by symbol (both threads), a C++ one shows
# demangled names, and a Python process shows the native frame it blocks
# in (libc) next to its Python frames.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root to ptrace another process"; exit 77; }
F=$CW_BUILD/fixtures
for b in fp_workload cxx_workload; do
	[ -x "$F/$b" ] || { echo "FAIL: fixture $F/$b missing (make fixtures)"; exit 1; }
done
tmp=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0

run() { # run PROG -> $pid once it printed "ready"
	rm -f "$tmp/out" # not the previous program's "ready"
	"$@" > "$tmp/out" 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do grep -q ready "$tmp/out" && { sleep 0.1; return 0; }; sleep 0.05; done
	echo "FAIL: $* did not start"; return 1
}

run "$F/fp_workload" || exit 1
"$CW_BIN" where --json "$pid" > "$tmp/got" || { echo "FAIL: where fp_workload rc=$?"; fail=1; }
python3 - "$tmp/got" <<'PY' || fail=1
import json, sys
got = json.load(open(sys.argv[1]))
want_tail = {True: "main", False: "thread_main"}
ok = 0
for t in got["threads"]:
    names = [n.split("!")[1].split("+")[0] if "!" in n else n for n in t.get("native", [])]
    exp = ["fp_inner", "fp_middle", "fp_outer", want_tail[t["main"]]]
    if names[:4] != exp:
        print(f"FAIL fp_workload thread {t['tid']}: {t.get('native')} want prefix {exp}")
        sys.exit(1)
    if t["python"]:
        print("FAIL: python frames in a C program"); sys.exit(1)
    ok += 1
if ok != 2:
    print(f"FAIL: {ok} threads, want 2"); sys.exit(1)
if "no python runtime" not in got.get("python_error", ""):
    print("FAIL: missing python_error"); sys.exit(1)
PY
kill "$pid"; wait "$pid" 2>/dev/null; pid=

run "$F/cxx_workload" || exit 1
"$CW_BIN" where "$pid" > "$tmp/got" || { echo "FAIL: where cxx_workload rc=$?"; fail=1; }
for want in 'cxx_workload!ns::Layer<int>::run(int)+' 'cxx_workload!ns::Model::forward(int)+' 'cxx_workload!main+'; do
	grep -qF "$want" "$tmp/got" || { echo "FAIL: no '$want' in:"; cat "$tmp/got"; fail=1; }
done
grep -q '_ZN2ns' "$tmp/got" && { echo "FAIL: mangled name left"; fail=1; }
kill "$pid"; wait "$pid" 2>/dev/null; pid=

py=/root/.pyenv/versions/3.12.1/bin/python3
if [ -x "$py" ]; then
	# its own output file: $tmp/out still holds the C fixtures' "ready", and
	# the loop below could see it before the new process truncates the file
	"$py" "$CW_ROOT/tests/fixtures/py/where_sleep.py" > "$tmp/pyout" 2>&1 &
	pid=$!
	for _ in $(seq 1 200); do grep -q '"threads"' "$tmp/pyout" && break; sleep 0.05; done
	grep -q '"threads"' "$tmp/pyout" || { echo "FAIL: where_sleep.py did not start:"; cat "$tmp/pyout"; exit 1; }
	"$CW_BIN" where "$pid" > "$tmp/got" || { echo "FAIL: where python rc=$?"; fail=1; }
	grep -q 'libc.so.6!clock_nanosleep' "$tmp/got" || { echo "FAIL: no libc frame for python:"; cat "$tmp/got"; fail=1; }
	# the process keeps running after the dump (ptrace detached)
	sleep 0.1
	grep -q '^State:.*[SR]' "/proc/$pid/status" || { echo "FAIL: target left stopped"; fail=1; }
	grep -q '^TracerPid:.*\b0$' "/proc/$pid/status" || { echo "FAIL: still traced"; fail=1; }
fi
exit $fail
