#!/bin/bash
# Docs that cannot drift: every causeway command line in README.md,
# docs/*.md, the alert runbooks and each command's --help examples runs
# against demo databases (or, needing root, a network or a process, is read
# by the command's own parser: --check-args), every synopsis names only
# flags the command's --help has (tests/golden/doc_examples.py); a wrong
# flag in a copy of a page fails it; and the documented tables (demo
# scenarios, MCP tools, check items) list what the binary lists.
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ex=$CW_ROOT/tests/golden/doc_examples.py
fix=$CW_BUILD/fixtures/cluster_db
[ -x "$fix" ] || fail "fixture $fix not built (make fixtures)"

# The sandbox: the database names the docs use. Small fixture stores (a
# four-rank job whose rank 2 is preempted) where a line only reads, the
# demo's incident where the docs say it is the demo's.
b=$tmp/base
mkdir -p "$b" "$tmp/bin" "$b/build" "$tmp/.causeway"
ln -s "$CW_BIN" "$tmp/bin/causeway"
ln -s "$CW_BIN" "$b/build/causeway"
"$CW_BIN" demo --db "$b/causeway-demo.db" >/dev/null 2>&1 || fail "demo"
for n in 1 2 3; do "$fix" "$b/node$n.db" node$n $((n - 1)) --straggler-rank 2 --steps 20 >/dev/null || fail "node$n"; done
"$CW_BIN" merge "$b/node1.db" "$b/node2.db" "$b/node3.db" -o "$b/cluster.db" >/dev/null 2>&1 || fail "cluster.db"
cp "$b/node3.db" "$b/causeway.db"; cp "$b/node3.db" "$b/run.db"
cp "$b/node1.db" "$b/node-01.db"; cp "$b/node2.db" "$b/node-02.db"
cp "$b/node1.db" "$b/old.db"; cp "$b/node2.db" "$b/new.db"
# --fleet reads the config's agents (nothing answers there: parsed only)
printf 'fleet:\n  nodes:\n    - 127.0.0.1:1\n' >"$b/causeway.yaml"
cp "$b/causeway.yaml" "$b/f.yaml"; cp "$b/causeway.yaml" "$tmp/.causeway/causeway.yaml"

cmds=$("$CW_BIN" help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 && $1 != "help" { print "help:" $1 }')
cd "$CW_ROOT" || exit 1
python3 "$ex" "$CW_BIN" "$tmp" README.md docs/*.md deploy/prometheus/*.yaml $cmds || fail "doc examples (above)"

# The check itself: one wrong flag in a copy of a page fails it, naming the line.
sed 's/causeway query --group-by-line --since 1h/causeway query --group-by-lines --since 1h/' docs/query.md >"$tmp/query.md"
cmp -s docs/query.md "$tmp/query.md" && fail "docs/query.md no longer has the line this check edits"
python3 "$ex" "$CW_BIN" "$tmp" "$tmp/query.md" >"$tmp/out" && fail "a wrong flag in a doc went unnoticed"
grep -q "query.md:.*--group-by-lines.*unknown option" "$tmp/out" || fail "wrong flag not named: $(cat "$tmp/out")"
# Documented tables against the binary's own lists.
"$CW_BIN" demo --list --json >"$tmp/scen.json" || fail "demo --list --json"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"docs","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' |
	"$CW_BIN" mcp --db "$b/causeway.db" >"$tmp/tools.jsonl" 2>/dev/null || fail "mcp tools/list"
"$CW_BIN" mcp --help >"$tmp/mcp.help" || fail "mcp --help"
"$CW_BIN" check --json >"$tmp/check.json"
python3 - "$tmp" <<'PY' || fail "documented tables differ from the binary's (above)"
import json, re, sys
t = sys.argv[1]
bad = []
def same(what, doc, binary):
    if set(doc) != set(binary):
        bad.append(f"{what}: missing {sorted(set(binary) - set(doc))}, not in the binary {sorted(set(doc) - set(binary))}")
scen = json.load(open(f"{t}/scen.json"))
demo = open("docs/demo.md").read()
rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([a-z-]+)`(?: \(default\))? \|(.*)\|\s*$", demo, re.M)}
same("docs/demo.md scenario table", rows, [s["name"] for s in scen])
for s in scen:
    row = rows.get(s["name"], "")
    # explain's top chain is the kind the scenario expects ...
    if s["expect"] and f"`{s['expect']}`" not in row.split("|")[-1]:
        bad.append(f"docs/demo.md {s['name']}: top chain is `{s['expect']}`, the row says {row.split('|')[-1].strip()[:60]!r}")
    # ... and the figures of its one-line summary are the row's too
    for num in set(re.findall(r"\d+(?:\.\d+)?", s["simulates"])) - set(re.findall(r"\d+(?:\.\d+)?", row)):
        bad.append(f"docs/demo.md {s['name']}: {num} ({s['simulates']!r}) is not in the row")
mcp = open("docs/mcp.md").read()
run_demo = mcp.split("### run_demo", 1)[1].split("###", 1)[0]
same("docs/mcp.md run_demo scenarios", re.findall(r"`([a-z][a-z-]+)`", run_demo.split("Arguments:")[0]),
     [s["name"] for s in scen])
tools = [x for x in map(json.loads, open(f"{t}/tools.jsonl")) if x.get("id") == 2][0]["result"]["tools"]
names = [x["name"] for x in tools]
same("docs/mcp.md tool sections", re.findall(r"^### ([a-z_]+)$", mcp.split("\n## Tools", 1)[1], re.M), names)
helptools = open(f"{t}/mcp.help").read().split("Tools:", 1)[1].split("\n\n", 1)[0]
same("causeway mcp --help tools", re.findall(r"[a-z_]+", re.sub(r"\(\d+\)", "", helptools)), names)
items = [c["name"] for c in json.load(open(f"{t}/check.json"))["checks"]]
check = open("docs/check.md").read()
same("docs/check.md items", re.findall(r"^\| ([a-z][a-z_ ]*[a-z]) \|", check, re.M)[1:], items)
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY

# tenants.md's "p99 per pod" statement gives the nearest-rank p99 of the
# events it reads (it once computed the max).
"$CW_BIN" demo noisy-neighbour --db "$tmp/nn.db" >/dev/null 2>&1 || fail "demo noisy-neighbour"
sql=$(awk '/^-- p99 of cudaStreamSynchronize per pod/{p=1} p && !/^--/{print} p && /;$/{exit}' docs/tenants.md)
[ -n "$sql" ] || fail "docs/tenants.md has no p99-per-pod statement"
"$CW_BIN" query --db "$tmp/nn.db" --json "$sql" >"$tmp/p99.json" || fail "the p99-per-pod statement: $sql"
"$CW_BIN" query --db "$tmp/nn.db" --json "SELECT c.pod, e.duration_ns AS d FROM cuda_events e JOIN containers c
	ON c.cgroup_id = e.cgroup_id WHERE e.op = 'cudaStreamSynchronize'" --limit 10000000 >"$tmp/raw.json" || fail "raw durations"
python3 - "$tmp/p99.json" "$tmp/raw.json" <<'PY' || fail "docs/tenants.md p99 per pod is not the p99"
import json, math, sys
doc = {r["pod"]: r["p99_ms"] for r in json.load(open(sys.argv[1]))}
raw = {}
for r in json.load(open(sys.argv[2])):
    raw.setdefault(r["pod"], []).append(r["d"])
assert doc and set(doc) == set(raw), (doc, list(raw))
for pod, ds in raw.items():
    ds.sort()
    want = ds[math.ceil(0.99 * len(ds)) - 1] / 1e6
    assert abs(doc[pod] - want) < 1e-9, (pod, doc[pod], want, max(ds) / 1e6)
PY
echo "ok"
