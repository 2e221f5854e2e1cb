#!/bin/bash
# causeway where on Debian sid's own CPython 3.14 and 3.15 (static
# interpreters, no libpython), run as a container runs them: a Debian root
# filesystem, chroot'ed, in its own mount and PID namespaces, the script on a
# bind mount that exists only in that mount namespace. Traced from the host:
# every thread's Python frames at the file, function and line the
# interpreter itself reports (sys._current_frames, keyed by the TIDs of its
# namespace, mapped to the host's through NSpid), the runtime and paths as
# the process sees them, and the TIDs the host's.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root to read another process's memory"; exit 77; }
. "$CW_ROOT/tests/lib/debian_root.sh"
root=$(debian_root sid amd64 python3.14 python3.15) || { echo "FAIL: no Debian sid root (mmdebstrap)"; exit 1; }
W=$CW_ROOT/tests/fixtures/py/where_sleep.py
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$tmp"; }
# unshare --kill-child takes its namespace's init (the interpreter) along
trap cleanup EXIT
fail=0
line_of() { grep -n "# at:$1\$" "$W" | cut -d: -f1; }
mkdir -p "$tmp/src"
cp "$W" "$tmp/src/"

for v in 3.14 3.15; do
	rm -f "$tmp/src/want"
	# /mnt holds the script only in the namespace (the cached root is never
	# written): the host can reach it only through /proc/PID/root
	unshare --mount --pid --fork --kill-child --propagation private bash -c \
		'mount --bind "$2" "$1/mnt" && exec chroot "$1" "$3" /mnt/where_sleep.py > "$2/want"' \
		ctr "$root" "$tmp/src" "python$v" 2>"$tmp/err" &
	pids+=("$!")
	pid=
	for _ in $(seq 1 300); do
		[ -s "$tmp/src/want" ] && pid=$(pgrep -f "^python$v /mnt/where_sleep.py" | head -1) && [ -n "$pid" ] && break
		sleep 0.05
	done
	[ -n "$pid" ] || { echo "FAIL $v: workload did not start: $(cat "$tmp/err")"; fail=1; continue; }
	sleep 0.2
	[ -e "$root/mnt/where_sleep.py" ] && { echo "FAIL $v: the bind mount leaked to the host"; fail=1; }
	if ! "$CW_BIN" where --json --no-native "$pid" > "$tmp/got"; then
		echo "FAIL $v: where exited $?: $(cat "$tmp/got")"; fail=1; continue
	fi
	if ! python3 - "$tmp/src/want" "$tmp/got" "$pid" "$v" "$(line_of forward)" "$(line_of main)" "$(line_of module)" <<'PY'
import json, os, sys
want = json.load(open(sys.argv[1])); got = json.load(open(sys.argv[2]))
pid, v = int(sys.argv[3]), sys.argv[4]
lf, lm, lmod = map(int, sys.argv[5:8])
w = "/mnt/where_sleep.py"
# namespace TID -> host TID
host = {}
for t in os.listdir(f"/proc/{pid}/task"):
    for l in open(f"/proc/{pid}/task/{t}/status"):
        if l.startswith("NSpid:"):
            host[l.split()[-1]] = int(t)
exp = {host[k]: v_ for k, v_ in want["threads"].items()}
exp[pid] = [[w, "forward", lf], [w, "main", lm], [w, "<module>", lmod]]
if want["pid"] == pid:
    sys.exit("FAIL: the workload is not in its own PID namespace")
byt = {t["tid"]: t for t in got["threads"]}
bad = []
for tid, frames in exp.items():
    t = byt.get(tid)
    if t is None:
        bad.append(f"thread {tid} missing"); continue
    g = [[f["file"], f["function"].split(".")[-1], f["line"]] for f in t["python"]]
    if g != frames:
        bad.append(f"thread {tid}: got {g} want {frames}")
if not got.get("python", "").startswith(v + "."):
    bad.append(f"version {got.get('python')}")
if got.get("runtime_binary") != f"/usr/bin/python{v}":
    bad.append(f"runtime_binary {got.get('runtime_binary')} is not the process's view")
if bad: print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
	then
		echo "FAIL $v: where"; fail=1
	fi
	"$CW_BIN" where "$pid" > "$tmp/text" || { echo "FAIL $v: text output"; fail=1; }
	grep -q "/mnt/where_sleep.py:$(line_of forward) in .*forward" "$tmp/text" \
		|| { echo "FAIL $v: text lacks the forward line: $(head -20 "$tmp/text")"; fail=1; }
	# the interpreter is its namespace's init: only SIGKILL reaches it
	kill -KILL "$pid" 2>/dev/null
	wait 2>/dev/null
done
exit $fail
