#!/bin/bash
# serve and mcp name the nodes of the file they read, not this host: a
# database of node gpu7 (copied off it) answers as gpu7, a merged file as
# "2 nodes: gpu7, gpu8"; --node still decides when given.
set -u
. "$CW_ROOT/tests/lib/plain_agents.sh"
[ "$(hostname)" != gpu7 ] || { echo "this host is named gpu7"; exit 77; }

"$CW_BIN" --node gpu7 demo memcpy-bottleneck --db "$tmp/a.db" > /dev/null || fail "demo a"
"$CW_BIN" --node gpu8 demo memcpy-bottleneck --db "$tmp/b.db" > /dev/null || fail "demo b"
"$CW_BIN" merge "$tmp/a.db" "$tmp/b.db" -o "$tmp/m.db" > /dev/null || fail "merge"

# serve_node DB [global flags...]: sets NODE to what /api/v1/health says.
serve_node() {
	plain_agent "$@"
	NODE=$(curl -s --max-time 5 -H "Authorization: Bearer $CW_TOKEN" "$ADDR/api/v1/health" |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["node"])')
}
serve_node "$tmp/a.db"
[ "$NODE" = gpu7 ] || fail "serve of gpu7's file: $NODE"
serve_node "$tmp/m.db"
[ "$NODE" = "2 nodes: gpu7, gpu8" ] || fail "serve of a merged file: $NODE"
serve_node "$tmp/m.db" --node here
[ "$NODE" = here ] || fail "--node no longer decides: $NODE"

out=$(printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trace_summary","arguments":{}}}' |
	"$CW_BIN" mcp --db "$tmp/m.db" 2> /dev/null | tail -1)
echo "$out" | grep -q '"node":"2 nodes: gpu7, gpu8"' || fail "mcp on a merged file: ${out:0:300}"
echo ok
