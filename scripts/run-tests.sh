#!/bin/bash
# run-tests.sh BUILD [ASAN_BUILD]: runs the whole suite and ends with one summary line,
# "N passed, N failed, N skipped".
#   unit:        every cmocka binary in BUILD/tests
#   golden:      tests/golden/test_*.sh
#   integration: tests/integration/test_*.sh (real BPF as root, HTTPS, fleet)
#   asan:        with ASAN_BUILD, its unit tests and the golden tests again
#                against its ASan/UBSan binary
#   fuzz:        a short smoke run of every fuzz target (scripts/build-fuzz.sh)
# Scripts exit 0 (pass), 77 (skip, after printing why) or anything else (fail).
# Each test's output goes to BUILD/test-logs/NAME.log and is shown on failure.
# CW_TEST_FILTER=regex runs only matching tests.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$ROOT" && mkdir -p "$BUILD" && cd "$BUILD" && pwd)
LOGS=$BUILD/test-logs
mkdir -p "$LOGS"
export CW_BIN="$BUILD/causeway" CW_BUILD="$BUILD" CW_ROOT="$ROOT"
pass=0 fail=0 skip=0 failed=()

run_one() {
	local name=$1; shift
	if [ -n "${CW_TEST_FILTER:-}" ] && ! [[ $name =~ $CW_TEST_FILTER ]]; then
		return
	fi
	local log="$LOGS/${name//\//_}.log" start=$SECONDS rc
	(cd "$ROOT" && timeout "${CW_TEST_TIMEOUT:-300}" "$@") >"$log" 2>&1
	rc=$?
	local secs=$((SECONDS - start))
	if [ $rc -eq 0 ]; then
		pass=$((pass + 1)); printf 'ok    %-50s %3ss\n' "$name" "$secs"
	elif [ $rc -eq 77 ]; then
		skip=$((skip + 1)); printf 'skip  %-50s (%s)\n' "$name" "$(tail -n 1 "$log")"
	else
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL  %-50s rc=%s %ss\n' "$name" "$rc" "$secs"
		sed 's/^/      | /' "$log" | tail -n 40
	fi
}

for t in "$BUILD"/tests/test_*; do
	case $t in *.d) continue ;; esac
	[ -x "$t" ] && run_one "unit/$(basename "$t")" "$t"
done
for kind in golden integration; do
	for t in "$ROOT"/tests/$kind/test_*.sh; do
		[ -f "$t" ] && run_one "$kind/$(basename "$t" .sh)" bash "$t"
	done
done
ASAN=${2:-}
if [ -n "$ASAN" ] && [ -x "$ROOT/$ASAN/causeway" ]; then
	ASAN=$(cd "$ROOT/$ASAN" && pwd)
	for t in "$ASAN"/tests/test_*; do
		case $t in *.d) continue ;; esac
		[ -x "$t" ] && run_one "asan/unit/$(basename "$t")" "$t"
	done
	for t in "$ROOT"/tests/golden/test_*.sh; do
		[ -f "$t" ] && CW_BIN="$ASAN/causeway" run_one "asan/golden/$(basename "$t" .sh)" bash "$t"
	done
fi
if [ -x "$ROOT/scripts/build-fuzz.sh" ] && [ -z "${CW_NO_FUZZ:-}" ]; then
	run_one "fuzz/smoke" "$ROOT/scripts/build-fuzz.sh" "$BUILD" --smoke 6
fi

echo
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
