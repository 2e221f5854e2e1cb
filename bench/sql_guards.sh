#!/bin/bash
# sql_guards.sh BUILD [BASE_REV] [CALLS]: the cost of the user-SQL guards
# (store/ro_guard.c: limits, bounded functions, watchdog, heap bound, the
# result cap on bytes sent) and of the -wal check at open, on the database
# of CALLS calls (default 10,000,000) that bigdb_bench builds through the
# real pipeline (as explain_latency.sh). The baseline is BASE_REV (default
# the merge-base with main) built in the same run from `git archive` into
# $CW_BENCH_DIR, so both binaries run on the same machine, file and page
# cache, interleaved: base, guarded, base, ... Warm: the file in the page
# cache; median of RUNS (default 5) runs each; the ratio is guarded/base.
set -eu
BUILD=${1:-build}
BASE=${2:-$(git merge-base HEAD main)}
CALLS=${3:-10000000}
RUNS=${RUNS:-5}
DIR=${CW_BENCH_DIR:-/tmp/cw-bench}
mkdir -p "$DIR"
DB=$DIR/bigdb-$CALLS.db
[ -f "$DB" ] || "$BUILD"/bench/bigdb_bench "$DB" "$CALLS"

rev=$(git rev-parse "$BASE")
BB=$DIR/base-${rev:0:12}
if [ ! -x "$BB/build/causeway" ]; then
	rm -rf "$BB"
	mkdir -p "$BB"
	git archive "$rev" | tar -x -C "$BB"
	make -s -C "$BB" BUILD=build -j"$(nproc)" build/causeway >/dev/null
fi
BASE_BIN=$BB/build/causeway
NEW_BIN=$BUILD/causeway

run_ms() {
	local s e
	s=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	e=$(date +%s%N)
	echo $(((e - s) / 1000000))
}
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

echo "database: $CALLS calls, $(du -h "$DB" | cut -f1); base ${rev:0:12}, guarded $(git rev-parse --short HEAD)"
bench() {
	local b=() n=() i
	"$BASE_BIN" "$@" --db "$DB" >/dev/null 2>&1 || true # fills the cache
	"$NEW_BIN" "$@" --db "$DB" >/dev/null 2>&1 || true
	for i in $(seq "$RUNS"); do
		b+=("$(run_ms "$BASE_BIN" "$@" --db "$DB")")
		n+=("$(run_ms "$NEW_BIN" "$@" --db "$DB")")
	done
	local mb mn
	mb=$(median "${b[@]}")
	mn=$(median "${n[@]}")
	printf '%-60.60s base %6d ms  guarded %6d ms  ratio %s  (base %s; guarded %s)\n' "$*" "$mb" "$mn" \
		"$(awk -v a="$mn" -v b="$mb" 'BEGIN {printf "%.3f", b ? a / b : 0}')" "${b[*]}" "${n[*]}"
}
bench query
bench explain --no-store
bench explain --json --no-store
# SQL: no time limit in the way (the default 10 s stops the first two).
T=(--timeout 300s)
bench query "${T[@]}" "SELECT op, count(*) AS n, sum(dur) AS total FROM calls GROUP BY op"
bench query "${T[@]}" "SELECT count(*) FROM events WHERE detail LIKE '%Memcpy%'"
bench query "${T[@]}" "SELECT printf('%.3f', dur / 1e6) AS ms, op FROM calls ORDER BY dur DESC LIMIT 1000"
# The worst case: a bounded function that runs the built-in on the private
# connection (ro_guard.c), once per row of 10 M.
bench query "${T[@]}" "SELECT count(printf('%d', dur)) FROM calls"
bench query "${T[@]}" "SELECT count(*) FROM events WHERE instr(detail, 'Memcpy') > 0"
