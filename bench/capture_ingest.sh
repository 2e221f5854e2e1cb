#!/bin/bash
# capture_ingest.sh BUILD [RATE] [REPS]: the agent's CPU per traced call
# with --capture full and --capture summary, alternating run by run on the
# same machine. Each run: 4 threads of fake_workload paced to RATE calls/s
# in all (default 200000) for 8 s of fast cudaStreamSynchronize calls; the
# agent's CPU (utime + stime from /proc) is read at 2 s and at 7 s, so
# start-up and the final drain are left out. Also: calls made, rows stored,
# calls folded in the kernel, calls lost (dropped + aggregated), peak RSS.
set -u
BUILD=${1:-build}
RATE=${2:-200000}
REPS=${3:-3}
cd "$(dirname "$0")/.."
CW=$BUILD/causeway
FIX=$BUILD/fixtures
LIB=$(cd "$FIX/fakecuda" && pwd)/libcudart.so.13
[ "$(id -u)" = 0 ] || { echo "capture_ingest: needs root"; exit 1; }
[ -x "$CW" ] && [ -f "$LIB" ] || { echo "capture_ingest: build first: make BUILD=$BUILD all fixtures"; exit 1; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
export LD_LIBRARY_PATH=$FIX/fakecuda
hz=$(getconf CLK_TCK)
for r in $(seq "$REPS"); do
	for mode in full summary; do
		rm -f "$D/s.db"*
		"$CW" trace --no-view --capture $mode --cuda-lib "$LIB" --db "$D/s.db" -- \
			"$FIX/fake_workload" -t 4 -T 8 -r $((RATE / 4)) -m sync -w 1000 >"$D/o" 2>"$D/e" &
		tp=$!
		sleep 2
		t0=$(awk '{print $14 + $15}' /proc/$tp/stat); s0=$(date +%s.%N)
		sleep 5
		t1=$(awk '{print $14 + $15}' /proc/$tp/stat); s1=$(date +%s.%N)
		hwm=$(awk '/VmHWM/{print $2}' /proc/$tp/status)
		wait $tp
		c() { sqlite3 "$D/s.db" "SELECT coalesce(sum(value), 0) FROM counters WHERE name IN ($1)"; }
		got=$(awk '$1=="calls"{print $2}' "$D/o")
		stored=$(sqlite3 "$D/s.db" "SELECT count(*) FROM events WHERE op='cudaStreamSynchronize'")
		echo "$mode $got $stored $(c "'trace.cuda.folded'") $(c "'trace.cuda.dropped','trace.cuda.aggregated','trace.cuda.state_map_full','trace.cuda.fold_lost'") $(echo "$t1 $t0 $hz $s1 $s0" | awk '{printf "%.4f", ($1 - $2) / $3 / ($4 - $5)}') $hwm"
	done
done >"$D/runs"
python3 - "$D/runs" "$RATE" <<'PY'
import statistics, sys
runs = [l.split() for l in open(sys.argv[1]) if len(l.split()) == 7]
print(f"agent ingest at {sys.argv[2]} calls/s offered (4 threads, 8 s; CPU over seconds 2-7):")
for m, got, st, fo, lost, cpu, hwm in runs:
    print(f"  {m:8s} made {int(got):>9,} stored {int(st):>9,} folded {int(fo):>9,} lost {int(lost):>7,}"
          f"  agent CPU {100 * float(cpu):5.1f} % of a core  peak RSS {int(hwm) / 1024:.0f} MiB")
med = lambda m: statistics.median(float(r[5]) for r in runs if r[0] == m)
f, s = med("full"), med("summary")
print(f"  medians: full {100 * f:.1f} %, summary {100 * s:.1f} % of a core; summary / full = {s / f:.2f}x")
PY
