#!/bin/bash
# The dashboard's routes (docs/api.md) on demo databases, each number checked
# against `query --json` / `explain --json` / `export` on the same file:
# timeline lanes equal the rows SQL returns for the thread and window, pages
# reassemble the whole answer, ops/detail and ops/series agree with the
# per-op summary, overview's capture and host fields with the tables, the
# Perfetto download with `export`, nccl/ranks with `explain --ranks`,
# tenants with SQL and explain, gpu with the samples; bad input is the
# documented 400/404, an empty database answers empty arrays, and /fleet
# reports four loopback agents (TLS), a dead one and the NCCL straggler.
. "$CW_ROOT/tests/integration/fleet_lib.sh"
[ -x "$CW_BUILD/fixtures/cluster_db" ] || make -s -C "$CW_ROOT" BUILD="$CW_BUILD" fixtures >/dev/null 2>&1 ||
	fail "cannot build the fixtures (make fixtures)"

for sc in incident nccl-straggler noisy-neighbour thermal-throttling; do
	"$CW_BIN" demo "$sc" --db "$T/$sc.db" >/dev/null 2>&1 || fail "demo $sc"
done
# An empty database of the current schema: a demo file with every row gone.
cp "$T/incident.db" "$T/empty.db"
sqlite3 "$T/empty.db" "$(sqlite3 "$T/empty.db" "SELECT group_concat('DELETE FROM \"' || name || '\"', ';')
	FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")" || fail "emptying"

declare -A URL
for sc in incident nccl-straggler noisy-neighbour thermal-throttling empty; do
	start_agent "d$$-$sc" "$T/$sc.db" --no-tls
	URL[$sc]=http://127.0.0.1:$PORT/api/v1
done
q() { "$CW_BIN" query --db "$T/$1.db" --json "$2"; }
export CW_T=$T

# 1. incident: the timeline of chain 0 against SQL, paged and whole.
B=${URL[incident]}
python3 - "$B" "$CW_BIN" "$T/incident.db" <<'EOF' || fail "incident timeline"
import json, subprocess, sys, urllib.request, cw_auth
B, cw, db = sys.argv[1:4]
get = lambda u: json.load(urllib.request.urlopen(B + u))
sql = lambda s: json.loads(subprocess.check_output([cw, "query", "--db", db, "--json", s]))
ch = get("/chains")["chains"][0]
w = ch["timeline_window"]
assert w["tid"] == ch["tid"] == 4821 and w["from_ns"] < w["to_ns"], w
# chain= is the same as tid/from/to of its timeline_window.
a = get("/timeline?chain=0")
b = get("/timeline?tid=%d&from=%d&to=%d" % (w["tid"], w["from_ns"], w["to_ns"]))
assert a["chain"]["kind"] == ch["root_cause"]["kind"] and a["chain"]["tid"] == 4821, a["chain"]
assert a["lanes"] == b["lanes"] and a["from_ns"] == w["from_ns"], "chain= differs from tid/from/to"
assert a["threads"] == [{"pid": 4821, "tid": 4821, "comm": "python", "rank": 0}], a["threads"]
lanes = {l["lane"]: l for l in a["lanes"]}
assert set(lanes) == {"cuda", "offcpu", "memory"}, set(lanes)
f, t = w["from_ns"], w["to_ns"]
cuda = sql("SELECT wall_ns AS s, wall_ns + duration_ns AS e, op FROM events WHERE tid = 4821"
           " AND source IN ('cuda','driver','graph') AND wall_ns <= %d AND wall_ns + duration_ns >= %d" % (t, f))
got = sorted((i["start_ns"], i["end_ns"], i["op"]) for i in lanes["cuda"]["intervals"])
assert got == sorted((r["s"], r["e"], r["op"]) for r in cuda), ("cuda", len(got), len(cuda))
off = sql("SELECT wall_ns AS s, wall_ns + duration_ns AS e, reason, by_comm FROM offcpu WHERE tid = 4821"
          " AND wall_ns <= %d AND wall_ns + duration_ns >= %d" % (t, f))
got = sorted((i["start_ns"], i["end_ns"], i["reason"], (i["preempted_by"] or {}).get("comm"))
             for i in lanes["offcpu"]["intervals"])
assert got == sorted((r["s"], r["e"], r["reason"], r["by_comm"]) for r in off), ("offcpu", len(got), len(off))
assert any(i["preempted_by"] and i["preempted_by"]["comm"] == "stress-ng" for i in lanes["offcpu"]["intervals"])
mem = sql("SELECT count(*) AS n FROM events WHERE op = 'page_alloc' AND pid = 4821 AND wall_ns <= %d"
          " AND wall_ns + max(duration_ns, coalesce(arg1, 0)) >= %d" % (t, f))
assert len(lanes["memory"]["intervals"]) == mem[0]["n"] > 0 and lanes["memory"]["tid"] is None
# Python lines on the calls, as the events' stacks say.
py = [i["python"] for i in lanes["cuda"]["intervals"] if i["op"] == "cudaStreamSynchronize"]
assert py and all(p == {"file": "/workspace/train.py", "line": 95, "function": "train_step"} for p in py), py[:3]
# A window that starts inside an off-CPU interval and inside a call shows
# both (they overlap it).
o1 = off[len(off) // 2]
f2 = (o1["s"] + o1["e"]) // 2
p = get("/timeline?tid=4821&from=%d&to=%d" % (f2, f2 + 50_000_000))
pl = {l["lane"]: l["intervals"] for l in p["lanes"]}
assert pl["offcpu"][0]["start_ns"] == o1["s"] < f2, (pl["offcpu"][0], o1)
sq = sql("SELECT wall_ns AS s FROM events WHERE tid = 4821 AND source = 'cuda' AND wall_ns <= %d"
         " AND wall_ns + duration_ns >= %d ORDER BY id" % (f2 + 50_000_000, f2))
assert [i["start_ns"] for i in pl["cuda"]] == [r["s"] for r in sq] and sq[0]["s"] < f2, "cuda at the edge"
# Pages of 700 reassemble the whole answer, no repeat, no gap.
whole = sorted((l["lane"], i["start_ns"], i["end_ns"], i["label"]) for l in a["lanes"] for i in l["intervals"])
assert a["intervals"] == len(whole) and not a["truncated"] and a["next"] is None
pages, cur, n = [], None, 0
while True:
    p = get("/timeline?chain=0&limit=700" + ("&after=" + cur if cur else ""))
    pages += [(l["lane"], i["start_ns"], i["end_ns"], i["label"]) for l in p["lanes"] for i in l["intervals"]]
    assert p["intervals"] <= 700
    n += 1
    if not p["next"]:
        assert not p["truncated"]
        break
    assert p["truncated"]
    cur = p["next"]
assert n == -(-len(whole) // 700) and sorted(pages) == whole, (n, len(pages), len(whole))
# pid= covers the process's threads: the loader's too.
p = get("/timeline?pid=4821&from=%d&to=%d&limit=200000" % (f, t))
assert {x["tid"] for x in p["threads"]} == {4821}, p["threads"]
EOF

# 1b. /chains answers are cached per file version: a changed file is
# explained again (here its aggregates are emptied: no op has a tail).
cp "$T/incident.db" "$T/cache.db"
start_agent "d$$-cache" "$T/cache.db" --no-tls
C=http://127.0.0.1:$PORT/api/v1
n_chains() { curl -s "${AUTH[@]}" "$C/chains" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["chains"]))'; }
[ "$(n_chains)" = 1 ] || fail "cache.db: no chain"
[ "$(n_chains)" = 1 ] || fail "cache.db: cached answer differs"
sqlite3 "$T/cache.db" "DELETE FROM aggregates" || fail "sqlite3 delete"
[ "$(n_chains)" = 0 ] || fail "a stale /chains answer after the file changed"

# 2. ops/detail and ops/series against the per-op summary (query --json).
python3 - "$B" "$CW_BIN" "$T/incident.db" <<'EOF' || fail "incident ops"
import json, subprocess, sys, urllib.request, cw_auth
B, cw, db = sys.argv[1:4]
get = lambda u: json.load(urllib.request.urlopen(B + u))
run = lambda *a: json.loads(subprocess.check_output([cw, "query", "--db", db, "--json", *a]))
for since in (None, "20s"):
    summ = {r["op"]: r for r in run(*(["--since", since] if since else []))}
    for op in ("cudaStreamSynchronize", "cudaMalloc", "cudaLaunchKernel"):
        d = get("/ops/detail?op=%s&limit=5%s" % (op, "&since=" + since if since else ""))
        s = summ[op]
        for k in ("count", "p50_ns", "p95_ns", "p99_ns", "max_ns", "total_ns"):
            assert d[k] == s[k], (since, op, k, d[k], s[k])
        assert sum(h["count"] for h in d["histogram"]) == d["count"], op
        assert all(h["lo_ns"] < h["hi_ns"] for h in d["histogram"])
        durs = [c["duration_ns"] for c in d["slowest"]]
        assert len(durs) == 5 and durs == sorted(durs, reverse=True), durs
        assert durs[0] == d["max_ns"], (durs[0], d["max_ns"])
    ser = get("/ops/series?points=7%s" % ("&since=" + since if since else ""))
    assert ser["points"] == 7 and all(len(o["p99_ns"]) == 7 == len(o["calls"]) for o in ser["ops"])
    for o in ser["ops"]:
        assert sum(o["calls"]) == o["count"] == summ[o["op"]]["count"], (o["op"], since)
        assert all((p is None) == (c == 0) for p, c in zip(o["p50_ns"], o["calls"]))
    one = {o["op"]: o for o in get("/ops/series?points=1%s" % ("&since=" + since if since else ""))["ops"]}
    for op, s in summ.items():
        assert one[op]["p50_ns"] == [s["p50_ns"]] and one[op]["p99_ns"] == [s["p99_ns"]], (op, one[op], s)
# The slowest calls are the rows SQL finds.
d = get("/ops/detail?op=cudaStreamSynchronize&limit=3")
rows = run("SELECT wall_ns, duration_ns FROM events WHERE op = 'cudaStreamSynchronize' ORDER BY duration_ns DESC LIMIT 3")
assert [(c["start_ns"], c["duration_ns"]) for c in d["slowest"]] == [(r["wall_ns"], r["duration_ns"]) for r in rows]
# Per-bucket calls equal the aggregates' seconds of each bucket.
ser = get("/ops/series?points=10")
agg = run("SELECT (second - %d) / %d AS b, sum(count) AS n FROM aggregates WHERE op = 'cudaMalloc' GROUP BY b"
          % (ser["from_ns"] // 10**9, ser["step_ns"] // 10**9))
m = {o["op"]: o for o in ser["ops"]}["cudaMalloc"]
want = [0] * 10
for r in agg:
    want[r["b"]] = r["n"]
assert m["calls"] == want, (m["calls"], want)
EOF

# 3. overview: capture and host from the tables.
python3 - "$B" "$CW_BIN" "$T/incident.db" <<'EOF' || fail "incident overview"
import json, subprocess, sys, urllib.request, cw_auth
B, cw, db = sys.argv[1:4]
get = lambda u: json.load(urllib.request.urlopen(B + u))
run = lambda s: json.loads(subprocess.check_output([cw, "query", "--db", db, "--json", s]))
o = get("/overview")
snaps = run("SELECT wall_ns, cpu_pct FROM snapshots ORDER BY wall_ns")
assert [(h["t_ns"], h["cpu_pct"]) for h in o["host"]] == [(r["wall_ns"], r["cpu_pct"]) for r in snaps]
assert o["live"] is False and o["capture"]["sessions"][0]["live"] is False
ss = run("SELECT id, kind, command, started_wall_ns, ended_wall_ns FROM sessions ORDER BY id DESC")
assert [(s["id"], s["kind"], s["command"], s["started_ns"], s["ended_ns"]) for s in o["capture"]["sessions"]] == \
    [(r["id"], r["kind"], r["command"], r["started_wall_ns"], r["ended_wall_ns"]) for r in ss]
drops = run("SELECT name, value FROM counters WHERE name LIKE 'pipeline.rej%' OR name = 'pipeline.unpaired_returns'")
for r in drops:
    assert o["capture"]["drops"][r["name"]] == r["value"], r
assert "pipeline.records" not in o["capture"]["drops"] and o["capture"]["attach"] == []
assert o["capture"]["losses"] == [] and o["window"]["from_ns"] == o["time_range"]["from_wall_ns"]
# A window: 10 s of snapshots.
w = get("/overview?since=10s")
assert len(w["host"]) == 10 and w["window"]["to_ns"] - w["window"]["from_ns"] == 10 * 10**9, w["window"]
EOF

# 4. Perfetto: the bytes `export` writes; pid keeps that process only.
curl -s "${AUTH[@]}" -o "$T/api.json" -D "$T/hdr" "$B/export/perfetto?from=1767225631&to=1767225633"
"$CW_BIN" export --db "$T/incident.db" --from 1767225631 --to 1767225633 -o "$T/cli.json" 2>/dev/null ||
	fail "export"
cmp -s "$T/api.json" "$T/cli.json" || fail "/export/perfetto differs from causeway export"
grep -qi '^content-disposition: attachment; filename="causeway-' "$T/hdr" || fail "no attachment header"
grep -qi '^x-causeway-slices: 378 of 378' "$T/hdr" || fail "slices header: $(cat "$T/hdr")"
curl -s "${AUTH[@]}" -o "$T/pid.json" "$B/export/perfetto?from=1767225631&to=1767225633&pid=4870&chains=0"
python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
# Extra lanes of a thread (overlapping slices) are tid + k * CW_LANE_STRIDE.
tids = {e["tid"] % (1 << 22) for e in ev if e.get("ph") == "X"}
assert tids == {4870}, tids' "$T/pid.json" || fail "pid filter of the export"

# 5. Bad input: the documented 400s (and 404s), each with an error sentence.
for u in "timeline" "timeline?tid=x" "timeline?tid=0" "timeline?tid=1&limit=0" "timeline?tid=1&limit=200001" \
	"timeline?tid=1&after=zz" "timeline?tid=1&after=9.1" "timeline?chain=0&tid=1" "timeline?tid=1&from=nope" \
	"timeline?tid=1&since=5m&from=1" "timeline?tid=1&from=1767225631&to=1767225630" "ops/detail" \
	"ops/detail?op=cudaMalloc&limit=1001" "ops/series?points=0" "ops/series?points=301" "ops/series?since=x" \
	"overview?since=x" "export/perfetto?max_events=0" "export/perfetto?pid=-1" "gpu?from=x" \
	"nccl/ranks?since=0s" "tenants?to=nope" "chains?pid=0" "fleet?since=x"; do
	c=$(curl -s "${AUTH[@]}" -o "$T/err" -w '%{http_code}' "$B/$u")
	[ "$c" = 400 ] || fail "$u answered $c, not 400: $(cat "$T/err")"
	grep -q '"error":"' "$T/err" || fail "$u: no error sentence: $(cat "$T/err")"
done
[ "$(code "$B/timeline?chain=7")" = 404 ] || fail "missing chain not 404"
[ "$(code "$B/stream")" = 404 ] || fail "/stream without a live trace not 404"
[ "$(code "$B/timeline" -X POST)" = 405 ] || fail "POST timeline not 405"

# 6. NCCL: the rank table is explain --ranks's; the nccl lane is nccl_calls.
B=${URL[nccl-straggler]}
python3 - "$B" "$CW_BIN" "$T/nccl-straggler.db" <<'EOF' || fail "nccl"
import json, subprocess, sys, urllib.request, cw_auth
B, cw, db = sys.argv[1:4]
get = lambda u: json.load(urllib.request.urlopen(B + u))
ex = json.loads(subprocess.check_output([cw, "explain", "--db", db, "--ranks", "--json", "--no-store"]))
r = get("/nccl/ranks")
assert r["ranks"] == ex["ranks"] and len(r["ranks"]) == 4, (r["ranks"], ex["ranks"])
assert [x["rank"] for x in r["ranks"] if x["straggler"]] == [2]
rows = json.loads(subprocess.check_output([cw, "query", "--db", db, "--json",
    "SELECT wall_ns, seq, op FROM nccl_calls WHERE tid = 4841 ORDER BY id"]))
t = get("/timeline?tid=4841")
lane = [l for l in t["lanes"] if l["lane"] == "nccl"]
assert len(lane) == 1 and len(rows) > 0
assert [(i["start_ns"], i["seq"], i["op"]) for i in lane[0]["intervals"]] == \
    [(x["wall_ns"], x["seq"], x["op"]) for x in rows], "nccl lane"
EOF

# 7. Tenants: calls per cgroup from SQL, chains from explain.
B=${URL[noisy-neighbour]}
python3 - "$B" "$CW_BIN" "$T/noisy-neighbour.db" <<'EOF' || fail "tenants"
import json, subprocess, sys, urllib.request, cw_auth
B, cw, db = sys.argv[1:4]
get = lambda u: json.load(urllib.request.urlopen(B + u))
sql = lambda s: json.loads(subprocess.check_output([cw, "query", "--db", db, "--json", s]))
ten = get("/tenants")["tenants"]
calls = {r["cgroup_id"]: r["n"] for r in sql("SELECT cgroup_id, count(*) AS n FROM events"
         " WHERE source IN ('cuda','driver','graph','nccl') GROUP BY cgroup_id")}
for t in ten:
    assert t["calls"] == calls.get(t["cgroup_id"], 0), t
ex = json.loads(subprocess.check_output([cw, "explain", "--db", db, "--json", "--no-store"]))["chains"]
aff = {}
cul = {}
for c in ex:
    aff[c["container"]["cgroup_id"]] = aff.get(c["container"]["cgroup_id"], 0) + 1
    if c.get("culprit") and c["culprit"].get("container"):
        k = c["culprit"]["container"]["cgroup_id"]
        cul[k] = cul.get(k, 0) + 1
by = {t["cgroup_id"]: t for t in ten}
for k, n in aff.items():
    assert by[k]["chains"] == n, (k, n)
for k, n in cul.items():
    assert by[k]["culprit_of"] == n, (k, n)
assert any(t["pod"] == "video-transcode-7d9f" and t["culprit_of"] > 0 and t["calls"] == 0 for t in ten), ten
EOF

# 8. GPU: devices and samples from the tables (92 one-second samples fit
# in 300 points untouched).
B=${URL[thermal-throttling]}
python3 - "$B" "$CW_BIN" "$T/thermal-throttling.db" <<'EOF' || fail "gpu"
import json, subprocess, sys, urllib.request, cw_auth
B, cw, db = sys.argv[1:4]
get = lambda u: json.load(urllib.request.urlopen(B + u))
sql = lambda s: json.loads(subprocess.check_output([cw, "query", "--db", db, "--json", s]))
g = get("/gpu")
dev = sql("SELECT device, uuid FROM gpu_devices ORDER BY device")
assert [(d["index"], d["uuid"]) for d in g["devices"]] == [(r["device"], r["uuid"]) for r in dev]
s = sql("SELECT wall_ns, gpu_util, temp_gpu, clock_reasons FROM gpu_samples ORDER BY wall_ns")
assert [(x["t_ns"], x["util"], x["temp_c"], x["throttle_reasons"]) for x in g["samples"]] == \
    [(r["wall_ns"], r["gpu_util"], r["temp_gpu"], r["clock_reasons"]) for r in s]
assert g["devices"][0]["latest"]["t_ns"] == s[-1]["wall_ns"] and g["xid"] == []
assert max(x["temp_c"] for x in g["samples"]) >= 90
EOF

# 9. An empty database: 200 and empty arrays everywhere.
B=${URL[empty]}
python3 - "$B" <<'EOF' || fail "empty database"
import json, sys, urllib.request, cw_auth
B = sys.argv[1]
get = lambda u: json.load(urllib.request.urlopen(B + u))
assert get("/chains")["chains"] == []
t = get("/timeline?tid=4821")
assert t["lanes"] == [] and t["threads"] == [] and t["next"] is None
assert get("/ops/series")["ops"] == []
d = get("/ops/detail?op=cudaMalloc")
assert d["count"] == 0 and d["histogram"] == [] and d["slowest"] == []
o = get("/overview")
assert o["host"] == [] and o["capture"]["sessions"] == [] and o["capture"]["drops"] == {}
g = get("/gpu")
assert g["devices"] == [] and g["samples"] == [] and g["xid"] == []
assert get("/nccl/ranks")["ranks"] == [] and get("/tenants")["tenants"] == []
f = get("/fleet")
assert f["configured"] is False and f["nodes"] == [] and f["straggler"] is None
EOF

# 10. /fleet: four TLS agents from the config, one killed afterwards.
mkcerts
APIDS=()
for i in 1 2 3 4; do
	"$CW_BUILD/fixtures/cluster_db" "$T/n$i.db" "node$i" $((i - 1)) --world 4 --straggler-rank 2 --async 1 \
		--nccl 1 || fail "cluster fixture $i"
	start_agent "node$i" "$T/n$i.db" --cert "$PKI/server.crt" --key "$PKI/server.key" --client-ca "$PKI/ca.crt"
	APIDS+=("$LAST_PID")
	echo "    - 127.0.0.1:$PORT" >>"$T/nodes"
done
{
	echo "fleet:"
	echo "  nodes:"
	cat "$T/nodes"
	echo "  ca_cert: $PKI/ca.crt"
	echo "  client_cert: $PKI/client.crt"
	echo "  client_key: $PKI/client.key"
	echo "  timeout: 2s"
} >"$T/fleet.yaml"
NODES=$(sed 's/ *- //' "$T/nodes" | paste -sd,)
"$CW_BIN" --config "$T/fleet.yaml" --node "hub$$" serve --db "$T/n1.db" --listen 127.0.0.1:0 --no-tls 2>"$T/hub.log" &
PIDS+=($!)
for _ in $(seq 1 100); do
	HUB=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$T/hub.log")
	[ -n "$HUB" ] && break
	sleep 0.05
done
[ -n "$HUB" ] || fail "hub did not start: $(cat "$T/hub.log")"
"$CW_BIN" explain --nodes "$NODES" --ca-cert "$PKI/ca.crt" --client-cert "$PKI/client.crt" \
	--client-key "$PKI/client.key" --json >"$T/fan.json" 2>/dev/null || fail "explain --nodes"
curl -s "${AUTH[@]}" "http://127.0.0.1:$HUB/api/v1/fleet" >"$T/fleet.json"
python3 - "$T/fleet.json" "$T/fan.json" <<'EOF' || fail "fleet: $(cat "$T/fleet.json")"
import json, sys
f, fan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert f["configured"] is True and f["node"].startswith("hub")
assert [n["node"] for n in f["nodes"]] == ["node1", "node2", "node3", "node4"], f["nodes"]
assert all(n["status"] == "ok" and n["error"] is None and n["rtt_ns"] > 0 for n in f["nodes"]), f["nodes"]
assert all(abs(n["clock_offset_ns"]) < 50_000_000 for n in f["nodes"])
fs = [c for c in fan["chains"] if c["root_cause"]["kind"] == "nccl_straggler"]
assert fs and f["straggler"]["rank"] == fs[0]["rank"] == 2 and f["straggler"]["node"] == fs[0]["node"] == "node3", \
    (f["straggler"], fs)
per = {}
for c in fan["chains"]:
    if "agent" in c:
        per[c["agent"]] = per.get(c["agent"], 0) + 1
assert {n["address"]: n["chains"] for n in f["nodes"]} == {n["address"]: per.get(n["address"], 0) for n in f["nodes"]}
n3 = f["nodes"][2]
assert n3["top_chain"] and n3["top_chain"]["kind"] == "cpu_preemption", n3
EOF
kill "${APIDS[1]}"
wait "${APIDS[1]}" 2>/dev/null
curl -s "${AUTH[@]}" "http://127.0.0.1:$HUB/api/v1/fleet" >"$T/fleet2.json"
python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
st = [n["status"] for n in f["nodes"]]
assert st == ["ok", "unreachable", "ok", "ok"], st
assert f["nodes"][1]["error"] and f["nodes"][1]["chains"] is None
assert f["straggler"] and f["straggler"]["node"] == "node3"' "$T/fleet2.json" || fail "dead agent: $(cat "$T/fleet2.json")"
echo "ok"
