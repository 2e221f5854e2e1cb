#!/bin/bash
# Clock skew: an agent whose realtime clock runs 250 ms ahead (libfaketime,
# monotonic clock left alone) is measured within 10 ms of the truth, a
# normal agent within 10 ms of zero; the warning names the skewed node and
# the chains' timelines are shifted onto the client's clock.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
LIBFT=
for f in /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1 \
	/usr/local/lib/faketime/libfaketime.so.1; do
	[ -f "$f" ] && LIBFT=$f && break
done
if [ -z "$LIBFT" ]; then
	echo "libfaketime is not installed (Debian package libfaketime)"
	exit 77
fi
ensure_fixture
mkcerts
"$AGENT_DB" "$T/ok.db" gpu-ok 0 || fail "fixture"
"$AGENT_DB" "$T/ahead.db" gpu-ahead 1 preempted || fail "fixture"
SRV=(--cert "$PKI/server.crt" --key "$PKI/server.key" --client-ca "$PKI/ca.crt")
CLI=(--ca-cert "$PKI/ca.crt" --client-cert "$PKI/client.crt" --client-key "$PKI/client.key")
start_agent gpu-ok "$T/ok.db" "${SRV[@]}"
OK=127.0.0.1:$PORT
LD_PRELOAD=$LIBFT FAKETIME="+0.25" FAKETIME_DONT_FAKE_MONOTONIC=1 \
	start_agent gpu-ahead "$T/ahead.db" "${SRV[@]}"
AHEAD=127.0.0.1:$PORT
# The agent's own clock really is ahead (the hook took effect).
before=$(date +%s%N)
srv=$(curl -s --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" \
	"https://$AHEAD/api/v1/time" | sed -n 's/.*"realtime_ns":\([0-9]*\).*/\1/p')
after=$(date +%s%N)
[ -n "$srv" ] && [ $(((srv - before) / 1000000)) -gt 150 ] &&
	[ $(((srv - after) / 1000000)) -lt 350 ] ||
	fail "faketime did not shift the agent's clock ($before < $srv < $after)"

out=$("$CW_BIN" explain --nodes "$OK,$AHEAD" "${CLI[@]}" --json 2>"$T/e") || fail "explain failed"
echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
sk = {n["node"]: n["skew"] for n in d["nodes"]}
ahead, ok = sk["gpu-ahead"], sk["gpu-ok"]
err = abs(ahead["offset_ns"] - 250_000_000)
print("measured offset %.3f ms (error %.3f ms), rtt %.3f ms, %d samples; normal agent %.3f ms"
      % (ahead["offset_ns"] / 1e6, err / 1e6, ahead["rtt_ns"] / 1e6, ahead["samples"],
         ok["offset_ns"] / 1e6))
assert ahead["samples"] >= 3 and ok["samples"] >= 3
assert err < 10_000_000, "offset off by %d ns" % err
assert abs(ok["offset_ns"]) < 10_000_000, ok
assert d["clock_offsets_applied"] is True
w = [x for x in d["warnings"] if "gpu-ahead" in x and "ahead of this host" in x]
assert w, d["warnings"]
assert not [x for x in d["warnings"] if "gpu-ok" in x and "clock" in x], d["warnings"]
ch = [c for c in d["chains"] if c["node"] == "gpu-ahead"]
assert ch and all(c["clock_offset_ns"] == ahead["offset_ns"] for c in ch), ch
' || fail "skew: $out"
# The raw (unshifted) timeline from the agent differs by exactly the offset.
raw=$(curl -s --cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key" \
	"https://$AHEAD/api/v1/chains")
python3 - "$raw" "$out" <<'EOF' || fail "timeline not shifted by the offset"
import json, sys
raw = json.loads(sys.argv[1]); fan = json.loads(sys.argv[2])
c0 = raw["chains"][0]
c1 = [c for c in fan["chains"] if c["node"] == "gpu-ahead"][0]
off = c1["clock_offset_ns"]
for a, b in zip(c0["timeline"], c1["timeline"]):
    assert a["t_ns"] - b["t_ns"] == off, (a, b, off)
EOF
# Text mode says the offsets were applied.
"$CW_BIN" explain --nodes "$OK,$AHEAD" "${CLI[@]}" 2>/dev/null | grep -q "shifted onto this host's clock" ||
	fail "text output does not say the offsets were applied"
echo "skew: ok"
