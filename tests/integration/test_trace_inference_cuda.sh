#!/bin/bash
# A slow CUDA step during requests, named as their cause with the engine
# thread's Python line. tests/fixtures/py/infer_server.py serves
# completions from one engine thread that calls the stand-in libcudart
# per decode step; trace launches it with --inference on its port. Two
# requests arrive while each sync takes 150 ms (the fixture's control
# file), the others at 1 ms: explain names the slow requests, the sync
# and the line marked "# DECODE".
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
SCRIPT=$CW_ROOT/tests/fixtures/py/infer_server.py
[ -f "$FAKE" ] || { echo "FAIL: fixture $FAKE missing (make fixtures)"; exit 1; }
command -v curl >/dev/null || { echo "FAIL: curl not installed"; exit 1; }
py=$(ls -d /root/.pyenv/versions/3.12.*/bin/python3 2>/dev/null | head -1)
[ -n "$py" ] || py=$(command -v python3)
D=$(mktemp -d)
tp=
cleanup() {
	[ -n "$tp" ] && kill -INT "$tp" 2>/dev/null && wait "$tp" 2>/dev/null
	pkill -TERM -f "infer_server.py $FAKE $SPORT" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
SPORT=$((21000 + RANDOM % 20000))
line=$(grep -n '# DECODE$' "$SCRIPT" | cut -d: -f1)

echo CW_FAKE_SYNC_US=1000 >"$D/ctl"
CW_FAKE_CTL=$D/ctl "$CW_BIN" trace --db "$D/t.db" --no-view --inference $SPORT --cuda-lib "$FAKE" -- \
	"$py" "$SCRIPT" "$FAKE" $SPORT >"$D/out" 2>"$D/err" &
tp=$!
for _ in $(seq 1 300); do
	grep -q "following the requests of .* on port $SPORT" "$D/err" && break
	kill -0 $tp 2>/dev/null || fail "trace exited: $(cat "$D/err")"
	sleep 0.1
done
grep -q "following the requests of .* on port $SPORT" "$D/err" || fail "the server was not found: $(cat "$D/err" "$D/out")"

ask() { curl -s -N --max-time 30 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$SPORT/v1/completions" \
	-d '{"max_tokens":8,"stream":true}' >>"$D/codes"; }
for _ in $(seq 1 10); do ask; done
echo CW_FAKE_SYNC_US=150000 >"$D/ctl"
sleep 0.1 # the fixture reads its control file every 20 ms
ask
ask
echo CW_FAKE_SYNC_US=1000 >"$D/ctl"
sleep 0.1
for _ in $(seq 1 8); do ask; done
[ "$(grep -c '^200$' "$D/codes")" = 20 ] || fail "answers: $(sort "$D/codes" | uniq -c)"
sleep 0.5
kill -INT $tp
wait $tp || fail "trace: $(cat "$D/err")"
tp=

got=$(sqlite3 "$D/t.db" "SELECT count(*), total(status = 200 AND streamed = 1 AND path = '/v1/completions'),
	total(duration_ns > 1000000000) FROM requests WHERE port = $SPORT")
echo "requests | 200 streamed | over 1 s: $got"
[ "$got" = "20|20.0|2.0" ] || fail "requests stored: $got, want 20|20.0|2.0"

"$CW_BIN" explain --db "$D/t.db" --json --no-store >"$D/e.json" || fail "explain: $(cat "$D/e.json")"
python3 - "$D/e.json" "$SCRIPT" "$line" <<'PY' || fail "explain does not name the slow requests' sync and line: $(head -c 3000 "$D/e.json")"
import json, sys
chains = json.load(open(sys.argv[1])).get("chains") or []
script, line = sys.argv[2], int(sys.argv[3])


def has_line(node):
    """A frame of the fixture's decode line anywhere in the chain."""
    if isinstance(node, dict):
        if str(node.get("file", "")).endswith("/infer_server.py") and node.get("line") == line:
            return True
        return any(has_line(v) for v in node.values())
    if isinstance(node, list):
        return any(has_line(v) for v in node)
    return False


for c in chains:
    text = json.dumps(c)
    if "/v1/completions" in text and "cudaStreamSynchronize" in text and has_line(c):
        print("chain:", (c.get("root_cause") or {}).get("summary"))
        sys.exit(0)
print("want a chain naming /v1/completions, cudaStreamSynchronize and infer_server.py line", line)
print("chains:", [(c.get("root_cause") or {}).get("summary") for c in chains])
sys.exit(1)
PY
echo ok
