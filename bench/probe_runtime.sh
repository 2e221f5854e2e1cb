#!/bin/bash
# probe_runtime.sh BUILD [CALLS] [REPS]: in-kernel run time per call of
# causeway's CUDA entry and return programs, beside bpftrace's latency
# histogram programs on the same calls, from the kernel's own BPF run-time
# statistics (sysctl kernel.bpf_stats_enabled: run_time_ns / run_cnt per
# program). Unlike trace_overhead.sh this excludes the uprobe trap and the
# workload, so it isolates what the programs themselves cost. Medians over
# REPS runs of CALLS cudaStreamSynchronize calls on the fake libcudart.
# Then the scheduler side: causeway's sched_switch program per run while it
# traces kp_workload's sleeper (5 ms naps) and spinner threads for 3 s.
# CW_TRACE_FLAGS (e.g. "--capture summary") is passed to the CUDA runs.
set -u
BUILD=${1:-build}
N=${2:-300000}
REPS=${3:-5}
cd "$(dirname "$0")/.."
FIX=$BUILD/fixtures
LIB=$(cd "$FIX/fakecuda" && pwd)/libcudart.so.13
[ "$(id -u)" = 0 ] || { echo "probe_runtime: needs root"; exit 1; }
BUILD=$(cd "$BUILD" && pwd)
FIX=$BUILD/fixtures
[ -x "$BUILD/causeway" ] && [ -f "$LIB" ] && [ -x "$FIX/kp_workload" ] || { echo "probe_runtime: build first: make BUILD=$BUILD all fixtures"; exit 1; }
command -v bpftrace >/dev/null || apt-get install -y -qq bpftrace >/dev/null || { echo "cannot install bpftrace"; exit 1; }
D=$(mktemp -d)
prev=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$prev; rm -rf "$D"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
. bench/bpftrace_lib.sh
export LD_LIBRARY_PATH=$FIX/fakecuda
WCPU=$(($(nproc) - 1))

. bench/bpf_stats_lib.sh
HIST="uprobe:$LIB:cudaStreamSynchronize { @s[tid] = nsecs; } uretprobe:$LIB:cudaStreamSynchronize /@s[tid]/ { @h = hist(nsecs - @s[tid]); delete(@s[tid]); }"
for r in $(seq "$REPS"); do
	# causeway: the stats are read from inside the traced command, while the
	# probes are still attached.
	# Pairs, not sessions: entry and return programs are timed apart.
	taskset -c 0 "$BUILD/causeway" trace --no-view --no-uprobe-session ${CW_TRACE_FLAGS:-} --cuda-lib "$LIB" --db "$D/t.db" -- bash -c \
		"taskset -c $WCPU $FIX/fake_workload -n $N -m sync >/dev/null; $(declare -f per_run); N=$N per_run" \
		2>/dev/null | awk '/^cw_call_enter/{e=$2} /^cw_call_return/{x=$2} END{print "causeway", e, x}'
	rm -f "$D/t.db"*
	bpftrace_start "$HIST" || continue
	taskset -c $WCPU "$FIX/fake_workload" -n "$N" -m sync >/dev/null
	per_run | awk '$1 ~ /^cudaStream/ {v[++n]=$2} END{print "bpftrace", v[1], v[2]}'
	bpftrace_stop
done >"$D/runs"
cat "$D/runs"
python3 - "$D/runs" "$N" "$REPS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(tool, i):
    v = [int(r[i]) for r in rows if r[0] == tool and len(r) > i and r[i].isdigit()]
    return statistics.median(v) if v else float("nan")
ce, cr, be, br = med("causeway", 1), med("causeway", 2), med("bpftrace", 1), med("bpftrace", 2)
print(f"probe run time, {sys.argv[2]} calls x {sys.argv[3]} reps, medians (ns per run):")
print(f"  causeway entry {ce:.0f} + return {cr:.0f} = {ce + cr:.0f}")
print(f"  bpftrace hist  {be:.0f} + {br:.0f} = {be + br:.0f} (bpftrace's two programs, in load order)")
print(f"  causeway / bpftrace = {(ce + cr) / (be + br):.2f}x")
PY

# Scheduler side: every context switch on the host runs sched_switch; the
# traced threads' off-CPU intervals are emitted on the sched ring.
for r in $(seq "$REPS"); do
	taskset -c 0 "$BUILD/causeway" trace --no-view --db "$D/k.db" -- bash -c \
		"$FIX/kp_workload threads 3000 >/dev/null; $(declare -f per_run); N=500 per_run" \
		2>/dev/null | awk '/^sched_switch/{print "sched_switch", $2}'
	rm -f "$D/k.db"*
done >"$D/sched"
python3 - "$D/sched" <<'PY'
import statistics, sys
v = [int(l.split()[1]) for l in open(sys.argv[1]) if len(l.split()) > 1]
print(f"  sched_switch per run while tracing kp_workload threads: median {statistics.median(v):.0f} ns ({len(v)} runs: {' '.join(map(str, v))})" if v else "  sched_switch: no runs recorded")
PY
