#!/bin/bash
# trace_overhead.sh BUILD [CALLS] [REPS]: added cost per traced call.
#
# One workload (fake_workload: N x cudaStreamSynchronize on the fake
# libcudart, which returns at once) timed under four conditions, interleaved
# REPS times, medians reported:
#   none      no probes
#   empty     an empty uprobe + uretprobe pair on the same function (bpftrace
#             with empty actions): the trap cost every uprobe tool pays
#   causeway  causeway trace, full pipeline into SQLite
#   bpftrace  bpftrace capturing the same calls into a latency histogram
# Per-call added cost = condition - none. Ratios: causeway/empty (goal <= 1.2)
# and causeway/bpftrace (goal < 1). A uprobe trap costs microseconds on a VM,
# so only ratios measured in one run mean anything.
# Then the sustained-rate check: 50,000 and 200,000 calls/s offered (4
# threads), with causeway's CPU share, peak RSS and drops.
set -u
BUILD=${1:-build}
N=${2:-200000}
REPS=${3:-5}
cd "$(dirname "$0")/.."
CW=$BUILD/causeway
FIX=$BUILD/fixtures
LIB=$(cd "$FIX/fakecuda" && pwd)/libcudart.so.13
[ "$(id -u)" = 0 ] || { echo "trace_overhead: needs root"; exit 1; }
[ -x "$CW" ] && [ -f "$LIB" ] || { echo "trace_overhead: build first: make BUILD=$BUILD all fixtures"; exit 1; }
command -v bpftrace >/dev/null || apt-get install -y -qq bpftrace >/dev/null || { echo "cannot install bpftrace"; exit 1; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
. bench/bpftrace_lib.sh
export LD_LIBRARY_PATH=$FIX/fakecuda

# The workload runs on the last CPU, tracers (causeway's consumer, bpftrace)
# on CPU 0: what is measured is the cost on the calling thread, not
# contention for its core with the agent's userspace.
WCPU=$(($(nproc) - 1))
W() { taskset -c $WCPU "$FIX/fake_workload" "$@"; }

ns_per_call() { awk '$1=="loop"{print $4; exit}' "$1"; }

run_none() { W -n "$N" -m sync >"$D/o"; ns_per_call "$D/o"; }
run_bpftrace() { # program
	bpftrace_start "$1" || { echo NA; return; }
	W -n "$N" -m sync >"$D/o"
	bpftrace_stop
	ns_per_call "$D/o"
}
run_causeway() {
	rm -f "$D/t.db"*
	taskset -c 0 "$CW" trace --no-view --cuda-lib "$LIB" --db "$D/t.db" -- taskset -c $WCPU "$FIX/fake_workload" -n "$N" -m sync >"$D/o" 2>"$D/cw.err"
	ns_per_call "$D/o"
}
EMPTY="uprobe:$LIB:cudaStreamSynchronize {} uretprobe:$LIB:cudaStreamSynchronize {}"
HIST="uprobe:$LIB:cudaStreamSynchronize { @s[tid] = nsecs; } uretprobe:$LIB:cudaStreamSynchronize /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }"

declare -a A B C E
for r in $(seq "$REPS"); do
	A+=("$(run_none)"); E+=("$(run_bpftrace "$EMPTY")"); C+=("$(run_causeway)"); B+=("$(run_bpftrace "$HIST")")
	echo "rep $r: none ${A[-1]} empty ${E[-1]} causeway ${C[-1]} bpftrace ${B[-1]} ns/call"
done
median() { printf '%s\n' "$@" | grep -vx NA | sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
mA=$(median "${A[@]}"); mE=$(median "${E[@]}"); mC=$(median "${C[@]}"); mB=$(median "${B[@]}")
awk -v a="$mA" -v e="$mE" -v c="$mC" -v b="$mB" -v n="$N" -v reps="$REPS" 'BEGIN {
	printf "trace overhead, %d calls x %d reps, medians (ns per call):\n", n, reps
	printf "  none %.0f   empty pair %.0f   causeway %.0f   bpftrace hist %.0f\n", a, e, c, b
	printf "  added per call: empty %.0f ns, causeway %.0f ns, bpftrace %.0f ns\n", e - a, c - a, b - a
	printf "  causeway / empty pair = %.2fx   causeway / bpftrace = %.2fx\n", (c - a) / (e - a), (c - a) / (b - a)
}'
grep -q "ring drops 0" "$D/cw.err" || echo "  note: causeway reported drops: $(tail -1 "$D/cw.err")"

# Sustained rates: 4 threads, paced.
for rate in 50000 200000; do
	per=$((rate / 4))
	rm -f "$D/s.db"*
	"$CW" trace --no-view --cuda-lib "$LIB" --db "$D/s.db" -- "$FIX/fake_workload" -t 4 -T 5 -r $per -m sync -w 1000 >"$D/o" 2>"$D/s.err" &
	tp=$!
	sleep 2
	t0=$(awk '{print $14 + $15}' /proc/$tp/stat); s0=$(date +%s.%N)
	sleep 3
	t1=$(awk '{print $14 + $15}' /proc/$tp/stat); s1=$(date +%s.%N)
	hwm=$(awk '/VmHWM/{print $2}' /proc/$tp/status)
	wait $tp
	got=$(awk '$1=="calls"{print $2}' "$D/o")
	stored=$(sqlite3 "$D/s.db" "SELECT count(*) FROM events WHERE op='cudaStreamSynchronize'")
	drops=$(sqlite3 "$D/s.db" "SELECT coalesce(sum(value),0) FROM counters WHERE name IN ('trace.cuda.dropped','trace.cuda.aggregated','trace.cuda.state_map_full')")
	awk -v r=$rate -v got="$got" -v st="$stored" -v dr="$drops" -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v hwm="$hwm" -v hz="$(getconf CLK_TCK)" 'BEGIN {
		printf "  offered %d calls/s: made %d in 5 s (%.0f/s), stored %d, dropped+aggregated %d, agent CPU %.1f %% of one core, peak RSS %.1f MiB\n",
		       r, got, got / 5, st, dr, 100 * (t1 - t0) / hz / (s1 - s0), hwm / 1024 }'
done
