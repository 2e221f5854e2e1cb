#!/bin/bash
# Kernel probes, scenario (c): direct-I/O writes with dd. Block requests
# are attributed to dd's pid, carry their bytes and a latency.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness
[ -x "$H" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
# Direct I/O needs a block-backed filesystem; /var/tmp is one on this kind
# of host (tmpfs /tmp would not be).
T=$(mktemp -d /var/tmp/cw-kp-io.XXXXXX)
trap 'rm -rf "$T"' EXIT

"$H" -- dd if=/dev/zero of="$T/f" bs=1M count=16 oflag=direct >"$T/out" 2>"$T/err"
pid=$(tail -n 1 "$T/out" | jq .child)
tail -n 1 "$T/out" | jq -e '.status == 0' >/dev/null || { echo "dd failed"; cat "$T/err"; exit 1; }
bytes=$(jq -s --argjson p "$pid" '[.[] | select(.rec=="block_io" and .op=="block_write" and .pid==$p) | .bytes] | add // 0' "$T/out")
n=$(jq -s --argjson p "$pid" '[.[] | select(.rec=="block_io" and .pid==$p)] | length' "$T/out")
echo "dd pid $pid: $n block requests, $bytes bytes written"
[ "$bytes" -ge $((16 * 1048576)) ] || { echo "expected >= 16 MiB of writes attributed to dd"; exit 1; }
read -r maj min < <(stat -c '%Hd %Ld' "$T")
jq -e -s --argjson p "$pid" --argjson maj "$maj" --argjson min "$min" \
	'[.[] | select(.rec=="block_io" and .op=="block_write" and .pid==$p)] | all(.comm=="dd" and .lat_ns > 0 and (.rwbs|test("^W")) and .dev_major==$maj and .dev_minor==$min)' \
	"$T/out" >/dev/null || { echo "dd's writes with a wrong comm, latency, rwbs or device (want $maj:$min)"; exit 1; }
echo ok
