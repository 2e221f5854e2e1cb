#!/bin/bash
# py_capture_overhead.sh BUILD [CALLS] [REPS]: the cost of capturing the
# Python stack at each traced call, as a ratio to the same trace without
# capture, measured in one run (interleaved reps, medians).
#
# bench/py_loop.py calls cudaStreamSynchronize on the fake libcudart (it
# returns at once) CALLS times from a Python stack of 5 frames and of 30,
# under:
#   none     no tracing
#   off      causeway trace --py-stacks off (the call is traced, no capture)
#   slow     causeway trace (default --py-stacks slow: fast calls pay a map
#            update and a lookup, the walk runs only for slow calls; these
#            calls are all fast)
#   all      causeway trace --py-stacks all (the BPF walk at every call)
# Ratios: (mode - none) / (off - none), the traced call's added cost with
# that capture mode over the same trace without capture.
set -u
BUILD=${1:-build}
N=${2:-100000}
REPS=${3:-5}
cd "$(dirname "$0")/.."
CW=$BUILD/causeway
LIB=$(cd "$BUILD/fixtures/fakecuda" && pwd)/libcudart.so.13
PY=${PY:-$(ls -d /root/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | head -1)}
[ -n "$PY" ] || PY=$(command -v python3)
[ "$(id -u)" = 0 ] || { echo "py_capture_overhead: needs root"; exit 1; }
[ -x "$CW" ] && [ -f "$LIB" ] || { echo "py_capture_overhead: build first: make BUILD=$BUILD all fixtures"; exit 1; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
WCPU=$(($(nproc) - 1))

per_call() { awk '$1=="loop"{print $4; exit}' "$1"; }
run() { # mode depth
	local mode=$1 depth=$2
	rm -f "$D/t.db"*
	case $mode in
	none) taskset -c $WCPU "$PY" bench/py_loop.py "$LIB" "$N" "$depth" >"$D/o" ;;
	*) taskset -c 0 "$CW" trace --no-view --py-stacks "$mode" --cuda-lib "$LIB" --db "$D/t.db" -- \
		taskset -c $WCPU "$PY" bench/py_loop.py "$LIB" "$N" "$depth" >"$D/o" 2>"$D/err" ;;
	esac
	# Under "all" every call must carry its stack, or the figure is wrong.
	if [ "$mode" = all ]; then
		local pct
		pct=$(sqlite3 "$D/t.db" "SELECT count(py_stack_id) * 100 / count(*) FROM events WHERE op = 'cudaStreamSynchronize'")
		[ "$pct" -ge 99 ] || echo "py_capture_overhead: only $pct % of the calls have a Python stack" >&2
	fi
	per_call "$D/o"
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

echo "python $("$PY" -c 'import platform; print(platform.python_version())'), $N calls, $REPS reps, $(nproc) CPUs, $(uname -r)"
for depth in 5 30; do
	declare -a A=() B=() C=() E=()
	for r in $(seq "$REPS"); do
		A+=("$(run none $depth)"); B+=("$(run off $depth)"); C+=("$(run slow $depth)"); E+=("$(run all $depth)")
	done
	a=$(median "${A[@]}"); b=$(median "${B[@]}"); c=$(median "${C[@]}"); e=$(median "${E[@]}")
	awk -v d=$depth -v a="$a" -v b="$b" -v c="$c" -v e="$e" 'BEGIN {
		printf "depth %2d: none %.0f ns/call; added per call: off +%.0f, slow +%.0f (%.2fx off), all +%.0f (%.2fx off)\n",
			d, a, b - a, c - a, (c - a) / (b - a), e - a, (e - a) / (b - a) }'
done
