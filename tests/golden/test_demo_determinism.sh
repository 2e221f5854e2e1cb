#!/bin/bash
# Same scenario and seed: identical rows and diagnosis; another seed: other rows.
set -eu
BIN=${CW_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

dump() {
	local db=$1
	for sql in "SELECT * FROM sessions" \
		"SELECT count(*) AS n, sum(duration_ns) AS d, sum(mono_ns % 1000003) AS h FROM events" \
		"SELECT op, count(*) AS n, sum(duration_ns) AS total, max(duration_ns) AS mx FROM events GROUP BY op ORDER BY op" \
		"SELECT * FROM offcpu ORDER BY id LIMIT 200" \
		"SELECT reason, by_comm, count(*) AS n, sum(duration_ns) AS d FROM offcpu GROUP BY 1, 2 ORDER BY 1, 2" \
		"SELECT * FROM snapshots ORDER BY id" \
		"SELECT id, hash, frames FROM py_stacks ORDER BY id" \
		"SELECT kind, op, severity, summary, json FROM chains ORDER BY id"; do
		"$BIN" query --db "$db" --json "$sql"
	done
}
for s in incident io-contention; do
	"$BIN" demo "$s" --db "$tmp/a.db" --seed 7 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d["diagnosis"], sort_keys=True), d["events"])' > "$tmp/a.out"
	"$BIN" demo "$s" --db "$tmp/b.db" --seed 7 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps(d["diagnosis"], sort_keys=True), d["events"])' > "$tmp/b.out"
	cmp "$tmp/a.out" "$tmp/b.out" || { echo "$s: diagnosis differs between runs with seed 7"; exit 1; }
	dump "$tmp/a.db" > "$tmp/a.dump"
	dump "$tmp/b.db" > "$tmp/b.dump"
	cmp "$tmp/a.dump" "$tmp/b.dump" || { echo "$s: rows differ between runs with seed 7"; diff "$tmp/a.dump" "$tmp/b.dump" | head; exit 1; }
	[ "$(wc -c < "$tmp/a.dump")" -gt 10000 ] || { echo "$s: dump suspiciously small"; exit 1; }
	"$BIN" demo "$s" --db "$tmp/c.db" --seed 8 > /dev/null
	dump "$tmp/c.db" > "$tmp/c.dump"
	if cmp -s "$tmp/a.dump" "$tmp/c.dump"; then
		echo "$s: seeds 7 and 8 wrote identical rows"; exit 1
	fi
	echo "ok $s"
done
# The default wall clock is the fixed 2026-01-01T00:00:00Z; --now moves it.
"$BIN" demo healthy --db "$tmp/d.db" > /dev/null
[ "$("$BIN" query --db "$tmp/d.db" --json "SELECT started_wall_ns AS w FROM sessions" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["w"])')" = 1767225600000000000 ]
"$BIN" demo healthy --db "$tmp/d.db" --now > /dev/null
w=$("$BIN" query --db "$tmp/d.db" --json "SELECT started_wall_ns AS w FROM sessions" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["w"])')
now=$(date +%s)
[ $((w / 1000000000)) -ge $((now - 60)) ] && [ $((w / 1000000000)) -le $((now + 1)) ] || { echo "--now start $w is not now ($now)"; exit 1; }
