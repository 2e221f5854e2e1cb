#!/bin/bash
# py_probe_runtime.sh BUILD [CALLS] [REPS] PYTHON...: the in-kernel cost of
# capturing a Python stack at a CUDA call, per interpreter: the CUDA entry
# program's run time per call (kernel.bpf_stats_enabled: run_time_ns /
# run_cnt) under `trace --py-stacks all` (the frame walk at every entry)
# minus the same under `--py-stacks off`, while bench/py_loop.py calls
# cudaStreamSynchronize on the fake libcudart CALLS times from a stack 5 and
# 30 frames deep. In-kernel time excludes the uprobe trap, the workload and
# the consumer, so it holds up on a loaded machine where the per-call wall
# figures of py_capture_overhead.sh do not. Medians over REPS runs.
# PYTHON: interpreter paths; Debian sid's through bench/sid_python.sh
# wrappers (bench/README.md).
set -u
BUILD=${1:-build}
N=${2:-50000}
REPS=${3:-5}
shift 3
cd "$(dirname "$0")/.."
BUILD=$(cd "$BUILD" && pwd)
LIB=$BUILD/fixtures/fakecuda/libcudart.so.13
[ "$(id -u)" = 0 ] || { echo "py_probe_runtime: needs root"; exit 1; }
[ -x "$BUILD/causeway" ] && [ -f "$LIB" ] || { echo "py_probe_runtime: build first: make BUILD=$BUILD all fixtures"; exit 1; }
D=$(mktemp -d)
prev=$(sysctl -n kernel.bpf_stats_enabled)
trap 'sysctl -qw kernel.bpf_stats_enabled=$prev; rm -rf "$D"' EXIT
sysctl -qw kernel.bpf_stats_enabled=1
WCPU=$(($(nproc) - 1))
. bench/bpf_stats_lib.sh
for py in "$@"; do
	ver=$("$py" -c 'import platform; print(platform.python_version())')
	for depth in 5 30; do
		for mode in off all; do
			for r in $(seq "$REPS"); do
				# Pairs, not sessions: the entry program is timed apart.
				taskset -c 0 "$BUILD/causeway" trace --no-view --no-uprobe-session --py-stacks $mode --cuda-lib "$LIB" \
					--db "$D/t.db" -- bash -c "taskset -c $WCPU $py bench/py_loop.py $LIB $N $depth >/dev/null;
					$(declare -f per_run); N=$N per_run" 2>/dev/null | awk '/^cw_call_enter/{print $2}'
				rm -f "$D/t.db"*
			done | sort -n | awk -v v="$ver" -v d=$depth -v m=$mode '{a[NR]=$1} END {print v, d, m, a[int((NR + 1) / 2)]}'
		done
	done
done >"$D/rows"
python3 - "$D/rows" "$N" "$REPS" <<'PY'
import sys
rows = {}
for l in open(sys.argv[1]):
    v, d, m, ns = l.split()
    rows[(v, int(d), m)] = int(ns) if ns.isdigit() else None
print(f"CUDA entry program, ns per call (median of {sys.argv[3]} runs of {sys.argv[2]} calls):")
print("| python | depth | --py-stacks off | all | capture (all - off) |")
print("|---|---:|---:|---:|---:|")
for v in sorted({k[0] for k in rows}):
    for d in (5, 30):
        off, al = rows.get((v, d, "off")), rows.get((v, d, "all"))
        cap = al - off if off is not None and al is not None else None
        print(f"| {v} | {d} | {off} | {al} | {cap} |")
PY
