#!/bin/bash
# The dashboard's live view on trace --serve: /overview says live and marks
# the session being written, and two polls of /ops/series and /chains see the
# trace grow (the /chains cache is keyed by the file's version, so it never
# serves the first answer again while rows arrive); /stream ticks with the
# stored events growing, and ends when the server stops.
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
. "$CW_ROOT/tests/integration/fleet_lib.sh"
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$FAKE" ] && [ -x "$CW_BUILD/fixtures/fake_workload" ] ||
	make -s -C "$CW_ROOT" BUILD="$CW_BUILD" fixtures >/dev/null 2>&1 || fail "cannot build the fixtures (make fixtures)"
export LD_LIBRARY_PATH=$CW_BUILD/fixtures/fakecuda
CW_FAKE_SYNC_US=200 "$CW_BIN" --node "live$$" trace --db "$T/t.db" --no-view --serve 127.0.0.1:0 \
	--cuda-lib "$FAKE" -- "$CW_BUILD/fixtures/fake_workload" -T 6 -m sync >"$T/w.out" 2>"$T/t.err" &
TP=$!
PIDS+=("$TP")
PORT=
for _ in $(seq 1 100); do
	PORT=$(sed -n 's/.*serving https:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/t.err")
	[ -n "$PORT" ] && break
	kill -0 $TP 2>/dev/null || break
	sleep 0.1
done
[ -n "$PORT" ] || fail "trace did not start serving: $(cat "$T/t.err")"
auth_from_file || fail "trace --serve made no token file: $(cat "$T/t.err")"
B=https://127.0.0.1:$PORT/api/v1
get() { curl -s "${AUTH[@]}" --max-time 10 -k "$B/$1"; }
sleep 1.5
get overview >"$T/o1.json"
get "ops/series?points=5" >"$T/s1.json"
get chains >"$T/c1.json"
# Server-sent ticks: one a second, the stored events growing.
curl -s "${AUTH[@]}" -N -k --max-time 2.6 "$B/stream" >"$T/stream.txt"
get "ops/series?points=5" >"$T/s2.json"
get chains >"$T/c2.json"
kill -0 $TP 2>/dev/null || fail "trace ended before the checks: $(cat "$T/t.err")"
python3 - "$T" <<'PY' || fail "live answers"
import json, sys
T = sys.argv[1]
o = json.load(open(T + "/o1.json"))
assert o["live"] is True, o.get("live")
s = o["capture"]["sessions"][0]
assert s["kind"] == "trace" and s["live"] is True and s["ended_ns"] is None, s
calls = lambda f: sum(x["count"] for x in json.load(open(T + f))["ops"] if x["op"] == "cudaStreamSynchronize")
a, b = calls("/s1.json"), calls("/s2.json")
assert 0 < a < b, (a, b)
c1, c2 = json.load(open(T + "/c1.json")), json.load(open(T + "/c2.json"))
assert c1["window"]["to_ns"] < c2["window"]["to_ns"], (c1["window"], c2["window"])
PY
python3 - "$T/stream.txt" <<'PY' || fail "stream: $(cat "$T/stream.txt")"
import json, sys
ticks = [json.loads(l[6:]) for l in open(sys.argv[1]) if l.startswith("data: ")]
assert len(ticks) >= 2 and all(t["type"] == "tick" for t in ticks), ticks
assert ticks[-1]["events"] > ticks[0]["events"] > 0, ticks
assert ticks[-1]["chains"] is None or ticks[-1]["chains"] >= 0
PY
# A stream still open when the trace ends does not hold the server up.
curl -s "${AUTH[@]}" -N -k --max-time 60 "$B/stream" >"$T/stream2.txt" &
CP=$!
PIDS+=("$CP")
sleep 0.5
start=$SECONDS
wait $TP
wait $CP
[ $((SECONDS - start)) -lt 20 ] || fail "the trace waited for an open stream"
grep -q '^data: ' "$T/stream2.txt" || fail "no tick on the second stream"
echo ok
