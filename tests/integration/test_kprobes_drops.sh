#!/bin/bash
# Kernel probes, scenario (e): a 4 KiB ring under a storm of context
# switches that nobody consumes for a second. Reserve failures must be
# counted (not silent), records that fit must still decode, nothing crashes.
# Then a 4 KiB critical ring under 300 forks: every lifecycle event is
# either delivered or counted as dropped, exactly.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness W=$CW_BUILD/fixtures/kp_workload
[ -x "$H" ] && [ -x "$W" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$H" --ring-kb 4 --min-offcpu-us 0 --delay-ms 1200 -- "$W" storm 1000 >"$T/out" 2>"$T/err"
sum=$(tail -n 1 "$T/out")
echo "$sum" | jq -e '.rec=="summary" and .status==0' >/dev/null || { echo "harness or workload failed"; cat "$T/err"; exit 1; }
hops=$(awk '/^hops/ {print $2}' "$T/err")
drops=$(echo "$sum" | jq .drops.sched)
recs=$(jq -s '[.[] | select(.rec=="offcpu")] | length' "$T/out")
echo "storm: $hops round trips, $recs off-CPU records kept, $drops dropped"
[ "$drops" -gt 0 ] || { echo "expected sched drops with a 4 KiB ring"; exit 1; }
[ "$recs" -gt 0 ] || { echo "expected some records to fit"; exit 1; }
! grep -q '"rec":"bad"' "$T/out" || { echo "malformed records"; exit 1; }
# Each round trip switches both threads out at least once: what was kept
# plus what was dropped accounts for at least the round trips.
[ $((recs + drops)) -ge "$hops" ] || { echo "kept + dropped ($((recs + drops))) < round trips ($hops)"; exit 1; }

"$H" --critical-kb 4 --delay-ms 1000 -- "$W" forkn 300 >"$T/out" 2>"$T/err"
sum=$(tail -n 1 "$T/out")
pid=$(echo "$sum" | jq .child)
kept=$(jq -s '[.[] | select(.rec=="proc")] | length' "$T/out")
pdrops=$(echo "$sum" | jq .drops.proc)
echo "forkn 300: $kept lifecycle records kept, $pdrops dropped"
# 300 forks + 300 child exits + the workload's exec and exit.
[ "$pdrops" -gt 0 ] || { echo "expected proc drops with a 4 KiB critical ring"; exit 1; }
[ $((kept + pdrops)) -eq 602 ] || { echo "kept + dropped = $((kept + pdrops)), expected exactly 602"; exit 1; }
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="proc" and .op=="fork")] | all(.parent_pid==$p)' "$T/out" >/dev/null
echo ok
