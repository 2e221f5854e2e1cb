#!/bin/bash
# Kernel probes, scenario (a): a CPU hog pinned to the workload's CPU.
# The workload thread must show off-CPU intervals with reason "preempted"
# whose by_comm is the hog, adding up to a real share of its run time.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness W=$CW_BUILD/fixtures/kp_workload
[ -x "$H" ] && [ -x "$W" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d); hog=
cleanup() { [ -n "$hog" ] && kill "$hog" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT

if command -v stress-ng >/dev/null; then
	taskset -c 0 stress-ng --cpu 1 --timeout 6 --quiet & hog=$!
	hog_re='^stress-ng'
	# stress-ng forks its worker after its own set-up, which can take longer
	# than the pause below on a busy machine: wait for the worker itself.
	for _ in $(seq 1 100); do pgrep -P "$hog" >/dev/null && break; sleep 0.05; done
else
	taskset -c 0 "$W" hog 6000 & hog=$!
	hog_re='^kp_hog$'
fi
sleep 0.3
"$H" -- taskset -c 0 "$W" spin 1500 >"$T/out" 2>"$T/err"
tid=$(awk '/^tid main/ {print $3}' "$T/err")
[ -n "$tid" ] || { echo "workload did not report its tid"; cat "$T/err"; exit 1; }
tail -n 1 "$T/out" | jq -e '.rec == "summary" and .status == 0' >/dev/null

# Off-CPU time of the workload thread taken by the hog.
read -r n ns < <(jq -r --argjson tid "$tid" --arg re "$hog_re" \
	'select(.rec=="offcpu" and .tid==$tid and .comm=="kp_workload" and .reason=="preempted" and (.by_comm|test($re))) | .dur_ns' \
	"$T/out" | awk '{n++; s+=$1} END {print n+0, s+0}')
echo "preempted by hog: $n intervals, $((ns / 1000000)) ms of a 1500 ms run"
[ "$n" -ge 5 ] || { echo "expected >= 5 preemptions by the hog"; exit 1; }
# CFS gives two runnable tasks on one CPU about half each; 15% is a floor
# that survives other load on the machine.
[ "$ns" -ge 225000000 ] || { echo "expected >= 225 ms preempted by the hog"; exit 1; }
# Every interval carries the CPU it was switched out from: once exec'd
# (taskset pinned it before), that is CPU 0.
jq -e -s --argjson tid "$tid" '[.[] | select(.rec=="offcpu" and .tid==$tid and .comm=="kp_workload")] | all(.cpu == 0)' "$T/out" >/dev/null \
	|| { echo "preempted intervals off CPU 0"; exit 1; }
# Attach-time goal: all families loaded and attached within a second.
jq -e 'select(.rec=="summary") | .startup_ms < 1000 and all(.families[]; .attached > 0)' "$T/out" >/dev/null \
	|| { echo "startup over 1 s or a family not attached"; tail -n 1 "$T/out"; exit 1; }
echo ok
