#!/bin/bash
# Hostile paths and files given to the readers: a FIFO as --db or --config is
# refused at once (open() of a FIFO waits for a writer), an empty --db is an
# error (not causeway.db), a config nested 40,000 levels deep is refused in
# milliseconds, and a database with a negative user_version says so, for
# readers and for explain's read-write open alike (which indexed the
# migrations with it).
set -u
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI not installed"; exit 77; }
D=$(mktemp -d)
cleanup() { rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$D" || exit 1

# expect PATTERN CMD...: exits 1..6 within 10 s, one line naming PATTERN.
expect() {
	local pat=$1 rc
	shift
	timeout 10 "$CW_BIN" "$@" >"$D/o" 2>"$D/e" </dev/null
	rc=$?
	[ $rc != 124 ] || fail "$*: hung"
	[ $rc -ge 1 ] && [ $rc -le 6 ] || fail "$*: exit $rc: $(cat "$D/e")"
	grep -qE 'runtime error|Sanitizer' "$D/e" && fail "$*: $(cat "$D/e")"
	grep -q -- "$pat" "$D/e" || fail "$*: \"$(cat "$D/e")\" lacks \"$pat\""
	return 0
}

"$CW_BIN" demo incident --db "$D/ok.db" >/dev/null 2>&1 || fail demo
mkfifo "$D/fifo"
for cmd in "query" "explain --no-store" "explain" "export -o $D/x.json"; do
	# shellcheck disable=SC2086
	expect "database \"$D/fifo\" is not a regular file" $cmd --db "$D/fifo"
done
expect "config \"$D/fifo\" is not a regular file" --config "$D/fifo" query --db "$D/ok.db"
# A device node too (made here, never the host's /dev).
if mknod "$D/null" c 1 3 2>/dev/null; then
	expect "database \"$D/null\" is not a regular file" query --db "$D/null"
fi

for cmd in query "explain --no-store" "export -o $D/x.json"; do
	# shellcheck disable=SC2086
	expect "the database path is empty" $cmd --db ''
done
[ ! -e "$D/causeway.db" ] || fail "--db '' created causeway.db"

python3 -c "n=40000; open('deep.yaml','w').write('a: ' + '['*n + ']'*n + '\n')"
start=$(date +%s%N)
expect 'config "deep.yaml" line 1: nested deeper than 32 levels' --config deep.yaml query --db "$D/ok.db"
ms=$((($(date +%s%N) - start) / 1000000))
[ $ms -lt 2000 ] || fail "deep config took $ms ms"

cp "$D/ok.db" "$D/neg.db"
sqlite3 "$D/neg.db" 'PRAGMA user_version = -5'
for cmd in query "explain --no-store" explain; do
	# shellcheck disable=SC2086
	expect "database \"$D/neg.db\" has unknown schema version -5" $cmd --db "$D/neg.db"
done
[ "$(sqlite3 "$D/neg.db" 'PRAGMA user_version')" = -5 ] || fail "neg.db was migrated"
echo "hostile inputs ok"
