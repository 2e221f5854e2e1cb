#!/bin/bash
# metrics_scrape.sh BUILD [DB]: what /metrics costs.
#  1. metrics_bench live 200 10: the live registry with 200 traced processes
#     (per-call update cost, render time and size);
#  2. metrics_bench store DB (default: the 10-million-call database of
#     explain_latency.sh, built with bigdb_bench when missing): render time
#     and size of the store families over a large database;
#  3. trace --serve while fake_workload makes 200,000 calls/s (4 threads):
#     the agent's CPU over 8 s without scrapes, then with one scrape every
#     0.2 s (40 scrapes), alternated 3 times; the difference per scrape is the
#     render's cost, and at the usual 15 s scrape interval that is the share
#     of a core it costs.
# Needs root for part 3. Figures go to bench/RESULTS.md by hand.
set -eu
. "$(cd "$(dirname "$0")/.." && pwd)/tests/lib/auth.sh"
auth_shared # every server here and its clients share $CW_TOKEN
BUILD=${1:-build}
DB=${2:-${CW_BENCH_DIR:-/tmp/cw-bench}/bigdb-10000000.db}
CW=$BUILD/causeway
FIX=$BUILD/fixtures
LIB=$FIX/fakecuda/libcudart.so.13
make -s BUILD="$BUILD" "$BUILD/bench/metrics_bench" "$BUILD/bench/bigdb_bench" >/dev/null
"$BUILD/bench/metrics_bench" live 200 10
if [ ! -f "$DB" ]; then
	mkdir -p "$(dirname "$DB")"
	"$BUILD/bench/bigdb_bench" "$DB" 10000000 >/dev/null
fi
"$BUILD/bench/metrics_bench" store "$DB"

[ "$(id -u)" = 0 ] || { echo "part 3 needs root"; exit 0; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
export LD_LIBRARY_PATH=$FIX/fakecuda
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for rep in 1 2 3; do
	for mode in quiet scraped; do
		rm -f "$D/s.db"*
		"$CW" trace --no-view --cuda-lib "$LIB" --db "$D/s.db" --serve 127.0.0.1:0 \
			-- "$FIX/fake_workload" -t 4 -T 12 -r 50000 -m sync -w 500 >"$D/o" 2>"$D/s.err" &
		tp=$!
		port=
		for _ in $(seq 1 100); do
			port=$(sed -n 's/.*serving https:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/s.err")
			[ -n "$port" ] && break
			sleep 0.1
		done
		sleep 2.5
		c0=$(cpu $tp)
		n=0 bytes=0 ms=0
		if [ $mode = scraped ]; then
			end=$((SECONDS + 8))
			while [ $SECONDS -lt $end ]; do
				out=$(curl -sk "${AUTH[@]}" -o "$D/m" -w '%{time_total}' "https://127.0.0.1:$port/metrics")
				ms=$(awk -v a="$ms" -v b="$out" 'BEGIN{print a + b * 1000}')
				bytes=$(stat -c %s "$D/m")
				n=$((n + 1))
				sleep 0.2
			done
		else
			sleep 8
		fi
		c1=$(cpu $tp)
		wait $tp || true
		awk -v m=$mode -v n=$n -v c=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" -v ms="$ms" -v b="$bytes" -v r=$rep 'BEGIN {
			printf "  rep %d %-7s agent CPU %.2f s in ~8 s", r, m, c / hz
			if (n) printf ", %d scrapes, mean %.1f ms each, %d bytes", n, ms / n, b
			printf "\n" }'
	done
done
