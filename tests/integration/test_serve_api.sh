#!/bin/bash
# serve without certificates: a generated ECDSA P-256 self-signed pair
# (key 0600) reused across restarts; the API's routes, limits and errors;
# /metrics text; plain HTTP only on request, with a warning off loopback;
# the config file supplies what flags do not.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
ensure_fixture
"$AGENT_DB" "$T/a.db" gpu-1 0 preempted || fail "fixture db"

"$CW_BIN" serve --help | grep -q -- "--client-ca" || fail "--help"
"$CW_BIN" serve --bogus 2>/dev/null; [ $? = 2 ] || fail "unknown flag should exit 2"
"$CW_BIN" serve --listen nowhere --db "$T/a.db" 2>/dev/null; [ $? = 2 ] || fail "bad --listen"
"$CW_BIN" serve --db "$T/missing.db" --listen 127.0.0.1:0 2>"$T/e"; [ $? = 6 ] || fail "missing db"
grep -q "missing.db" "$T/e" || fail "missing db message: $(cat "$T/e")"
"$CW_BIN" serve --no-tls --cert x --key y --db "$T/a.db" 2>/dev/null; [ $? = 2 ] || fail "--no-tls --cert"

start_agent gpu-1 "$T/a.db" --max-rows 5 --max-body 1024
CRT=$HOME/.causeway/tls/server.crt
KEY=$HOME/.causeway/tls/server.key
[ -s "$CRT" ] && [ -s "$KEY" ] || fail "no generated certificate"
[ "$(stat -c %a "$KEY")" = 600 ] || fail "key mode $(stat -c %a "$KEY")"
openssl x509 -in "$CRT" -noout -text | grep -q "prime256v1\|P-256" || fail "not P-256"
openssl x509 -in "$CRT" -noout -text | grep -q "IP Address:127.0.0.1" || fail "no 127.0.0.1 SAN"
B=https://127.0.0.1:$PORT
C=(--cacert "$CRT")
j() { curl -s --max-time 10 "${C[@]}" "${AUTH[@]}" "$@"; }

j "$B/api/v1/health" | grep -q '"status":"ok","node":"gpu-1"' || fail "health"
j "$B/api/v1/time" | python3 -c '
import json, sys, time
d = json.load(sys.stdin); assert abs(d["realtime_ns"] - time.time_ns()) < 5e9, d' || fail "time"
# GET and POST queries; the row cap reports truncation.
out=$(j "$B/api/v1/query?sql=SELECT%20id%20FROM%20events%20ORDER%20BY%20id")
echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["columns"] == ["id"] and len(d["rows"]) == 5 and d["truncated"] is True, d' ||
	fail "row cap: $out"
out=$(j -X POST -H 'Content-Type: application/json' \
	-d '{"sql":"SELECT count(*) AS n FROM events WHERE duration_ns > ?1","params":[30000000]}' \
	"$B/api/v1/query")
echo "$out" | grep -q '"rows":\[\[12\]\]' || fail "POST with params: $out"
# Writes and bad SQL are 400 with the reason; oversize bodies 413.
[ "$(code "$B/api/v1/query?sql=DELETE%20FROM%20events" "${C[@]}")" = 400 ] || fail "DELETE not refused"
j "$B/api/v1/query?sql=DROP%20TABLE%20events" | grep -q '"error"' || fail "DROP error body"
[ "$(code "$B/api/v1/query?sql=SELEKT" "${C[@]}")" = 400 ] || fail "bad SQL"
[ "$(code "$B/api/v1/query" "${C[@]}")" = 400 ] || fail "missing sql"
[ "$(code "$B/api/v1/query" "${C[@]}" -X POST -d 'not json')" = 400 ] || fail "bad JSON body"
big=$(head -c 4000 /dev/zero | tr '\0' 'x')
[ "$(code "$B/api/v1/query" "${C[@]}" -X POST -d "{\"sql\":\"SELECT '$big'\"}")" = 413 ] ||
	fail "oversize body not 413"
[ "$(code "$B/api/v1/ops" "${C[@]}" -X DELETE)" = 405 ] || fail "DELETE method"
[ "$(code "$B/api/v1/chains?since=yesterday" "${C[@]}")" = 400 ] || fail "bad since"
# A filter that matches nothing is 404 with the reason, not an empty list.
[ "$(code "$B/api/v1/chains?pid=99999" "${C[@]}")" = 404 ] || fail "unknown pid not 404"
j "$B/api/v1/chains?pid=99999" | grep -q '"error":"nothing matches: no process 99999 in the store"' ||
	fail "unknown pid: $(j "$B/api/v1/chains?pid=99999")"
# chains, ops, overview carry real data.
j "$B/api/v1/chains" | python3 -c '
import json, sys
d = json.load(sys.stdin); assert d["node"] == "gpu-1" and d["chains"], d
assert d["chains"][0]["op"] == "cudaMalloc", d["chains"][0]' || fail "chains"
j "$B/api/v1/ops" | python3 -c '
import json, sys
d = json.load(sys.stdin); ops = {o["op"]: o for o in d["ops"]}
assert ops["cudaMalloc"]["count"] == 312 and ops["ncclAllReduce"]["count"] == 30, ops' || fail "ops"
j "$B/api/v1/overview" | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["counts"]["events"] == 342 and d["counts"]["offcpu"] == 12, d["counts"]
assert d["nodes"] == ["gpu-1"] and d["sessions"][0]["rank"] == 0, d
assert d["time_range"]["from_wall_ns"] == 1700000000 * 10**9, d["time_range"]' || fail "overview"
# /metrics: Prometheus text with the per-op histograms.
m=$(j "$B/metrics")
echo "$m" | grep -q '^causeway_op_duration_seconds_count{node="gpu-1",source="cuda",op="cudaMalloc"} 312$' ||
	fail "metrics count: $m"
echo "$m" | grep -q '^causeway_op_duration_seconds_bucket{node="gpu-1",source="cuda",op="cudaMalloc",le="+Inf"} 312$' ||
	fail "metrics +Inf bucket: $m"
echo "$m" | grep -q '^# TYPE causeway_op_duration_seconds histogram$' || fail "metrics TYPE"
echo "$m" | promtool check metrics || fail "promtool rejects /metrics"
kill "$LAST_PID"
wait "$LAST_PID" 2>/dev/null

# Restart: the same certificate is reused (clients pin it).
sum1=$(sha256sum <"$CRT")
start_agent gpu-1 "$T/a.db"
[ "$(sha256sum <"$CRT")" = "$sum1" ] || fail "certificate regenerated on restart"
[ "$(code "https://127.0.0.1:$PORT/api/v1/health" "${C[@]}")" = 200 ] || fail "after restart"

# Per-request time limit and per-client connection limit.
start_agent limits "$T/a.db" --timeout 300ms --per-ip 2
L=https://127.0.0.1:$PORT
q='WITH%20RECURSIVE%20c(x)%20AS%20(SELECT%201%20UNION%20ALL%20SELECT%20x%2B1%20FROM%20c)%20SELECT%20count(*)%20FROM%20c'
t0=$(date +%s%N)
[ "$(code "$L/api/v1/query?sql=$q" "${C[@]}")" = 504 ] || fail "endless query not stopped with 504"
[ $((($(date +%s%N) - t0) / 1000000)) -lt 3000 ] || fail "time limit not enforced promptly"
python3 -c '
import socket, sys, time
conns = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(2)]
open(sys.argv[2], "w").write("1")
time.sleep(3)' "$PORT" "$T/held" &
HOLD=$!
PIDS+=($HOLD)
for i in $(seq 1 60); do [ -s "$T/held" ] && break; sleep 0.05; done
[ "$(code "$L/api/v1/health" "${C[@]}")" = 000 ] || fail "third connection from one IP accepted"
kill $HOLD 2>/dev/null
wait $HOLD 2>/dev/null
sleep 0.3
[ "$(code "$L/api/v1/health" "${C[@]}")" = 200 ] || fail "connection refused after the others closed"

# Plain HTTP only when asked; a warning when not on loopback.
start_agent plain "$T/a.db" --no-tls
[ "$(code "http://127.0.0.1:$PORT/api/v1/health")" = 200 ] || fail "--no-tls health"
grep -q warning "$LAST_LOG" && fail "loopback --no-tls should not warn"
"$CW_BIN" --node open serve --db "$T/a.db" --listen 0.0.0.0:0 --no-tls 2>"$T/open.log" &
PIDS+=($!)
for i in $(seq 1 60); do grep -q serving "$T/open.log" 2>/dev/null && break; sleep 0.05; done
grep -q "warning: serving plain HTTP" "$T/open.log" || fail "no warning off loopback: $(cat "$T/open.log")"

# The config file supplies node, store and listen address.
cat >"$T/cw.yaml" <<EOF
node: from-config
store:
  path: a.db
server:
  listen: 127.0.0.1:0
EOF
"$CW_BIN" --config "$T/cw.yaml" serve 2>"$T/cfg.log" &
PIDS+=($!)
for i in $(seq 1 60); do grep -q serving "$T/cfg.log" 2>/dev/null && break; sleep 0.05; done
grep -q "for node \"from-config\" from \"$T/a.db\"" "$T/cfg.log" || fail "config not used: $(cat "$T/cfg.log")"
printf 'node: x\nsevrer:\n  listen: a:1\n' >"$T/bad.yaml"
"$CW_BIN" --config "$T/bad.yaml" serve 2>"$T/e"; [ $? = 2 ] || fail "bad config exit"
grep -q 'line 2: unknown key "sevrer"' "$T/e" || fail "bad config message: $(cat "$T/e")"
echo "serve api: ok"
