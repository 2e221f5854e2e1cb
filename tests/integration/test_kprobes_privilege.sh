#!/bin/bash
# Kernel probes: without root or BPF capabilities the loader refuses with a
# clear error (the harness maps -EPERM to exit 3); with CAP_BPF and
# CAP_PERFMON alone (kernel >= 5.8), an unprivileged user can trace.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root to drop privileges"; exit 77; }
command -v setpriv >/dev/null || { echo "setpriv (util-linux) is not installed"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness
[ -x "$H" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT

rc=0
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$H" -- /bin/true >"$T/out" 2>"$T/err" || rc=$?
echo "as nobody: rc=$rc: $(cat "$T/err")"
[ "$rc" -eq 3 ] || { echo "expected exit 3 (no permission)"; exit 1; }
grep -qx 'kprobe_harness: kernel tracing needs root (or CAP_BPF and CAP_PERFMON)' "$T/err"
[ ! -s "$T/out" ] || { echo "records printed without privilege"; exit 1; }

setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+bpf,+perfmon --ambient-caps=+bpf,+perfmon \
	"$H" -- /bin/true >"$T/out" 2>"$T/err"
pid=$(tail -n 1 "$T/out" | jq .child)
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="proc" and .pid==$p and (.op=="exec" or .op=="exit"))] | length == 2' "$T/out" >/dev/null \
	|| { echo "with CAP_BPF+CAP_PERFMON: expected exec and exit records"; cat "$T/err"; exit 1; }
echo "with CAP_BPF+CAP_PERFMON as nobody: exec and exit of $pid recorded"
echo ok
