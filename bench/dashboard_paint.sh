#!/bin/bash
# dashboard_paint.sh BUILD [CALLS]: the dashboard's first paint and timeline
# zoom/pan time in headless Chromium (tests/browser's puppeteer-core) on the
# CALLS-call database (default 10,000,000) that explain_latency.sh builds
# with bigdb_bench into $CW_BENCH_DIR (default /tmp/cw-bench). Warm: the
# first page load is reported as "cold" (server and page cache just
# started), the next RUNS (default 5) as medians. The timeline is opened on
# one training thread over a 1.6 s window, which holds 100,000 CUDA calls
# plus its off-CPU intervals and its process's block reads.
set -eu
. "$(cd "$(dirname "$0")/.." && pwd)/tests/lib/auth.sh"
auth_shared # every server here and its clients share $CW_TOKEN
BUILD=${1:-build}
CALLS=${2:-10000000}
DIR=${CW_BENCH_DIR:-/tmp/cw-bench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$DIR"
DB=$DIR/bigdb-$CALLS.db
[ -f "$DB" ] || "$BUILD"/bench/bigdb_bench "$DB" "$CALLS"
"$ROOT/scripts/install-browser-tests.sh"
# The bench database starts at 2026-01-01T00:00:00Z; tid 4823 is one of its
# four training threads; 10 s in, past the warm-up.
T0=1767225610000000000
: "${TL:=tid=4823&from=$T0&to=$((T0 + 1600000000))&limit=200000}"
echo "database: $CALLS calls, $(du -h "$DB" | cut -f1)"
CW_BIN=$(cd "$BUILD" && pwd)/causeway TL=$TL node "$ROOT/bench/dashboard_paint.mjs" "$DB"
