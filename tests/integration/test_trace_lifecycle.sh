#!/bin/bash
# Processes started after trace, fork+exec children, a library dlopen'ed
# mid-run, --pid, the launched command's exit status, a SIGKILL of the
# tracer leaving a consistent database, and a call still open at stop.
set -u
# --capture full where a check counts every call's row.
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
n() { sqlite3 "$1" "SELECT count(*) FROM events WHERE $2"; }
# A private copy: its own inode, so nothing attached it before.
mkdir -p "$D/lib" && cp "$FIX/fakecuda/libcudart.so.13" "$D/lib/"

# 1. Every-process mode: a process started after trace is found by the rescan.
"$CW_BIN" trace --db "$D/a.db" --no-view --capture full --duration 5s >"$D/a.out" 2>&1 &
tp=$!; pids+=($tp)
sleep 1
LD_LIBRARY_PATH=$D/lib "$FIX/fake_workload" -n 40 -m sync -w 1500 >"$D/w.out"
wait $tp || fail "trace (every process) exited $?: $(cat "$D/a.out")"
wp=$(awk '/^pid/{print $2}' "$D/w.out")
got=$(n "$D/a.db" "pid=$wp AND op='cudaStreamSynchronize'")
[ "$got" = 40 ] || fail "late process $wp: $got of 40 calls"
[ "$(sqlite3 "$D/a.db" "SELECT count(*) FROM processes WHERE pid=$wp")" = 1 ] || fail "no process row for $wp"
echo "late process: ok"

# 2. Launched command with a fork+exec child: the child is enrolled in the
#    kernel at fork and its calls are traced without naming it.
LD_LIBRARY_PATH=$D/lib "$CW_BIN" trace --db "$D/b.db" --no-view --capture full -- "$FIX/fake_workload" -f -n 25 -m sync -w 1500 \
	>"$D/b.out" 2>"$D/b.err" || fail "trace -- exited $?: $(cat "$D/b.err")"
parent=$(awk '/^pid/{print $2; exit}' "$D/b.out")
got=$(n "$D/b.db" "pid=$parent AND op='cudaStreamSynchronize'")
[ "$got" = 25 ] || fail "parent: $got of 25"
got=$(n "$D/b.db" "pid<>$parent AND op='cudaStreamSynchronize'")
[ "$got" = 25 ] || fail "fork+exec child: $got of 25 ($(sqlite3 "$D/b.db" "SELECT pid, comm, count(*) FROM events WHERE source='cuda' GROUP BY 1,2"))"
[ "$(n "$D/b.db" "source='proc' AND op='fork'")" -ge 1 ] || fail "no fork event"
echo "fork/exec child: ok"

# 3. A library dlopen'ed mid-run (1.2 s after start) is attached by the rescan.
mkdir -p "$D/late" && cp "$FIX/fakecuda/libcudart.so.13" "$D/late/"
"$CW_BIN" trace --db "$D/c.db" --no-view --capture full -- "$FIX/fake_workload" -L "$D/late/libcudart.so.13" -l 1200 -w 1500 -n 30 -m sync \
	>"$D/c.out" 2>"$D/c.err" || fail "trace dlopen: $(cat "$D/c.err")"
got=$(n "$D/c.db" "op='cudaStreamSynchronize'")
[ "$got" = 30 ] || fail "dlopen'ed library: $got of 30"
echo "dlopen mid-run: ok"

# 4. The command's exit status is trace's.
"$CW_BIN" trace --db "$D/d.db" --no-view -- sh -c 'exit 7' 2>/dev/null
[ $? = 7 ] || fail "exit status not passed through"

# 5. --pid and SIGKILL of the tracer mid-run.
LD_LIBRARY_PATH=$D/lib "$FIX/fake_workload" -T 6 -m mix -w 200 >"$D/k.out" &
wp=$!; pids+=($wp)
sleep 0.5
"$CW_BIN" trace --db "$D/k.db" --no-view --capture full --pid $wp >"$D/k.err" 2>&1 &
tp=$!; pids+=($tp)
sleep 2.5
kill -9 $tp; wait $tp 2>/dev/null
kill $wp 2>/dev/null
[ "$(sqlite3 "$D/k.db" "PRAGMA integrity_check")" = ok ] || fail "integrity after SIGKILL"
got=$(n "$D/k.db" "pid=$wp AND source='cuda'")
[ "$got" -gt 100 ] || fail "only $got events committed before SIGKILL"
sqlite3 "$D/k.db" "SELECT count(*) FROM sessions" >/dev/null || fail "sessions unreadable"
echo "sigkill: ok ($got events kept)"

# 6. A call still open when trace stops (a hung synchronize, a stuck
#    collective) is stored as unfinished, with how long it had run.
#    The library is loaded before trace starts and the call begins well
#    after the probes are attached (attaching 150 probes took 1.6 s here:
#    the call starts 4.5 s after trace does).
LD_LIBRARY_PATH=$D/lib CW_FAKE_SYNC_US=12000000 "$FIX/fake_workload" -n 1 -m sync -w 5000 >"$D/h.out" &
wp=$!; pids+=($wp)
sleep 0.5
"$CW_BIN" trace --db "$D/h.db" --no-view --pid $wp --duration 7s >"$D/h.err" 2>&1 || fail "trace --pid (hung): $(cat "$D/h.err")"
row=$(sqlite3 "$D/h.db" "SELECT detail, duration_ns > 1000000000, ret IS NULL FROM events WHERE pid=$wp AND op='cudaStreamSynchronize'")
[ "$row" = "unfinished|1|1" ] || fail "open call at stop: '$row' ($(cat "$D/h.err"))"
kill $wp 2>/dev/null
echo "open call at stop: ok"
echo ok
