#!/bin/bash
# Four agents on loopback (mTLS + token), one of them misbehaving: fan-out
# query returns every node's rows, explain names the bad node, a killed
# agent, a hanging one and one speaking garbage become warnings while the
# rest answer within the per-node timeout.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
ensure_fixture
mkcerts
echo "fleet-token-$RANDOM$RANDOM" >"$T/token"
SRV=(--cert "$PKI/server.crt" --key "$PKI/server.key" --client-ca "$PKI/ca.crt"
	--token-file "$T/token")
CLI=(--ca-cert "$PKI/ca.crt" --client-cert "$PKI/client.crt" --client-key "$PKI/client.key"
	--token-file "$T/token")
ADDRS=()
APIDS=()
for i in 1 2 3 4; do
	extra=
	[ $i = 3 ] && extra=preempted
	"$AGENT_DB" "$T/gpu-$i.db" "gpu-$i" $((i - 1)) $extra || fail "fixture db $i"
	start_agent "gpu-$i" "$T/gpu-$i.db" "${SRV[@]}"
	ADDRS+=("127.0.0.1:$PORT")
	APIDS+=("$LAST_PID")
done
NODES=$(IFS=,; echo "${ADDRS[*]}")

# 1. All four answer; one row per node, node column first.
out=$("$CW_BIN" query --nodes "$NODES" "${CLI[@]}" --json \
	"SELECT count(*) AS n, min(rank) AS rank FROM processes JOIN events USING (node, pid)") ||
	fail "fan-out query failed"
echo "$out" | python3 -c '
import json, sys
rows = json.load(sys.stdin)
assert [r["node"] for r in rows] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"], rows
assert list(rows[0].keys())[0] == "node", rows[0]
assert [r["n"] for r in rows] == [330, 330, 342, 330], rows
assert [r["rank"] for r in rows] == [0, 1, 2, 3], rows
' || fail "merged rows wrong: $out"
txt=$("$CW_BIN" query --nodes "$NODES" "${CLI[@]}" "SELECT count(*) AS n FROM events")
[ "$(echo "$txt" | head -1 | awk '{print $1}')" = node ] || fail "text header: $txt"
[ "$(echo "$txt" | grep -c '^gpu-')" = 4 ] || fail "text rows: $txt"
# The per-op summary fans out too.
sum=$("$CW_BIN" query --nodes "$NODES" "${CLI[@]}" --csv)
[ "$(echo "$sum" | grep -c ',cuda,cudaMalloc,')" = 4 ] || fail "summary rows: $sum"

# 2. explain names the bad node, and only it.
ex=$("$CW_BIN" explain --nodes "$NODES" "${CLI[@]}" --json) || fail "fan-out explain failed"
echo "$ex" | python3 -c '
import json, sys
d = json.load(sys.stdin)
ch = d["chains"]
assert ch, "no chains"
assert {c["node"] for c in ch} == {"gpu-3"}, [c["node"] for c in ch]
assert all(c["agent"].startswith("127.0.0.1:") for c in ch)
assert len(d["nodes"]) == 4 and all(n["ok"] for n in d["nodes"]), d["nodes"]
assert all(n["skew"] and n["skew"]["samples"] >= 3 for n in d["nodes"]), d["nodes"]
assert d["clock_offsets_applied"] is True
sev = {"high": 0, "medium": 1, "low": 2}
assert [sev[c["severity"].lower()] for c in ch] == sorted(sev[c["severity"].lower()] for c in ch)
' || fail "explain across nodes: $ex"
"$CW_BIN" explain --nodes "$NODES" "${CLI[@]}" | grep -q "on gpu-3" ||
	fail "text explain does not name gpu-3"

# 3. Wrong client credentials are refused by every agent: an error, no rows.
"$CW_BIN" query --nodes "$NODES" --ca-cert "$PKI/ca.crt" --client-cert "$PKI/wrong.crt" \
	--client-key "$PKI/wrong.key" --token-file "$T/token" "SELECT 1" >"$T/o" 2>"$T/e" &&
	fail "wrong-CA client got an answer"
grep -q "HTTP 403" "$T/e" || fail "403 not reported: $(cat "$T/e")"
# A node's own certificate (serverAuth only, as docs/fleet.md makes it) is
# no client certificate: refused with the reason, by every agent.
"$CW_BIN" query --nodes "$NODES" --ca-cert "$PKI/ca.crt" --client-cert "$PKI/server.crt" \
	--client-key "$PKI/server.key" --token-file "$T/token" "SELECT 1" >"$T/o" 2>"$T/e" &&
	fail "serverAuth-only client got an answer"
[ "$(grep -o 'HTTP 403: client certificate rejected: its extended key usage' "$T/e" | wc -l)" = 4 ] ||
	fail "EKU refusal not reported by all four: $(cat "$T/e")"

# 4. One agent killed: the other three answer, plus a warning, in time.
kill "${APIDS[1]}"
wait "${APIDS[1]}" 2>/dev/null
start=$(date +%s%N)
out=$("$CW_BIN" query --nodes "$NODES" "${CLI[@]}" --node-timeout 2s \
	"SELECT count(*) AS n FROM events" 2>"$T/e") || fail "query with a dead node failed"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$(echo "$out" | grep -c '^gpu-')" = 3 ] || fail "three nodes should answer: $out"
grep -q "node \"${ADDRS[1]}\"" "$T/e" || fail "no warning for the dead node: $(cat "$T/e")"
[ $ms -lt 2500 ] || fail "dead node made the query take $ms ms"

# 5. A hanging node (accepts, never answers) times out; the rest answer.
cat >"$T/hang.py" <<'EOF'
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
open(sys.argv[1], "w").write(str(s.getsockname()[1]))
conns = []
while True:
    c, _ = s.accept(); conns.append(c)
EOF
python3 "$T/hang.py" "$T/hang.port" &
PIDS+=($!)
# 6. A node that answers garbage over TLS 1.3.
cat >"$T/junk.py" <<'EOF'
import http.server, ssl, sys
class H(http.server.BaseHTTPRequestHandler):
    def reply(self):
        b = b"\x00\xffnot json {{{"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers(); self.wfile.write(b)
    def do_GET(self): self.reply()
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0))); self.reply()
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
EOF
python3 "$T/junk.py" "$T/junk.port" "$PKI/server.crt" "$PKI/server.key" &
PIDS+=($!)
for i in $(seq 1 100); do [ -s "$T/hang.port" ] && [ -s "$T/junk.port" ] && break; sleep 0.05; done
HANG=127.0.0.1:$(cat "$T/hang.port")
JUNK=127.0.0.1:$(cat "$T/junk.port")
start=$(date +%s%N)
out=$("$CW_BIN" query --nodes "${ADDRS[0]},$HANG,${ADDRS[2]},$JUNK,${ADDRS[3]}" "${CLI[@]}" \
	--node-timeout 1s "SELECT count(*) AS n FROM events" 2>"$T/e") || fail "query failed: $(cat "$T/e")"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$(echo "$out" | grep -c '^gpu-')" = 3 ] || fail "three good nodes should answer: $out"
grep -q "node \"$HANG\": no answer within" "$T/e" || fail "hang not reported: $(cat "$T/e")"
grep -q "node \"$JUNK\": answer is not a causeway JSON object" "$T/e" ||
	fail "garbage not reported: $(cat "$T/e")"
[ $ms -lt 2000 ] || fail "hanging node held the fan-out for $ms ms (timeout 1s)"
"$CW_BIN" explain --nodes "$JUNK,${ADDRS[2]}" "${CLI[@]}" --node-timeout 1s >/dev/null 2>&1 ||
	fail "explain with a garbage node failed"

# 7. Nobody answers: a clear error and a non-zero exit.
"$CW_BIN" query --nodes "$HANG,${ADDRS[1]}" "${CLI[@]}" --node-timeout 300ms "SELECT 1" \
	>/dev/null 2>"$T/e" && fail "query with no live node succeeded"
grep -q "none of the 2 nodes answered" "$T/e" || fail "no-node error: $(cat "$T/e")"
echo "fan-out: 4 agents, dead/hanging/garbage nodes tolerated (last run $ms ms)"
