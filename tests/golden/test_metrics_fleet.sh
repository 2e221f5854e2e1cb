#!/bin/bash
# /metrics of a fleet database (`causeway merge` of six nodes: three NCCL
# ranks on three nodes from the cluster_db fixture with skewed clocks, a
# host under memory pressure, a GPU that falls off the bus, a
# noisy-neighbour pod),
# with explain's chains stored: promtool finds nothing to report; no series
# appears twice (promtool does not look); every node has its own series; each
# node's op histograms carry exactly the counts and sums of that node's own
# database; per-rank NCCL series name every rank of the cross-node job and
# its straggler's lag; the Xid counter keeps its node.
set -u
command -v promtool >/dev/null || { echo "FAIL: promtool not installed (scripts/install-deps.sh)"; exit 1; }
fix=$CW_BUILD/fixtures/cluster_db
[ -x "$fix" ] || { echo "FAIL: fixture $fix not built (make fixtures)"; exit 1; }
D=$(mktemp -d)
SP=
cleanup() { [ -n "$SP" ] && kill "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
. "$CW_ROOT/tests/lib/auth.sh"
auth_shared # every server and client here shares $CW_TOKEN

# The NCCL families cover the 5 minutes before the newest stored collective
# of the store: the one NCCL job here is the cross-node one.
"$fix" "$D/n1.db" node1 0 --world 3 --nccl 1 --straggler-rank 2 || fail "fixture node1"
"$fix" "$D/n2.db" node2 1 --world 3 --nccl 1 --straggler-rank 2 --skew-ms 250 || fail "fixture node2"
"$fix" "$D/n3.db" node3 2 --world 3 --nccl 1 --straggler-rank 2 --skew-ms -40 || fail "fixture node3"
"$CW_BIN" --node gpu-a demo xid-fault --db "$D/a.db" >/dev/null 2>&1 || fail "demo xid-fault"
"$CW_BIN" --node gpu-b demo memory-pressure --db "$D/b.db" >/dev/null 2>&1 || fail "demo memory-pressure"
"$CW_BIN" --node gpu-c demo noisy-neighbour --db "$D/c.db" >/dev/null 2>&1 || fail "demo noisy-neighbour"
INPUTS="n1 n2 n3 a b c"
"$CW_BIN" merge $(for i in $INPUTS; do echo "$D/$i.db"; done) -o "$D/fleet.db" >/dev/null || fail "merge"
"$CW_BIN" explain --db "$D/fleet.db" >/dev/null 2>&1 || fail "explain on the fleet database"

: >"$D/serve.log"
"$CW_BIN" serve --db "$D/fleet.db" --no-tls --listen 127.0.0.1:0 2>"$D/serve.log" &
SP=$!
port=
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$D/serve.log")
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || fail "serve: $(cat "$D/serve.log")"
curl -sf "${AUTH[@]}" --max-time 20 "http://127.0.0.1:$port/metrics" >"$D/m.txt" || fail "scrape"
promtool check metrics <"$D/m.txt" || fail "promtool on the fleet /metrics: $(promtool check metrics <"$D/m.txt" 2>&1)"

python3 - "$D" $INPUTS <<'PY' || exit 1
import re, sqlite3, sys
D, inputs = sys.argv[1], sys.argv[2:]
def die(msg):
    sys.exit("FAIL: " + msg)
seen, s = set(), {}
for line in open(D + "/m.txt").read().splitlines():
    if line.startswith("#") or not line:
        continue
    key = line.rsplit(" ", 1)[0]
    if key in seen:
        die("series twice: " + key)
    seen.add(key)
    m = re.match(r'^(\w+)\{(.*)\} (\S+)$', line)
    if m:
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        s.setdefault(m.group(1), []).append((labels, float(m.group(3))))
nodes, counted = set(), set()
for i in inputs:
    con = sqlite3.connect("file:%s/%s.db?mode=ro" % (D, i), uri=True)
    node = con.execute("SELECT DISTINCT node FROM aggregates").fetchall()
    if len(node) != 1:
        die("%s.db holds nodes %r" % (i, node))
    node = node[0][0]
    nodes.add(node)
    if con.execute("SELECT count(*) FROM counters").fetchone()[0]:
        counted.add(node)
    want = {(src, op): (n, t) for src, op, n, t in con.execute(
        "SELECT source, op, sum(count), sum(sum_ns) FROM aggregates GROUP BY source, op")}
    got = {(l["source"], l["op"]): v for l, v in s.get("causeway_op_duration_seconds_count", []) if l["node"] == node}
    gsum = {(l["source"], l["op"]): v for l, v in s.get("causeway_op_duration_seconds_sum", []) if l["node"] == node}
    if set(got) != set(want):
        die("node %s: ops %r, its own database has %r" % (node, sorted(got), sorted(want)))
    for k, (n, t) in want.items():
        if got[k] != n or abs(gsum[k] - t / 1e9) > 1e-6 * max(1.0, t / 1e9):
            die("node %s %s: count %r sum %r, its own database %d %d ns" % (node, k, got[k], gsum[k], n, t))
    if not [1 for l, _ in s.get("causeway_host_cpu_busy_ratio", []) if l["node"] == node] and \
            con.execute("SELECT count(*) FROM snapshots").fetchone()[0]:
        die("node %s: no host snapshot series" % node)
# Session counters (the fixture's nodes have none): each node's own.
if len(counted) < 3:
    die("inputs with session counters: %r" % sorted(counted))
if {l["node"] for l, _ in s.get("causeway_session_stat", [])} != counted:
    die("causeway_session_stat covers nodes %r, want %r" % (
        sorted({l["node"] for l, _ in s.get("causeway_session_stat", [])}), sorted(counted)))
if not {l["node"] for l, _ in s.get("causeway_events_lost_total", [])} <= counted:
    die("causeway_events_lost_total of a node without counters")
# The cross-node NCCL job: one series per rank, on its own node; rank 2 late.
ranks = {l["rank"]: (l["node"], v) for l, v in s.get("causeway_nccl_late_collectives", []) if l["node"].startswith("node")}
if sorted(ranks) != ["0", "1", "2"] or [ranks[r][0] for r in "012"] != ["node1", "node2", "node3"]:
    die("cross-node NCCL ranks %r" % ranks)
lag = {l["rank"]: v for l, v in s.get("causeway_nccl_arrival_lag_seconds", []) if l["node"].startswith("node")}
if max(lag, key=lag.get) != "2":
    die("straggler rank 2 does not carry the largest arrival lag: %r" % lag)
xid = [(l["node"], l["code"]) for l, v in s.get("causeway_gpu_xid_errors_total", [])]
if xid != [("gpu-a", "79")]:
    die("Xid series %r" % xid)
chains = {l["node"] for l, _ in s.get("causeway_chains", [])}
if not {"gpu-a", "gpu-c"} <= chains:
    die("chains by node %r" % sorted(chains))
print("fleet: %d nodes, %d series, promtool clean" % (len(nodes), len(seen)))
PY
echo ok
