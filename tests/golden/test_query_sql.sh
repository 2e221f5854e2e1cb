#!/bin/bash
# query SQL: read-only results as an aligned table, a JSON array of row
# objects and CSV; every write refused with one line and exit 1; bad SQL
# and bad flags reported once.
set -u
fix=$CW_BUILD/fixtures/query_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fix" "$tmp/q.db" || exit 1
db=$tmp/q.db

fail() { echo "FAIL: $*"; exit 1; }
# expect RC PATTERN CMD...: exit code RC, exactly one line on stderr
# matching PATTERN, nothing on stdout.
expect() {
	local want=$1 pat=$2 rc
	shift 2
	"$CW_BIN" "$@" > "$tmp/o" 2> "$tmp/e"
	rc=$?
	[ $rc = "$want" ] || fail "$* exited $rc, want $want: $(cat "$tmp/e")"
	[ "$(wc -l < "$tmp/e")" = 1 ] || fail "$*: want one error line, got: $(cat "$tmp/e")"
	grep -q -- "$pat" "$tmp/e" || fail "$*: \"$(cat "$tmp/e")\" lacks \"$pat\""
	[ ! -s "$tmp/o" ] || fail "$*: printed on stdout: $(cat "$tmp/o")"
}

# Aligned table: headers, numbers right-aligned, a row count.
"$CW_BIN" query --db "$db" "SELECT op, count(*) AS n, sum(duration_ns) AS total FROM events GROUP BY op ORDER BY op" > "$tmp/t" || fail "select"
cat > "$tmp/want" <<'OUT'
op               n      total
cudaMalloc     100  198000000
cudaMemcpy      50    5000000
ncclAllReduce   10  200000000
(3 rows)
OUT
diff -u "$tmp/want" "$tmp/t" || fail "table differs"

# JSON: an array of row objects with typed values.
"$CW_BIN" query --db "$db" --json "SELECT op, count(*) AS n, avg(duration_ns) / 1e6 AS ms, NULL AS missing FROM events GROUP BY op ORDER BY n DESC" > "$tmp/j" || fail "json"
python3 - "$tmp/j" <<'PY' || exit 1
import json, sys
rows = json.load(open(sys.argv[1]))
assert rows == [
    {"op": "cudaMalloc", "n": 100, "ms": 1.98, "missing": None},
    {"op": "cudaMemcpy", "n": 50, "ms": 0.1, "missing": None},
    {"op": "ncclAllReduce", "n": 10, "ms": 20.0, "missing": None},
], rows
PY
[ "$("$CW_BIN" query --db "$db" --json "SELECT 1 WHERE 0")" = "[]" ] || fail "empty json"
"$CW_BIN" query --db "$db" "SELECT op FROM events WHERE 0" > "$tmp/z"
[ "$(cat "$tmp/z")" = "$(printf 'op\n(0 rows)')" ] || fail "empty text: $(cat "$tmp/z")"

# CSV quoting and SQL from stdin; bound parameters.
printf '%s' "SELECT 'a,b' AS x, 'say \"hi\"' AS y, ?1 AS p" | "$CW_BIN" query --db "$db" --csv --param 42 - > "$tmp/c" || fail "csv"
[ "$(cat "$tmp/c")" = "$(printf 'x,y,p\r\n"a,b","say ""hi""",42\r')" ] || fail "csv: $(od -c "$tmp/c")"
[ "$("$CW_BIN" query --db "$db" --json "SELECT count(*) AS n FROM events WHERE op = ?1 AND duration_ns > ?2" --param cudaMalloc --param 1000000)" = "$(printf '[\n  {\n    "n": 2\n  }\n]')" ] || fail "params"

# Row cap: truncation is reported, not silent.
"$CW_BIN" query --db "$db" --limit 5 "SELECT seq FROM events" > "$tmp/l" || fail "limit"
grep -q '^(5 rows; truncated at the limit of 5, raise it with --limit)$' "$tmp/l" || fail "truncation notice: $(tail -1 "$tmp/l")"
"$CW_BIN" query --db "$db" --limit 5 --json "SELECT seq FROM events" 2> "$tmp/le" | python3 -c 'import json,sys; assert len(json.load(sys.stdin)) == 5' || fail "limit json"
grep -q 'truncated at the limit of 5' "$tmp/le" || fail "json truncation warning"

# Writes refused, database unchanged.
before=$(sha256sum < "$db")
expect 1 'query is read-only: INSERT not allowed' query --db "$db" "INSERT INTO meta VALUES ('k', 'v')"
expect 1 'query is read-only: UPDATE not allowed' query --db "$db" "UPDATE events SET duration_ns = 0"
expect 1 'query is read-only: DELETE not allowed' query --db "$db" "DELETE FROM events"
expect 1 'query is read-only: DROP TABLE not allowed' query --db "$db" "DROP TABLE events"
expect 1 'query is read-only: CREATE TABLE not allowed' query --db "$db" "CREATE TABLE x (a)"
expect 1 'query is read-only: ATTACH not allowed' query --db "$db" "ATTACH '$tmp/other.db' AS o"
expect 1 'query is read-only: PRAGMA journal_mode' query --db "$db" "PRAGMA journal_mode = DELETE"
expect 1 'query is read-only: VACUUM not allowed' query --db "$db" "VACUUM"
expect 1 'only one statement' query --db "$db" "SELECT 1; DELETE FROM events"
[ "$(sha256sum < "$db")" = "$before" ] || fail "database changed"
[ ! -e "$tmp/other.db" ] || fail "ATTACH created a file"
# With --json the error is a JSON object on stdout.
out=$("$CW_BIN" query --db "$db" --json "DELETE FROM events"); rc=$?
[ $rc = 1 ] || fail "json error exit $rc"
python3 -c 'import json,sys; assert json.loads(sys.argv[1]) == {"error": "query is read-only: DELETE not allowed"}' "$out" || fail "json error: $out"

# Bad SQL: SQLite's message with the name quoted; exit 1.
expect 1 'causeway: sql error: no such table: "foo"' query --db "$db" "SELECT * FROM foo"
expect 1 'sql error: near "SELEC": syntax error' query --db "$db" "SELEC 1"
expect 1 'query exceeded 300 ms limit' query --db "$db" --timeout 300ms "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

# Usage errors: exit 2.
expect 2 'invalid duration "soon"' query --db "$db" --since soon
expect 2 'invalid --limit "-3"' query --db "$db" --limit -3
expect 2 'invalid --limit "ten"' query --db "$db" --limit ten "SELECT 1"
out=$("$CW_BIN" query --db "$db" --csv --json); rc=$?
[ $rc = 2 ] && [ "$out" = '{"error":"query: --json and --csv cannot be combined"}' ] || fail "--json --csv: $rc $out"
expect 2 'applies to the summary only' query --db "$db" --since 5m "SELECT 1"
expect 2 'unknown option "--frobnicate"' query --frobnicate
"$CW_BIN" query --help | grep -q '^usage: causeway query' || fail "--help"
echo "query sql ok"
