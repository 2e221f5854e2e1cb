#!/bin/bash
# Every command answers -h, --help and `causeway help CMD` alike (usage and an
# examples section on stdout, exit 0), and a misspelt command or long option
# gets one line naming the nearest real one, exit 2.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CW_BIN" help >"$tmp/top" 2>"$tmp/err" || fail "causeway help exited $?"
[ -s "$tmp/err" ] && fail "causeway help wrote to stderr: $(cat "$tmp/err")"
"$CW_BIN" --help | cmp -s - "$tmp/top" || fail "causeway help and causeway --help differ"
# The command table as the binary lists it: every row "  NAME  summary".
cmds=$(sed -n '/^commands:/,/^$/p' "$tmp/top" | awk 'NF > 1 && $1 != "help" { print $1 }')
[ "$(echo "$cmds" | wc -w)" -ge 11 ] || fail "causeway help lists only: $cmds"

# command -> a misspelt long option of its own, and the option meant
declare -A typo=(
	[demo]="--lsit --list" [explain]="--per-porcess --per-process" [query]="--gruop-by-line --group-by-line"
	[export]="--max-evnets --max-events" [merge]="--froce --force" [serve]="--lisen --listen"
	[where]="--no-natvie --no-native" [mcp]="--bd --db" [check]="--jsno --json" [version]="--jsno --json"
	[trace]="--duraton --duration"
)
for c in $cmds; do
	[ -n "${typo[$c]:-}" ] || fail "no misspelling listed for new command $c: add one to this test"
	"$CW_BIN" "$c" --help >"$tmp/long" 2>"$tmp/err" || fail "$c --help exited $?: $(cat "$tmp/err")"
	[ -s "$tmp/err" ] && fail "$c --help wrote to stderr: $(cat "$tmp/err")"
	"$CW_BIN" "$c" -h >"$tmp/short" 2>"$tmp/err" || fail "$c -h exited $?: $(cat "$tmp/err")"
	cmp -s "$tmp/short" "$tmp/long" || fail "$c -h differs from $c --help"
	"$CW_BIN" help "$c" >"$tmp/viahelp" 2>"$tmp/err" || fail "help $c exited $?: $(cat "$tmp/err")"
	cmp -s "$tmp/viahelp" "$tmp/long" || fail "help $c differs from $c --help"
	grep -q "^usage: causeway $c" "$tmp/long" || fail "$c --help has no usage line"
	# an examples section whose lines run this very command
	sed -n '/^examples:$/,/^$/p' "$tmp/long" | grep -Eq "^  (sudo )?causeway $c( |$)" ||
		fail "$c --help has no examples section"
	set -- ${typo[$c]}
	"$CW_BIN" "$c" "$1" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || fail "$c $1 exited $rc, want 2"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$c $1 printed $(wc -l <"$tmp/err") lines: $(cat "$tmp/err")"
	grep -qF "unknown option \"$1\" (did you mean \"$2\"?)" "$tmp/err" || fail "$c $1: $(cat "$tmp/err")"
done

# Readers that fan out to agents say so in their own help.
for c in explain query export mcp; do
	"$CW_BIN" "$c" --help | grep -q -- "--nodes" || fail "$c --help lacks --nodes"
	"$CW_BIN" "$c" --help | grep -q -- "--fleet" || fail "$c --help lacks --fleet"
done

# --json reports the same in its error object
"$CW_BIN" explain --json --sinse 5m >"$tmp/out" 2>/dev/null
grep -qF 'did you mean \"--since\"?' "$tmp/out" || fail "explain --json --sinse: $(cat "$tmp/out")"

for word in explian serv "help explian"; do
	"$CW_BIN" $word >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || fail "causeway $word exited $rc, want 2"
	grep -q 'unknown command ".*" (did you mean "\(explain\|serve\)"?)' "$tmp/err" || fail "$word: $(cat "$tmp/err")"
done
"$CW_BIN" dashboard 2>"$tmp/err"
grep -q "served by 'causeway serve'" "$tmp/err" || fail "dashboard: $(cat "$tmp/err")"
"$CW_BIN" zzzzzz 2>"$tmp/err"
grep -q "did you mean" "$tmp/err" && fail "a word near nothing got a suggestion: $(cat "$tmp/err")"
"$CW_BIN" --confg x version 2>"$tmp/err"
grep -qF '(did you mean "--config"?)' "$tmp/err" || fail "global --confg: $(cat "$tmp/err")"
echo "ok"
