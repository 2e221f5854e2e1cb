# shellcheck shell=sh
# Runs inside the kernel matrix's VM (busybox sh, tests/lib/kernel_vm.sh's
# /init), on the kernel under test: the release file at /cw/causeway, the
# stand-in libcudart at /cw/fakecuda, fake_workload at /cw/fake_workload.
# Every result is one line "CWR KEY VALUE" on the console; the outputs the
# host keeps are lines "CWO NAME| TEXT". The host
# (tests/integration/kernel_matrix_lib.sh) judges them.
CW=/cw/causeway
W=/cw/fake_workload
LIB=/cw/fakecuda/libcudart.so.13
export LD_LIBRARY_PATH=/cw/fakecuda HOME=/root
r() { echo "CWR $*"; }
out() { sed "s/^/CWO $1| /" "$2"; }
t0() { cut -d' ' -f1 /proc/uptime; }
# n SQL DB: one number from the store, through causeway's own SQL.
# A query that fails says why on the console (stderr), as "CWO query_err";
# its time limit is raised: 10 s is not enough under emulation on a busy host.
n() {
	$CW query --db "$2" --csv --timeout 300s "$1" >/tmp/q.out 2>/tmp/q.err || sed "s/^/CWO query_err| /" /tmp/q.err >&2
	tail -n 1 /tmp/q.out | tr -d '\r"'
}
r cpus "$(grep -c ^processor /proc/cpuinfo)"
r btf "$([ -r /sys/kernel/btf/vmlinux ] && echo yes || echo no)"

# Which of causeway's BPF programs the kernel holds while a trace runs:
# sampled every half second into /tmp/progs.$1 until /tmp/stop.$1 exists.
progs_watch() {
	command -v bpftool >/dev/null 2>&1 || return 0
	(while [ ! -e "/tmp/stop.$1" ]; do
		bpftool prog show 2>/dev/null | sed -n 's/^[0-9]*: [a-z_]*  *name \([^ ]*\) .*/\1/p' >>"/tmp/progs.$1"
		sleep 0.5
	done) &
}
progs_done() { : >"/tmp/stop.$1"; wait; [ -f "/tmp/progs.$1" ] && sort -u "/tmp/progs.$1" | tr '\n' ' '; }

# 1. check: its verdict and its lines.
s=$(t0)
$CW check >/tmp/check.out 2>&1
r check_rc $?
out check /tmp/check.out
$CW check --json >/tmp/check.json 2>/dev/null
out check_json /tmp/check.json
r check_s "$s $(t0)"

# 2. A launched workload: 1 cudaMalloc, 30,000 launches, 3,000 syncs from
# its first call, every call stored (--capture full).
s=$(t0)
progs_watch launch
$CW trace --db /tmp/launch.db --no-view --capture full -- $W -n 30000 -m launch >/tmp/launch.out 2>/tmp/launch.err
r launch_rc $?
r launch_progs "$(progs_done launch)"
out launch_err /tmp/launch.err
out launch_out /tmp/launch.out
# One query for the six numbers: each causeway start costs seconds here.
q=""
for op in cudaMalloc cudaLaunchKernel cudaStreamSynchronize; do
	q="$q${q:+, }(SELECT coalesce(sum(count),0) FROM aggregates WHERE op = '$op'),"
	q="$q (SELECT count(*) FROM events WHERE op = '$op')"
done
# shellcheck disable=SC2046 # the numbers are words
set -- $(n "SELECT $q" /tmp/launch.db | tr ',' ' ')
for op in cudaMalloc cudaLaunchKernel cudaStreamSynchronize; do
	r "agg_$op" "${1:-}"
	r "events_$op" "${2:-}"
	shift 2 2>/dev/null
done
r launch_s "$s $(t0)"

# attached FILE: waits until trace's start-up line (probes attached) is in
# FILE, or trace (pid $2) has ended.
attached() {
	while ! grep -q 'attached' "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 0.2; done
}

# 3. --pid of a process already running, and the scheduler layer: a CPU
# hog (/tmp/cwhog, a shell loop: its comm is the script's name whichever
# busybox applets run in-process) pinned to the workload's CPU for four
# seconds once the probes are in; explain names it. trace itself is kept
# on CPU 0: on two emulated CPUs the agent was the workload's main
# neighbour. The trace ends when the process does. One trace for both:
# each start-up costs this emulated machine a minute or more.
s=$(t0)
printf '#!/bin/sh\nwhile :; do :; done\n' >/tmp/cwhog
chmod +x /tmp/cwhog
CW_FAKE_SYNC_US=1000 $W -T 600 -m sync -p 1 >/tmp/pidw.out 2>&1 &
wp=$!
while ! grep -q '^worker 0' /tmp/pidw.out 2>/dev/null; do sleep 0.1; done
progs_watch pid
taskset -c 0 $CW trace --db /tmp/pid.db --no-view --capture full --pid $wp >/tmp/pid.out 2>/tmp/pid.err &
tp=$!
attached /tmp/pid.err $tp
r pid_attached_s "$(t0)"
sleep 1
# busybox has no nice applet (renice, after the start); its timeout execs
# the command in the process it started, so $! is the hog itself.
taskset -c 1 timeout 4 /tmp/cwhog &
hp=$!
renice -n -10 -p $hp >/dev/null
wait $hp
sleep 1
kill $wp
wait $tp
r pid_rc $?
r pid_progs "$(progs_done pid)"
wait $wp 2>/dev/null
out pid_err /tmp/pid.err
# shellcheck disable=SC2046 # the numbers are words
set -- $(n "SELECT (SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize' AND pid = $wp),
	(SELECT count(*) FROM events WHERE source = 'cuda' AND pid <> $wp),
	(SELECT count(*) FROM offcpu WHERE reason = 'preempted' AND by_comm = 'cwhog')" /tmp/pid.db | tr ',' ' ')
r pid_calls "${1:-}"
r pid_others "${2:-}"
r hog_offcpu "${3:-}"
$CW explain --db /tmp/pid.db --no-store --json >/tmp/explain.out 2>&1
r explain_rc $?
out explain /tmp/explain.out
r pid_s "$s $(t0)"

# 4. A container's cgroup (docker's scheme) named with --container: its
# process's calls only, not those of the same workload in another cgroup.
s=$(t0)
id=c0ffee5eed0123456789abcdef0123456789abcdef0123456789abcdef012345
A=/sys/fs/cgroup/system.slice/docker-$id.scope
B=/sys/fs/cgroup/other.slice/other.scope
mkdir -p $A $B
sh -c "echo \$\$ >$A/cgroup.procs && exec $W -T 600 -r 500 -m sync" >/tmp/cga.out 2>&1 &
pa=$!
sh -c "echo \$\$ >$B/cgroup.procs && exec $W -T 600 -r 500 -m sync" >/tmp/cgb.out 2>&1 &
pb=$!
while ! grep -q '^worker 0' /tmp/cga.out 2>/dev/null || ! grep -q '^worker 0' /tmp/cgb.out 2>/dev/null; do sleep 0.1; done
$CW trace --db /tmp/cg.db --no-view --capture full --container "${id%"${id#????????????}"}" --cuda-lib $LIB \
	>/tmp/cg.out 2>/tmp/cg.err &
tp=$!
attached /tmp/cg.err $tp
sleep 2
kill -INT $tp
wait $tp
r cg_rc $?
kill $pa $pb 2>/dev/null
wait $pa $pb 2>/dev/null
out cg_err /tmp/cg.err
# shellcheck disable=SC2046 # the numbers are words
set -- $(n "SELECT (SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize' AND pid = $pa),
	(SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize' AND pid <> $pa)" /tmp/cg.db | tr ',' ' ')
r cg_in "${1:-}"
r cg_out "${2:-}"
r cg_s "$s $(t0)"

# 5. A server's HTTP requests (trace --inference): busybox httpd, which
# forks a child per connection and serves it on the child's stdin and
# stdout, on the loopback; three fetches and one 404 by wget.
s=$(t0)
ifconfig lo 127.0.0.1 up 2>/dev/null
mkdir -p /tmp/www && echo hello >/tmp/www/index.html
httpd -f -p 127.0.0.1:8080 -h /tmp/www &
hp=$!
$CW trace --db /tmp/inf.db --no-view --inference 8080 >/tmp/inf.out 2>/tmp/inf.err &
tp=$!
while ! grep -q 'following the requests' /tmp/inf.err 2>/dev/null && kill -0 $tp 2>/dev/null; do sleep 0.2; done
attached /tmp/inf.err $tp
# The pages wget got: what the server answered is what must be stored.
got=0
for i in 1 2 3; do wget -q -O /dev/null http://127.0.0.1:8080/index.html && got=$((got + 1)); done
r inf_sent "$got"
wget -q -O /dev/null http://127.0.0.1:8080/missing 2>/dev/null
# the children's exits end their connections a second after they are read
sleep 2
kill -INT $tp
wait $tp
r inf_rc $?
kill $hp 2>/dev/null
wait $hp 2>/dev/null
out inf_err /tmp/inf.err
# shellcheck disable=SC2046 # the numbers are words
set -- $(n "SELECT (SELECT count(*) FROM requests WHERE method = 'GET' AND path = '/index.html' AND status = 200),
	(SELECT count(*) FROM requests WHERE path = '/missing' AND status = 404),
	(SELECT count(*) FROM requests)" /tmp/inf.db | tr ',' ' ')
$CW query --db /tmp/inf.db --csv --timeout 300s "SELECT pid, method, path, status, end_reason, duration_ns FROM requests
	UNION ALL SELECT name, value, NULL, NULL, NULL, NULL FROM counters WHERE name LIKE 'http.%' OR name LIKE '%drops.http'" \
	>/tmp/inf.rows 2>&1
out inf_rows /tmp/inf.rows
r inf_ok "${1:-}"
r inf_404 "${2:-}"
r inf_all "${3:-}"
r inf_s "$s $(t0)"
