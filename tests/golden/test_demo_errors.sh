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
[ "$(wc -l < "$tmp/out")" -eq 33 ] && grep -q '^incident .*(default)' "$tmp/out" || { echo "FAIL list"; cat "$tmp/out"; fail=1; }

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
# A path with no room for its ".tmp" sibling is a bad argument, not a database error.
expect 2 "--db path too long" -- demo healthy --db "$tmp/$(printf 'a%.0s' $(seq 1 4100))"
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

# Not a demo database (a trace's session in it): refused, untouched, unless --force.
sqlite3 "$tmp/d.db" "INSERT INTO sessions (node, kind, started_wall_ns, mono_to_wall_ns) VALUES ('n1', 'trace', 1, 0)"
before=$(sqlite3 "$tmp/d.db" "SELECT count(*) FROM events")
expect 6 "refuses to replace a trace database" -- demo healthy --db "$tmp/d.db"
grep -q 'refusing to replace ".*d.db": it is not a demo database (1 trace or merged session); use --force' "$tmp/err" \
	|| { echo "FAIL trace database wording"; cat "$tmp/err"; fail=1; }
[ "$(sqlite3 "$tmp/d.db" "SELECT count(*) FROM events")" = "$before" ] && [ "$(sqlite3 "$tmp/d.db" "SELECT count(*) FROM sessions WHERE kind = 'trace'")" = 1 ] \
	|| { echo "FAIL trace database changed"; fail=1; }
expect 0 "--force replaces a trace database" -- demo healthy --db "$tmp/d.db" --force
[ "$(sqlite3 "$tmp/d.db" "SELECT group_concat(kind) FROM sessions")" = "demo:healthy" ] || { echo "FAIL --force did not replace"; fail=1; }

# A newer schema is a newer causeway's file: refused like every other command refuses it.
sqlite3 "$tmp/d.db" "PRAGMA user_version = 99"
expect 6 "refuses a newer schema" -- demo healthy --db "$tmp/d.db"
grep -q 'schema is newer than this causeway' "$tmp/err" || { echo "FAIL newer schema wording"; cat "$tmp/err"; fail=1; }
[ "$(sqlite3 "$tmp/d.db" "PRAGMA user_version")" = 99 ] || { echo "FAIL newer database changed"; fail=1; }
expect 0 "--force replaces a newer schema" -- demo healthy --db "$tmp/d.db" --force

# A database a causeway writer holds open (its shared flock) is not replaced.
python3 - "$BIN" "$tmp/d.db" <<'PY' || fail=1
import fcntl, os, subprocess, sys
fd = os.open(sys.argv[2], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_SH)  # what cw_store_open does for a writer
r = subprocess.run([sys.argv[1], "demo", "healthy", "--db", sys.argv[2]], capture_output=True, text=True)
if r.returncode != 6 or "another causeway process (a trace) is writing it" not in r.stderr:
    print("FAIL demo replaced a database held by a writer:", r.returncode, r.stderr); sys.exit(1)
print("ok   refuses a database a writer holds")
PY

# --json errors are {"error": ...} on stdout.
"$BIN" demo nosuch --json > "$tmp/out" 2>/dev/null
rc=$?
[ $rc -eq 2 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "unknown scenario" in d["error"]' "$tmp/out" \
	&& echo "ok   json error" || { echo "FAIL json error (rc $rc)"; cat "$tmp/out"; fail=1; }
"$BIN" demo healthy --db "$tmp/notes.txt" --json > "$tmp/out" 2>/dev/null
rc=$?
[ $rc -eq 6 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "not a causeway database" in d["error"]' "$tmp/out" \
	&& echo "ok   json db error" || { echo "FAIL json db error (rc $rc)"; cat "$tmp/out"; fail=1; }

# Default --db is causeway-demo.db in the current directory, never trace's
# causeway.db.
(cd "$tmp" && "$BIN" demo healthy > /dev/null) && [ -s "$tmp/causeway-demo.db" ] && [ ! -e "$tmp/causeway.db" ] \
	&& echo "ok   default db" || { echo "FAIL default --db"; fail=1; }
exit $fail
