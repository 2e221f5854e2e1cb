#!/bin/bash
# Kernel probes, scenario (d): fork, exec and exit of children. Children
# and grandchildren forked by a tracked process are tracked automatically,
# their exec filename and exit codes are recorded.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness W=$CW_BUILD/fixtures/kp_workload
[ -x "$H" ] && [ -x "$W" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$H" -- "$W" forks >"$T/out" 2>"$T/err"
pid=$(tail -n 1 "$T/out" | jq .child)
read -r a b < <(awk '/^children/ {print $2, $3}' "$T/err")
[ -n "$a" ] && [ -n "$b" ] || { echo "workload did not report its children"; exit 1; }
P() { jq -s "$1" "$T/out"; }
chk() { jq -e -s "$1" "$T/out" >/dev/null || { echo "FAIL: $2"; grep '"proc"' "$T/out"; exit 1; }; }
chk "[.[] | select(.rec==\"proc\" and .op==\"exec\" and .pid==$pid and (.filename|test(\"kp_workload\$\")))] | length == 1" "exec of the workload"
chk "[.[] | select(.rec==\"proc\" and .op==\"fork\" and .parent_pid==$pid and .child_pid==$a)] | length == 1" "fork of child A"
chk "[.[] | select(.rec==\"proc\" and .op==\"fork\" and .parent_pid==$pid and .child_pid==$b)] | length == 1" "fork of child B"
chk "[.[] | select(.rec==\"proc\" and .op==\"exec\" and .pid==$a and .filename==\"/bin/true\")] | length == 1" "child A exec /bin/true (auto-tracked)"
# exit_code is the kernel's wait status: exit(3) -> 3 << 8.
chk "[.[] | select(.rec==\"proc\" and .op==\"exit\" and .pid==$b and .exit_code==768)] | length == 1" "child B exit code 3"
chk "[.[] | select(.rec==\"proc\" and .op==\"exit\" and .pid==$a and .exit_code==0)] | length == 1" "child A exit"
g=$(P "[.[] | select(.rec==\"proc\" and .op==\"fork\" and .parent_pid==$b) | .child_pid] | first // 0")
[ "$g" -gt 0 ] || { echo "FAIL: fork of the grandchild by B"; exit 1; }
chk "[.[] | select(.rec==\"proc\" and .op==\"exit\" and .pid==$g and .exit_code==1280 and .comm==\"grandchild\")] | length == 1" "grandchild exit code 5"
chk "[.[] | select(.rec==\"proc\" and .op==\"exit\" and .pid==$pid and .exit_code==0)] | length == 1" "workload exit"
# One exit per process, not per thread.
chk "[.[] | select(.rec==\"proc\" and .op==\"exit\")] | length == 4" "exactly four process exits"
echo "workload $pid, children $a $b, grandchild $g: fork/exec/exit recorded"
echo ok
