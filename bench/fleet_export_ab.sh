#!/bin/bash
# Two builds' fleet export clients against the same two agents,
# interleaved (A B A B ...), so that the machine's load falls on both
# alike: per run the wall time, the fetch phase (until the trace file gets
# its first bytes) and the trace phase, the client's CPU and peak RSS
# (GNU time), and the CUDA slices in the trace. The agents (BUILD_A's
# serve) hold N calls each, built as bench/fleet_export.sh builds them.
#   bash bench/fleet_export_ab.sh BUILD_A BUILD_B [N] [ROUNDS]   (N 300000, ROUNDS 3)
set -eu
bin=$(realpath "$1/causeway")
bins=("$bin" "$(realpath "$2/causeway")")
n=${3:-300000}
rounds=${4:-3}
tmp=$(mktemp -d /tmp/cw-fleet-ab.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
export CW_TOKEN=bench-token-$RANDOM$RANDOM$RANDOM$RANDOM

. "$(dirname "$0")/fleet_lib.sh"
start_agents

one() { # LABEL BIN
	local t0 t1= t2 tp got
	rm -f "$tmp"/f.json*
	t0=$(date +%s.%N)
	/usr/bin/time -v "$2" export --nodes "$nodes" --node-timeout 30s --max-events 100000000 -o "$tmp/f.json" \
		2> "$tmp/time" &
	tp=$!
	while kill -0 "$tp" 2> /dev/null; do
		[ -z "$t1" ] && [ "$(cat "$tmp"/f.json* 2> /dev/null | head -c 1 | wc -c)" -gt 0 ] && t1=$(date +%s.%N)
		sleep 0.2
	done
	wait "$tp" || { cat "$tmp/time"; exit 1; }
	t2=$(date +%s.%N)
	got=$(grep -c '"ph":"X","name":"\(cuda\|cu\)' "$tmp/f.json" || true)
	printf '%s\twall %.1f s\tfetch %.1f s\ttrace %.1f s\tCPU %s s\tpeak RSS %d MiB\t%d slices (agents %d events)\tload %s\n' \
		"$1" "$(echo "$t2 - $t0" | bc)" "$(echo "${t1:-$t2} - $t0" | bc)" "$(echo "$t2 - ${t1:-$t2}" | bc)" \
		"$(awk -F': ' '/User time/{u=$2} /System time/{s=$2} END{printf "%.1f", u + s}' "$tmp/time")" \
		$(( $(grep 'Maximum resident set size' "$tmp/time" | sed 's/.*: //') / 1024 )) "$got" "$want" \
		"$(cut -d' ' -f1 /proc/loadavg)"
}
for r in $(seq 1 "$rounds"); do
	one "A($1) round $r" "${bins[0]}"
	one "B($2) round $r" "${bins[1]}"
done
