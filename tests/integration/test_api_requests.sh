#!/bin/bash
# GET /api/v1/requests (docs/api.md) on the incident with inference requests
# (tests/fixtures/requests_db.py): rows, order, filters and per-route counts
# equal SQL on the same file, percentiles within the histogram's error, the
# MCP tool slow_requests answers the same rows, the gate refuses a client
# without the token, bad input is a 400, a slow scan meets the request time
# limit (504), a file without the table answers empty; and, as root, a real
# `trace --inference` of Python's http.server answered by curl is served as
# the requests table holds it.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
"$CW_BIN" demo incident --db "$T/req.db" >/dev/null 2>&1 || fail "demo incident"
python3 "$CW_ROOT/tests/fixtures/requests_db.py" "$T/req.db" >/dev/null || fail "requests database"
cp "$T/req.db" "$T/old.db"
sqlite3 "$T/old.db" "DROP TABLE requests" || fail "dropping requests"
# A large table for the time limit: 400,000 copies of the fixture's rows.
cp "$T/req.db" "$T/big.db"
sqlite3 "$T/big.db" "WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 4400)
	INSERT INTO requests (node, wall_ns, mono_ns, pid, tid, cgroup_id, comm, conn_id, port, method, path, status,
	bytes_in, bytes_out, ttft_ns, duration_ns, streamed, body_events, end_reason)
	SELECT node, wall_ns + i, mono_ns + i, pid, tid, cgroup_id, comm, conn_id + 1000 * i, port, method, path, status,
	bytes_in, bytes_out, ttft_ns, duration_ns, streamed, body_events, end_reason FROM requests, k" || fail "big table"

start_agent "req-$$" "$T/req.db" --no-tls
B=http://127.0.0.1:$PORT/api/v1
code() { curl -s -o "$T/body" -w '%{http_code}' "$@"; }

# The gate: no token, no answer.
[ "$(code "$B/requests")" = 401 ] || fail "requests without a token: $(cat "$T/body")"

python3 - "$B" "$CW_BIN" "$T/req.db" <<'EOF' || fail "requests against SQL"
import json, math, subprocess, sys, urllib.parse, urllib.request, cw_auth
B, cw, db = sys.argv[1:4]
get = lambda u: json.load(urllib.request.urlopen(B + u))
sql = lambda s, *p: json.loads(subprocess.check_output([cw, "query", "--db", db, "--json", "--limit", "100000", s]
                                                       + [x for v in p for x in ("--param", str(v))]))
a = get("/requests")
want = sql("SELECT id, path, status, duration_ns, ttft_ns, wall_ns FROM requests ORDER BY duration_ns DESC, id DESC")
assert a["requests_table"] and a["order"] == "slowest" and a["limit"] == 50, a.keys()
assert [(r["id"], r["path"], r["status"], r["duration_ns"], r["ttft_ns"]) for r in a["requests"]] == \
    [(r["id"], r["path"], r["status"], r["duration_ns"], r["ttft_ns"]) for r in want[:50]], "slowest != SQL"
assert a["matched"] == len(want) == 92 and a["truncated"], (a["matched"], a["truncated"])
r0 = a["requests"][0]
assert r0["path"] == "/<img src=x onerror=alert(1)>" and r0["method"] == "GET" and r0["status"] == 404, r0
assert r0["duration_ms"] == 12000 and r0["ttft_ms"] == 11000 and r0["container"] == "5f0c2a9e1b7d", r0
assert r0["wall"].endswith("Z") and r0["wall"].startswith("2026-01-01T00:00:37.2"), r0["wall"]
assert (r0["pid"], r0["tid"], r0["resp_tid"], r0["comm"], r0["port"]) == (4821, 4821, 4821, "python", 8000), r0
# The summary: one route per (method, path), counts and errors as SQL says.
routes = sql("SELECT method, path, count(*) AS n, sum(status >= 500 OR (status IS NULL AND end_reason = 'closed'))"
             " AS errors, sum(status BETWEEN 400 AND 499) AS ce, count(ttft_ns) AS nt FROM requests GROUP BY 1, 2"
             " ORDER BY n DESC, path, method")
got = [(r["method"], r["path"], r["count"], r["errors"], r["client_errors"], r["ttft_count"]) for r in a["routes"]]
assert got == [(r["method"], r["path"], r["n"], r["errors"], r["ce"], r["nt"]) for r in routes], got
for r in a["routes"]:
    d = [x["duration_ns"] for x in sql("SELECT duration_ns FROM requests WHERE path = ?1 ORDER BY 1", r["path"])]
    for q, k in ((0.5, "p50_ms"), (0.95, "p95_ms"), (0.99, "p99_ms")):
        exact = d[max(0, math.ceil(q * len(d)) - 1)] / 1e6
        assert abs(r[k] - exact) <= exact * 0.045 + 0.001, (r["path"], k, r[k], exact)
    assert r["max_ms"] == d[-1] / 1e6, (r["path"], r["max_ms"])
# Filters, each against SQL.
q = lambda **kw: get("/requests?" + urllib.parse.urlencode(kw))
s5 = q(status="5xx")
assert [x["id"] for x in s5["requests"]] == [x["id"] for x in sql(
    "SELECT id FROM requests WHERE status / 100 = 5 ORDER BY duration_ns DESC, id DESC")] and s5["matched"] == 2
assert len(s5["routes"]) == len(routes), "status narrows the summary"
none = q(status="none")
assert [x["end_reason"] for x in none["requests"]] == ["closed"] and none["requests"][0]["status"] is None, none
pv = q(path="/v1/*", limit=1000)
assert len(pv["routes"]) == 2 and pv["matched"] == 60 == len(pv["requests"]) and not pv["truncated"], pv["matched"]
assert q(route="/health")["matched"] == 30 and q(path="/health", method="POST")["matched"] == 0
assert q(min_duration="5s")["matched"] == 3 and all(x["duration_ns"] >= 5e9 for x in q(min_duration="5s")["requests"])
rec = q(order="recent", limit=5)
assert [x["id"] for x in rec["requests"]] == [x["id"] for x in sql(
    "SELECT id FROM requests ORDER BY wall_ns DESC, id DESC LIMIT 5")] and rec["order"] == "recent"
assert q(limit=0)["requests"] == [] and len(q(limit=0)["routes"]) == len(routes)
# A window: since counts back from the newest data; from/to in wall ns.
newest = max(x["wall_ns"] for x in want)
w = q(**{"from": str(newest - 10 * 10**9), "to": str(newest)}, limit=1000)
assert sorted(x["id"] for x in w["requests"]) == sorted(x["id"] for x in sql(
    "SELECT id FROM requests WHERE wall_ns BETWEEN ?1 AND ?2", newest - 10 * 10**9, newest)), "from/to"
s = q(since="30s", limit=1000)
assert s["to_ns"] >= newest and s["to_ns"] - s["from_ns"] == 30 * 10**9 and \
    all(s["from_ns"] <= x["wall_ns"] <= s["to_ns"] for x in s["requests"]), (s["from_ns"], s["to_ns"])
assert q(node="no-such-node")["routes"] == [] and q(pid=1)["routes"] == []
# slow_requests over stdio answers the same rows.
msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
         "capabilities": {}, "clientInfo": {"name": "sh", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow_requests",
         "arguments": {"limit": 50}}}]
out = subprocess.run([cw, "mcp", "--db", db], input="".join(json.dumps(m) + "\n" for m in msgs),
                     capture_output=True, text=True, timeout=30).stdout
m = [json.loads(l) for l in out.splitlines() if '"id":2' in l][0]["result"]["structuredContent"]
assert m["requests"] == a["requests"] and m["routes"] == a["routes"] and m["matched"] == a["matched"], "MCP != REST"
print("requests ok:", len(a["requests"]), "rows,", len(a["routes"]), "routes")
EOF

# Bad input: the documented 400s, each with an error sentence.
for u in "requests?status=9xx" "requests?status=" "requests?order=fastest" "requests?limit=1001" "requests?limit=-1" \
	"requests?min_duration=soon" "requests?since=0s" "requests?from=nope" "requests?path=" \
	"requests?path=/a&route=/b" "requests?method=ABCDEFGHIJKLMNOPQ" "requests?pid=x" \
	"requests?path=$(head -c 300 /dev/zero | tr '\0' a)"; do
	c=$(code "${AUTH[@]}" "$B/$u")
	[ "$c" = 400 ] || fail "$u answered $c, not 400: $(cat "$T/body")"
	grep -q '"error":"' "$T/body" || fail "$u: no error sentence: $(cat "$T/body")"
done
[ "$(code "${AUTH[@]}" -X POST "$B/requests")" = 405 ] || fail "POST requests not 405"

# since counts back from the newest data, a request included: a request an
# hour after the last call is in the last 30 s.
cp "$T/req.db" "$T/late.db"
sqlite3 "$T/late.db" "INSERT INTO requests (node, wall_ns, mono_ns, pid, tid, conn_id, method, path, status, bytes_in,
	bytes_out, duration_ns, end_reason) SELECT node, wall_ns + 3600000000000, mono_ns, pid, tid, 9999, 'GET', '/late',
	200, 1, 1, 1000, 'complete' FROM requests ORDER BY wall_ns DESC LIMIT 1" || fail "late request"
start_agent "late-$$" "$T/late.db" --no-tls
curl -s "${AUTH[@]}" "http://127.0.0.1:$PORT/api/v1/requests?since=30s" >"$T/body"
python3 - "$T/body" <<'EOF' || fail "since with a late request: $(head -c 300 "$T/body")"
import json, sys
a = json.load(open(sys.argv[1]))
assert [r["path"] for r in a["requests"]] == ["/late"] and a["to_ns"] == a["requests"][0]["wall_ns"], (a["to_ns"], [r["path"] for r in a["requests"]])
EOF

# A file without the requests table (recorded before schema v11).
start_agent "old-$$" "$T/old.db" --no-tls
c=$(code "${AUTH[@]}" "http://127.0.0.1:$PORT/api/v1/requests")
[ "$c" = 200 ] || fail "old file answered $c: $(cat "$T/body")"
grep -q '"requests_table":false' "$T/body" && grep -q '"requests":\[\]' "$T/body" || fail "old file: $(cat "$T/body")"

# The request time limit: a scan of 405,000 rows under --timeout 1ms is a 504.
start_agent "big-$$" "$T/big.db" --no-tls --timeout 1ms
c=$(code "${AUTH[@]}" "http://127.0.0.1:$PORT/api/v1/requests")
[ "$c" = 504 ] || fail "big scan under 1 ms answered $c: $(head -c 300 "$T/body")"
grep -q 'request limit' "$T/body" || fail "504 without its reason: $(cat "$T/body")"

# A real trace: Python's http.server under `trace --inference`, asked by
# curl; what the route serves is what the table holds.
if [ "$(id -u)" != 0 ]; then
	echo "no live trace: needs root (BPF)"
	echo ok
	exit 0
fi
HP=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/www"
echo hello > "$T/www/index.html"
(cd "$T/www" && exec python3 -m http.server "$HP" --bind 127.0.0.1) >/dev/null 2>&1 &
PIDS+=("$!")
"$CW_BIN" trace --inference "$HP" --db "$T/live.db" --no-view >"$T/tr.out" 2>"$T/tr.err" &
TP=$!
PIDS+=("$TP")
for _ in $(seq 1 100); do
	grep -q 'recording to' "$T/tr.err" && break
	sleep 0.1
done
grep -q 'recording to' "$T/tr.err" || fail "trace --inference did not start: $(cat "$T/tr.err")"
sleep 1
for i in $(seq 1 10); do
	curl -s -o /dev/null "http://127.0.0.1:$HP/" || fail "http.server did not answer"
	curl -s -o /dev/null "http://127.0.0.1:$HP/missing-$i?secret=1"
done
sleep 1
kill -INT "$TP"
wait "$TP" 2>/dev/null
n=$(sqlite3 "$T/live.db" "SELECT count(*) FROM requests")
[ "$n" -ge 20 ] || fail "the trace stored $n requests, want 20: $(tail -3 "$T/tr.err")"
start_agent "live-$$" "$T/live.db" --no-tls
python3 - "http://127.0.0.1:$PORT/api/v1" "$T/live.db" <<'EOF' || fail "live trace"
import json, sqlite3, sys, urllib.request, cw_auth
B, db = sys.argv[1:3]
a = json.load(urllib.request.urlopen(B + "/requests?limit=1000"))
rows = sqlite3.connect(db).execute("SELECT id, method, path, status, duration_ns FROM requests").fetchall()
assert sorted((r["id"], r["method"], r["path"], r["status"], r["duration_ns"]) for r in a["requests"]) == sorted(rows), a
paths = {r["path"]: r for r in a["routes"]}
assert paths["/"]["count"] >= 10 and paths["/"]["client_errors"] == 0, paths.get("/")
assert all(paths[f"/missing-{i}"]["client_errors"] == 1 for i in range(1, 11)), paths.keys()
assert not any("secret" in r["path"] for r in a["requests"]), "query string served"
print("live ok:", len(rows), "requests")
EOF
echo ok
