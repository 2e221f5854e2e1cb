#!/usr/bin/env python3
"""Runs the fleet command lines (those with --nodes) and the MCP tool calls
the articles in ARTICLES show against running agents, and checks that each
answer is a real answer from every node.

usage: articles_fleet.py CAUSEWAY ARTICLES CONFIG HOST=ADDR=NODE...

HOST is a host:port the articles print (gpu-node-01:8080), ADDR the
loopback agent standing in for it (http://127.0.0.1:PORT) and NODE the name
that agent serves under. A command's --nodes value is rewritten host by host
through this map (a host the map lacks fails the test); the MCP calls go to
`causeway --config CONFIG mcp --fleet`, CONFIG holding the article's
fleet.nodes list with the same hosts mapped. The command lines run with
the same --config before them, for its fleet.timeout only (a loaded test
machine can take more than the default 2 s to explain a node's store). Prints one line per check;
exits 1 at the first failure."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from articles_commands import extract  # noqa: E402

cw, articles, config = sys.argv[1:4]
hosts = {}
for spec in sys.argv[4:]:
    host, addr, node = spec.split("=")
    hosts[host] = (addr, node)
names = {node for _, node in hosts.values()}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def who(text):
    """The mapped nodes whose address or name text mentions."""
    return ", ".join(f"{node} ({host} -> {addr})" for host, (addr, node) in sorted(hosts.items())
                     if addr in text or f'"{node}"' in text)


def rows_nodes(where, nodes):
    """Fails unless the first columns of the rows are exactly the mapped nodes."""
    got = set(nodes)
    if got != names:
        missing = sorted(names - got)
        fail(f"{where}: rows from {sorted(got)}; no row from {missing} "
             f"({', '.join(f'{h} -> {a}' for h, (a, n) in hosts.items() if n in missing)})")


entries = extract(articles)
fleet_cmds = [e for e in entries if e["kind"] == "command" and "--nodes" in e["argv"]]
tools = [e for e in entries if e["kind"] == "tool"]
# The fleet article prints query --nodes and explain --nodes, and one
# query_fleet call: an extractor that finds fewer has broken.
if sorted(e["argv"][0] for e in fleet_cmds) != ["explain", "query"]:
    fail(f"fleet command lines found: {[e['argv'] for e in fleet_cmds]}")
if [t["name"] for t in tools] != ["query_fleet"]:
    fail(f"tool calls found: {tools}")

article_sql = None
for e in fleet_cmds:
    argv = list(e["argv"])
    at = argv.index("--nodes") + 1
    mapped = []
    for h in argv[at].split(","):
        if h not in hosts:
            fail(f"{e['article']}:{e['line']}: host {h} has no agent in the map")
        mapped.append(hosts[h][0])
    argv[at] = ",".join(mapped)
    where = f"{e['article']}:{e['line']} causeway {' '.join(e['argv'][:2])} ..."
    p = subprocess.run([cw, "--config", config] + argv, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail(f"{where}: exit {p.returncode}: {p.stderr.strip()}")
    if p.stderr.strip():
        fail(f"{where}: warned (did not answer: {who(p.stderr) or '?'}): {p.stderr.strip()}")
    out = p.stdout.splitlines()
    if argv[0] == "query":
        article_sql = argv[-1]
        # a header line, then one row per node and source, the node first
        if len(out) < 2:
            fail(f"{where}: no rows: {p.stdout}")
        rows_nodes(where, [line.split()[0] for line in out[1:] if line.strip()])
    else:
        # explain: "4 of 4 nodes answered; ... (offsets: NODE +x ms ...)",
        # then the chains; the article's node shows its CPU contention.
        head = out[0] if out else ""
        if not head.startswith(f"{len(hosts)} of {len(hosts)} nodes answered"):
            fail(f"{where}: {head!r} (did not answer: {who(p.stdout) or '?'})")
        rows_nodes(where, [n for n in names if f"{n} " in head])
        if not any(line.startswith("[HIGH]") and line.endswith("on gpu-node-01") for line in out):
            fail(f"{where}: no HIGH chain on gpu-node-01: {p.stdout[:600]}")
    print(f"ok: {where}: every node answered")

# MCP over stdio: the article's call as printed, then the four actions it
# names (chains, sql with its query, ops, overview).
calls = [(t["name"], t["arguments"], f"{t['article']}:{t['line']}") for t in tools]
calls += [("query_fleet", {"action": "sql", "sql": article_sql}, "the article's sql action"),
          ("query_fleet", {"action": "ops", "since": "5m"}, "the article's ops action"),
          ("query_fleet", {"action": "overview", "since": "5m"}, "the article's overview action")]
if "chains" not in [a.get("action") for _, a, _ in calls]:
    fail("the article's query_fleet call is not action chains")
msgs = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                    "clientInfo": {"name": "articles", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"}]
msgs += [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {"name": n, "arguments": a}}
         for i, (n, a, _) in enumerate(calls)]
p = subprocess.run([cw, "--config", config, "mcp", "--fleet"], input="".join(json.dumps(m) + "\n" for m in msgs),
                   capture_output=True, text=True, timeout=120)
if p.returncode != 0:
    fail(f"mcp --fleet: exit {p.returncode}: {p.stderr.strip()}")
answers = {}
for line in p.stdout.splitlines():
    m = json.loads(line)
    answers[m.get("id")] = m
for i, (name, args, where) in enumerate(calls):
    where = f"{where}: {name}({', '.join(f'{k}={v!r}' for k, v in args.items() if k != 'sql')})"
    m = answers.get(i + 1)
    if not m or "result" not in m:
        fail(f"{where}: no result: {m}")
    r = m["result"]
    text = "".join(c.get("text", "") for c in r.get("content", []))
    sc = r.get("structuredContent") or {}
    if r.get("isError"):
        fail(f"{where}: isError: {text}")
    if sc.get("warnings") or "warning" in text:
        fail(f"{where}: warned (did not answer: {who(text) or '?'}): {text[:400]}")
    if (sc.get("nodes_asked"), sc.get("nodes_answered")) != (len(hosts), len(hosts)):
        down = [n.get("addr", "") for n in sc.get("nodes", []) if not n.get("ok")]
        fail(f"{where}: {sc.get('nodes_answered')} of {sc.get('nodes_asked')} nodes answered "
             f"(did not answer: {who(' '.join(down)) or down})")
    if args["action"] == "chains":
        if not text.startswith("Fleet Chains: ") or "\n[HIGH] gpu-node-01 | " not in text:
            fail(f"{where}: {text[:400]}")
        rows_nodes(where, [n["node"] for n in sc["nodes"] if n.get("ok")])
    else:
        rows_nodes(where, [row[0] if isinstance(row, list) else row["node"] for row in sc.get("rows", [])])
    print(f"ok: {where}: every node answered")
