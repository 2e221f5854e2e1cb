#!/bin/bash
# dashboard_api.sh BUILD [DB]: what the dashboard's first paint costs the API
# on the 10-million-call database (bigdb_bench, as explain_latency.sh builds
# it; made when missing). serve runs on loopback (plain HTTP, so TLS set-up
# is not in the figures); the first paint is the four requests a page makes
# before it can draw: /overview, /chains, /ops/series?points=60 and
# /timeline of the top chain's thread over its timeline_window (from the
# /chains answer), one after the other. Warm: median of 5 paints with the
# file in the page cache. Cold: median of 3, each after the database's
# pages are evicted (posix_fadvise DONTNEED on this file only). Also timed:
# /ops/detail of the top chain's op and the timeline of the whole window
# (one 20,000-interval page), which the page loads after the first paint.
# "Just started": serve restarted on an evicted file and the paint sent at
# once, so /chains waits for the explain run the server starts at launch.
# Figures go to bench/RESULTS.md by hand.
set -eu
BUILD=${1:-build}
DB=${2:-${CW_BENCH_DIR:-/tmp/cw-bench}/bigdb-10000000.db}
CW=$BUILD/causeway
. "$(cd "$(dirname "$0")/.." && pwd)/tests/lib/auth.sh"
auth_shared # every server here and its clients share $CW_TOKEN
if [ ! -f "$DB" ]; then
	make -s BUILD="$BUILD" "$BUILD/bench/bigdb_bench" >/dev/null
	mkdir -p "$(dirname "$DB")"
	"$BUILD/bench/bigdb_bench" "$DB" 10000000 >/dev/null
fi
D=$(mktemp -d)
SRV=
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT

evict() {
	python3 -c 'import os, sys
for p in sys.argv[1:]:
    if os.path.exists(p):
        fd = os.open(p, os.O_RDONLY); os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$@"
}
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

start_serve() {
	if [ -n "$SRV" ]; then
		kill "$SRV"
		wait "$SRV" 2>/dev/null || true
	fi
	"$CW" --node bench serve --db "$DB" --listen 127.0.0.1:0 --no-tls 2>"$D/serve.log" &
	SRV=$!
	PORT=
	for _ in $(seq 1 100); do
		PORT=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/serve.log")
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { cat "$D/serve.log"; exit 1; }
	B=http://127.0.0.1:$PORT/api/v1
}

# ms URL OUT: one request; prints its time in ms (curl's total), fails on
# a non-200 answer.
ms() {
	local out
	out=$(curl -s "${AUTH[@]}" -o "$2" -w '%{http_code} %{time_total}' "$1")
	[ "${out%% *}" = 200 ] || { echo "HTTP ${out%% *} from $1: $(head -c 300 "$2")" >&2; exit 1; }
	awk -v t="${out#* }" 'BEGIN {printf "%d", t * 1000 + 0.5}'
}

# paint: the four first-paint requests; prints "overview chains series
# timeline total" in ms.
paint() {
	local o c s t win
	o=$(ms "$B/overview" "$D/overview.json")
	c=$(ms "$B/chains" "$D/chains.json")
	s=$(ms "$B/ops/series?points=60" "$D/series.json")
	win=$(python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["chains"][0]["timeline_window"]
print("tid=%d&from=%d&to=%d" % (w["tid"], w["from_ns"], w["to_ns"]))' "$D/chains.json")
	t=$(ms "$B/timeline?$win" "$D/timeline.json")
	echo "$o $c $s $t $((o + c + s + t))"
}

report() {
	local label=$1 i
	shift
	local -a cols=("$@")
	local names=(overview chains ops/series timeline total)
	printf '%s:' "$label"
	for i in 0 1 2 3 4; do
		# shellcheck disable=SC2046
		printf ' %s %s ms' "${names[$i]}" "$(median $(printf '%s\n' "${cols[@]}" | awk -v k=$((i + 1)) '{print $k}'))"
		[ $i -lt 4 ] && printf ','
	done
	echo
}

echo "database: $DB ($(du -h "$DB" | cut -f1)), $(nproc) CPUs"
# A page opened right after serve starts on a cold file: /chains waits for
# (or runs) the first explain.
fresh=()
for _ in 1 2 3; do
	evict "$DB" "$DB-wal"
	start_serve
	fresh+=("$(paint)")
done
report "just started, cold file (median of 3)" "${fresh[@]}"
paint >/dev/null # fills the cache
warm=()
for _ in 1 2 3 4 5; do warm+=("$(paint)"); done
report "warm first paint (median of 5)" "${warm[@]}"
cold=()
for _ in 1 2 3; do
	evict "$DB" "$DB-wal"
	cold+=("$(paint)")
done
report "cold first paint (median of 3)" "${cold[@]}"
python3 -c '
import json, sys
t = json.load(open(sys.argv[1]))
print("timeline of the top chain: %d intervals in %d lanes, %d bytes" % (t["intervals"], len(t["lanes"]),
      len(open(sys.argv[1]).read())))' "$D/timeline.json"

op=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["chains"][0]["op"])' "$D/chains.json")
tid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["chains"][0]["tid"])' "$D/chains.json")
det=() full=()
for _ in 1 2 3 4 5; do
	det+=("$(ms "$B/ops/detail?op=$op&limit=20" "$D/detail.json")")
	full+=("$(ms "$B/timeline?tid=$tid" "$D/full.json")")
done
echo "after the paint: ops/detail?op=$op median $(median "${det[@]}") ms; timeline?tid=$tid (whole window, first 20000-interval page) median $(median "${full[@]}") ms"
