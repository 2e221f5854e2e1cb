#!/bin/bash
# The tenant filters on every reader but explain (test_explain_tenants.sh):
# query's summary, export, the API routes, the fleet fan-out and the MCP
# tools, and the tenant labels of /metrics, on the noisy-neighbour demo with the trainer's cudaMalloc and
# cudaFree calls moved to a process of the neighbour pod, so each tenant
# has calls of its own. Each filter must keep exactly its tenant's calls.
set -u
tmp=$(mktemp -d)
SP=
cleanup() { [ -n "$SP" ] && kill "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$CW_ROOT/tests/lib/auth.sh"
auth_shared # every server and client here shares $CW_TOKEN
command -v promtool >/dev/null || fail "promtool not installed (scripts/install-deps.sh)"
db=$tmp/nn.db
"$CW_BIN" demo noisy-neighbour --db "$db" >/dev/null 2>&1 || fail "demo"
python3 - "$db" <<'PY' || fail "moving calls"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO processes (node, pid, ppid, comm, cmdline, cgroup_id) SELECT node, 9120, 1, 'ffmpeg', 'ffmpeg',"
          " 23063 FROM processes WHERE pid = 4821")
# A call's thread columns live in its shared thread row (schema v7), so
# the calls are deleted and inserted again under the neighbour's pid.
cols = [r[1] for r in c.execute("PRAGMA table_info(events)")]
rows = c.execute("SELECT * FROM events WHERE op IN ('cudaMalloc', 'cudaFree') ORDER BY id").fetchall()
assert len(rows) == 1208, len(rows)
c.execute("DELETE FROM events WHERE op IN ('cudaMalloc', 'cudaFree')")
moved = {"pid": 9120, "tid": 9120, "comm": "ffmpeg", "cgroup_id": 23063}
c.executemany("INSERT INTO events (%s) VALUES (%s)" % (", ".join(cols), ", ".join("?" * len(cols))),
              [[moved.get(k, v) for k, v in zip(cols, r)] for r in rows])
n = c.execute("SELECT count(*) FROM events WHERE pid = 9120").fetchone()[0]
assert n == 1208, n
c.commit()
PY
TRAINER="cudaLaunchKernel cudaMemcpyAsync cudaStreamSynchronize"
NEIGHBOUR="cudaFree=592 cudaMalloc=616"
# ops of a query --json answer (or an API/MCP "ops" list), cuda only: "op=count ..."
ops() { python3 -c '
import json, sys
d = json.load(sys.stdin)
if isinstance(d, dict):
    d = d.get("structuredContent", d)
    d = d.get("ops", d.get("rows"))
print(" ".join(sorted("%s=%d" % (o["op"], o["count"]) for o in d if o["source"] == "cuda")))'; }
names() { tr ' ' '\n' | sed 's/=.*//' | tr '\n' ' ' | sed 's/ $//'; }

# ---- query summary
got=$("$CW_BIN" query --db "$db" --json --pod video-transcode-7d9f | ops) || fail "query --pod"
[ "$got" = "$NEIGHBOUR" ] || fail "query --pod video-transcode-7d9f: $got"
for f in "--namespace batch" "--container 51c0ffee" "--pod e1d2c3b4-a5f6-4789-8abc-def012345678" "--cgroup 23063"; do
	got=$("$CW_BIN" query --db "$db" --json $f | ops)
	[ "$got" = "$NEIGHBOUR" ] || fail "query $f: $got"
done
got=$("$CW_BIN" query --db "$db" --json --pod vit-train-0 | ops | names)
[ "$got" = "$TRAINER" ] || fail "query --pod vit-train-0: $got"
got=$("$CW_BIN" query --db "$db" --json --pod nosuch | ops)
[ -z "$got" ] || fail "query --pod nosuch kept: $got"
got=$("$CW_BIN" query --db "$db" --json --per-tenant | python3 -c '
import json, sys
print(" ".join(sorted("%s@%s@%s" % (o["op"], o["tenant"], (o["container"] or {}).get("namespace")) for o in json.load(sys.stdin) if o["source"] == "cuda")))')
want="cudaFree@pod batch/video-transcode-7d9f@batch cudaLaunchKernel@pod ml/vit-train-0@ml cudaMalloc@pod batch/video-transcode-7d9f@batch cudaMemcpyAsync@pod ml/vit-train-0@ml cudaStreamSynchronize@pod ml/vit-train-0@ml"
[ "$got" = "$want" ] || fail "query --per-tenant: $got"
"$CW_BIN" query --db "$db" --per-tenant --pod vit-train-0 | grep -q '^cuda    cudaStreamSynchronize  pod ml/vit-train-0 ' ||
	fail "text --per-tenant: $("$CW_BIN" query --db "$db" --per-tenant --pod vit-train-0)"
out=$("$CW_BIN" query --db "$db" "SELECT 1" --pod vit-train-0 2>&1) && fail "SQL with --pod accepted"
[ "$out" = 'causeway: query: --pod applies to the summary only; filter SQL with a WHERE clause' ] || fail "message: $out"
out=$("$CW_BIN" query --db "$db" --namespace 'Bad_NS' 2>&1) && fail "bad --namespace accepted"
[ "$out" = 'causeway: query: bad --namespace "Bad_NS" (want a Kubernetes namespace)' ] || fail "message: $out"

# ---- export: the neighbour's threads only, and no chain of the trainer
slices() { python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
print(" ".join(sorted({e["name"] for e in ev if e["ph"] == "X" and e.get("cat") in ("cuda", "driver")})))
print(len([e for e in ev if e["ph"] == "i"]))' "$1"; }
# A pod no process ran in: exit 7, nothing written (not an empty timeline).
"$CW_BIN" export --db "$db" --since 1h --pod nosuch -o "$tmp/none.json" 2>"$tmp/err"; rc=$?
[ $rc -eq 7 ] && [ ! -e "$tmp/none.json" ] || fail "export --pod nosuch: exit $rc, $(ls "$tmp")"
grep -q "nothing matches" "$tmp/err" || fail "export --pod nosuch: $(cat "$tmp/err")"
"$CW_BIN" export --db "$db" --since 1h --pod video-transcode-7d9f -o "$tmp/v.json" 2>/dev/null || fail "export --pod"
[ "$(slices "$tmp/v.json" | tr '\n' '|')" = "cudaFree cudaMalloc|0|" ] || fail "export --pod video: $(slices "$tmp/v.json")"
"$CW_BIN" export --db "$db" --since 1h --container 9d2f4c1a -o "$tmp/t.json" 2>/dev/null || fail "export --container"
s=$(slices "$tmp/t.json")
[ "${s%%$'\n'*}" = "$TRAINER" ] || fail "export --container 9d2f4c1a: $s"
[ "${s##*$'\n'}" -gt 0 ] || fail "export --container: no chain markers"

# ---- the API routes
"$CW_BIN" serve --db "$db" --no-tls --listen 127.0.0.1:0 2>"$tmp/serve.log" &
SP=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || fail "serve: $(cat "$tmp/serve.log")"
api="http://127.0.0.1:$port/api/v1"
got=$(curl -sf "${AUTH[@]}" "$api/ops?pod=video-transcode-7d9f" | ops) || fail "/ops?pod"
[ "$got" = "$NEIGHBOUR" ] || fail "/ops?pod=video-transcode-7d9f: $got"
got=$(curl -sf "${AUTH[@]}" "$api/ops?namespace=ml&per_tenant=1" | python3 -c '
import json, sys
print(" ".join(sorted("%s@%s" % (o["op"], o["tenant"]) for o in json.load(sys.stdin)["ops"] if o["source"] == "cuda")))')
[ "$got" = "cudaLaunchKernel@pod ml/vit-train-0 cudaMemcpyAsync@pod ml/vit-train-0 cudaStreamSynchronize@pod ml/vit-train-0" ] ||
	fail "/ops?namespace=ml&per_tenant=1: $got"
chains() { python3 -c '
import json, sys
print(" ".join(sorted("%s@%s" % (c["op"], (c["container"] or {}).get("pod")) for c in json.load(sys.stdin)["chains"])))'; }
got=$(curl -sf "${AUTH[@]}" "$api/chains?container=9d2f4c1a" | chains) || fail "/chains?container"
[ -n "$got" ] && [ -z "$(echo "$got" | tr ' ' '\n' | grep -v '@vit-train-0$')" ] || fail "/chains?container=9d2f4c1a: $got"
got=$(curl -sf "${AUTH[@]}" "$api/chains?pod=video-transcode-7d9f" | chains)
[ -z "$(echo "$got" | tr ' ' '\n' | grep '@vit-train-0$')" ] || fail "/chains?pod=video-transcode-7d9f kept the trainer: $got"
got=$(curl -sf "${AUTH[@]}" "$api/overview?namespace=batch" | python3 -c '
import json, sys
print(" ".join(sorted("%s/%s" % (t["namespace"], t["pod"]) for t in json.load(sys.stdin)["tenants"])))')
[ "$got" = "batch/video-transcode-7d9f" ] || fail "/overview?namespace=batch: $got"
got=$(curl -sf "${AUTH[@]}" "$api/overview" | python3 -c '
import json, sys
print(" ".join(sorted("%s/%s" % (t["namespace"], t["pod"]) for t in json.load(sys.stdin)["tenants"])))')
[ "$got" = "batch/video-transcode-7d9f ml/vit-train-0" ] || fail "/overview tenants: $got"
out=$(curl -s "${AUTH[@]}" -w ' %{http_code}' "$api/ops?pod=a%20b")
[ "$out" = '{"error":"bad pod \"a b\" (want a pod name or UID)"} 400' ] || fail "/ops?pod=a b: $out"

# ---- the fleet fan-out forwards the filters to the agent
got=$("$CW_BIN" query --nodes "http://127.0.0.1:$port" --json --container 51c0ffee | ops) || fail "fleet query"
[ "$got" = "$NEIGHBOUR" ] || fail "fleet query --container 51c0ffee: $got"
got=$("$CW_BIN" query --nodes "http://127.0.0.1:$port" --json --per-tenant --pod vit-train-0 | python3 -c '
import json, sys
print(" ".join(sorted({o["tenant"] for o in json.load(sys.stdin)})))')
[ "$got" = "pod ml/vit-train-0" ] || fail "fleet query --per-tenant --pod: $got"
got=$("$CW_BIN" explain --nodes "http://127.0.0.1:$port" --json --pod video-transcode-7d9f | chains)
[ -z "$(echo "$got" | tr ' ' '\n' | grep '@vit-train-0$')" ] || fail "fleet explain --pod video kept the trainer: $got"
got=$("$CW_BIN" explain --nodes "http://127.0.0.1:$port" --json --pod vit-train-0 | chains)
[ -n "$got" ] || fail "fleet explain --pod vit-train-0: no chains"
kill "$SP"
wait "$SP" 2>/dev/null
SP=

# ---- /metrics: stored chains carry the affected thread's tenant, at most
# 50 tenants labelled (60 more chains of distinct containers are added;
# the 10 with the fewest chains are counted without tenant labels).
python3 - "$db" <<'PY' || fail "adding chains"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in c.execute("PRAGMA table_info(chains)") if r[1] not in ("id", "json")]
row = list(c.execute("SELECT %s, json FROM chains WHERE kind = 'noisy_neighbour' AND severity = 'HIGH' LIMIT 1"
                     % ", ".join(cols)).fetchone())
row[cols.index("kind")] = "x"
for n in range(60):
    for _ in range(1 if n >= 50 else 2):
        c.execute("INSERT INTO chains (%s, json) VALUES (%s, json_set(?, '$.container.id', ?, '$.container.pod', ?))"
                  % (", ".join(cols), ", ".join("?" * len(cols))),
                  row[:-1] + [row[-1], "%012x" % (0xabc000000000 + n) + "0" * 52, "pod-%d" % n])
c.commit()
PY
"$CW_BIN" serve --db "$db" --no-tls --listen 127.0.0.1:0 2>"$tmp/serve2.log" &
SP=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve2.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || fail "serve: $(cat "$tmp/serve2.log")"
curl -sf "${AUTH[@]}" "http://127.0.0.1:$port/metrics" >"$tmp/m.txt" || fail "scrape"
kill "$SP"
wait "$SP" 2>/dev/null
SP=
promtool check metrics <"$tmp/m.txt" || fail "promtool: $(promtool check metrics <"$tmp/m.txt" 2>&1)"
grep -q '^causeway_chains{node="demo-node",kind="noisy_neighbour",severity="HIGH",container="9d2f4c1a7b3e",pod="vit-train-0",namespace="ml"} ' "$tmp/m.txt" ||
	fail "no tenant labels on causeway_chains: $(grep causeway_chains "$tmp/m.txt" | head -5)"
n=$(grep -c '^causeway_chains{.*pod="pod-' "$tmp/m.txt")
[ "$n" = 49 ] || fail "labelled tenants of x chains: $n (want 49: 50 less the trainer's pod)"
grep -q '^causeway_chains{node="demo-node",kind="x",severity="HIGH"} 12$' "$tmp/m.txt" ||
	fail "unlabelled fold: $(grep causeway_chains "$tmp/m.txt" | grep -v pod=)"
# NCCL per-rank families: the rank's process's tenant, where its cgroup is named.
ndb=$tmp/nccl.db
"$CW_BIN" demo nccl-straggler --db "$ndb" >/dev/null 2>&1 || fail "demo nccl-straggler"
python3 - "$ndb" <<'PY' || fail "naming a rank's cgroup"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.execute("INSERT INTO cgroups (node, cgroup_id, path, runtime, container_id, pod, namespace, tenant) SELECT node,"
          " cgroup_id, '/kubepods.slice/x', 'containerd', 'abcdef0123456789', 'rank-0', 'train', 'pod:x'"
          " FROM processes WHERE pid = 4821")
c.commit()
PY
"$CW_BIN" serve --db "$ndb" --no-tls --listen 127.0.0.1:0 2>"$tmp/serve3.log" &
SP=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/serve3.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || fail "serve: $(cat "$tmp/serve3.log")"
curl -sf "${AUTH[@]}" "http://127.0.0.1:$port/metrics" >"$tmp/m3.txt" || fail "scrape nccl"
kill "$SP"
wait "$SP" 2>/dev/null
SP=
grep -q '^causeway_nccl_collectives{node="demo-node",pid="4821",rank="[0-9]*",container="abcdef012345",pod="rank-0",namespace="train"} ' "$tmp/m3.txt" ||
	fail "nccl tenant labels: $(grep '^causeway_nccl_collectives' "$tmp/m3.txt")"
grep -q '^causeway_nccl_collectives{node="demo-node",pid="4831",rank="[0-9]*"} ' "$tmp/m3.txt" ||
	fail "nccl rank without a tenant: $(grep '^causeway_nccl_collectives' "$tmp/m3.txt")"
promtool check metrics <"$tmp/m3.txt" || fail "promtool nccl: $(promtool check metrics <"$tmp/m3.txt" 2>&1)"

# ---- MCP: causal_chains and trace_summary take container/pod/namespace
cat >"$tmp/in" <<'IN'
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"trace_summary","arguments":{"namespace":"batch"}}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"causal_chains","arguments":{"pod":"vit-train-0"}}}
{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"causal_chains","arguments":{"container":"51c0ffee"}}}
{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"causal_chains","arguments":{"pod":"a b"}}}
IN
"$CW_BIN" mcp --db "$db" <"$tmp/in" >"$tmp/out" 2>"$tmp/err" || fail "mcp: $(cat "$tmp/err")"
python3 - "$tmp/out" "$NEIGHBOUR" <<'PY' || exit 1
import json, sys
r = {m["id"]: m for m in map(json.loads, open(sys.argv[1]))}
ops = " ".join(sorted("%s=%d" % (o["op"], o["count"]) for o in r[2]["result"]["structuredContent"]["ops"] if o["source"] == "cuda"))
if ops != sys.argv[2]:
    sys.exit("FAIL: mcp trace_summary namespace=batch: %s" % ops)
ch = r[3]["result"]["structuredContent"]["chains"]
if not ch or any(c["container"]["pod"] != "vit-train-0" for c in ch):
    sys.exit("FAIL: mcp causal_chains pod=vit-train-0: %s" % [c.get("container") for c in ch])
if any((c.get("container") or {}).get("pod") == "vit-train-0" for c in r[4]["result"]["structuredContent"]["chains"]):
    sys.exit("FAIL: mcp causal_chains container=51c0ffee kept the trainer")
e = r[5]["result"]
if not e.get("isError") or e["content"][0]["text"] != 'bad pod "a b" (want a pod name or UID)':
    sys.exit("FAIL: mcp bad pod: %s" % e)
PY
echo ok
