#!/bin/bash
# causeway mcp over stdio on a fixed database (tests/fixtures/query_db.c):
# a fixed transcript (in any order: tool calls answer when done) of the handshake, a summary, SQL, a refused write and
# protocol errors, byte for byte; stdout holds protocol only; --help; a bad
# flag.
set -eu
fix=$CW_BUILD/fixtures/query_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fix" "$tmp/q.db"
fail() { echo "FAIL: $*"; exit 1; }

cat >"$tmp/in" <<'IN'
{"jsonrpc":"2.0","id":0,"method":"tools/list"}
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"golden","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trace_summary","arguments":{"limit":2}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_sql","arguments":{"sql":"SELECT op, count(*) AS n FROM events GROUP BY op ORDER BY op"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_sql","arguments":{"sql":"UPDATE events SET op = 'x'"}}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"trace_summary","arguments":{"limit":0}}}
{"jsonrpc":"2.0","id":6,"method":"nope"}
{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"nope"}}
[{"jsonrpc":"2.0","id":8,"method":"ping"}]
not json
IN
"$CW_BIN" --node golden mcp --db "$tmp/q.db" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
# elapsed_ns is the one value that changes from run to run.
sed -i 's/"elapsed_ns":[0-9]*/"elapsed_ns":N/' "$tmp/out"
cat >"$tmp/want" <<'OUT'
{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"the session is not initialized: send initialize first"}}
{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-03-26","capabilities":{"tools":{"listChanged":false},"prompts":{"listChanged":false},"resources":{"subscribe":false,"listChanged":false},"logging":{},"completions":{}},"serverInfo":{"name":"causeway","title":"causeway","version":"0.1.0"},"instructions":"causeway answers why GPU work is slow from a trace database: CUDA, driver and NCCL calls joined per thread with scheduler, I/O and memory events. Start with causal_chains (the diagnosis, most severe first) or trace_summary (per-op latency); drill down with explain_call and stacks using the ids in those results; use run_sql for anything else (read the causeway://schema resource first). Quote numbers from results; never estimate them."}}
{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"nccl/ncclAllReduce: 10 calls, p50 19.9ms, p99 19.9ms, max 20.0ms, 2.0% of wall time\ncuda/cudaMalloc: 100 calls, p50 1.0ms, p99 48.2ms, max 50.0ms, 2.0% of wall time\n(2 of 3 ops; raise limit for more)\n"}],"structuredContent":{"node":"golden","window":{"from_second":1700000000,"to_second":1700000009,"window_ns":10000000000},"ops":[{"source":"nccl","op":"ncclAllReduce","count":10,"p50_ns":19922944,"p95_ns":19922944,"p99_ns":19922944,"max_ns":20000000,"total_ns":200000000,"wall_share":0.02,"failed":0},{"source":"cuda","op":"cudaMalloc","count":100,"p50_ns":1015808,"p95_ns":1015808,"p99_ns":48234496,"max_ns":50000000,"total_ns":198000000,"wall_share":0.0198,"failed":0}],"row_count":2,"total_rows":3,"truncated":true},"isError":false}}
{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"op\tn\ncudaMalloc\t100\ncudaMemcpy\t50\nncclAllReduce\t10\n(3 rows)\n"}],"structuredContent":{"columns":["op","n"],"rows":[{"op":"cudaMalloc","n":100},{"op":"cudaMemcpy","n":50},{"op":"ncclAllReduce","n":10}],"row_count":3,"truncated":false,"max_rows":50,"elapsed_ns":N},"isError":false}}
{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"query is read-only: UPDATE not allowed; run_sql takes one read-only SELECT (see causeway://schema)"}],"isError":true}}
{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"argument \"limit\" must be between 1 and 1000"}],"isError":true}}
{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"method \"nope\" not found"}}
{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown tool \"nope\"; tools/list names the tools"}}
[{"jsonrpc":"2.0","id":8,"result":{}}]
{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: '[' or '{' expected near 'not'"}}
OUT
# Tool calls run on their own threads: answers come in completion order.
sort "$tmp/want" >"$tmp/want.s"
sort "$tmp/out" >"$tmp/out.s"
diff -u "$tmp/want.s" "$tmp/out.s" || fail "transcript differs"
# Requests answered in line keep their order around the tool calls.
head -2 "$tmp/out" | grep -q '"id":0,"error"' || fail "the refused tools/list is not first"
[ ! -s "$tmp/err" ] || fail "unexpected stderr: $(cat "$tmp/err")"

"$CW_BIN" mcp --help | grep -q "usage: causeway mcp" || fail "--help"
set +e
"$CW_BIN" mcp --bogus </dev/null >"$tmp/out" 2>"$tmp/err"
rc=$?
set -e
[ $rc = 2 ] || fail "bad flag: exit $rc, want 2"
grep -q 'mcp: unknown option "--bogus"' "$tmp/err" || fail "bad flag message: $(cat "$tmp/err")"
[ ! -s "$tmp/out" ] || fail "bad flag wrote to stdout"
echo "mcp stdio transcript: ok"
