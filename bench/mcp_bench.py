#!/usr/bin/env python3
"""MCP server benchmarks (bench/mcp_bench.sh runs them).

latency BIN DB RUNS: causal_chains through a running `causeway mcp` (stdio,
one session, top_n 100 so the answer holds every chain like explain --json)
against `causeway explain --json --no-store` processes on the same file.
Prints the medians and the difference.

load URL SESSIONS SECONDS PID: SESSIONS concurrent Streamable HTTP sessions
(one thread and one keep-alive connection each) calling a mix of tools for
SECONDS against serve's /mcp; samples the server's RSS (PID) every second.
Prints calls, errors, latency percentiles and RSS over time."""
import http.client
import os
import json
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse


def ms(t):
    return round(t * 1000, 1)


def latency(binary, db, runs):
    p = subprocess.Popen([binary, "mcp", "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def rpc(i, method, params):
        p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
        p.stdin.flush()
        while True:
            m = json.loads(p.stdout.readline())
            if m.get("id") == i:
                return m

    rpc(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "1"}})
    mcp, cli = [], []
    n_chains = None
    for i in range(runs + 1):  # the first of each warms the page cache
        t = time.monotonic()
        r = rpc(i + 1, "tools/call", {"name": "causal_chains", "arguments": {"top_n": 100}})
        d = time.monotonic() - t
        assert not r["result"]["isError"], r
        n_chains = r["result"]["structuredContent"]["total_chains"]
        t = time.monotonic()
        out = subprocess.run([binary, "explain", "--json", "--no-store", "--db", db], capture_output=True,
                             check=True)
        d2 = time.monotonic() - t
        assert len(json.loads(out.stdout)["chains"]) == n_chains
        if i:
            mcp.append(d)
            cli.append(d2)
    p.stdin.close()
    p.wait()
    a, b = statistics.median(mcp), statistics.median(cli)
    print(f"chains: {n_chains}")
    print(f"mcp causal_chains (stdio round trip): median {ms(a)} ms  runs {[ms(x) for x in mcp]}")
    print(f"explain --json --no-store (process):  median {ms(b)} ms  runs {[ms(x) for x in cli]}")
    print(f"difference: {ms(a - b):+} ms (budget +50 ms)")


class Session:
    def __init__(self, url):
        u = urllib.parse.urlparse(url)
        self.path = u.path
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
        self.sid = None
        self.n = 0

    def post(self, method, params=None, notify=False):
        body = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body["params"] = params
        if not notify:
            self.n += 1
            body["id"] = self.n
        h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if os.environ.get("CW_TOKEN"):  # the server requires a credential (mcp_bench.sh)
            h["Authorization"] = "Bearer " + os.environ["CW_TOKEN"]
        if self.sid:
            h["Mcp-Session-Id"] = self.sid
            h["MCP-Protocol-Version"] = "2025-11-25"
        self.conn.request("POST", self.path, json.dumps(body), h)
        r = self.conn.getresponse()
        data = r.read()
        if r.getheader("Mcp-Session-Id"):
            self.sid = r.getheader("Mcp-Session-Id")
        return r.status, (json.loads(data) if data else None)


CALLS = [
    ("trace_summary", {"limit": 10}),
    ("causal_chains", {"top_n": 3}),
    ("run_sql", {"sql": "SELECT op, count(*) AS n FROM events GROUP BY op", "max_rows": 20}),
    ("stacks", {"top_n": 3}),
    ("explain_call", {"id": 1000}),
]


def load(url, sessions, seconds, pid):
    stop = time.monotonic() + seconds
    lat, errors, lock = [], [], threading.Lock()

    def worker(k):
        try:
            s = Session(url)
            st, r = s.post("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                          "clientInfo": {"name": f"bench{k}", "version": "1"}})
            assert st == 200 and s.sid, (st, r)
            st, _ = s.post("notifications/initialized", notify=True)
            assert st == 202, st
        except Exception as e:  # noqa: BLE001 - counted, reported
            with lock:
                errors.append(f"session {k}: {e}")
            return
        i = k
        while time.monotonic() < stop:
            name, args = CALLS[i % len(CALLS)]
            i += 1
            t = time.monotonic()
            try:
                st, r = s.post("tools/call", {"name": name, "arguments": args})
                ok = st == 200 and "result" in r and not r["result"].get("isError")
                why = None if ok else f"{name}: HTTP {st} {str(r)[:200]}"
            except Exception as e:  # noqa: BLE001
                why = f"{name}: {e}"
                s = Session(url)  # a dead connection is an error, then go on
            with lock:
                lat.append(time.monotonic() - t)
                if why:
                    errors.append(why)

    def rss():
        for line in open(f"/proc/{pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    rs = [rss()]
    th = [threading.Thread(target=worker, args=(k,)) for k in range(sessions)]
    for t in th:
        t.start()
    while any(t.is_alive() for t in th):
        time.sleep(1)
        rs.append(rss())
    for t in th:
        t.join()
    lat.sort()
    q = lambda f: ms(lat[min(len(lat) - 1, int(f * len(lat)))]) if lat else 0  # noqa: E731
    print(f"{sessions} sessions x {seconds} s: {len(lat)} tool calls ({len(lat) / seconds:.0f}/s), "
          f"{len(errors)} errors")
    print(f"latency ms: p50 {q(0.5)}, p95 {q(0.95)}, p99 {q(0.99)}, max {q(1.0)}")
    print(f"server RSS KiB: start {rs[0]}, max {max(rs)}, end {rs[-1]}; every ~5 s: {rs[::5]}")
    for e in errors[:5]:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    if sys.argv[1] == "latency":
        latency(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        sys.exit(load(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])))
