#!/bin/bash
# `trace -- CMD` killed with SIGKILL: without --kill-on-exit CMD runs on
# (untraced, as docs/trace.md says); with it CMD dies with trace. Also: the
# flag needs a launched command.
set -u
fail() { echo "FAIL: $*"; exit 1; }
"$CW_BIN" trace --kill-on-exit --pid 1 2>"${TMPDIR:-/tmp}/cw-koe-$$.err"
rc=$?
msg=$(cat "${TMPDIR:-/tmp}/cw-koe-$$.err")
rm -f "${TMPDIR:-/tmp}/cw-koe-$$.err"
[ $rc = 2 ] || fail "--kill-on-exit without a command: exit $rc, want 2"
[ "$msg" = 'causeway: trace: --kill-on-exit applies to a launched command (-- COMMAND)' ] ||
	fail "--kill-on-exit without a command: \"$msg\""
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }

D=$(mktemp -d /tmp/cw-koe.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$D"; }
trap cleanup EXIT

# run_and_kill FLAGS...: starts trace -- sleep, waits until the command has
# been exec'd (trace prints its banner just before releasing it), SIGKILLs
# trace, and sets CMD_PID to the command's pid.
run_and_kill() {
	local tp i c sleep_exe
	sleep_exe=$(readlink -f "$(command -v sleep)")
	"$CW_BIN" trace --db "$D/t.db" --no-view "$@" -- sleep 300 >"$D/out" 2>&1 &
	tp=$!
	pids+=("$tp")
	CMD_PID=
	# The command is trace's child once it has exec'd sleep.
	for i in $(seq 1 200); do
		for c in $(pgrep -P "$tp"); do
			[ "$(readlink "/proc/$c/exe")" = "$sleep_exe" ] && CMD_PID=$c
		done
		[ -n "$CMD_PID" ] && break
		kill -0 "$tp" 2>/dev/null || fail "trace exited early: $(cat "$D/out")"
		sleep 0.05
	done
	[ -n "$CMD_PID" ] || fail "the command never started: $(cat "$D/out")"
	pids+=("$CMD_PID")
	kill -9 "$tp"
	wait "$tp" 2>/dev/null
}

gone_within() { # pid, tenths of a second
	local i
	for i in $(seq 1 "$2"); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

run_and_kill
sleep 1
kill -0 "$CMD_PID" 2>/dev/null || fail "without --kill-on-exit the command died with trace"
kill -9 "$CMD_PID"

run_and_kill --kill-on-exit
gone_within "$CMD_PID" 50 || fail "with --kill-on-exit the command $CMD_PID outlived trace"
echo "kill-on-exit: command survives a SIGKILLed trace without the flag, dies with it"
