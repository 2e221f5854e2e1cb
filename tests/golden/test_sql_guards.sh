#!/bin/bash
# User SQL bounded whatever the statement (query, MCP run_sql): a call that
# loops inside one opcode (printf's precision, LIKE, instr) answers within
# the time limit, fts3_tokenizer is refused in both forms, the result cap
# counts the bytes sent (hex, escapes, table padding), one statement's
# memory is bounded; and readers never modify a file they only read: a
# database next to another database's write-ahead log is not rewritten.
set -u
fix=$CW_BUILD/fixtures/query_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
command -v python3 >/dev/null || { echo "python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fix" "$tmp/q.db" || exit 1
db=$tmp/q.db
fail() { echo "FAIL: $*"; exit 1; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# within MS PATTERN ARGS...: query ARGS exits 1 within MS ms with one
# line on stderr matching PATTERN.
within() {
	local ms=$1 pat=$2 t0 rc el
	shift 2
	t0=$(now_ms)
	timeout 120 "$CW_BIN" query --db "$db" "$@" >"$tmp/o" 2>"$tmp/e"
	rc=$?
	el=$(($(now_ms) - t0))
	[ $rc = 1 ] || fail "query $* exited $rc, want 1: $(head -c 300 "$tmp/e")"
	[ $el -le "$ms" ] || fail "query $* answered after $el ms, limit $ms"
	grep -q -- "$pat" "$tmp/e" || fail "query $*: \"$(head -c 300 "$tmp/e")\" lacks \"$pat\""
}

# A 2 s limit; every statement must end within it plus a margin.
P="printf('%.*c',2147483647,'x') IS NULL"
T16="hex(zeroblob(8000000))" # 16 MB of text
while IFS='|' read -r pat sql; do
	within 4000 "$pat" --timeout 2s "$sql"
done <<SQL
a width or precision is larger than 100000|SELECT $P, $P, $P
format(): a width or precision|SELECT format('%2147483647d', 1)
like() over 16000000 and 803 bytes is too costly|SELECT $T16 LIKE '%'||hex(zeroblob(400))||'1%'
LIKE or GLOB pattern too complex|SELECT 'a' LIKE '%'||hex(zeroblob(600))||'%'
instr() over .* is too costly|SELECT instr($T16, hex(zeroblob(3000000))||'1')
replace() over .* is too costly|SELECT length(replace($T16, hex(zeroblob(3000000))||'1', 'x'))
ltrim() over .* is too costly|SELECT length(ltrim($T16, 'x'||hex(zeroblob(50000))))
query exceeded 2 s limit|WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r) SELECT count(*) FROM r
SQL

# The functions still answer as SQLite's own do.
"$CW_BIN" query --db "$db" --csv "SELECT printf('%5.2f|%-4d|%s|%c|%q|%%|%x', 3.14159, 7, 'ab', 'xyz', 'it''s', 255),
	format('%.*s', 2, 'abc'), 'abc' LIKE 'A%', 'a_c' LIKE 'a\_c' ESCAPE '\', 'abc' GLOB 'a*', 'abc' GLOB 'A*',
	instr('hello', 'll'), replace('aaa', 'a', 'bb'), trim('xxaxx', 'x'), ltrim('xa', 'x'), rtrim('ax', 'x'),
	x'00' LIKE '%'" >"$tmp/o" 2>"$tmp/e" || fail "functions: $(cat "$tmp/e")"
tail -1 "$tmp/o" | tr -d '\r' >"$tmp/row"
[ "$(cat "$tmp/row")" = " 3.14|7   |ab|x|it''s|%|ff,ab,1,1,1,0,3,bbbbbb,a,a,a,0" ] ||
	fail "function results: $(cat "$tmp/row")"

# fts3_tokenizer gives out a libsqlite3 address and takes one to call.
within 4000 'fts3_tokenizer() not allowed' "SELECT hex(fts3_tokenizer('simple'))"
within 4000 'fts3_tokenizer() not allowed' "SELECT fts3_tokenizer('simple', x'0000000000000000')"

# The result cap (256 MiB) counts what is sent: 15 rows of 16 MB blobs are
# 480 MB of hex.
CTE="WITH RECURSIVE r(i, b) AS (SELECT 1, zeroblob(16000000) UNION ALL SELECT i+1, zeroblob(16000000) FROM r WHERE i < 15)"
for f in --json --csv ""; do
	"$CW_BIN" query --db "$db" $f "$CTE SELECT * FROM r" 2>"$tmp/e" | head -c 1000 >"$tmp/o"
	[ "$(wc -c <"$tmp/o")" -lt 1000 ] || fail "query $f sent rows: $(head -c 100 "$tmp/o")"
	grep -q 'result is larger than 256 MiB' "$tmp/e" "$tmp/o" || fail "query $f: $(head -c 300 "$tmp/e")"
done
# The aligned table pads each row to the widest cell: one wide cell in 200
# rows would print 3.2 GB.
"$CW_BIN" query --db "$db" "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i < 200)
	SELECT CASE WHEN i = 1 THEN hex(zeroblob(8000000)) END AS wide, i FROM r" 2>"$tmp/e" | wc -c >"$tmp/n"
[ "$(cat "$tmp/n")" -le $((256 << 20)) ] || fail "the table sent $(cat "$tmp/n") bytes"
grep -q 'use --json or --csv' "$tmp/e" || fail "table cap: $(head -c 300 "$tmp/e")"

# One statement's memory: 20 values of 16 MB held at once.
R=$(printf 'randomblob(16000000),%.0s' $(seq 20))
within 10000 'query exceeded the 256 MiB memory limit' "SELECT ${R%,}"

# MCP run_sql goes through the same guards.
cat >"$tmp/in" <<IN
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"golden","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_sql","arguments":{"sql":"SELECT $P, $P, $P"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run_sql","arguments":{"sql":"SELECT hex(fts3_tokenizer('simple'))"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"run_sql","arguments":{"sql":"$CTE SELECT * FROM r","max_rows":100}}}
IN
t0=$(now_ms)
timeout 120 "$CW_BIN" mcp --db "$db" <"$tmp/in" >"$tmp/out" 2>"$tmp/err"
el=$(($(now_ms) - t0))
[ $el -le 10000 ] || fail "mcp answered after $el ms"
[ "$(wc -c <"$tmp/out")" -le $((256 << 20)) ] || fail "mcp sent $(wc -c <"$tmp/out") bytes"
grep '"id":2' "$tmp/out" | grep -q 'a width or precision is larger than 100000' || fail "mcp printf: $(head -c 600 "$tmp/out")"
grep '"id":3' "$tmp/out" | grep -q 'fts3_tokenizer() not allowed' || fail "mcp fts3_tokenizer"
grep '"id":4' "$tmp/out" | grep -q 'result is larger than 256 MiB' || fail "mcp result cap"

# Another database's write-ahead log beside a copy: readers and explain
# leave the file as it is. b.db gets committed frames that stay in its log
# (the writer exits without a checkpoint, as a killed trace would).
"$fix" "$tmp/a.db" || exit 1
"$fix" "$tmp/b.db" || exit 1
cat >"$tmp/wal.py" <<'PY'
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA wal_autocheckpoint = 0")
c.execute("BEGIN")
c.execute("CREATE TABLE other(x)")
c.execute("INSERT INTO other SELECT randomblob(3000) FROM (WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM r WHERE i < 500) SELECT i FROM r)")
c.execute("DELETE FROM meta")
c.execute("COMMIT")
os._exit(0)
PY
python3 "$tmp/wal.py" "$tmp/b.db" || fail "wal.py"
[ -s "$tmp/b.db-wal" ] || fail "no frames left in b.db-wal"
cp "$tmp/a.db" "$tmp/x.db"
cp "$tmp/b.db-wal" "$tmp/x.db-wal"
sum0=$(sha256sum <"$tmp/x.db")
"$CW_BIN" query --db "$tmp/x.db" "SELECT count(*) FROM events" >/dev/null 2>&1
"$CW_BIN" explain --db "$tmp/x.db" >/dev/null 2>"$tmp/e"
grep -q 'write-ahead log ".*x.db-wal" does not match it.*chains are not stored' "$tmp/e" ||
	fail "explain on another database's log: $(cat "$tmp/e")"
# Twice: the first reader made a -shm index from that log.
"$CW_BIN" explain --db "$tmp/x.db" >/dev/null 2>&1
"$CW_BIN" export --db "$tmp/x.db" -o "$tmp/x.json" >/dev/null 2>&1
[ "$(sha256sum <"$tmp/x.db")" = "$sum0" ] || fail "x.db was modified"
[ "$(sqlite3 "file:$tmp/x.db?immutable=1" 'PRAGMA integrity_check' 2>&1)" = ok ] || fail "x.db integrity"
# A log of another page size is refused outright, for readers too.
python3 -c '
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA page_size = 4096"); c.execute("PRAGMA journal_mode = WAL"); c.execute("PRAGMA wal_autocheckpoint = 0")
c.execute("CREATE TABLE t(x)"); c.execute("INSERT INTO t VALUES (1)")
os._exit(0)' "$tmp/p.db" || fail "p.db"
rm -f "$tmp/x.db-wal" "$tmp/x.db-shm"
cp "$tmp/p.db-wal" "$tmp/x.db-wal"
"$CW_BIN" query --db "$tmp/x.db" "SELECT count(*) FROM events" >/dev/null 2>"$tmp/e"
rc=$?
[ $rc = 6 ] || fail "page size mismatch: exit $rc, want 6: $(cat "$tmp/e")"
grep -q 'does not match it' "$tmp/e" || fail "page size mismatch message: $(cat "$tmp/e")"
[ "$(sha256sum <"$tmp/x.db")" = "$sum0" ] || fail "x.db was modified (page size)"
# The database's own log, left by a killed writer with its index: explain
# stores its chains as usual and merges the log.
"$CW_BIN" explain --db "$tmp/b.db" >/dev/null 2>"$tmp/e" || fail "explain b.db: $(cat "$tmp/e")"
! grep -q 'does not match' "$tmp/e" || fail "b.db's own log refused: $(cat "$tmp/e")"
[ "$(sqlite3 "$tmp/b.db" 'SELECT count(*) FROM other')" = 500 ] || fail "b.db lost its log's rows"
echo "sql guards: ok"
