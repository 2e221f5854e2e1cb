#!/bin/bash
# Fleet export of two agents holding N calls each: wall time and the
# client's peak RSS (GNU time), and the time of each phase (fetching every
# row into the client's temporary store, writing the trace). Each agent's database is the demo's
# incident scenario (48,880 CUDA calls over 92 s) repeated in time with
# SQLite until it holds N calls (ids, times and the per-second aggregates
# shifted per copy), served over plain HTTP on loopback.
#   bash bench/fleet_export.sh BUILD [N]      (N default 1000000)
#   LOCAL=1 bash bench/fleet_export.sh ...   also explain and export agent a's file
set -eu
build=${1:-build}
n=${2:-1000000}
bin=$(realpath "$build/causeway")
tmp=$(mktemp -d /tmp/cw-fleet-bench.XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
export CW_TOKEN=bench-token-$RANDOM$RANDOM$RANDOM$RANDOM

. "$(dirname "$0")/fleet_lib.sh"
start_agents
/usr/bin/time -v "$bin" export --nodes "$nodes" --node-timeout 30s --max-events 100000000 -o "$tmp/f.json" \
	2> "$tmp/time" &
tp=$!
# The two phases: fetching into the temporary store until the trace file
# gets its first bytes, then writing the trace; the client's RSS sampled
# every 0.5 s while it fetches.
t0=$(date +%s.%N)
t1=
rss_fetch=0
while kill -0 "$tp" 2> /dev/null; do
	cp=$(pgrep -P "$tp" | head -1)
	if [ -n "$cp" ] && [ -z "$t1" ]; then
		r=$(awk '/VmRSS/{print $2}' "/proc/$cp/status" 2> /dev/null)
		[ "${r:-0}" -gt "$rss_fetch" ] && rss_fetch=$r
		[ "$(cat "$tmp"/f.json* 2> /dev/null | head -c 1 | wc -c)" -gt 0 ] && t1=$(date +%s.%N)
	fi
	sleep 0.5
done
wait "$tp" || { cat "$tmp/time"; exit 1; }
t2=$(date +%s.%N)
got=$(grep -c '"ph":"X","name":"\(cuda\|cu\)' "$tmp/f.json" || true)
echo "fleet export of 2 agents x $n calls: $(grep 'Elapsed (wall clock)' "$tmp/time" | sed 's/.*: //') wall," \
	"client peak RSS $(( $(grep 'Maximum resident set size' "$tmp/time" | sed 's/.*: //') / 1024 )) MiB," \
	"$(du -m "$tmp/f.json" | cut -f1) MiB of JSON, $got CUDA slices (agents: $want events)"
# CPU seconds of the client alone: on a shared machine the wall time is
# mostly the other processes' share of the cores.
echo "  client CPU $(awk -F': ' '/User time/{u=$2} /System time/{s=$2} END{printf "%.1f s (user %.1f, system %.1f)", u + s, u, s}' "$tmp/time")"
[ -n "$t1" ] && echo "  fetch $(echo "$t1 - $t0" | bc | cut -c1-6) s ($(echo "$want / ($t1 - $t0)" | bc) rows/s," \
	"client RSS up to $((rss_fetch / 1024)) MiB), trace written in $(echo "$t2 - $t1" | bc | cut -c1-6) s"
grep 'wrote' "$tmp/time" | sed 's/^/  /'

# With LOCAL=1: explain and export of agent a's own file (N calls), each on
# a pseudo-terminal so that its progress line is drawn; the last state of
# that line and the command's time and peak RSS are printed.
if [ "${LOCAL:-0}" = 1 ]; then
	kill "${pids[@]}" 2> /dev/null || true
	for cmd in "explain --db $tmp/a.db --no-store" "export --db $tmp/a.db --max-events 100000000 -o $tmp/a.json"; do
		script -qec "/usr/bin/time -v -o $tmp/local.time $bin $cmd > $tmp/local.out" "$tmp/local.tty" > /dev/null
		echo "local ${cmd%% *} of $n calls: $(grep 'Elapsed (wall clock)' "$tmp/local.time" | sed 's/.*: //') wall," \
			"peak RSS $(( $(grep 'Maximum resident set size' "$tmp/local.time" | sed 's/.*: //') / 1024 )) MiB"
		# The progress line redraws itself with carriage returns: its states, the last few.
		tr '\r' '\n' < "$tmp/local.tty" | sed 's/\x1b\[K//g' | grep -a '^causeway: ' | tail -3 | sed 's/^/  progress: /'
	done
	head -5 "$tmp/local.out" | sed 's/^/  /'
fi
