#!/bin/bash
# query on a missing, corrupt, newer-schema and locked database: one clear
# line on stderr, exit 6 (CW_EXIT_DB), for the summary and for SQL alike.
set -u
fix=$CW_BUILD/fixtures/query_db
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
tmp=$(mktemp -d)
holder=
cleanup() { [ -n "$holder" ] && kill "$holder" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect_db() {
	local pat=$1 rc
	shift
	for sql in "" "SELECT count(*) FROM events"; do
		if [ -n "$sql" ]; then "$CW_BIN" query "$@" "$sql"; else "$CW_BIN" query "$@"; fi > "$tmp/o" 2> "$tmp/e"
		rc=$?
		[ $rc = 6 ] || fail "query $* ${sql:+\"$sql\"} exited $rc, want 6: $(cat "$tmp/e")"
		[ "$(wc -l < "$tmp/e")" = 1 ] || fail "$*: want one line, got: $(cat "$tmp/e")"
		grep -q -- "$pat" "$tmp/e" || fail "$*: \"$(cat "$tmp/e")\" lacks \"$pat\""
		[ ! -s "$tmp/o" ] || fail "$*: stdout not empty"
	done
}

expect_db 'causeway: database "'"$tmp"'/none.db" does not exist' --db "$tmp/none.db"

head -c 8192 /dev/urandom > "$tmp/corrupt.db"
expect_db '"'"$tmp"'/corrupt.db" is not a causeway database' --db "$tmp/corrupt.db"
: > "$tmp/emptyfile.db"
expect_db 'is not a causeway database' --db "$tmp/emptyfile.db"
mkdir "$tmp/dir.db"
expect_db 'is a directory' --db "$tmp/dir.db"

"$fix" "$tmp/new.db" || exit 1
sqlite3 "$tmp/new.db" 'PRAGMA user_version = 99'
schema_v=$(sed -n 's/^#define CW_SCHEMA_VERSION //p' "$CW_ROOT/src/store/migrate.h")
expect_db "has schema version 99, newer than this causeway reads ($schema_v); upgrade causeway" --db "$tmp/new.db"

# The store is in WAL mode, where a writer's BEGIN EXCLUSIVE does not stop
# readers (that is the point of WAL); exclusive locking mode does.
"$fix" "$tmp/locked.db" || exit 1
fifo=$tmp/fifo
mkfifo "$fifo"
sqlite3 "$tmp/locked.db" < "$fifo" > "$tmp/holder.out" &
holder=$!
exec 3> "$fifo"
printf 'PRAGMA locking_mode = EXCLUSIVE;\nBEGIN EXCLUSIVE;\nSELECT 42;\n' >&3
for _ in $(seq 50); do grep -q 42 "$tmp/holder.out" 2>/dev/null && break; sleep 0.1; done
grep -q 42 "$tmp/holder.out" || fail "sqlite3 did not take the lock"
expect_db 'database "'"$tmp"'/locked.db" is locked by another process; try again when it finishes' --db "$tmp/locked.db"
printf 'COMMIT;\n.quit\n' >&3
exec 3>&-
wait "$holder"
holder=
# Released: readable again.
"$CW_BIN" query --db "$tmp/locked.db" "SELECT count(*) AS n FROM events" | grep -q '^160$' || fail "not readable after the lock"

# --json: the same sentence as {"error": ...} on stdout.
out=$("$CW_BIN" query --json --db "$tmp/none.db"); rc=$?
[ $rc = 6 ] || fail "json exit $rc"
python3 -c 'import json,sys; e=json.loads(sys.argv[1])["error"]; assert e.endswith("none.db\" does not exist"), e' "$out" || fail "json error: $out"
echo "query db errors ok"
