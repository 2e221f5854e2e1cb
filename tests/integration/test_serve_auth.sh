#!/bin/bash
# Servers are secure by default. With no token and no client CA configured,
# serve and trace --serve generate a bearer token into ~/.causeway/token
# (0600, reused on restart, found there by explain --nodes); another local
# user (uid 65534) gets 401 from the API, /metrics and /mcp, plain HTTP on
# loopback included. --no-auth is refused off loopback and, on loopback,
# Host and Origin are checked on every route (DNS rebinding, CSRF). A
# browser signs in once with /?token=. MCP over HTTP lists no live tools
# (where, run_demo) unless server.mcp_live_tools is set; over a unix socket,
# where refuses a process its caller could not ptrace. MCP sessions are
# evicted least recently used, 405 names Allow, two Content-Lengths are 400.
[ "$(id -u)" = 0 ] || { echo "needs root (a second uid, BPF)"; exit 77; }
. "$CW_ROOT/tests/integration/fleet_lib.sh"
ensure_fixture
"$AGENT_DB" "$T/a.db" gpu-1 0 || fail "fixture db"
chmod 755 "$T" "$T/a.db"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
TOK=$HOME/.causeway/token
MCP_H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}'

"$CW_BIN" serve --help | grep -q -- "--no-auth" || fail "--help does not name --no-auth"

# 1. Plain HTTP on loopback: a token is generated, printed as a path only.
start_agent plain "$T/a.db" --no-tls
B=http://127.0.0.1:$PORT
[ -s "$TOK" ] || fail "no token file: $(cat "$LAST_LOG")"
[ "$(stat -c %a "$TOK")" = 600 ] || fail "token file mode $(stat -c %a "$TOK")"
[ "$(stat -c %a "$HOME/.causeway")" = 700 ] || fail "~/.causeway mode $(stat -c %a "$HOME/.causeway")"
grep -q "bearer token generated in \"$TOK\"" "$LAST_LOG" || fail "banner: $(cat "$LAST_LOG")"
grep -qF "$(cat "$TOK")" "$LAST_LOG" && fail "the token itself was printed"
for r in /api/v1/overview /api/v1/health /metrics /; do
	c=$("${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$B$r")
	[ "$c" = 401 ] || fail "uid 65534 on $r: $c, want 401"
done
c=$("${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${MCP_H[@]}" -d "$INIT" "$B/mcp")
[ "$c" = 401 ] || fail "uid 65534 on /mcp: $c, want 401"
WHERE='{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"where","arguments":{"pid":1,"native":true}}}'
c=$("${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${MCP_H[@]}" -d "$WHERE" "$B/mcp")
[ "$c" = 401 ] || fail "uid 65534 calling where: $c, want 401"
[ "$(code "$B/api/v1/overview")" = 200 ] || fail "the token holder is refused"
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer x$(cat "$TOK")" "$B/api/v1/health")" = 401 ] ||
	fail "a wrong token accepted"

# The browser's sign-in link: 303 with an HttpOnly SameSite=Strict cookie
# for this port, which then opens the API; a wrong token sets nothing.
curl -s -D "$T/h" -o /dev/null "$B/?token=$(cat "$TOK")"
grep -q "^HTTP/1.1 303" "$T/h" || fail "sign-in link: $(cat "$T/h")"
grep -qi "^Set-Cookie: causeway_token_$PORT=$(cat "$TOK"); Path=/; HttpOnly; SameSite=Strict" "$T/h" ||
	fail "cookie: $(cat "$T/h")"
[ "$(curl -s -o /dev/null -w '%{http_code}' -b "causeway_token_$PORT=$(cat "$TOK")" "$B/api/v1/overview")" = 200 ] ||
	fail "the cookie does not open the API"
[ "$(curl -s -o /dev/null -w '%{http_code}' "$B/?token=wrong-token-0123456789")" = 401 ] || fail "wrong sign-in token"
# The refusal page a browser gets says how to sign in.
curl -s -H 'Accept: text/html' "$B/" | grep -q '?token=' || fail "the 401 page does not say how to sign in"

# 405 names what the route takes; two Content-Lengths are refused.
curl -s -D "$T/h" -o /dev/null "${AUTH[@]}" -X DELETE "$B/api/v1/ops"
grep -q "^HTTP/1.1 405" "$T/h" && grep -qi "^Allow: GET, HEAD" "$T/h" || fail "405 without Allow: $(cat "$T/h")"
curl -s -D "$T/h" -o /dev/null "${AUTH[@]}" -X PUT "$B/api/v1/query"
grep -qi "^Allow: GET, HEAD, POST" "$T/h" || fail "405 on /query: $(cat "$T/h")"
curl -s -D "$T/h" -o /dev/null "${AUTH[@]}" "$B/mcp"
grep -qi "^Allow: POST, DELETE" "$T/h" || fail "405 on GET /mcp: $(cat "$T/h")"
python3 - "$PORT" "$(cat "$TOK")" <<'EOF' || fail "duplicate Content-Length"
import socket, sys
port, tok = int(sys.argv[1]), sys.argv[2]
body = b'{"sql":"SELECT 1"}'
n = str(len(body)).encode()
# Equal lengths, then conflicting ones: either reading alone is a good query.
for lens in ((n, n), (n, b"4000")):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /api/v1/query HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + tok.encode() +
              b"\r\nContent-Type: application/json\r\nContent-Length: " + lens[0] + b"\r\nContent-Length: " +
              lens[1] + b"\r\n\r\n" + body)
    s.settimeout(5)
    got = b""
    while b"\r\n\r\n" not in got:
        d = s.recv(4096)
        if not d:
            break
        got += d
    line = got.split(b"\r\n")[0]
    assert line.startswith(b"HTTP/1.1 400"), (lens, got)
EOF

# MCP over HTTP: where and run_demo are neither listed nor callable.
sid() { sed -n 's/^Mcp-Session-Id: *\([0-9a-f]*\).*/\1/Ip' "$1" | tr -d '\r'; }
curl -s -D "$T/h" -o /dev/null "${AUTH[@]}" "${MCP_H[@]}" -d "$INIT" "$B/mcp"
S=$(sid "$T/h")
[ -n "$S" ] || fail "no MCP session: $(cat "$T/h")"
LIST='{"jsonrpc":"2.0","id":3,"method":"tools/list"}'
tools=$(curl -s "${AUTH[@]}" "${MCP_H[@]}" -H "Mcp-Session-Id: $S" -d "$LIST" "$B/mcp")
echo "$tools" | grep -q '"name":"causal_chains"' || fail "tools/list: $tools"
echo "$tools" | grep -q '"name":"where"\|"name":"run_demo"' && fail "live tools listed over HTTP: $tools"
out=$(curl -s "${AUTH[@]}" "${MCP_H[@]}" -H "Mcp-Session-Id: $S" -d "$WHERE" "$B/mcp")
echo "$out" | grep -q '"code":-32602.*is off on this server.*server.mcp_live_tools: true' || fail "where over HTTP: $out"

# 129 sessions never ended by their client: a new client still gets one,
# from the same address (its own oldest session goes) and from another one
# once five addresses have filled the table (anyone's oldest goes).
for i in $(seq 1 129); do
	curl -s -o /dev/null "${AUTH[@]}" "${MCP_H[@]}" -d "$INIT" "$B/mcp"
done
curl -s -D "$T/h" -o /dev/null "${AUTH[@]}" "${MCP_H[@]}" -d "$INIT" "$B/mcp"
grep -q "^HTTP/1.1 200" "$T/h" && [ -n "$(sid "$T/h")" ] || fail "a new client after 129 sessions: $(cat "$T/h")"
for a in 2 3 4 5 6; do
	for i in $(seq 1 30); do
		curl -s -o /dev/null --interface "127.0.0.$a" "${AUTH[@]}" "${MCP_H[@]}" -d "$INIT" "$B/mcp"
	done
done
curl -s -D "$T/h" -o /dev/null --interface 127.0.0.7 "${AUTH[@]}" "${MCP_H[@]}" -d "$INIT" "$B/mcp"
grep -q "^HTTP/1.1 200" "$T/h" && [ -n "$(sid "$T/h")" ] || fail "a new address with a full table: $(cat "$T/h")"
kill "$LAST_PID"
wait "$LAST_PID" 2>/dev/null

# 2. Restart: the same token (clients keep working); TLS, and explain
# --nodes finds the token file by itself.
sum=$(sha256sum <"$TOK")
start_agent tls "$T/a.db"
[ "$(sha256sum <"$TOK")" = "$sum" ] || fail "token regenerated on restart"
grep -q "bearer token in \"$TOK\"" "$LAST_LOG" || fail "restart banner: $(cat "$LAST_LOG")"
CRT=$HOME/.causeway/tls/server.crt
c=$("${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 -k "https://127.0.0.1:$PORT/api/v1/health")
[ "$c" = 401 ] || fail "uid 65534 over TLS: $c"
"$CW_BIN" explain --nodes "127.0.0.1:$PORT" --ca-cert "$CRT" --json >"$T/x.json" 2>"$T/e" ||
	fail "explain --nodes without a token flag: $(cat "$T/e")"
CW_TOKEN=wrong-token-0123456789 "$CW_BIN" explain --nodes "127.0.0.1:$PORT" --ca-cert "$CRT" >/dev/null 2>&1 &&
	fail "\$CW_TOKEN does not take precedence over the token file"
kill "$LAST_PID"
wait "$LAST_PID" 2>/dev/null

# An unsafe token file is refused, never used nor replaced.
chmod 644 "$TOK"
timeout 10 "$CW_BIN" serve --db "$T/a.db" --no-tls --listen 127.0.0.1:0 2>"$T/e" && fail "served with a 0644 token file"
grep -q "can be read by other users" "$T/e" || fail "0644 message: $(cat "$T/e")"
"$CW_BIN" explain --nodes 127.0.0.1:1 2>"$T/e"
grep -q "can be read by other users" "$T/e" || fail "the fleet client used a 0644 token file: $(cat "$T/e")"
chmod 600 "$TOK"
mv "$TOK" "$T/real-token"
ln -s "$T/real-token" "$TOK"
timeout 10 "$CW_BIN" serve --db "$T/a.db" --no-tls --listen 127.0.0.1:0 2>"$T/e" && fail "served with a symlinked token file"
grep -q "symbolic link" "$T/e" || fail "symlink message: $(cat "$T/e")"
rm "$TOK"
mkfifo "$TOK"
timeout 10 "$CW_BIN" serve --db "$T/a.db" --no-tls --listen 127.0.0.1:0 2>"$T/e"
[ $? = 1 ] || fail "a FIFO token file: $(cat "$T/e")"
grep -q "not a regular file" "$T/e" || fail "FIFO message: $(cat "$T/e")"
rm "$TOK"
mv "$T/real-token" "$TOK"

# 3. --no-auth: refused off loopback; on loopback, warned, with Host and
# Origin checked on every route.
timeout 10 "$CW_BIN" serve --db "$T/a.db" --no-tls --no-auth --listen 0.0.0.0:0 2>"$T/e"
[ $? = 2 ] || fail "--no-auth on 0.0.0.0 not refused"
grep -q "refused on \"0.0.0.0:0\"" "$T/e" || fail "--no-auth message: $(cat "$T/e")"
timeout 10 "$CW_BIN" serve --db "$T/a.db" --no-auth --token-file "$TOK" --listen 127.0.0.1:0 2>/dev/null
[ $? = 2 ] || fail "--no-auth with a token file"
start_agent open "$T/a.db" --no-tls --no-auth
grep -q "warning: --no-auth: NO CREDENTIAL" "$LAST_LOG" || fail "no --no-auth warning: $(cat "$LAST_LOG")"
O=http://127.0.0.1:$PORT
[ "$(curl -s -o /dev/null -w '%{http_code}' "$O/api/v1/overview")" = 200 ] || fail "--no-auth overview"
for r in /api/v1/overview /metrics / /mcp; do
	c=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: rebind.example:$PORT" "$O$r")
	[ "$c" = 403 ] || fail "rebinding Host on $r: $c, want 403"
	c=$(curl -s -o /dev/null -w '%{http_code}' -H "Origin: http://evil.example" "$O$r")
	[ "$c" = 403 ] || fail "foreign Origin on $r: $c, want 403"
done
[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Origin: http://127.0.0.1:$PORT" "$O/api/v1/overview")" = 200 ] ||
	fail "the dashboard's own origin refused"
kill "$LAST_PID"
wait "$LAST_PID" 2>/dev/null

# 4. server.mcp_live_tools: where and run_demo listed over HTTP again.
printf 'server:\n  mcp_live_tools: true\n' >"$T/live.yaml"
start_agent live "$T/a.db" --no-tls --config "$T/live.yaml"
curl -s -D "$T/h" -o /dev/null "${AUTH[@]}" "${MCP_H[@]}" -d "$INIT" "http://127.0.0.1:$PORT/mcp"
tools=$(curl -s "${AUTH[@]}" "${MCP_H[@]}" -H "Mcp-Session-Id: $(sid "$T/h")" -d "$LIST" "http://127.0.0.1:$PORT/mcp")
echo "$tools" | grep -q '"name":"where"' && echo "$tools" | grep -q '"name":"run_demo"' ||
	fail "live tools not listed with server.mcp_live_tools: $tools"
# One address holds at most 32 sessions: its 33rd pushes out its oldest,
# though the table has room.
S1=$(sid "$T/h")
for i in $(seq 1 32); do
	curl -s -o /dev/null "${AUTH[@]}" "${MCP_H[@]}" -d "$INIT" "http://127.0.0.1:$PORT/mcp"
done
c=$(curl -s -o /dev/null -w '%{http_code}' "${AUTH[@]}" "${MCP_H[@]}" -H "Mcp-Session-Id: $S1" -d "$LIST" \
	"http://127.0.0.1:$PORT/mcp")
[ "$c" = 404 ] || fail "the 33rd session of one address left its oldest: $c"

# 5. trace --serve: the same token; uid 65534 gets nothing.
FAKE=$CW_BUILD/fixtures/fakecuda/libcudart.so.13
[ -f "$FAKE" ] || fail "fixture $FAKE missing (make fixtures)"
LD_LIBRARY_PATH=$CW_BUILD/fixtures/fakecuda CW_FAKE_SYNC_US=200 "$CW_BIN" trace --db "$T/t.db" --no-view \
	--serve 127.0.0.1:0 --cuda-lib "$FAKE" -- "$CW_BUILD/fixtures/fake_workload" -T 4 -m sync >"$T/w.out" \
	2>"$T/t.err" &
TP=$!
PIDS+=("$TP")
serving_port "$T/t.err" "$TP" || fail "trace --serve did not start: $(cat "$T/t.err")"
grep -q "bearer token in \"$TOK\"" "$T/t.err" || fail "trace --serve banner: $(cat "$T/t.err")"
for r in /api/v1/overview /metrics; do
	c=$("${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 -k "https://127.0.0.1:$PORT$r")
	[ "$c" = 401 ] || fail "uid 65534 on trace --serve $r: $c, want 401"
done
[ "$(code "https://127.0.0.1:$PORT/api/v1/health" -k)" = 200 ] || fail "trace --serve with the token"
wait "$TP" 2>/dev/null

# 6. MCP over a unix socket: `causeway mcp` runs as root, its peer is uid
# 65534; where on a root process is refused (the caller could not ptrace
# it), on the caller's own process it is not.
python3 -c 'import time; time.sleep(60)' &
ROOTPY=$!
PIDS+=($ROOTPY)
"${NOBODY[@]}" /usr/bin/python3 -c 'import time; time.sleep(60)' &
USERPY=$!
PIDS+=($USERPY)
sleep 0.3
cat >"$T/peer.py" <<'EOF'
import json, os, socket, subprocess, sys
cw, db, name = sys.argv[1], sys.argv[2], "cw-mcp-peer-%d" % os.getpid()
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0" + name)  # abstract: no file the other uid must reach
srv.listen(1)
client = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", """
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect("\\0" + sys.argv[1])
f = s.makefile("rwb")
def rpc(i, m, p):
    f.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": p}) + "\\n").encode()); f.flush()
    return json.loads(f.readline())
rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
f.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\\n'); f.flush()
out = []
for i, pid in enumerate(sys.argv[2:]):
    out.append(rpc(10 + i, "tools/call", {"name": "where", "arguments": {"pid": int(pid)}}))
print(json.dumps(out))
""", name, sys.argv[3], sys.argv[4]], stdout=subprocess.PIPE)
conn, _ = srv.accept()
mcp = subprocess.Popen([cw, "mcp", "--db", db], stdin=conn, stdout=conn, stderr=subprocess.DEVNULL)
conn.close()
res = json.loads(client.communicate(timeout=60)[0])
mcp.kill()
root, own = [r["result"] for r in res]
t = lambda r: r["content"][0]["text"]
assert root["isError"] and "may not trace" in t(root), root
assert "may not trace" not in t(own), own
print("where over a unix socket: root process refused, own process not")
EOF
python3 "$T/peer.py" "$CW_BIN" "$T/a.db" "$ROOTPY" "$USERPY" || fail "where with the peer's rights"
echo "serve auth: ok"
