#!/bin/bash
# explain_latency.sh BUILD: explain and query-summary wall time on a
# 10-million-call database built by bigdb_bench through the real pipeline.
# The database is cached in $CW_BENCH_DIR (default /tmp/cw-bench).
set -eu
BUILD=${1:-build}
DIR=${CW_BENCH_DIR:-/tmp/cw-bench}
CALLS=${CW_BENCH_CALLS:-10000000}
DB=$DIR/bigdb-$CALLS.db
mkdir -p "$DIR"
[ -f "$DB" ] || "$BUILD"/bench/bigdb_bench "$DB" "$CALLS"
echo "database: $CALLS calls, $(du -h "$DB" | cut -f1)"
for cmd in "explain --no-store" "explain --json --no-store" "query"; do
	times=()
	for run in 1 2 3 4 5; do
		s=$(date +%s%N)
		"$BUILD"/causeway $cmd --db "$DB" >/dev/null
		e=$(date +%s%N)
		times+=($(( (e - s) / 1000000 )))
	done
	sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
	median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 3p)
	echo "causeway $cmd: median ${median} ms over 5 runs (all: $sorted)"
done
