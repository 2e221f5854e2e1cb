#!/bin/bash
# explain's command line: help, every bad input (one line, right exit
# code, {"error"} with --json) and the no-problem report on an empty store.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect CODE PATTERN ARGS...: exit code and one line on stderr matching PATTERN
expect() {
	local code=$1 pat=$2; shift 2
	"$CW_BIN" explain "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	[ $rc -eq "$code" ] || fail "explain $* exited $rc, want $code: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "explain $* printed $(wc -l <"$tmp/err") error lines"
	grep -q -- "$pat" "$tmp/err" || fail "explain $*: '$(cat "$tmp/err")' lacks '$pat'"
}

"$CW_BIN" explain --help >"$tmp/out" || fail "--help exit"
grep -q -- "--per-process" "$tmp/out" || fail "--help lacks --per-process"

db=$tmp/empty.db
{ cat "$CW_ROOT/src/store/schema.sql"; echo "PRAGMA user_version=1;"; } | sqlite3 "$db" || fail "sqlite3 setup"

expect 6 'does not exist' --db "$tmp/missing.db"
expect 2 'invalid duration "5 parsecs"' --db "$db" --since "5 parsecs"
expect 2 'invalid duration "-5m"' --db "$db" --since -5m
expect 2 'invalid time "yesterday"' --db "$db" --from yesterday
expect 2 'invalid time "2026-13-01T00:00:00Z"' --db "$db" --to 2026-13-01T00:00:00Z
expect 2 'not after' --db "$db" --from 2026-01-02T00:00:00Z --to 2026-01-01T00:00:00Z
expect 2 'invalid time "soon"' --db "$db" --now soon
expect 2 'needs a value' --db "$db" --now
expect 2 'cannot be combined' --db "$db" --since 5m --from 2026-01-01T00:00:00Z
expect 2 'invalid pid "abc"' --db "$db" --pid abc
expect 2 'invalid pid "-1"' --db "$db" --pid -1
expect 2 'unknown option "--bogus"' --db "$db" --bogus
expect 2 'needs a value' --db "$db" --since
expect 2 'unexpected argument "extra"' --db "$db" extra

head -c 8192 /dev/urandom >"$tmp/corrupt.db"
printf 'SQLite format 3\0garbage' >>"$tmp/corrupt.db"
"$CW_BIN" explain --db "$tmp/corrupt.db" >/dev/null 2>"$tmp/err"
[ $? -eq 6 ] || fail "corrupt db: want exit 6"

cp "$db" "$tmp/newer.db"
sqlite3 "$tmp/newer.db" "PRAGMA user_version=99;"
expect 6 'newer' --db "$tmp/newer.db"

# A writer holding an exclusive lock: one clear line, exit 6.
cp "$db" "$tmp/locked.db"
python3 -c '
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(5)' "$tmp/locked.db" >"$tmp/lock.out" &
locker=$!
for _ in $(seq 50); do [ -s "$tmp/lock.out" ] && break; sleep 0.1; done
expect 6 'locked' --db "$tmp/locked.db"
kill "$locker" 2>/dev/null
wait "$locker" 2>/dev/null

# --json errors go to stdout as {"error": ...}
"$CW_BIN" explain --json --db "$tmp/missing.db" >"$tmp/out" 2>/dev/null
[ $? -eq 6 ] || fail "json missing: exit"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "does not exist" in d["error"]' "$tmp/out" ||
	fail "json error object: $(cat "$tmp/out")"

# Empty store: no chain, the no-problem sentence, nothing stored.
out=$("$CW_BIN" explain --db "$db") || fail "empty store exit"
[[ $out == "no problems found in "*"(0 calls over 0 ops analysed)" ]] || fail "empty report: $out"
"$CW_BIN" explain --db "$db" --json >"$tmp/out" || fail "empty json exit"
python3 - "$tmp/out" <<'PY' || fail "empty json: $(cat "$tmp/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["chains"] == [] and d["warnings"] == [], d
assert set(d["window"]) >= {"from_ns", "to_ns", "ops_analysed", "calls_analysed"}, d
PY
[ "$(sqlite3 "$db" 'SELECT count(*) FROM chains')" = 0 ] || fail "chains written for an empty result"
"$CW_BIN" explain --db "$db" --since 10m --no-store >/dev/null || fail "--since on empty store"

# A filter or window that matches no data says so (exit 7), never "no
# problems found": an unknown pid, a tenant with no process, a window
# outside the data.
"$CW_BIN" demo incident --db "$tmp/inc.db" >/dev/null 2>&1 || fail "demo incident"
expect 7 'nothing matches: no process 99999 in the store' --db "$tmp/inc.db" --no-store --pid 99999
expect 7 'nothing matches: no process of the store ran in the tenant' --db "$tmp/inc.db" --no-store --pod nope
expect 7 'nothing matches: no GPU calls or requests in the window 2030-01-01T00:00:00.000Z' --db "$tmp/inc.db" --no-store \
	--from 2030-01-01T00:00:00Z --to 2030-01-02T00:00:00Z
"$CW_BIN" explain --db "$tmp/inc.db" --no-store --json --pid 99999 >"$tmp/out" 2>/dev/null; rc=$?
[ $rc -eq 7 ] || fail "--json --pid 99999 exited $rc"
python3 -c 'import json,sys; assert "no process 99999" in json.load(open(sys.argv[1]))["error"]' "$tmp/out" || fail "--json no-match: $(cat "$tmp/out")"
"$CW_BIN" explain --db "$tmp/inc.db" --no-store --pid 4821 | grep -q '^1 causal chain' || fail "--pid 4821 lost its chain"
# The same over MCP: an error result, not "no causal chains".
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"causal_chains","arguments":{"pod":"nope"}}}' |
	"$CW_BIN" mcp --db "$tmp/inc.db" >"$tmp/mcp.out" 2>/dev/null
python3 - "$tmp/mcp.out" <<'PY' || fail "mcp causal_chains pod=nope: $(cat "$tmp/mcp.out")"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if l.strip()][-1]["result"]
assert r["isError"] is True and r["content"][0]["text"].startswith("nothing matches: "), r
PY
echo ok
