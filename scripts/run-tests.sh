#!/bin/bash
# run-tests.sh BUILD [ASAN_BUILD]: runs the whole suite and ends with one summary line,
# "N passed, N failed, N skipped".
#   unit:        every cmocka binary in BUILD/tests
#   golden:      tests/golden/test_*.sh
#   integration: tests/integration/test_*.sh (real BPF as root, HTTPS, fleet);
#                those in tests/integration/beside.list (they time nothing)
#                run one at a time beside the unit/golden/sanitizer queue
#   asan:        with ASAN_BUILD, its unit tests, and again against its
#                ASan/UBSan binary the golden tests that feed causeway hostile
#                input (tests/golden/asan.list; CW_ASAN_ALL=1: every one)
#   fuzz:        a short smoke run of every fuzz target (scripts/build-fuzz.sh),
#                CW_TEST_JOBS targets at a time
# Scripts exit 0 (pass), 77 (skip, after printing why) or anything else (fail).
# Each test runs in a session of its own (setsid: its own process group),
# with CW_TEST_TOKEN=<its token> in its environment, under CW_TEST_TIMEOUT
# (default 300 s; a script may declare more in its first lines:
# "# cw-test-timeout: 600"). When it ends (or times out) every process still in its
# session or carrying its token (a daemon that called setsid itself) is a
# process it left behind: after CW_TEST_GRACE seconds (default 5) those
# still there are listed in its log and killed, and the test fails. The
# runner kills every test's processes when it is stopped (Ctrl-C, SIGTERM).
# Each test's output goes to BUILD/test-logs/NAME.log and is shown on failure.
# CW_TEST_FILTER=regex runs only matching tests.
# Unit, golden and sanitizer tests run CW_TEST_JOBS at a time (default: one
# per CPU), in one queue, the sanitizer ones first (the longest); they share
# nothing but the machine. The other integration tests run one at a time,
# after the queue: several of them time a CPU hog, a disk burst or a
# preemption, and a neighbouring test would be part of what they measure.
set -u
BUILD=${1:-build}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$ROOT" && mkdir -p "$BUILD" && cd "$BUILD" && pwd)
LOGS=$BUILD/test-logs
mkdir -p "$LOGS"
export CW_BIN="$BUILD/causeway" CW_BUILD="$BUILD" CW_ROOT="$ROOT"
pass=0 fail=0 skip=0 failed=()
# A runner started by a test (tests/golden/test_runner_cleanup.sh) extends
# its caller's token: the outer runner still finds what the inner one left.
RUN_TOKEN="${CW_TEST_TOKEN:+$CW_TEST_TOKEN/}cwtest-$$"
ntests=0

# The live processes of a test: in session SID, or with TOKEN in their
# environment (zombies are left to their parents).
test_procs() { # TOKEN SID
	local p
	{
		[ "$2" -gt 0 ] && pgrep -s "$2" 2>/dev/null
		grep -lzsE "^CW_TEST_TOKEN=$1(/|\$)" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3
	} | sort -un | while read -r p; do
		[ "$p" != $$ ] && [ -r "/proc/$p/stat" ] &&
			[ "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)" != Z ] && echo "$p"
	done
}

# After a test: what it left running, listed and killed; 0 when it left
# something (then the test fails).
reap_test() { # TOKEN SID
	local token=$1 sid=$2 left p i
	left=$(test_procs "$token" "$sid")
	[ -n "$left" ] || return 1
	for ((i = 0; i < ${CW_TEST_GRACE:-5} * 10; i++)); do
		sleep 0.1
		left=$(test_procs "$token" "$sid")
		[ -n "$left" ] || return 1
	done
	echo "run-tests: the test left $(wc -w <<<"$left") process(es) running ${CW_TEST_GRACE:-5}s after it ended; killed:"
	for p in $left; do
		printf '  pid %s (%s): %s\n' "$p" "$(cat "/proc/$p/comm" 2>/dev/null)" \
			"$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | cut -c1-200)"
	done
	# Again until none is left: a killed parent's children are found next.
	for ((i = 0; i < 20 && ${#left}; i++)); do
		kill -KILL -- "-$sid" 2>/dev/null
		kill -KILL $left 2>/dev/null
		sleep 0.05
		left=$(test_procs "$token" "$sid")
	done
	return 0
}

# Runs a test in a session of its own under the timeout, then reaps what
# it left; its exit status (1 for a test that passed but left processes).
run_test() { # LOG COMMAND...
	local log=$1 token="$RUN_TOKEN-$ntests" sid rc limit=${CW_TEST_TIMEOUT:-300} a declared
	shift
	# A script may ask for more time in its first lines ("# cw-test-timeout:
	# N", a kernel booted under emulation); never less than the default.
	for a in "$@"; do
		case $a in *.sh)
			declared=$(sed -n '1,20s/^# cw-test-timeout: \([0-9][0-9]*\)$/\1/p' "$a" 2>/dev/null | head -1)
			[ -n "$declared" ] && [ "$declared" -gt "$limit" ] && limit=$declared ;;
		esac
	done
	(cd "$ROOT" && CW_TEST_TOKEN=$token exec setsid -w timeout "$limit" "$@") >"$log" 2>&1 &
	sid=$!
	echo "$sid" >"$LOGS/.sid.$$.$ntests"
	wait "$sid"
	rc=$?
	if reap_test "$token" "$sid" >>"$log" 2>&1 && { [ $rc -eq 0 ] || [ $rc -eq 77 ]; }; then
		rc=1
	fi
	rm -f "$LOGS/.sid.$$.$ntests"
	return $rc
}

# Stopped or ending: no test's process outlives the runner.
kill_tests() {
	local f sid left i
	for f in "$LOGS"/.sid.$$.*; do
		[ -f "$f" ] && read -r sid <"$f" && kill -KILL -- "-$sid" 2>/dev/null && rm -f "$f"
	done
	for ((i = 0; i < 20; i++)); do
		left=$(test_procs "$RUN_TOKEN-[0-9]+" 0)
		[ -n "$left" ] || break
		kill -KILL $left 2>/dev/null
		sleep 0.05
	done
}
trap 'kill_tests' EXIT
trap 'kill_tests; trap - EXIT; exit 130' INT
trap 'kill_tests; trap - EXIT; exit 143' TERM

selected() {
	[ -z "${CW_TEST_FILTER:-}" ] || [[ $1 =~ $CW_TEST_FILTER ]]
}

report() { # NAME RC SECONDS LOG
	local name=$1 rc=$2 secs=$3 log=$4
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1)); printf 'ok    %-50s %3ss\n' "$name" "$secs"
	elif [ "$rc" -eq 77 ]; then
		skip=$((skip + 1)); printf 'skip  %-50s (%s)\n' "$name" "$(tail -n 1 "$log")"
	else
		fail=$((fail + 1)); failed+=("$name")
		printf 'FAIL  %-50s rc=%s %ss\n' "$name" "$rc" "$secs"
		sed 's/^/      | /' "$log" | tail -n 40
	fi
}

run_one() { # NAME COMMAND...: runs now, alone
	local name=$1; shift
	selected "$name" || return
	local log="$LOGS/${name//\//_}.log" start=$SECONDS rc
	ntests=$((ntests + 1))
	run_test "$log" "$@"
	rc=$?
	report "$name" $rc $((SECONDS - start)) "$log"
}

# queue NAME COMMAND... then run_queue: the queued tests, CW_TEST_JOBS at a
# time; results print in queue order as soon as each is known.
# queue_beside NAME COMMAND...: a test that runs one at a time beside those
# (an integration test that times nothing, tests/integration/beside.list:
# it mostly waits, and the CPU the queue keeps busy changes none of its
# results).
q_names=() q_cmds=() q_beside=()
queue() {
	local name=$1; shift
	selected "$name" || return
	q_names+=("$name")
	q_cmds+=("$(printf '%q ' "$@")")
	q_beside+=(0)
}
queue_beside() {
	queue "$@" && q_beside[${#q_beside[@]} - 1]=1
}
start_job() { # INDEX
	local i=$1 name=${q_names[$1]}
	ntests=$((ntests + 1))
	(
		trap - EXIT INT TERM # the runner's own: they kill every test
		start=$SECONDS log="$LOGS/${name//\//_}.log"
		eval "run_test \"\$log\" ${q_cmds[$i]}"
		rc=$?
		echo "$rc $((SECONDS - start))" >"$rcdir/$i.tmp" && mv "$rcdir/$i.tmp" "$rcdir/$i"
	) &
}
run_queue() {
	local jobs=${CW_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)} n=${#q_names[@]} shown=0 i busy
	local norm=() beside=() ni=0 bi=0 bcur=-1
	rcdir="$LOGS/.rc"
	rm -rf "$rcdir" && mkdir -p "$rcdir"
	for ((i = 0; i < n; i++)); do
		if [ "${q_beside[$i]}" = 1 ]; then beside+=("$i"); else norm+=("$i"); fi
	done
	while [ $shown -lt $n ]; do
		if [ $bi -lt ${#beside[@]} ] && { [ $bcur -lt 0 ] || [ -f "$rcdir/$bcur" ]; }; then
			bcur=${beside[$bi]}
			start_job "$bcur"
			bi=$((bi + 1))
		fi
		busy=$(jobs -rp | wc -l)
		[ $bcur -ge 0 ] && [ ! -f "$rcdir/$bcur" ] && busy=$((busy - 1))
		while [ $ni -lt ${#norm[@]} ] && [ "$busy" -lt "$jobs" ]; do
			start_job "${norm[$ni]}"
			ni=$((ni + 1)) busy=$((busy + 1))
		done
		if [ -f "$rcdir/$shown" ]; then
			local name=${q_names[$shown]} rc secs
			read -r rc secs <"$rcdir/$shown"
			report "$name" "$rc" "$secs" "$LOGS/${name//\//_}.log"
			shown=$((shown + 1))
			continue
		fi
		wait -n 2>/dev/null || sleep 0.2
	done
	wait
	q_names=() q_cmds=() q_beside=()
}

ASAN=${2:-}
if [ -n "$ASAN" ] && [ -x "$ROOT/$ASAN/causeway" ]; then
	ASAN=$(cd "$ROOT/$ASAN" && pwd)
else
	ASAN=
fi
if [ -n "$ASAN" ]; then
	if [ -n "${CW_ASAN_ALL:-}" ]; then
		asan_golden=$(cd "$ROOT/tests/golden" && ls test_*.sh | sed 's/\.sh$//')
	else
		asan_golden=$(sed 's/#.*//' "$ROOT/tests/golden/asan.list")
	fi
	for n in $asan_golden; do
		[ -f "$ROOT/tests/golden/$n.sh" ] || { echo "asan.list: no tests/golden/$n.sh" >&2; exit 2; }
		queue "asan/golden/$n" env CW_BIN="$ASAN/causeway" bash "$ROOT/tests/golden/$n.sh"
	done
fi
for t in "$ROOT"/tests/golden/test_*.sh; do
	[ -f "$t" ] && queue "golden/$(basename "$t" .sh)" bash "$t"
done
for t in "$BUILD"/tests/test_*; do
	case $t in *.d) continue ;; esac
	[ -x "$t" ] && queue "unit/$(basename "$t")" "$t"
done
if [ -n "$ASAN" ]; then
	for t in "$ASAN"/tests/test_*; do
		case $t in *.d) continue ;; esac
		[ -x "$t" ] && queue "asan/unit/$(basename "$t")" "$t"
	done
fi
beside_names=" $(sed 's/#.*//' "$ROOT/tests/integration/beside.list" | tr -s ' \n' '  ') "
for n in $beside_names; do
	[ -f "$ROOT/tests/integration/$n.sh" ] || { echo "beside.list: no tests/integration/$n.sh" >&2; exit 2; }
done
for t in "$ROOT"/tests/integration/test_*.sh; do
	n=$(basename "$t" .sh)
	[ -f "$t" ] && [[ $beside_names == *" $n "* ]] && queue_beside "integration/$n" bash "$t"
done
run_queue
for t in "$ROOT"/tests/integration/test_*.sh; do
	n=$(basename "$t" .sh)
	[ -f "$t" ] && [[ $beside_names != *" $n "* ]] && run_one "integration/$n" bash "$t"
done
if [ -x "$ROOT/scripts/build-fuzz.sh" ] && [ -z "${CW_NO_FUZZ:-}" ]; then
	run_one "fuzz/smoke" "$ROOT/scripts/build-fuzz.sh" "$BUILD" --smoke 6 \
		--jobs "${CW_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}"
fi

echo
if [ ${#failed[@]} -gt 0 ]; then
	echo "failed: ${failed[*]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
