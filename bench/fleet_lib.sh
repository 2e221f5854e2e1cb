# Shared by bench/fleet_export.sh and bench/fleet_export_ab.sh: agents'
# databases grown to N calls and served over plain HTTP on loopback.
# Needs $bin (the serving causeway), $n, $tmp and an array pids.

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

# Two agents a and b of N calls each; their addresses in $nodes, their
# events in $want.
start_agents() {
	local a t0 port addrs=()
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
}
