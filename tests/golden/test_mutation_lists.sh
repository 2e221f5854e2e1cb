#!/bin/bash
# Every mutation list (scripts/mutations/*.list) parses and every ORIGINAL
# occurs exactly once in its file, so that the lists do not rot as the code
# changes (scripts/mutate.sh --check builds and runs nothing). Then the
# check itself: a list with a missing, a repeated or a malformed ORIGINAL,
# or without its test line, is an error.
set -u
ROOT=${CW_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$ROOT/scripts/mutate.sh" --check 2>&1) || fail "mutation lists do not check: $out"
echo "$out"
n=$(sed -n 's/^mutate: [0-9]* lists, \([0-9]*\) mutations, 0 lists with errors$/\1/p' <<<"$out")
[ -n "$n" ] && [ "$n" -ge 40 ] || fail "expected at least 40 mutations, got \"$out\""

T=$'\t'
bad() { # NAME CONTENT WHY
	mkdir -p "$tmp/$1"
	printf '%s\n' "$2" >"$tmp/$1/m.list"
	if o=$(MUTATIONS_DIR="$tmp/$1" "$ROOT/scripts/mutate.sh" --check 2>&1); then
		fail "$1: accepted: $o"
	fi
	grep -q "$3" <<<"$o" || fail "$1: no \"$3\" in: $o"
	echo "ok $1 refused"
}
good="src/fleet/skew.c${T}out->valid = m >= CW_SKEW_MIN_SAMPLES;${T}out->valid = 1;"
bad missing "# test: true
src/fleet/skew.c${T}no such text here${T}x" "occurs 0 times"
bad repeated "# test: true
src/fleet/skew.c${T}int${T}long" "occurs [0-9]* times"
bad no-test "$good" "no \"# test: COMMAND\" line"
bad one-tab "# test: true
src/fleet/skew.c${T}out->valid" "not PATH<TAB>ORIGINAL<TAB>REPLACEMENT"
bad no-file "# test: true
src/no/such.c${T}a${T}b" "no file"
bad same "# test: true
src/fleet/skew.c${T}out->valid = m >= CW_SKEW_MIN_SAMPLES;${T}out->valid = m >= CW_SKEW_MIN_SAMPLES;" "equals ORIGINAL"
# and a good one passes, listing its mutation
mkdir -p "$tmp/good"
printf '# test: true\n%s\n' "$good" >"$tmp/good/m.list"
o=$(MUTATIONS_DIR="$tmp/good" "$ROOT/scripts/mutate.sh" --list 2>&1) || fail "good list refused: $o"
grep -q 'm:1 .*src/fleet/skew.c' <<<"$o" || fail "good list not listed: $o"
echo "ok"
