#!/bin/bash
# Attach latency of library discovery (docs/trace.md, "Discovery"): how long
# a process that maps a CUDA library copy not yet attached stays stopped
# before its probes are in place and it runs on (the agent's figure: from
# the loader's _dl_debug_state event, in the kernel, to SIGCONT sent).
#
#   sudo bench/discover_latency.sh BUILD [PROCS]
#
# Four cases, one `trace -- ...` session each, PROCS processes per case
# (default 20), each on its own fresh copy (a new inode to attach):
#   exec/fake    a copy of the fake libcudart loaded at start (LD_LIBRARY_PATH)
#   dlopen/fake  the same copy dlopen'ed by main
#   exec/real    a copy of the real CUDA 13 libcudart.so.13
#   dlopen/real  the same, dlopen'ed
# Prints median and max per case (trace.discovery.attach_us_p50/_max), the
# holds and late attaches, and the wall time of the PROCS processes with
# and without trace (the launch cost of the holds and attaches).
set -eu
B=${1:?usage: discover_latency.sh BUILD [PROCS]}
N=${2:-20}
FIX=$B/fixtures
FAKE=$FIX/fakecuda/libcudart.so.13
REAL=$(ls /usr/local/cuda*/targets/*/lib/libcudart.so.13 /usr/local/cuda*/lib64/libcudart.so.13 2>/dev/null | head -1)
D=$(mktemp -d /tmp/cw-discbench-$$.XXXX)
trap 'rm -rf "$D"' EXIT
counter() { sqlite3 "$1" "SELECT value FROM counters WHERE name='$2'"; }

copies() { # DIR LIB
	for i in $(seq "$N"); do mkdir -p "$1/$i"; cp -L "$2" "$1/$i/libcudart.so.13"; done
}
# The workload of one case as a script: PROCS processes, one after the other.
script() { # KIND DIR
	for i in $(seq "$N"); do
		if [ "$1" = exec ]; then echo "LD_LIBRARY_PATH=$2/$i $FIX/first_call 1 >/dev/null"
		else echo "$FIX/first_call -d $2/$i/libcudart.so.13 1 >/dev/null"; fi
	done >"$2.sh"
}
ms() { date +%s%N; }

printf '%-12s %5s %8s %8s %6s %5s %10s %10s\n' case procs p50_us max_us held late plain_ms traced_ms
for lib in fake real; do
	src=$FAKE; [ $lib = real ] && src=$REAL
	for kind in exec dlopen; do
		c=$D/$kind-$lib
		copies "$c" "$src"
		script "$kind" "$c"
		t0=$(ms); bash "$c.sh"; t1=$(ms)
		# Fresh copies again: the plain run mapped (and cached) the first ones.
		rm -rf "$c"; copies "$c" "$src"
		"$B/causeway" trace --db "$c.db" --no-view -- bash -c "t0=\$(date +%s%N); bash $c.sh; echo \$(( (\$(date +%s%N) - t0) / 1000000 )) >$c.ms" 2>"$c.err"
		printf '%-12s %5s %8s %8s %6s %5s %10s %10s\n' "$kind/$lib" "$(counter "$c.db" trace.discovery.attach_n)" \
			"$(counter "$c.db" trace.discovery.attach_us_p50)" "$(counter "$c.db" trace.discovery.attach_us_max)" \
			"$(counter "$c.db" trace.discovery.held)" "$(counter "$c.db" trace.discovery.late)" \
			$(( (t1 - t0) / 1000000 )) "$(cat "$c.ms")"
	done
done
