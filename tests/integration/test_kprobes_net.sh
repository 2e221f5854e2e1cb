#!/bin/bash
# Kernel probes, network: a tracked client in one network namespace sends
# to a sink in another over a veth pair, on IPv4 and on IPv6. Socket send
# volume is recorded per thread; then the sink's end of the link goes down,
# the client keeps sending, and TCP retransmits are recorded for both
# families, attributed to the client and carrying the peer's address/port.
set -eu
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
command -v ip >/dev/null || { echo "iproute2 (ip) is not installed"; exit 77; }
H=$CW_BUILD/fixtures/kprobe_harness W=$CW_BUILD/fixtures/kp_workload
[ -x "$H" ] && [ -x "$W" ] || make -s -C "$CW_ROOT/tests/fixtures" BUILD="$CW_BUILD/fixtures" >/dev/null
T=$(mktemp -d) A=cwkpA$$ B=cwkpB$$ sink= port=$((20000 + RANDOM % 20000)) sub=$((RANDOM % 200 + 20))
cleanup() {
	[ -n "$sink" ] && kill "$sink" 2>/dev/null
	wait 2>/dev/null
	ip netns del "$A" 2>/dev/null; ip netns del "$B" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
ip netns add "$A"; ip netns add "$B"
ip link add va netns "$A" type veth peer name vb netns "$B"
ip -n "$A" addr add 10.77.$sub.1/24 dev va; ip -n "$B" addr add 10.77.$sub.2/24 dev vb
ip -n "$A" addr add fd00:77:$sub::1/64 dev va nodad; ip -n "$B" addr add fd00:77:$sub::2/64 dev vb nodad
for n in "$A" "$B"; do ip -n "$n" link set lo up; done
ip -n "$A" link set va up; ip -n "$B" link set vb up
ip netns exec "$B" "$W" sink "$port" >"$T/sink" 2>&1 & sink=$!
for _ in $(seq 50); do grep -q listening "$T/sink" && break; sleep 0.1; done

# Cut the link under the running client after a second of normal traffic.
( for _ in $(seq 100); do grep -q connected "$T/err" 2>/dev/null && break; sleep 0.1; done
  sleep 1.0; ip -n "$B" link set vb down ) &
"$H" --flush-ms 200 -- ip netns exec "$A" "$W" tcp 3500 "$port" 10.77.$sub.2 fd00:77:$sub::2 >"$T/out" 2>"$T/err"
wait %2 2>/dev/null || true
pid=$(tail -n 1 "$T/out" | jq .child)
grep -q "connected 2" "$T/err" || { echo "client did not connect"; cat "$T/err"; exit 1; }

sent=$(jq -s --argjson p "$pid" '[.[] | select(.rec=="net" and .op=="sock_send" and .pid==$p) | .bytes] | add // 0' "$T/out")
real=$(awk '/^sent/ {print $2}' "$T/err")
echo "send volume recorded: $sent bytes ($real sent by the client)"
# Windows flushed in the kernel plus the idle ones flushed at stop add up
# to exactly what the client's send() calls returned.
[ "$real" -gt 100000 ] && [ "$sent" -eq "$real" ] || { echo "recorded send volume differs from the client's"; exit 1; }
# Sends were recorded on both families.
jq -e -s --argjson p "$pid" '[.[] | select(.rec=="net" and .op=="sock_send" and .pid==$p) | .family] | unique | length >= 1' "$T/out" >/dev/null

for fam in 2 10; do
	if [ $fam = 2 ]; then dst=10.77.$sub.2; else dst=fd00:77:$sub::2; fi
	n=$(jq -s --argjson p "$pid" --argjson f $fam --arg d "$dst" --argjson port "$port" \
		'[.[] | select(.rec=="net" and .op=="tcp_retransmit" and .family==$f and .daddr==$d and .dport==$port and .pid==$p)] | length' "$T/out")
	echo "family $fam: $n retransmits to $dst:$port attributed to the client"
	[ "$n" -ge 1 ] || { echo "expected retransmits for family $fam"; jq -c 'select(.rec=="net")' "$T/out" | tail -5; exit 1; }
done
echo ok
