#!/bin/bash
# demo's bad inputs: one clear line, the documented exit code, nothing lost.
set -u
BIN=${CW_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

expect() { # expect RC DESCRIPTION -- ARGS...: exit code and one stderr line
	local want=$1 what=$2; shift 3
	"$BIN" "$@" > "$tmp/out" 2> "$tmp/err"
	local rc=$?
	if [ $rc -ne "$want" ]; then
		echo "FAIL $what: exit $rc, want $want"; cat "$tmp/out" "$tmp/err"; fail=1; return
	fi
	if [ "$want" -ne 0 ] && [ "$(wc -l < "$tmp/err")" -ne 1 ]; then
		echo "FAIL $what: want one error line, got:"; cat "$tmp/err"; fail=1; return
	fi
	echo "ok   $what"
}

expect 0 "help" -- demo --help
grep -q '^usage: causeway demo' "$tmp/out" || { echo "FAIL help on stdout"; fail=1; }
expect 0 "list" -- demo --list
[ "$(wc -l < "$tmp/out")" -eq 16 ] && grep -q '^incident .*(default)' "$tmp/out" || { echo "FAIL list"; cat "$tmp/out"; fail=1; }

expect 2 "unknown scenario" -- demo nosuch --db "$tmp/x.db"
grep -q 'unknown scenario "nosuch"; valid scenarios: incident, cold-start,.*healthy' "$tmp/err" || { echo "FAIL unknown scenario wording"; cat "$tmp/err"; fail=1; }
[ ! -e "$tmp/x.db" ] || { echo "FAIL unknown scenario created a database"; fail=1; }
expect 2 "two scenarios" -- demo incident healthy --db "$tmp/x.db"
expect 2 "unknown option" -- demo --bogus
expect 2 "missing --db value" -- demo --db
for bad in -1 abc nan inf 1e9 ""; do
	expect 2 "bad --speed '$bad'" -- demo healthy --speed "$bad" --db "$tmp/x.db"
done
for bad in -1 12x "" 99999999999999999999999 " 5"; do
	expect 2 "bad --seed '$bad'" -- demo healthy --seed "$bad" --db "$tmp/x.db"
done
expect 6 "unwritable --db" -- demo healthy --db "$tmp/no/such/dir/x.db"
chmod 500 "$tmp" 2>/dev/null
if [ "$(id -u)" -ne 0 ]; then
	expect 6 "read-only directory" -- demo healthy --db "$tmp/ro.db"
fi
chmod 700 "$tmp"

# Not a causeway database: left alone, byte for byte.
printf 'precious notes\n' > "$tmp/notes.txt"
expect 6 "refuses to clobber a text file" -- demo healthy --db "$tmp/notes.txt"
grep -q 'not a causeway database' "$tmp/err" || { echo "FAIL clobber wording"; cat "$tmp/err"; fail=1; }
[ "$(cat "$tmp/notes.txt")" = "precious notes" ] || { echo "FAIL text file changed"; fail=1; }
sqlite3 "$tmp/other.sqlite" "CREATE TABLE t(x); INSERT INTO t VALUES (42);"
expect 6 "refuses to clobber a foreign SQLite file" -- demo healthy --db "$tmp/other.sqlite"
[ "$(sqlite3 "$tmp/other.sqlite" 'SELECT x FROM t')" = 42 ] || { echo "FAIL foreign sqlite changed"; fail=1; }
mkdir "$tmp/dir.db"
expect 6 "refuses a directory" -- demo healthy --db "$tmp/dir.db"

# A causeway database is replaced, not appended to.
expect 0 "first run" -- demo incident --db "$tmp/d.db"
expect 0 "replaces a causeway database" -- demo healthy --db "$tmp/d.db"
kinds=$("$BIN" query --db "$tmp/d.db" --json "SELECT group_concat(kind) AS k FROM sessions" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["k"])')
[ "$kinds" = "demo:healthy" ] || { echo "FAIL replaced database holds sessions: $kinds"; fail=1; }
[ ! -e "$tmp/d.db.tmp" ] || { echo "FAIL temporary file left behind"; fail=1; }

# --json errors are {"error": ...} on stdout.
"$BIN" demo nosuch --json > "$tmp/out" 2>/dev/null
rc=$?
[ $rc -eq 2 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "unknown scenario" in d["error"]' "$tmp/out" \
	&& echo "ok   json error" || { echo "FAIL json error (rc $rc)"; cat "$tmp/out"; fail=1; }
"$BIN" demo healthy --db "$tmp/notes.txt" --json > "$tmp/out" 2>/dev/null
rc=$?
[ $rc -eq 6 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "not a causeway database" in d["error"]' "$tmp/out" \
	&& echo "ok   json db error" || { echo "FAIL json db error (rc $rc)"; cat "$tmp/out"; fail=1; }

# Default --db is causeway.db in the current directory.
(cd "$tmp" && "$BIN" demo healthy > /dev/null) && [ -s "$tmp/causeway.db" ] && echo "ok   default db" \
	|| { echo "FAIL default --db"; fail=1; }
exit $fail
