# bpftrace_lib.sh: starting and stopping a bpftrace peer for the benchmarks
# (sourced; needs $D, a scratch directory).

# bpftrace_start PROGRAM: starts bpftrace on CPU 0 and waits until it has
# attached ("Attaching N probes..."); sets BT_PID. Three tries; returns 1
# (bpftrace killed, its first output on stderr) when it never attaches, so
# no rep times an untraced loop.
bpftrace_start() {
	local try
	for try in 1 2 3; do
		taskset -c 0 bpftrace -e "$1" >"$D/bt.out" 2>&1 &
		BT_PID=$!
		for _ in $(seq 300); do
			grep -q Attaching "$D/bt.out" 2>/dev/null && { sleep 0.5; return 0; }
			kill -0 $BT_PID 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL $BT_PID 2>/dev/null; wait $BT_PID
		echo "bpftrace did not attach (try $try, exit $?): $(head -c 300 "$D/bt.out")" >&2
	done
	return 1
}

# bpftrace_stop: a SIGINT that arrives while bpftrace is still setting up
# is lost, so it is repeated, then bpftrace is killed.
bpftrace_stop() {
	for _ in $(seq 50); do
		kill -INT $BT_PID 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL $BT_PID 2>/dev/null
	wait $BT_PID 2>/dev/null
}
