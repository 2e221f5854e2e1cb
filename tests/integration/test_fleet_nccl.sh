#!/bin/bash
# The NCCL straggler across four loopback agents, one rank per node, the
# second agent's clock 250 ms ahead (libfaketime; its data was written on
# that clock): explain --nodes fetches every agent's collectives, removes
# the measured offsets and names the same straggler (rank 2 on node3,
# preempted by stress-ng) as explain on the merged database does.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
LIBFT=
for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 \
	/usr/local/lib/faketime/libfaketime.so.1; do
	[ -f "$f" ] && LIBFT=$f && break
done
[ -n "$LIBFT" ] || { echo "libfaketime is not installed (Debian package libfaketime)"; exit 77; }
FIX=$CW_BUILD/fixtures/cluster_db
[ -x "$FIX" ] || fail "fixture $FIX not built (make fixtures)"
mkcerts
SRV=(--cert "$PKI/server.crt" --key "$PKI/server.key" --client-ca "$PKI/ca.crt")
CLI=(--ca-cert "$PKI/ca.crt" --client-cert "$PKI/client.crt" --client-key "$PKI/client.key")
"$FIX" "$T/n1.db" node1 0 --world 4 --straggler-rank 2 --async 1 --nccl 1 &&
	"$FIX" "$T/n2.db" node2 1 --world 4 --straggler-rank 2 --skew-ms 250 --async 1 --nccl 1 &&
	"$FIX" "$T/n3.db" node3 2 --world 4 --straggler-rank 2 --async 1 --nccl 1 &&
	"$FIX" "$T/n4.db" node4 3 --world 4 --straggler-rank 2 --async 1 --nccl 1 || fail "fixtures"
nodes=
for i in 1 2 3 4; do
	if [ $i = 2 ]; then
		LD_PRELOAD=$LIBFT FAKETIME="+0.25" FAKETIME_DONT_FAKE_MONOTONIC=1 start_agent node$i "$T/n$i.db" "${SRV[@]}"
	else
		start_agent node$i "$T/n$i.db" "${SRV[@]}"
	fi
	nodes=$nodes${nodes:+,}127.0.0.1:$PORT
done
summary='
import json, sys
d = json.load(sys.stdin)
out = []
for c in d["chains"]:
    rc = c["root_cause"]
    if rc["kind"] in ("nccl_straggler", "nccl_wait"):
        out.append("%s %s %s %s %s" % (rc["kind"], c["node"], c["rank"], rc.get("because"),
                                      (c.get("caused_by") or {}).get("rank", (c.get("culprit") or {}).get("comm"))))
print("\n".join(sorted(out)))'
"$CW_BIN" explain --nodes "$nodes" "${CLI[@]}" --json >"$T/fan.json" 2>"$T/fan.err" || fail "explain --nodes: $(cat "$T/fan.err")"
fan=$(python3 -c "$summary" <"$T/fan.json") || fail "fan-out json"
expect="nccl_straggler node3 2 cpu_preemption stress-ng
nccl_wait node1 0 nccl_straggler 2
nccl_wait node2 1 nccl_straggler 2
nccl_wait node4 3 nccl_straggler 2"
[ "$fan" = "$expect" ] || fail "fan-out: $fan (warnings: $(python3 -c 'import json,sys; print(json.load(sys.stdin)["warnings"])' <"$T/fan.json"))"
# The measured offset is what made it right: node2 is 250 ms ahead.
python3 -c '
import json, sys
sk = {n["node"]: n["skew"] for n in json.load(sys.stdin)["nodes"]}
assert abs(sk["node2"]["offset_ns"] - 250e6) < 10e6, sk' <"$T/fan.json" || fail "offset"
# The same through merge.
"$CW_BIN" merge "$T/n1.db" "$T/n2.db" "$T/n3.db" "$T/n4.db" -o "$T/c.db" >/dev/null || fail "merge"
merged=$("$CW_BIN" explain --db "$T/c.db" --json --no-store | python3 -c "$summary")
[ "$merged" = "$expect" ] || fail "merge: $merged"
echo ok
