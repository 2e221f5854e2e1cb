#!/bin/bash
# query without SQL: the per-op summary of a database with known contents
# (tests/fixtures/query_db.c), in text, JSON and CSV, over all data, a
# --since window and per Python line.
set -eu
fix=$CW_BUILD/fixtures/query_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fix" "$tmp/q.db"

fail() { echo "FAIL: $*"; exit 1; }

# Text: sorted by total time, durations formatted, share of a 10 s window.
"$CW_BIN" query --db "$tmp/q.db" > "$tmp/out"
cat > "$tmp/want" <<'OUT'
window 2023-11-14T22:13:20.000Z .. 2023-11-14T22:13:30.000Z (10 s)

source  op             count      p50      p95      p99      max    total  wall%  failed
nccl    ncclAllReduce     10   19.9ms   19.9ms   19.9ms   20.0ms  200.0ms   2.0%       0
cuda    cudaMalloc       100    1.0ms    1.0ms   48.2ms   50.0ms  198.0ms   2.0%       0
cuda    cudaMemcpy        50  100.0us  100.0us  100.0us  100.0us    5.0ms   0.1%       0
(3 rows)
OUT
diff -u "$tmp/want" "$tmp/out" || fail "text summary differs"

# JSON: an array of objects with the documented keys; exact counts, totals
# and maxima; percentiles within the histogram's 4.4 %.
"$CW_BIN" query --db "$tmp/q.db" --json > "$tmp/json"
python3 - "$tmp/json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
assert isinstance(rows, list) and len(rows) == 3, rows
keys = {"source", "op", "count", "p50_ns", "p95_ns", "p99_ns", "max_ns", "total_ns", "wall_share", "failed"}
for r in rows:
    assert set(r) == keys, r
by = {r["op"]: r for r in rows}
m = by["cudaMalloc"]
assert (m["source"], m["count"], m["total_ns"], m["max_ns"]) == ("cuda", 100, 198000000, 50000000), m
assert abs(m["p50_ns"] - 1e6) / 1e6 < 0.044, m
assert abs(m["p99_ns"] - 5e7) / 5e7 < 0.044, m
assert abs(m["wall_share"] - 0.0198) < 1e-9, m
assert [r["op"] for r in rows] == ["ncclAllReduce", "cudaMalloc", "cudaMemcpy"]
PY

# --since 2s: only the last two seconds (both slow cudaMalloc calls are in
# the last one), so cudaMalloc now leads.
"$CW_BIN" query --db "$tmp/q.db" --json --since 2s > "$tmp/since"
python3 - "$tmp/since" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
by = {r["op"]: r for r in rows}
assert rows[0]["op"] == "cudaMalloc", rows
assert by["cudaMalloc"]["count"] == 12 and by["cudaMalloc"]["total_ns"] == 110000000, by
assert by["ncclAllReduce"]["count"] == 2, by
assert abs(by["cudaMalloc"]["wall_share"] - 0.055) < 1e-9, by
PY

# --limit on the summary keeps the top rows and says so.
"$CW_BIN" query --db "$tmp/q.db" --limit 1 > "$tmp/lim"
grep -q '^(1 of 3 rows; raise --limit for more)$' "$tmp/lim" || fail "--limit notice missing"
[ "$(grep -c '^nccl\|^cuda' "$tmp/lim")" = 1 ] || fail "--limit 1 printed more than one row"

# CSV: RFC 4180 with CRLF and raw numbers.
"$CW_BIN" query --db "$tmp/q.db" --csv > "$tmp/csv"
printf 'source,op,count,p50_ns,p95_ns,p99_ns,max_ns,total_ns,wall_share,failed\r\n' > "$tmp/csvhead"
head -n 1 "$tmp/csv" | cmp -s - "$tmp/csvhead" || fail "csv header: $(head -n 1 "$tmp/csv" | od -c | head -3)"
grep -q $'^nccl,ncclAllReduce,10,[0-9]*,[0-9]*,[0-9]*,20000000,200000000,0.020000,0\r$' "$tmp/csv" || fail "csv row"

# Failing calls (query_db ... failing: 4 cudaMalloc calls of 30 ms returned
# cudaErrorMemoryAllocation, 3 ncclAllReduce calls of 90 ms ncclSystemError):
# the text and CSV tables count them in failed, as the JSON does, and every
# other column is the same as without them (their 90 ms are in no max).
"$fix" "$tmp/f.db" failing
"$CW_BIN" query --db "$tmp/f.db" > "$tmp/fout"
cat > "$tmp/fwant" <<'OUT'
window 2023-11-14T22:13:20.000Z .. 2023-11-14T22:13:30.000Z (10 s)

source  op             count      p50      p95      p99      max    total  wall%  failed
nccl    ncclAllReduce     10   19.9ms   19.9ms   19.9ms   20.0ms  200.0ms   2.0%       3
cuda    cudaMalloc       100    1.0ms    1.0ms   48.2ms   50.0ms  198.0ms   2.0%       4
cuda    cudaMemcpy        50  100.0us  100.0us  100.0us  100.0us    5.0ms   0.1%       0
(3 rows)
OUT
diff -u "$tmp/fwant" "$tmp/fout" || fail "text summary with failing calls differs"
"$CW_BIN" query --db "$tmp/f.db" --csv > "$tmp/fcsv"
grep -q $'^cuda,cudaMalloc,100,[0-9]*,[0-9]*,[0-9]*,50000000,198000000,0.019800,4\r$' "$tmp/fcsv" || fail "csv failed column: $(cat "$tmp/fcsv")"
"$CW_BIN" query --db "$tmp/f.db" --json | python3 -c '
import json, sys
by = {r["op"]: r for r in json.load(sys.stdin)}
assert (by["cudaMalloc"]["failed"], by["ncclAllReduce"]["failed"], by["cudaMemcpy"]["failed"]) == (4, 3, 0), by'
# The per-line variant reads events, not the aggregates: the failing calls
# are train.py:42 step.
"$CW_BIN" query --db "$tmp/f.db" --group-by-line > "$tmp/fline"
grep -Eq '^cuda +cudaMalloc +train.py:42 step +80 .* 4$' "$tmp/fline" || fail "per-line failed: $(cat "$tmp/fline")"
grep -Eq '^cuda +cudaMalloc +train.py:57 load_batch +20 .* 0$' "$tmp/fline" || fail "per-line failed (load_batch): $(cat "$tmp/fline")"

# Per Python line: the slow cudaMalloc calls belong to load_batch.
"$CW_BIN" query --db "$tmp/q.db" --group-by-line --json > "$tmp/lines"
python3 - "$tmp/lines" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
m = [r for r in rows if r["op"] == "cudaMalloc"]
assert len(m) == 2, m
load = [r for r in m if r["line"] == 57][0]
step = [r for r in m if r["line"] == 42][0]
assert (load["file"], load["function"], load["count"], load["max_ns"]) == ("train.py", "load_batch", 20, 50000000), load
assert (step["function"], step["count"], step["total_ns"]) == ("step", 80, 80000000), step
nccl = [r for r in rows if r["op"] == "ncclAllReduce"][0]
assert nccl["file"] is None and nccl["line"] is None, nccl
PY
"$CW_BIN" query --db "$tmp/q.db" --group-by-line | grep -q 'train.py:57 load_batch' || fail "text per-line location"

# An empty database: header and (0 rows); [] in JSON.
sqlite3 "$tmp/empty.db" < "$CW_ROOT/src/store/schema.sql"
sqlite3 "$tmp/empty.db" 'PRAGMA user_version = 1'
"$CW_BIN" query --db "$tmp/empty.db" > "$tmp/e"
grep -q '^source  op  count' "$tmp/e" && grep -q '^(0 rows)$' "$tmp/e" || fail "empty summary: $(cat "$tmp/e")"
[ "$("$CW_BIN" query --db "$tmp/empty.db" --json)" = "[]" ] || fail "empty summary json"

# Once the demo generator exists, the summary of its incident database is a
# non-empty array too.
if "$CW_BIN" demo incident --db "$tmp/demo.db" >/dev/null 2>&1; then
	"$CW_BIN" query --db "$tmp/demo.db" --json | python3 -c 'import json,sys; r=json.load(sys.stdin); assert r and all("p99_ns" in x for x in r)'
fi
echo "query summary ok"
