#!/bin/bash
# trace --serve: while a workload is traced, the same read-only HTTPS API
# as `causeway serve` answers from the database being written, with mutual
# TLS from the config file: rows grow during the trace, a client without a
# certificate is refused, and the trace still ends cleanly with the
# workload's status.
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
. "$CW_ROOT/tests/integration/fleet_lib.sh"
mkcerts
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$FAKE" ] || fail "fixture $FAKE missing (make fixtures)"
cat >"$T/cw.yaml" <<YAML
node: traced-node
server:
  tls:
    cert: $PKI/server.crt
    key: $PKI/server.key
    client_ca: $PKI/ca.crt
YAML
export LD_LIBRARY_PATH=$CW_BUILD/fixtures/fakecuda
CW_FAKE_SYNC_US=200 "$CW_BIN" --config "$T/cw.yaml" trace --db "$T/t.db" --no-view --serve 127.0.0.1:0 \
	--cuda-lib "$FAKE" -- "$CW_BUILD/fixtures/fake_workload" -T 8 -m sync >"$T/w.out" 2>"$T/t.err" &
TP=$!
PIDS+=("$TP")
PORT=
for _ in $(seq 1 100); do
	PORT=$(sed -n 's/.*serving https:\/\/127\.0\.0\.1:\([0-9]*\) for node "traced-node".*client certificates required.*/\1/p' "$T/t.err")
	[ -n "$PORT" ] && break
	kill -0 $TP 2>/dev/null || break
	sleep 0.1
done
[ -n "$PORT" ] || fail "trace did not start serving: $(cat "$T/t.err")"
B=https://127.0.0.1:$PORT
TLS=(--cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key")
count() {
	curl -s --max-time 5 "${TLS[@]}" "$B/api/v1/query?sql=SELECT%20count(*)%20FROM%20events%20WHERE%20op%3D'cudaStreamSynchronize'" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["rows"][0][0])'
}
sleep 1.5
n1=$(count) || fail "query during the trace failed"
sleep 1.5
n2=$(count) || fail "second query during the trace failed"
echo "rows during the trace: $n1 then $n2"
[ "$n1" -gt 0 ] && [ "$n2" -gt "$n1" ] || fail "rows do not grow while tracing: $n1, $n2"
# /mcp is mounted on the live server too: a session, then trace_summary
# over the database being written.
H=(-H "Content-Type: application/json" -H "Accept: application/json, text/event-stream")
sid=$(curl -s -D - -o /dev/null --max-time 5 "${TLS[@]}" "${H[@]}" -d \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	"$B/mcp" | tr -d '\r' | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: //p')
[ -n "$sid" ] || fail "no MCP session from trace --serve"
sync_calls=$(curl -s --max-time 10 "${TLS[@]}" "${H[@]}" -H "Mcp-Session-Id: $sid" -d \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trace_summary","arguments":{}}}' "$B/mcp" |
	python3 -c 'import json,sys; r=json.load(sys.stdin)["result"]["structuredContent"]; print(sum(o["count"] for o in r["ops"] if o["op"]=="cudaStreamSynchronize"))')
[ "${sync_calls:-0}" -gt 0 ] || fail "MCP trace_summary during the trace: $sync_calls"
# Still tracing (the workload runs 8 s): the checks below talk to the live server.
kill -0 $TP 2>/dev/null || fail "trace ended before the certificate checks: $(cat "$T/t.err")"
c=$(code "$B/api/v1/health" --cacert "$PKI/ca.crt")
[ "$c" = 403 ] || fail "no client certificate: got $c, want 403"
node=$(curl -s --max-time 5 "${TLS[@]}" "$B/api/v1/health" | python3 -c 'import json,sys; print(json.load(sys.stdin)["node"])')
[ "$node" = traced-node ] || fail "health node $node"
wait $TP
rc=$?
[ $rc = 0 ] || fail "trace exited $rc: $(cat "$T/t.err")"
[ "$(sqlite3 "$T/t.db" "SELECT DISTINCT node FROM events")" = traced-node ] || fail "rows not under the config's node"
echo ok
