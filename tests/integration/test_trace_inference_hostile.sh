#!/bin/bash
# Hostile HTTP on a traced server's real sockets (trace --inference PORT on
# Python's http.server): pipelined requests, a 60 KiB header block, binary
# junk, a TLS ClientHello, HTTP/2's preface, a half-closed client, a
# slowloris request line one byte at a time, 50 connections opened and
# dropped. trace must stop cleanly, store only printable text, count what
# was not HTTP/1.x, and still read the ordinary request that comes last.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
D=$(mktemp -d)
SPORT=$((21000 + RANDOM % 20000))
srv=
tp=
cleanup() {
	[ -n "$tp" ] && kill -INT "$tp" 2>/dev/null && wait "$tp" 2>/dev/null
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$D/www" && echo hello >"$D/www/after"
python3 -m http.server "$SPORT" --bind 127.0.0.1 --directory "$D/www" >"$D/srv.log" 2>&1 &
srv=$!
for _ in $(seq 1 100); do (exec 3<>/dev/tcp/127.0.0.1/$SPORT) 2>/dev/null && break; sleep 0.1; done
"$CW_BIN" trace --inference $SPORT --db "$D/t.db" --no-view >"$D/t.out" 2>"$D/t.err" &
tp=$!
for _ in $(seq 1 300); do
	grep -q "following the requests of .* on port $SPORT" "$D/t.err" && grep -q attached "$D/t.err" && break
	kill -0 $tp 2>/dev/null || fail "trace exited: $(cat "$D/t.err")"
	sleep 0.1
done
grep -q "on port $SPORT" "$D/t.err" || fail "the server was not found: $(cat "$D/t.err")"

python3 - "$SPORT" <<'PY' || fail "the hostile client failed"
import os, socket, sys, time
port = int(sys.argv[1])


def conn():
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    return s


def drain(s):
    s.settimeout(2)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()


# Pipelined: three requests in one write.
s = conn()
s.sendall(b"GET /after HTTP/1.1\r\nHost: x\r\n\r\n" * 2 + b"GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
drain(s)
# A header block far past what the probes copy (the server refuses it).
s = conn()
s.sendall(b"GET /big HTTP/1.1\r\n" + b"X-Pad: " + b"a" * 60000 + b"\r\n\r\n")
drain(s)
# Binary junk, a TLS ClientHello, HTTP/2's preface.
for junk in (os.urandom(4096), bytes.fromhex("160301020001") + os.urandom(512),
             b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + os.urandom(64)):
    s = conn()
    s.sendall(junk)
    drain(s)
# Half-closed: the request, then the client's write side shut.
s = conn()
s.sendall(b"GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
s.shutdown(socket.SHUT_WR)
drain(s)
# Slowloris: the request line and headers a byte at a time.
s = conn()
for b in b"GET /slow?token=secret HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n":
    s.send(bytes([b]))
    time.sleep(0.005)
drain(s)
# A control byte in the path: not a request line.
s = conn()
s.sendall(b"GET /del\x7fpath HTTP/1.1\r\nHost: x\r\n\r\n")
drain(s)
# Many connections opened and dropped without a byte (the server's
# accept queue is short: one that does not open in time is no failure).
for _ in range(50):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        time.sleep(0.05)
time.sleep(0.5)
# The ordinary request, last.
s = conn()
s.sendall(b"GET /after?x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
drain(s)
PY
sleep 1.5
kill -INT $tp
wait $tp || fail "trace: $(cat "$D/t.err")"
tp=
grep -q "causeway: inference: " "$D/t.err" || fail "no closing inference line: $(cat "$D/t.err")"

q() { sqlite3 "$D/t.db" "$1"; }
echo "requests: $(q "SELECT count(*) FROM requests WHERE port = $SPORT")"
q "SELECT method, path, status, end_reason FROM requests WHERE port = $SPORT" | head -20
# Every stored text is printable ASCII; no query string is kept.
bad=$(q "SELECT count(*) FROM requests WHERE path GLOB '*[^ -~]*' OR method GLOB '*[^A-Z]*' OR path LIKE '%?%'
	OR path LIKE '%secret%'")
[ "$bad" = 0 ] || fail "$bad rows with unprintable or query text"
# The last, ordinary request: read whole.
last=$(q "SELECT method, path, status, end_reason FROM requests WHERE port = $SPORT ORDER BY mono_ns DESC LIMIT 1")
[ "$last" = "GET|/after|200|complete" ] || fail "the last request: $last"
# The pipelined connection counts its first request; the half-closed one
# is answered.
[ "$(q "SELECT count(*) FROM requests WHERE port = $SPORT AND path = '/after' AND status = 200")" -ge 3 ] ||
	fail "pipelined / half-closed requests not read"
# The slowloris request, whole, without its query string.
[ "$(q "SELECT count(*) FROM requests WHERE port = $SPORT AND method = 'GET' AND path = '/slow' AND status = 404")" = 1 ] ||
	fail "the request sent a byte at a time was not read whole"
# The junk, the ClientHello, the preface and the control byte: not
# HTTP/1.x, one of them TLS.
nh=$(q "SELECT coalesce(max(value), 0) FROM counters WHERE name = 'http.not_http_conns'")
tls=$(q "SELECT coalesce(max(value), 0) FROM counters WHERE name = 'http.tls_conns'")
echo "not HTTP/1.x: $nh, TLS: $tls"
[ "$nh" -ge 4 ] && [ "$tls" -ge 1 ] || fail "not_http $nh, tls $tls"
echo ok
