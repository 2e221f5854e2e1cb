#!/bin/bash
# Kernel probes: two tracked threads whose tids share a slot of the sched
# probes' per-thread tables (tid % 65536) and nap at the same time. Every
# interval the shared slot costs is counted, none is silent: the later
# switch-out takes the slot (offcpu_slot_taken), the other thread's
# switch-in then finds none (offcpu_nostart), and the records that are
# emitted name the right thread.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness W=$CW_BUILD/fixtures/kp_workload
[ -x "$H" ] && [ -x "$W" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d)
# The second thread's tid is the first's + 65536: pids must reach it.
PIDMAX=$(sysctl -n kernel.pid_max)
trap 'sysctl -qw kernel.pid_max=$PIDMAX; rm -rf "$T"' EXIT
[ "$PIDMAX" -ge 4194304 ] || sysctl -qw kernel.pid_max=4194304

"$H" -- "$W" collide 600 >"$T/out" 2>"$T/err" || { echo "harness: $(tail -3 "$T/err")"; exit 1; }
a=$(awk '/^tid nap1/ {print $3}' "$T/err")
b=$(awk '/^tid nap2/ {print $3}' "$T/err")
[ -n "$a" ] && [ -n "$b" ] || { echo "workload did not report both tids: $(cat "$T/err")"; exit 1; }
[ $((b - a)) = 65536 ] || { echo "tids $a and $b do not collide"; exit 1; }
sum=$(tail -n 1 "$T/out")
taken=$(echo "$sum" | jq '.stats.offcpu_slot_taken // 0')
nostart=$(echo "$sum" | jq '.stats.offcpu_nostart // 0')
na=$(jq --argjson t "$a" 'select(.rec=="offcpu" and .tid==$t)' "$T/out" | jq -s length)
nb=$(jq --argjson t "$b" 'select(.rec=="offcpu" and .tid==$t)' "$T/out" | jq -s length)
echo "nap1 $a: $na intervals; nap2 $b: $nb intervals; slot taken $taken, switch-ins without a start $nostart"
[ "$taken" -ge 1 ] || { echo "two threads napping on one slot, no offcpu_slot_taken"; exit 1; }
[ "$nostart" -ge 1 ] || { echo "a taken slot cost no interval: offcpu_nostart 0"; exit 1; }
# ~120 naps each in 600 ms: each is emitted or counted (a loaded machine
# stretches naps, hence the margin).
[ $((na + nb + nostart)) -ge 100 ] || { echo "naps unaccounted: $na + $nb emitted, $nostart counted"; exit 1; }
[ $((na + nb)) -ge 1 ] || { echo "no interval of either napper emitted"; exit 1; }
# What is emitted is right: each thread's records carry its own comm.
jq -e -s --argjson a "$a" --argjson b "$b" '[.[] | select(.rec=="offcpu" and .reason=="blocked" and .dur_ns >= 4000000)
	| select((.tid==$a and .comm!="nap1") or (.tid==$b and .comm!="nap2"))] | length == 0' "$T/out" >/dev/null \
	|| { echo "a napper's interval carries the other's name"; exit 1; }
echo ok
