#!/bin/bash
# Fleet export of two agents holding N calls each: wall time and the
# client's peak RSS (GNU time), and the time of each phase (fetching every
# row into the client's temporary store, writing the trace). Each agent's database is the demo's
# incident scenario (48,880 CUDA calls over 92 s) repeated in time with
# SQLite until it holds N calls (ids, times and the per-second aggregates
# shifted per copy), served over plain HTTP on loopback.
#   bash bench/fleet_export.sh BUILD [N]      (N default 1000000)
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

grow() { # DB: repeat the calls until N
	local db=$1 m k span
	m=$(sqlite3 "$db" "SELECT max((SELECT max(id) FROM calls), (SELECT max(id) FROM kevents))")
	span=$(sqlite3 "$db" "SELECT max(second) - min(second) + 1 FROM aggregates")
	k=$(( (n + $(sqlite3 "$db" "SELECT count(*) FROM calls") - 1) / $(sqlite3 "$db" "SELECT count(*) FROM calls") ))
	sqlite3 "$db" "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
		WITH RECURSIVE r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r WHERE k < $k - 1)
		INSERT INTO calls (id, th, op, t, dur, a0, a1, a2, a3, bytes, s, ret, stack, pystack, anomalous, sq, ar)
		SELECT c.id + r.k * $m, th, op, t + r.k * $span * 1000000000, dur, a0, a1, a2, a3, bytes, s, ret, stack,
		       pystack, anomalous, CASE WHEN sq IS NULL THEN NULL ELSE sq + r.k * $m END, ar
		FROM calls c, r WHERE c.id <= $m;
		WITH RECURSIVE r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r WHERE k < $k - 1)
		INSERT INTO aggregates (node, source, op, second, count, sum_ns, max_ns, hist)
		SELECT node, source, op, second + r.k * $span, count, sum_ns, max_ns, hist FROM aggregates a, r
		WHERE a.second < (SELECT min(second) FROM aggregates) + $span;
		DELETE FROM calls WHERE id IN (SELECT id FROM calls ORDER BY id DESC LIMIT max(0, (SELECT count(*) FROM calls) - $n));
		PRAGMA journal_mode=WAL;" > /dev/null
}

addrs=()
for a in a b; do
	"$bin" --node "bench-$a" demo incident --db "$tmp/$a.db" > /dev/null
	t0=$(date +%s.%N)
	grow "$tmp/$a.db"
	echo "agent $a: $(sqlite3 "$tmp/$a.db" 'SELECT count(*) FROM calls') calls," \
		"$(du -m "$tmp/$a.db" | cut -f1) MiB, built in $(echo "$(date +%s.%N) - $t0" | bc | cut -c1-5) s"
	"$bin" --node "bench-$a" serve --db "$tmp/$a.db" --listen 127.0.0.1:0 --no-tls > /dev/null 2> "$tmp/$a.log" &
	pids+=($!)
	port=
	for _ in $(seq 1 200); do
		port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/$a.log" 2> /dev/null)
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || { cat "$tmp/$a.log"; exit 1; }
	addrs+=("http://127.0.0.1:$port")
done
nodes=$(IFS=,; echo "${addrs[*]}")
want=$(( $(sqlite3 "$tmp/a.db" 'SELECT count(*) FROM events') + $(sqlite3 "$tmp/b.db" 'SELECT count(*) FROM events') ))
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
