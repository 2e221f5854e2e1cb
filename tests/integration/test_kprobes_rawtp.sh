#!/bin/bash
# Kernel probes: the raw_tp fallback programs (used where tp_btf cannot
# load) load, attach and record the same things as the tp_btf ones.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness W=$CW_BUILD/fixtures/kp_workload
[ -x "$H" ] && [ -x "$W" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$H" --raw-tp -- "$W" threads 400 >"$T/out" 2>"$T/err"
sum=$(tail -n 1 "$T/out")
echo "$sum" | jq -e 'all(.families[]; .variant == "raw_tp" and .attached > 0)' >/dev/null \
	|| { echo "not every family runs its raw_tp programs: $sum"; exit 1; }
sl=$(awk '/^tid sleeper/ {print $3}' "$T/err")
pid=$(echo "$sum" | jq .child)
nap=$(jq -s --argjson t "$sl" '[.[] | select(.rec=="offcpu" and .tid==$t and .reason=="blocked" and .dur_ns >= 4000000 and .comm=="sleeper")] | length' "$T/out")
echo "raw_tp: sleeper $sl has $nap naps"
[ "$nap" -ge 20 ] || { echo "expected >= 20 blocked intervals on the sleeper"; exit 1; }
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="proc" and .pid==$p) | .op] | sort == ["exec","exit"]' "$T/out" >/dev/null \
	|| { echo "exec/exit of the workload missing under raw_tp"; exit 1; }
echo ok
