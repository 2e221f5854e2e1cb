#!/bin/bash
# The MCP server driven by the official TypeScript SDK client (tests/mcp,
# pinned in package-lock.json): over stdio (`causeway mcp`, whose fleet tool
# asks a live agent and a dead one) and over HTTPS with mutual TLS and a
# bearer token (`serve`'s /mcp). Every tool is called on a demo database and
# checked against explain --json / query --json; bad arguments, an unknown
# tool, a write through run_sql, an oversized request and clients without a
# certificate or token are refused, and the server keeps serving; nccl_ranks
# answers explain --ranks --json's rows on an NCCL demo database;
# slow_requests answers SQL's rows and counts on a database with requests.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
"$CW_ROOT/scripts/install-mcp-tests.sh"
rc=$?
[ $rc = 77 ] && { echo "skip: node/npm not installed"; exit 77; }
[ $rc = 0 ] || fail "npm ci in tests/mcp failed"
mkcerts
"$CW_BIN" demo --db "$T/d.db" >/dev/null 2>&1 || fail "demo database"
"$CW_BIN" demo nccl-straggler --db "$T/nccl.db" >/dev/null 2>&1 || fail "NCCL demo database"
cp "$T/d.db" "$T/req.db" && python3 "$CW_ROOT/tests/fixtures/requests_db.py" "$T/req.db" >/dev/null ||
	fail "requests database"
echo "mcp-token-$RANDOM$RANDOM" >"$T/token"
start_agent gpu-1 "$T/d.db" --cert "$PKI/server.crt" --key "$PKI/server.key" \
	--client-ca "$PKI/ca.crt" --token-file "$T/token"

# Raw stdio framing: an over-long line is a parse error, and the next
# message on the same stream is still answered.
out=$({
	printf '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}\n'
	head -c 1200000 /dev/zero | tr '\0' 'x'
	printf '\n{"jsonrpc":"2.0","id":2,"method":"ping"}\n'
} | "$CW_BIN" mcp --db "$T/d.db" 2>"$T/mcp.err")
echo "$out" | grep -q '"code":-32700,"message":"message larger than' || fail "over-long line: $out"
echo "$out" | grep -q '"id":2,"result":{}' || fail "no answer after the over-long line: $out"
[ "$(echo "$out" | wc -l)" = 3 ] || fail "stdout holds something besides protocol: $out"

mkdir -p "$T/out"
# export_timeline writes only inside the export directory.
printf 'mcp:\n  export_dir: %s\n' "$T/out" >"$T/mcp.yaml"
cd "$CW_ROOT/tests/mcp" || exit 1
CW_BIN=$CW_BIN MCP_DB=$T/d.db MCP_NCCL_DB=$T/nccl.db MCP_REQ_DB=$T/req.db MCP_URL=https://127.0.0.1:$PORT/mcp MCP_CA=$PKI/ca.crt \
	MCP_CERT=$PKI/client.crt MCP_KEY=$PKI/client.key MCP_WRONG_CERT=$PKI/wrong.crt \
	MCP_WRONG_KEY=$PKI/wrong.key MCP_TOKEN=$(cat "$T/token") MCP_FLEET=127.0.0.1:$PORT,127.0.0.1:1 \
	MCP_OUT=$T/out MCP_CONFIG=$T/mcp.yaml timeout 120 node client_test.mjs || fail "SDK client checks failed"
# The agent served every request above and is still up.
kill -0 "$LAST_PID" || fail "serve died"
