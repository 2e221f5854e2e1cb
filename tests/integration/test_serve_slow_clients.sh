#!/bin/bash
# serve against slow clients from one address. Six connections fill the
# per-address slots and each holds its slot with a byte every 0.2 s (a
# dribbled TLS handshake, dribbled request headers after the handshake, a
# dribbled request body) or by keeping a kept-alive connection idle after one
# answer. While they dribble, a client from another loopback address is
# served, and the locked-out address itself is served again once the read
# deadline (--read-timeout 2s) has cut them: every slow connection is closed
# by the server about 2 s after it opened (or after its answer), long before
# the 30 s it would go on dribbling. A query that runs longer than the read
# timeout is still answered.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
ensure_fixture
"$AGENT_DB" "$T/a.db" gpu-1 0 || fail "fixture db"

"$CW_BIN" serve --read-timeout 0s --db "$T/a.db" 2>"$T/e"
[ $? = 2 ] || fail "--read-timeout 0s should exit 2"
grep -q 'invalid --read-timeout "0s"' "$T/e" || fail "--read-timeout 0s message: $(cat "$T/e")"

start_agent slow "$T/a.db" --per-ip 6 --read-timeout 2s
CRT=$HOME/.causeway/tls/server.crt
B=https://127.0.0.1:$PORT

cat >"$T/dribble.py" <<'EOF'
import json, select, socket, ssl, sys, time, cw_auth

port, ready, hold = int(sys.argv[1]), sys.argv[2], 30.0
ctx = ssl.create_default_context(cafile=sys.argv[3])
AUTH = b"Authorization: Bearer " + cw_auth.token().encode() + b"\r\n"

def tcp():
    return socket.create_connection(("127.0.0.1", port))

def tls():
    return ctx.wrap_socket(tcp(), server_hostname="127.0.0.1")

conns = []  # [name, socket, start, bytes to dribble]
# A TLS record header announcing a 16 KiB handshake message, then its body
# a byte at a time: the server waits inside the handshake.
conns.append(["handshake-1", tcp(), 0, b"\x16\x03\x01\x40\x00" + b"\x00" * 400])
conns.append(["handshake-2", tcp(), 0, b"\x16\x03\x01\x40\x00" + b"\x00" * 400])
conns.append(["headers-1", tls(), 0, b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n" + AUTH + b"X-Slow: " + b"a" * 400])
conns.append(["headers-2", tls(), 0, b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n" + AUTH + b"X-Slow: " + b"a" * 400])
conns.append(["body", tls(), 0, b"POST /api/v1/query HTTP/1.1\r\nHost: x\r\n" + AUTH + b"Content-Type: application/json\r\n"
              b"Content-Length: 4000\r\n\r\n" + b" " * 400])
# One whole request and its answer, then silence on the kept-alive connection.
s = tls()
s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: x\r\n" + AUTH + b"\r\n")
got = b""
while b"\r\n\r\n" not in got or not got.endswith(b"}"):
    got += s.recv(4096)
assert b" 200 " in got.split(b"\r\n")[0], got
conns.append(["idle", s, 0, b""])
now = time.monotonic()
for c in conns:
    c[2] = now
    c[1].setblocking(False)
open(ready, "w").write("ready\n")

cut = {}
while len(cut) < len(conns) and time.monotonic() - now < hold:
    for name, sk, start, data in conns:
        if name in cut:
            continue
        closed = False
        try:
            r, _, _ = select.select([sk], [], [], 0)
            if r:
                try:
                    closed = sk.recv(4096) == b""
                except ssl.SSLWantReadError:
                    pass
            pos = int((time.monotonic() - start) / 0.2)
            if not closed and data and pos < len(data):
                sk.send(data[pos:pos + 1])
        except (ssl.SSLError, OSError):
            closed = True
        if closed:
            cut[name] = round(time.monotonic() - start, 2)
    time.sleep(0.2)
print(json.dumps(cut))
EOF
python3 "$T/dribble.py" "$PORT" "$T/ready" "$CRT" >"$T/cut.json" 2>"$T/dribble.err" &
DPID=$!
PIDS+=("$DPID")
for i in $(seq 1 100); do
	[ -f "$T/ready" ] && break
	kill -0 $DPID 2>/dev/null || fail "dribbling client died: $(cat "$T/dribble.err")"
	sleep 0.05
done
[ -f "$T/ready" ] || fail "dribbling client never got its connections up"
t0=$(date +%s%N)

# The six slots of 127.0.0.1 are taken: a normal client from it is refused.
c=$(code "$B/api/v1/health" --cacert "$CRT")
[ "$c" = 000 ] || fail "all slots held, yet a seventh client from 127.0.0.1 got HTTP $c"
# Another address is served while they dribble.
c=$(code "$B/api/v1/health" --cacert "$CRT" --interface 127.0.0.2)
[ "$c" = 200 ] || fail "client from 127.0.0.2 during the dribbling: HTTP $c"
# The locked-out address is served again after the read deadline.
served=
for i in $(seq 1 60); do
	c=$(code "$B/api/v1/health" --cacert "$CRT")
	[ "$c" = 200 ] && served=$((($(date +%s%N) - t0) / 1000000)) && break
	sleep 0.2
done
[ -n "$served" ] || fail "127.0.0.1 still locked out 12 s after the slow clients connected"
[ "$served" -lt 10000 ] || fail "127.0.0.1 served only after $served ms"

wait "$DPID" || fail "dribbling client failed: $(cat "$T/dribble.err")"
python3 - "$T/cut.json" <<'EOF' || fail "slow clients not cut as they should be: $(cat "$T/cut.json")"
import json, sys
cut = json.load(open(sys.argv[1]))
names = ["handshake-1", "handshake-2", "headers-1", "headers-2", "body", "idle"]
missing = [n for n in names if n not in cut]
assert not missing, "never cut: %s" % missing
# Cut by the 2 s deadline: not before it, and well before the 30 s the
# clients would have gone on dribbling (slack for a loaded machine).
bad = {n: t for n, t in cut.items() if not 1.5 <= t <= 9}
assert not bad, "cut at the wrong time: %s" % bad
EOF
grep -q 'causeway_http_read_timeouts_total 6' <(curl -s "${AUTH[@]}" --max-time 5 --cacert "$CRT" "$B/metrics") ||
	fail "metrics do not count the six slow connections: $(curl -s "${AUTH[@]}" --cacert "$CRT" "$B/metrics" | grep slow)"
# The deadline covers the arrival of a request, not its answer: a query that
# runs longer than the read timeout is still answered.
start_agent long "$T/a.db" --read-timeout 1s --timeout 60s
t1=$(date +%s%N)
out=$(curl -s "${AUTH[@]}" --max-time 60 --cacert "$CRT" "https://127.0.0.1:$PORT/api/v1/query?sql=WITH%20RECURSIVE%20c(x)%20AS%20(SELECT%201%20UNION%20ALL%20SELECT%20x%2B1%20FROM%20c%20WHERE%20x%3C20000000)%20SELECT%20count(*)%20AS%20n%20FROM%20c")
ms=$((($(date +%s%N) - t1) / 1000000))
echo "$out" | grep -q '"rows":\[\[20000000\]\]' || fail "long query cut or failed after $ms ms: $out"
[ "$ms" -gt 1200 ] || fail "the long query took only $ms ms, too quick to outlast the 1 s read timeout"
echo "slow clients: 6 cut after $(cat "$T/cut.json"); 127.0.0.1 served again after $served ms"
