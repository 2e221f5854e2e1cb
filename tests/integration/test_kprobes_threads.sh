#!/bin/bash
# Kernel probes, scenario (b): a multi-threaded workload. The sleeper
# thread's 5 ms naps must land on the sleeper's tid as blocked intervals;
# the spinner thread must have no blocked interval of that size.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness W=$CW_BUILD/fixtures/kp_workload
[ -x "$H" ] && [ -x "$W" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$H" -- "$W" threads 800 >"$T/out" 2>"$T/err"
sl=$(awk '/^tid sleeper/ {print $3}' "$T/err")
sp=$(awk '/^tid spinner/ {print $3}' "$T/err")
pid=$(tail -n 1 "$T/out" | jq .child)
[ -n "$sl" ] && [ -n "$sp" ] || { echo "workload did not report tids"; exit 1; }

nap=$(jq --argjson t "$sl" 'select(.rec=="offcpu" and .tid==$t and .reason=="blocked" and .dur_ns >= 4000000)' "$T/out" | jq -s length)
spin_blocked=$(jq --argjson t "$sp" 'select(.rec=="offcpu" and .tid==$t and .reason=="blocked" and .dur_ns >= 4000000)' "$T/out" | jq -s length)
echo "sleeper $sl: $nap naps >= 4 ms; spinner $sp: $spin_blocked blocked >= 4 ms"
# 800 ms of 5 ms naps is ~150; allow for a loaded machine stretching them.
[ "$nap" -ge 40 ] || { echo "expected >= 40 blocked intervals on the sleeper"; exit 1; }
[ "$spin_blocked" -eq 0 ] || { echo "spinner should never block"; exit 1; }
# Records of both threads name their own thread and the workload's pid.
jq -e -s --argjson p "$pid" --argjson a "$sl" --argjson b "$sp" \
	'[.[] | select(.rec=="offcpu" and (.tid==$a or .tid==$b))] | length > 0 and all(.pid==$p) and all(.end > .ts)' \
	"$T/out" >/dev/null || { echo "offcpu records with a wrong pid or interval"; exit 1; }
# Its naps (after it named itself; a new thread can be preempted before
# its prctl while it still has the parent's name) carry its own comm.
jq -e -s --argjson a "$sl" '[.[] | select(.rec=="offcpu" and .tid==$a and .reason=="blocked" and .dur_ns >= 4000000)] | all(.comm=="sleeper")' "$T/out" >/dev/null \
	|| { echo "sleeper records carry another comm"; exit 1; }
# The naps end in a timer wakeup: the waker is recorded for blocked intervals.
jq -e -s --argjson a "$sl" '[.[] | select(.rec=="offcpu" and .tid==$a and .reason=="blocked") | select(.waker_comm != "")] | length > 0' \
	"$T/out" >/dev/null || { echo "no waker recorded for the sleeper"; exit 1; }
# Threads of other processes never appear as the off-CPU thread.
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="offcpu")] | all(.pid==$p)' "$T/out" >/dev/null \
	|| { echo "untracked process produced offcpu records"; exit 1; }
echo ok
