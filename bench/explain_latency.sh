#!/bin/bash
# explain_latency.sh BUILD [CALLS...]: explain and query-summary wall time on
# databases of CALLS calls (default 1,000,000 and 10,000,000) built by
# bigdb_bench through the real pipeline. Warm: median of 5 runs with the file
# in the page cache. Cold: median of 3 runs, each after the database's pages
# are evicted from the page cache (posix_fadvise DONTNEED on this file only,
# so the rest of the machine keeps its cache). Peak RSS from /usr/bin/time -v.
# Databases are cached in $CW_BENCH_DIR (default /tmp/cw-bench); delete them
# when done. CW_BENCH_LAYERS=1 builds them with bigdb_bench's "layers" (TCP
# retransmits, CUDA graph churn, page allocations and an OOM kill, so the
# network, graph_churn and oom_kill rules fire) as bigdb-CALLS-layers.db.
set -eu
BUILD=${1:-build}
shift || true
CALLS=("$@")
[ ${#CALLS[@]} -gt 0 ] || CALLS=(1000000 10000000)
DIR=${CW_BENCH_DIR:-/tmp/cw-bench}
mkdir -p "$DIR"
[ -x /usr/bin/time ] || { echo "explain_latency.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 1; }

evict() {
	python3 -c 'import os, sys
for p in sys.argv[1:]:
    if os.path.exists(p):
        fd = os.open(p, os.O_RDONLY); os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"
}

# run_ms CMD...: prints the wall time of one run in ms, output discarded.
run_ms() {
	local s e
	s=$(date +%s%N)
	"$@" >/dev/null
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
}

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

for calls in "${CALLS[@]}"; do
	if [ "${CW_BENCH_LAYERS:-0}" = 1 ]; then
		DB=$DIR/bigdb-$calls-layers.db
		[ -f "$DB" ] || "$BUILD"/bench/bigdb_bench "$DB" "$calls" layers
	else
		DB=$DIR/bigdb-$calls.db
		[ -f "$DB" ] || "$BUILD"/bench/bigdb_bench "$DB" "$calls"
	fi
	echo "database: $calls calls, $(du -h "$DB" | cut -f1)"
	for cmd in "explain --no-store" "explain --json --no-store" "query"; do
		warm=() cold=()
		# shellcheck disable=SC2086
		"$BUILD"/causeway $cmd --db "$DB" >/dev/null # fills the cache
		for run in 1 2 3 4 5; do
			# shellcheck disable=SC2086
			warm+=("$(run_ms "$BUILD"/causeway $cmd --db "$DB")")
		done
		for run in 1 2 3; do
			evict "$DB" "$DB-wal"
			# shellcheck disable=SC2086
			cold+=("$(run_ms "$BUILD"/causeway $cmd --db "$DB")")
		done
		# shellcheck disable=SC2086
		rss=$(/usr/bin/time -v "$BUILD"/causeway $cmd --db "$DB" 2>&1 >/dev/null |
			awk -F': ' '/Maximum resident set size/ {print $2}')
		echo "causeway $cmd: warm median $(median "${warm[@]}") ms (${warm[*]}), cold median $(median "${cold[@]}") ms (${cold[*]}), peak RSS ${rss} KB"
	done
done
