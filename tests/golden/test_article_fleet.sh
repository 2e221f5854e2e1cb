#!/bin/bash
# The fleet article's command lines (query --nodes, explain --nodes) and its
# MCP tool calls (query_fleet with the four actions it names: chains, sql,
# ops, overview) run as printed against four agents, and every answer comes
# from all four nodes (tests/golden/articles_fleet.py checks each).
#
# The four agents: `causeway --node gpu-node-0N serve --no-tls` on
# 127.0.0.1:0 with one shared token, over demo databases (gpu-node-01 the
# CPU-contention incident, the others healthy, as in the article). The
# article's hosts gpu-node-0N:8080 map to them by rewriting each --nodes
# value host by host, and, for `mcp --fleet`, through a config whose
# fleet.nodes is the article's list with the same hosts mapped, and whose
# fleet.timeout (10 s) allows for a loaded machine.
# Then one agent stops: the article's query still answers from the other
# three, with a warning naming the one that did not answer.
. "$CW_ROOT/tests/lib/plain_agents.sh"

map=()
nodes_yaml='fleet:
  timeout: 10s
  nodes:'
for i in 1 2 3 4; do
	scenario=healthy
	[ $i = 1 ] && scenario=incident
	"$CW_BIN" --node gpu-node-0$i demo $scenario --db "$tmp/n$i.db" > /dev/null || fail "demo $scenario"
	plain_agent "$tmp/n$i.db" --node gpu-node-0$i
	map+=("gpu-node-0$i:8080=$ADDR=gpu-node-0$i")
	nodes_yaml+=$'\n'"    - $ADDR"
	addr[i]=$ADDR
	pid[i]=$LAST_PID
done
printf '%s\n' "$nodes_yaml" > "$tmp/causeway.yaml"
(cd "$tmp" && python3 "$CW_ROOT/tests/golden/articles_fleet.py" "$CW_BIN" "$CW_ROOT/tests/fixtures/articles" \
	"$tmp/causeway.yaml" "${map[@]}") || exit 1

kill "${pid[3]}" && wait "${pid[3]}" 2> /dev/null
"$CW_BIN" query --nodes "${addr[1]},${addr[2]},${addr[3]},${addr[4]}" \
	"SELECT node, count(*) AS n FROM events GROUP BY node" > "$tmp/o" 2> "$tmp/e" ||
	fail "one agent down: exit $?: $(cat "$tmp/e")"
got=$(awk 'NR > 1 { print $1 }' "$tmp/o" | sort | tr '\n' ' ')
[ "$got" = "gpu-node-01 gpu-node-02 gpu-node-04 " ] || fail "one agent down: rows from $got"
grep -q "warning: node \"${addr[3]}\": " "$tmp/e" || fail "one agent down: no warning naming ${addr[3]}: $(cat "$tmp/e")"
echo "ok"
