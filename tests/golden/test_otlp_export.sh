#!/bin/bash
# serve --otlp against a loopback OTLP/HTTP receiver (tests/otlp/receiver.py)
# that checks every payload field by field:
#  a) the receiver is down for the first seconds: once it is up, every
#     queued payload arrives, in order, every stored chain exactly once as a
#     log record, and the histograms agree with `query --json`;
#  b) a queue of 2 while the receiver stays down: the rest is dropped and
#     the exit line counts it;
#  c) a receiver that refuses (400): counted as refused, not retried.
set -u
D=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$CW_ROOT/tests/lib/auth.sh"
auth_shared # every server and client here shares $CW_TOKEN
RECV=$CW_ROOT/tests/otlp/receiver.py
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$CW_BIN" demo incident --db "$D/d.db" >/dev/null 2>&1 || fail "demo"
"$CW_BIN" explain --db "$D/d.db" >/dev/null 2>&1 || fail "explain"
chains=$(sqlite3 "$D/d.db" "SELECT count(*) FROM chains")
[ "$chains" -ge 1 ] || fail "no chain stored"
"$CW_BIN" query --db "$D/d.db" --json >"$D/q.json" || fail "query"

# serve_otlp NAME QUEUE PORT: serve on a free port exporting to PORT.
serve_otlp() {
	printf 'otlp:\n  interval: 1s\n  queue: %s\n' "$2" >"$D/$1.yaml"
	"$CW_BIN" --config "$D/$1.yaml" serve --db "$D/d.db" --no-tls --listen 127.0.0.1:0 \
		--otlp "http://127.0.0.1:$3/" 2>"$D/$1.err" &
	SPID=$!
	pids+=("$SPID")
}
# recv NAME PORT [--status N]: a receiver writing into $D/NAME/.
recv() {
	local name=$1 port=$2
	shift 2
	mkdir -p "$D/$name"
	PORT=$port python3 "$RECV" "$D/$name.port" "$D/$name" "$@" &
	pids+=($!)
	for _ in $(seq 1 100); do [ -f "$D/$name.port" ] && return 0; sleep 0.05; done
	fail "receiver $name did not start"
}

# a) down, then up.
P=$(freeport)
serve_otlp a 64 "$P"
sleep 3.5
grep -q "exporting OTLP to http://127.0.0.1:$P/ every 1s" "$D/a.err" || fail "no start line: $(cat "$D/a.err")"
recv a "$P"
for _ in $(seq 1 200); do
	[ "$(ls "$D/a" | grep -c metrics)" -ge 5 ] && ls "$D/a" | grep -q logs && break
	sleep 0.1
done
kill -TERM "$SPID"
wait "$SPID"
ls "$D/a" | grep -q invalid && fail "receiver refused payloads: $(cat "$D"/a/*invalid*)"
python3 - "$D/a" "$D/q.json" "$chains" <<'PY' || exit 1
import glob, json, os, sys
d, ops, chains = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
files = sorted(glob.glob(d + "/*.json"))
metrics = [f for f in files if f.endswith("-metrics.json")]
logs = [f for f in files if f.endswith("-logs.json")]
if len(metrics) < 5:
    sys.exit("FAIL: %d metrics payloads (4 queued while down, then more)" % len(metrics))
# The first payload built was a metrics one, then the logs, in that order.
if not (os.path.basename(files[0]).endswith("metrics.json") and files[1].endswith("logs.json")):
    sys.exit("FAIL: payloads out of order: %r" % [os.path.basename(f) for f in files[:3]])
ids = []
for f in logs:
    for rl in json.load(open(f))["resourceLogs"]:
        for sl in rl["scopeLogs"]:
            for r in sl["logRecords"]:
                a = {x["key"]: x["value"] for x in r["attributes"]}
                ids.append(int(a["causeway.chain.id"]["intValue"]))
if sorted(ids) != sorted(set(ids)) or len(ids) != chains:
    sys.exit("FAIL: %d log records (ids %r) for %d stored chains" % (len(ids), ids, chains))
last = json.load(open(metrics[-1]))
pts = {}
for m in last["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]:
    if m["name"] == "causeway.op.duration":
        for p in m["histogram"]["dataPoints"]:
            a = {x["key"]: x["value"]["stringValue"] for x in p["attributes"]}
            pts[(a["source"], a["op"])] = int(p["count"])
for o in ops:
    if pts.get((o["source"], o["op"])) != o["count"]:
        sys.exit("FAIL: %s count %r over OTLP, query says %d" % (o["op"], pts.get((o["source"], o["op"])), o["count"]))
print("a) %d metrics and %d logs payloads, %d chains once each, %d ops agree" % (len(metrics), len(logs), len(ids), len(ops)))
PY
grep -q "OTLP: [0-9]* payloads sent ($chains chains), [0-9]* retries, 0 dropped (queue), 0 refused" "$D/a.err" ||
	fail "exit line: $(tail -1 "$D/a.err")"
grep -q "retries" "$D/a.err" && ! grep -q ", 0 retries," "$D/a.err" || fail "no retry counted while the receiver was down"

# b) queue of 2, receiver down throughout: all but what fits is dropped.
P=$(freeport)
serve_otlp b 2 "$P"
sleep 3.5
kill -TERM "$SPID"
wait "$SPID"
line=$(grep "OTLP:" "$D/b.err")
echo "b) $line"
python3 - "$line" <<'PY' || exit 1
import re, sys
m = re.search(r"(\d+) payloads sent \((\d+) chains\), (\d+) retries, (\d+) dropped \(queue\), (\d+) refused", sys.argv[1])
sent, chains, retries, dropped, refused = map(int, m.groups())
# 4+ collections while up (metrics + the one logs payload) and the last at
# stop: at least 6 built, none delivered, every one counted as dropped.
if sent or refused or dropped < 6 or retries < 1:
    sys.exit("FAIL: want nothing sent and >= 6 dropped: %s" % sys.argv[1])
PY

# c) a receiver that refuses: counted, not retried.
P=$(freeport)
recv c "$P" --status 400
serve_otlp c 64 "$P"
sleep 1.5
kill -TERM "$SPID"
wait "$SPID"
line=$(grep "OTLP:" "$D/c.err")
echo "c) $line"
echo "$line" | grep -q "0 payloads sent (0 chains), 0 retries, 0 dropped (queue), [1-9][0-9]* refused" ||
	fail "refusals not counted: $line"
echo ok
