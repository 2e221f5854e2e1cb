#!/bin/bash
# Summary capture keeps a process's first 16 calls of an op as rows; the
# count is kept per pid in the kernel. A process given the pid of one that
# exited (pids wrap) is a new process: its first calls keep their rows too.
# The second process is forked at the first one's pid through
# /proc/sys/kernel/ns_last_pid (retried if another fork takes it first).
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
[ -w /proc/sys/kernel/ns_last_pid ] || { echo "no writable /proc/sys/kernel/ns_last_pid"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda
N=20000

cat >"$D/twice.py" <<'PY'
# Runs the command, then runs it again at the same pid.
import os, sys
cmd = sys.argv[1:]
def run(want):
    pid = os.fork()
    if pid == 0:
        if want and os.getpid() != want:
            os._exit(99)
        os.execv(cmd[0], cmd)
    _, st = os.waitpid(pid, 0)
    return pid, os.waitstatus_to_exitcode(st)
a, rc = run(0)
assert rc == 0, rc
for _ in range(500):
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(a - 1))
    b, rc = run(a)
    if b == a:
        assert rc == 0, rc
        print("reused", a, flush=True)
        break
else:
    sys.exit("pid %d was never given again" % a)
PY
CW_FAKE_SYNC_US=20 "$CW_BIN" trace --db "$D/r.db" --no-view -- python3 "$D/twice.py" \
	"$FIX/fake_workload" -w 1200 -n $N -m sync >"$D/w.out" 2>"$D/t.err" || fail "trace: $(cat "$D/t.err") $(cat "$D/w.out")"
pid=$(awk '$1=="reused" {print $2}' "$D/w.out")
[ -n "$pid" ] || fail "no reused pid: $(cat "$D/w.out")"
c() { sqlite3 "$D/r.db" "SELECT coalesce((SELECT value FROM counters WHERE name='$1'), 0)"; }
rows=$(sqlite3 "$D/r.db" "SELECT count(*) FROM events WHERE op='cudaStreamSynchronize' AND pid=$pid")
folded=$(c trace.cuda.folded) first=$(c trace.cuda.kept_first)
echo "pid $pid twice, $((2 * N)) calls: rows $rows, folded $folded, first calls kept $first"
[ $((rows + folded)) = $((2 * N)) ] || fail "rows $rows + folded $folded != $((2 * N)) calls"
[ "$folded" -gt 0 ] || fail "nothing folded"
# 16 first calls of each of the two processes (counted once the op has a
# threshold: the first process runs long enough to get one).
[ "$first" = 32 ] || fail "first calls kept: $first, want 16 for each process"
echo ok
