#!/bin/bash
# mcp_bench.sh BUILD: the MCP server's two benchmarks (bench/mcp_bench.py).
#  1. causal_chains through `causeway mcp` vs `explain --json --no-store` on
#     the 10-million-call database of explain_latency.sh (built by
#     bigdb_bench into $CW_BENCH_DIR when missing), warm, median of 5.
#  2. 50 concurrent HTTP sessions calling tools for 30 s against serve's /mcp
#     (plain HTTP on loopback, --per-ip 64) on the incident demo database:
#     calls, errors, latency percentiles, server RSS over time.
# CW_MCP_BENCH_CALLS, CW_MCP_BENCH_SESSIONS, CW_MCP_BENCH_SECONDS override.
set -eu
. "$(cd "$(dirname "$0")/.." && pwd)/tests/lib/auth.sh"
auth_shared # every server here and its clients share $CW_TOKEN
BUILD=${1:-build}
DIR=${CW_BENCH_DIR:-/tmp/cw-bench}
CALLS=${CW_MCP_BENCH_CALLS:-10000000}
mkdir -p "$DIR"
DB=$DIR/bigdb-$CALLS.db
if [ ! -f "$DB" ]; then
	make --no-print-directory BUILD="$BUILD" bench-bins >/dev/null
	"$BUILD"/bench/bigdb_bench "$DB" "$CALLS"
fi
echo "== causal_chains vs explain --json ($CALLS calls, $(du -h "$DB" | cut -f1))"
python3 "$(dirname "$0")/mcp_bench.py" latency "$BUILD/causeway" "$DB" 5

T=$(mktemp -d /tmp/cw-mcp-bench.XXXXXX)
trap 'kill "$SP" 2>/dev/null; wait "$SP" 2>/dev/null; rm -rf "$T"' EXIT
"$BUILD"/causeway demo --db "$T/d.db" >/dev/null 2>&1
"$BUILD"/causeway serve --db "$T/d.db" --listen 127.0.0.1:0 --no-tls --per-ip 64 2>"$T/log" &
SP=$!
for _ in $(seq 100); do
	PORT=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/log")
	[ -n "$PORT" ] && break
	sleep 0.05
done
echo "== ${CW_MCP_BENCH_SESSIONS:-50} concurrent HTTP sessions for ${CW_MCP_BENCH_SECONDS:-30} s"
python3 "$(dirname "$0")/mcp_bench.py" load "http://127.0.0.1:$PORT/mcp" "${CW_MCP_BENCH_SESSIONS:-50}" \
	"${CW_MCP_BENCH_SECONDS:-30}" "$SP"
