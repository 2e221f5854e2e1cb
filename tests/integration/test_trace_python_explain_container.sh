#!/bin/bash
# explain names the exact Python line on Debian sid's own CPython 3.14 and
# 3.15, run as a container runs them: the Debian root chroot'ed in its own
# mount and PID namespaces, the script and the (timing-fixture) libcudart on
# a tmpfs that exists only in that mount namespace, so the library's
# probes and the interpreter's runtime are reachable only through
# /proc/PID/root. A ctypes loop calls cudaStreamSynchronize from a known
# line pinned to one CPU while a CPU hog arrives on it: the top chain is
# cpu_preemption and its python location is that line, as the process
# names the file.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
. "$CW_ROOT/tests/lib/debian_root.sh"
root=$(debian_root sid amd64 python3.14 python3.15) || { echo "FAIL: no Debian sid root (mmdebstrap)"; exit 1; }
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
SCRIPT=$CW_ROOT/tests/fixtures/py/sync_loop.py
[ -f "$FAKE" ] || { echo "FAIL: fixture $FAKE missing (make fixtures)"; exit 1; }
command -v stress-ng >/dev/null || { echo "FAIL: stress-ng not installed (scripts/install-deps.sh)"; exit 1; }
D=$(mktemp -d)
bg=()
cleanup() { for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail=0
CPU=$(($(nproc) - 1))
line=$(grep -n '# SYNC$' "$SCRIPT" | cut -d: -f1)
mkdir -p "$D/src"
cp "$SCRIPT" "$FAKE" "$D/src/"

for v in 3.14 3.15; do
	rm -f "$D/t.db"*
	# The hog is timed from the interpreter's own start (its 1.2 s set-up,
	# then 3 s of syncs), not from trace's: a cold first start of the sid
	# root's interpreter can take longer than trace's start-up does.
	(for _ in $(seq 1 400); do pgrep -f "^python$v /mnt/sync_loop.py" >/dev/null && break; sleep 0.025; done
	 sleep 1.8; exec nice -n -10 stress-ng --cpu 1 --taskset $CPU --timeout 1.2s >/dev/null 2>&1) &
	bg+=($!)
	CW_FAKE_SYNC_US=1000 "$CW_BIN" trace --db "$D/t.db" --no-view -- \
		unshare --mount --pid --fork --kill-child --propagation private bash -c \
		'mount -t tmpfs cw "$1/mnt" && cp "$2"/* "$1/mnt/" &&
		 exec chroot "$1" "$3" /mnt/sync_loop.py /mnt/libcudart.so.13 1.2 3 "$4"' \
		ctr "$root" "$D/src" "python$v" "$CPU" >"$D/out" 2>"$D/err" || { echo "FAIL $v: trace: $(cat "$D/err")"; fail=1; continue; }
	wait "${bg[-1]}" 2>/dev/null
	grep -qx done "$D/out" || { echo "FAIL $v: workload did not finish: $(cat "$D/out" "$D/err")"; fail=1; continue; }
	[ -e "$root/mnt/sync_loop.py" ] && { echo "FAIL $v: the tmpfs leaked to the host"; fail=1; }
	"$CW_BIN" explain --db "$D/t.db" --json --no-store >"$D/e.json" || { echo "FAIL $v: explain"; fail=1; continue; }
	python3 - "$D/e.json" "$line" "$v" <<'PY' || fail=1
import json, sys
doc = json.load(open(sys.argv[1]))
v = sys.argv[3]
chains = doc.get("chains") or []
if not chains:
    sys.exit("FAIL %s: no chain" % v)
c = chains[0]
kind = c["root_cause"]["kind"]
print(v, "top chain:", kind, "|", c["root_cause"].get("summary", ""))
if kind != "cpu_preemption":
    sys.exit("FAIL %s: top chain is %s, not cpu_preemption" % (v, kind))
py = c.get("python") or {}
want = ("/mnt/sync_loop.py", int(sys.argv[2]), "train_step")
got = (py.get("file"), py.get("line"), py.get("function"))
print(v, "python:", got)
if got != want:
    sys.exit("FAIL %s: python location %r, want %r" % (v, got, want))
PY
	"$CW_BIN" explain --db "$D/t.db" --no-store >"$D/e.txt" || { echo "FAIL $v: explain text"; fail=1; }
	grep -qF "train_step() at /mnt/sync_loop.py:$line" "$D/e.txt" || { echo "FAIL $v: text lacks the line"; fail=1; }
done
exit $fail
