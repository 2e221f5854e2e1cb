#!/bin/bash
# trace's start-up under too few file descriptors (prlimit --nofile): each
# step that runs out (the probes' objects and maps, the library attach)
# fails for real; every failing run exits non-zero having said why in one
# line, and with enough descriptors it traces.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
command -v prlimit >/dev/null || { echo "no prlimit"; exit 77; }
LIB=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$LIB" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
failed=0 ran=0
for n in 12 24 40 56 80 96 104 110 128 256; do
	rm -f "$D"/t.db*
	prlimit --nofile=$n "$CW_BIN" trace --no-view --db "$D/t.db" --duration 1s --cuda-lib "$LIB" >"$D/out" 2>"$D/err"
	rc=$?
	if [ $rc = 0 ]; then
		grep -q '1 libraries' "$D/err" || fail "nofile $n: exit 0 without tracing: $(cat "$D/err")"
		ran=1
		continue
	fi
	failed=1
	case $rc in 1|4|5|6) ;; *) fail "nofile $n: exit $rc: $(cat "$D/err")" ;; esac
	k=$(grep -c '^causeway: ' "$D/err")
	[ "$k" = 1 ] || fail "nofile $n: exit $rc with $k lines: $(grep '^causeway: ' "$D/err")"
done
[ $failed = 1 ] || fail "no run ran out of descriptors"
[ $ran = 1 ] || fail "no run traced with 256 descriptors"
echo ok
