#!/bin/bash
# Local readers' long work shows one updating line on stderr when it is a
# terminal (a pseudo-terminal from script(1)), cleared at the end; nothing
# when stderr is not a terminal, nothing with --json, and nothing for work
# shorter than the delay (1 s; CW_PROGRESS_AFTER_MS=0 shows it at once).
set -u
command -v script >/dev/null || { echo "util-linux script not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$tmp" || exit 1
"$CW_BIN" demo --db d.db >/dev/null 2>&1 || fail "demo"
# an empty store: explain's work there is far below a second
{ cat "$CW_ROOT/src/store/schema.sql"; echo "PRAGMA user_version=1;"; } | sqlite3 small.db || fail "empty store"

tty() { # a command line run with stdin, stdout and stderr on a pseudo-terminal
	CW_PROGRESS_AFTER_MS=${after-0} script -qec "$1" /dev/null >"$tmp/tty" 2>&1 </dev/null
}
clear=$'\r\e[K'

tty "'$CW_BIN' export --db d.db -o t.json"
grep -aq "causeway: export: writing the trace \.\.\. [0-9.]* s, [0-9.]* MiB written" "$tmp/tty" ||
	fail "export on a terminal showed no progress: $(cat -v "$tmp/tty" | head -c 300)"
# cleared before the summary line: the terminal keeps only the result
grep -aqF "${clear}causeway: export: wrote \"t.json\"" "$tmp/tty" || fail "progress line not cleared: $(cat -v "$tmp/tty" | tail -c 300)"
tty "'$CW_BIN' explain --db d.db --no-store"
grep -aq "causeway: explain: analysing the store \.\.\. " "$tmp/tty" || fail "explain showed no progress"
tty "'$CW_BIN' query --db d.db 'SELECT count(*) FROM events'"
grep -aq "causeway: query: running the statement \.\.\. " "$tmp/tty" || fail "query SQL showed no progress"
tty "'$CW_BIN' query --db d.db"
grep -aq "causeway: query: summarising the store \.\.\. " "$tmp/tty" || fail "query summary showed no progress"

# --json on a terminal: nothing
tty "'$CW_BIN' explain --db d.db --no-store --json"
grep -aq "analysing the store" "$tmp/tty" && fail "explain --json showed progress"
tty "'$CW_BIN' query --db d.db --json"
grep -aq "summarising" "$tmp/tty" && fail "query --json showed progress"
# not a terminal: nothing
CW_PROGRESS_AFTER_MS=0 "$CW_BIN" export --db d.db -o t2.json 2>"$tmp/err" || fail "export"
grep -q "writing the trace" "$tmp/err" && fail "export into a file showed progress: $(cat -v "$tmp/err")"
grep -q $'\r' "$tmp/err" && fail "carriage return on a non-terminal stderr"
# short work under the default delay: nothing
after= tty "'$CW_BIN' explain --db small.db --no-store"
grep -aq "analysing the store" "$tmp/tty" && fail "progress for work shorter than a second"
grep -aq "calls over .* ops analysed" "$tmp/tty" || fail "explain on a terminal printed nothing: $(cat -v "$tmp/tty" | head -c 300)"
echo "ok"
