#!/bin/bash
# Every SQL statement the four articles in tests/fixtures/articles show
# runs as printed: on a demo database, on a merged file of two, and through
# query --nodes on two agents (plain HTTP on loopback). The events views
# answer to the articles' column names (duration beside duration_ns).
. "$CW_ROOT/tests/lib/plain_agents.sh"

python3 "$CW_ROOT/tests/golden/articles_sql.py" "$CW_ROOT/tests/fixtures/articles" > "$tmp/sql" || fail "extracting"
n=$(tr -cd '\0' < "$tmp/sql" | wc -c)
[ "$n" -ge 2 ] || fail "only $((n + 1)) statements found in the articles"
grep -q 'avg(duration)/1000' "$tmp/sql" || fail "the fleet article's query was not extracted"

"$CW_BIN" --node node-a demo incident --db "$tmp/a.db" > /dev/null || fail "demo a"
"$CW_BIN" --node node-b demo nccl-straggler --db "$tmp/b.db" > /dev/null || fail "demo b"
"$CW_BIN" merge "$tmp/a.db" "$tmp/b.db" -o "$tmp/m.db" > /dev/null || fail "merge"
addrs=()
for n in a b; do
	plain_agent "$tmp/$n.db" --node "node-$n"
	addrs+=("$ADDR")
done
nodes=$(IFS=,; echo "${addrs[*]}")

count=0
while IFS= read -r -d '' item; do
	src=${item%%$'\t'*}
	sql=${item#*$'\t'}
	count=$((count + 1))
	for db in a m; do
		"$CW_BIN" query --db "$tmp/$db.db" "$sql" > "$tmp/o" 2> "$tmp/e" ||
			fail "$src statement $count on $db.db: $(cat "$tmp/e")"$'\n'"$sql"
	done
	"$CW_BIN" query --nodes "$nodes" "$sql" > "$tmp/o" 2> "$tmp/e" ||
		fail "$src statement $count on the fleet: $(cat "$tmp/e")"$'\n'"$sql"
	[ ! -s "$tmp/e" ] || fail "$src statement $count on the fleet warned: $(cat "$tmp/e")"
done < <(cat "$tmp/sql"; printf '\0')
# The fleet article's own query: a row per node and source, both nodes.
"$CW_BIN" query --nodes "$nodes" --json "SELECT node, source, count(*) as cnt, avg(duration)/1000 as avg_us
     FROM events GROUP BY node, source" > "$tmp/j" || fail "fleet article query"
python3 - "$tmp/j" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
rows = d["rows"] if isinstance(d, dict) else d
nodes = {(r["node"] if isinstance(r, dict) else r[0]) for r in rows}
if nodes != {"node-a", "node-b"}:
    print("FAIL: nodes in the answer", nodes, str(d)[:300]); sys.exit(1)
PY
echo "ok: $count statements on a file, a merged file and a fleet"
