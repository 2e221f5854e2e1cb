#!/bin/bash
# causeway where on every supported CPython (pyenv 3.10-3.13, Debian's
# static python3.11, a virtualenv, and a python whose libpython exists only
# in its own mount namespace, as in a container): every frame of every thread must name the file,
# function and executing line that the interpreter itself reports
# (sys._current_frames for the workers, the "# at:" markers for the main
# thread). An unsupported interpreter (3.9) must be refused by version.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root to read another process's memory"; exit 77; }
W=$CW_ROOT/tests/fixtures/py/where_sleep.py
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
line_of() { grep -n "# at:$1\$" "$W" | cut -d: -f1; }

start() { # start PYTHON -> sets $pid, waits for the expected-stacks line
	# the previous start's line must not be taken for this one's (the new
	# process truncates the file only once it runs)
	rm -f "$tmp/want"
	"$1" "$W" > "$tmp/want" 2>"$tmp/err" &
	pid=$!
	pids+=("$pid")
	# the main thread prints, then enters time.sleep: give it a moment
	for _ in $(seq 1 300); do [ -s "$tmp/want" ] && { sleep 0.2; return 0; }; sleep 0.05; done
	echo "workload on $1 did not start: $(cat "$tmp/err")"
	return 1
}

# A virtualenv's interpreter, and a "container" interpreter: CPython 3.12
# with its libpython on a tmpfs mounted only in its own mount namespace
# (the host sees an empty directory there), so the runtime can be read only
# through /proc/PID/root. unshare without --fork: the exec'ed python keeps
# the pid that `start` records.
py312=$(ls -d /root/.pyenv/versions/3.12.*/bin/python3 | head -1)
"$py312" -m venv --without-pip "$tmp/venv" || { echo "FAIL: venv"; fail=1; }
ct=$tmp/ct
mkdir -p "$ct"
cat > "$tmp/ctpy" <<EOF
#!/bin/bash
exec unshare --mount --propagation private bash -c 'mount -t tmpfs cwct "$ct" && cp "$(dirname "$py312")"/../lib/libpython3.12.so.1.0 "$ct/" && LD_LIBRARY_PATH="$ct" exec "$py312" "\$@"' ctpy "\$@"
EOF
chmod +x "$tmp/ctpy"

checked=0
for py in /root/.pyenv/versions/3.1[0-3].*/bin/python3 /usr/bin/python3.11 "$tmp/venv/bin/python3" "$tmp/ctpy"; do
	[ -x "$py" ] || continue
	start "$py" || { fail=1; continue; }
	if [ "$py" = "$tmp/ctpy" ]; then
		# Meaningful only if the runtime is mapped from the namespace's
		# own mount, which the host cannot open by that path.
		grep -q " $ct/libpython3.12.so.1.0\$" "/proc/$pid/maps" && [ -z "$(ls -A "$ct")" ] \
			|| { echo "FAIL: container python does not map its private libpython"; fail=1; }
	fi
	for mode in "" --no-native; do
		if ! "$CW_BIN" where --json $mode "$pid" > "$tmp/got"; then
			echo "FAIL $py: where $mode exited $?"; fail=1; continue
		fi
		if ! python3 - "$tmp/want" "$tmp/got" "$W" "$(line_of forward)" "$(line_of main)" "$(line_of module)" "$mode" <<'PY'
import json, sys
want = json.load(open(sys.argv[1])); got = json.load(open(sys.argv[2]))
w, lf, lm, lmod, mode = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
want["threads"][str(want["pid"])] = [[w, "forward", lf], [w, "main", lm], [w, "<module>", lmod]]
byt = {str(t["tid"]): t for t in got["threads"]}
bad = []
for tid, frames in want["threads"].items():
    t = byt.get(tid)
    if t is None:
        bad.append(f"thread {tid} missing"); continue
    g = [[f["file"], f["function"].split(".")[-1], f["line"]] for f in t["python"]]
    if g != frames:
        bad.append(f"thread {tid}: got {g} want {frames}")
    if mode == "" and not t.get("native"):
        bad.append(f"thread {tid}: no native stack")
if got.get("python", "")[:4] not in ("3.10", "3.11", "3.12", "3.13"):
    bad.append(f"version {got.get('python')}")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
		then
			echo "FAIL $py where $mode"; fail=1
		fi
	done
	"$CW_BIN" where "$pid" > "$tmp/text" || { echo "FAIL $py: text output"; fail=1; }
	grep -q "where_sleep.py:$(line_of forward) in .*forward" "$tmp/text" || { echo "FAIL $py: text lacks forward line"; fail=1; }
	kill "$pid"; wait "$pid" 2>/dev/null
	checked=$((checked + 1))
done
[ "$checked" -ge 6 ] || { echo "FAIL: only $checked interpreters found"; fail=1; }

# Unsupported interpreter: refused with its version and a reason, exit 5.
old=$(ls -d /root/.pyenv/versions/3.9.*/bin/python3 2>/dev/null | head -1)
if [ -n "$old" ]; then
	start "$old" || fail=1
	"$CW_BIN" where --json "$pid" > "$tmp/got"; rc=$?
	if [ "$rc" != 5 ] || ! grep -q '"python_error": "python 3.9 is not supported' "$tmp/got" || grep -q '"file"' "$tmp/got"; then
		echo "FAIL 3.9: rc=$rc $(cat "$tmp/got")"; fail=1
	fi
fi

# Bad input.
"$CW_BIN" where --json notapid > "$tmp/got"; rc=$?
[ "$rc" = 2 ] && grep -q '"error": *"where: invalid pid' "$tmp/got" || { echo "FAIL bad pid: rc=$rc"; fail=1; }
"$CW_BIN" where 999999999 2>/dev/null; rc=$?
[ "$rc" = 2 ] || [ "$rc" = 5 ] || { echo "FAIL missing pid: rc=$rc"; fail=1; }
# In range but above any pid_max (at most 4194304, pids stay below it): no such process, exit 5.
"$CW_BIN" where --json 4194304 > "$tmp/got"; rc=$?
[ "$rc" = 5 ] && grep -q '"error": *"where: no process 4194304"' "$tmp/got" || { echo "FAIL no process: rc=$rc"; fail=1; }
"$CW_BIN" where --help | grep -q "usage: causeway where" || { echo "FAIL --help"; fail=1; }
exit $fail
