#!/bin/bash
# export --format perfetto: on a merged three-node database (cluster_db
# fixture; node2's clock +250 ms, node3's -40 ms; node3 preempted by
# stress-ng) the trace parses, every slice nests on its track, every flow
# has both ends inside slices, the clock offsets line the nodes'
# ncclAllReduce completions up (and do not without them), the window cap
# cuts with a warning, bad input gives one clear error; and the export of
# the cluster matches tests/golden/export/cluster.json byte for byte
# (CW_UPDATE_GOLDEN=1 rewrites it), and so does the export of the demo's
# incident database over two seconds of its CPU storm (demo_incident.json);
# inference requests get a track per connection (requests_incident.json).
set -u
fix=$CW_BUILD/fixtures/cluster_db
check=$CW_ROOT/tests/golden/export/check.py
golden=$CW_ROOT/tests/golden/export/cluster.json
[ -x "$fix" ] || { echo "fixture $fix not built (make BUILD=... fixtures)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cluster() { # DIR STEPS
	"$fix" "$1/n1.db" node1 0 --straggler-rank 2 --steps "$2" &&
		"$fix" "$1/n2.db" node2 1 --straggler-rank 2 --skew-ms 250 --steps "$2" &&
		"$fix" "$1/n3.db" node3 2 --straggler-rank 2 --skew-ms -40 --steps "$2" &&
		"$CW_BIN" merge "$1/n1.db" "$1/n2.db" "$1/n3.db" -o "$1/c.db" > /dev/null
}
mkdir "$tmp/big"
cluster "$tmp/big" 40 || fail "building the cluster"

"$CW_BIN" export --help | grep -q 'usage: causeway export' || fail "--help"
"$CW_BIN" export --db "$tmp/big/c.db" -o "$tmp/t.json" 2> "$tmp/e" || fail "export: $(cat "$tmp/e")"
grep -q 'wrote "'"$tmp"'/t.json": 3 nodes' "$tmp/e" || fail "summary line: $(cat "$tmp/e")"
ls "$tmp" | grep -q '\.tmp-' && fail "temporary file left behind"
python3 "$check" "$tmp/t.json" --min-flows 5 --aligned-allreduce || fail "structure (see above)"
python3 - "$tmp/t.json" <<'EOF' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
def fail(m): print("FAIL:", m); sys.exit(1)
procs = sorted(e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name")
if procs != ["node1", "node2", "node3"]: fail(f"processes {procs}")
threads = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
if "python3 2002" not in threads or "pt_data_worker 2001" not in threads: fail(f"threads {threads}")
names = {e["name"] for e in ev if e["ph"] == "X"}
for want in ("off-cpu (preempted by stress-ng)", "off-cpu (blocked)", "block_read", "ncclAllReduce",
             "cudaStreamSynchronize", "cuLaunchKernel"):
    if want not in names: fail(f"no slice named {want!r}: {sorted(names)}")
k = [e for e in ev if e["ph"] == "X" and e["name"] == "cudaLaunchKernel"][0]["args"]
if k.get("kernel") != "ampere_sgemm_128x64_nn" or k.get("python") != "train.py:88 forward":
    fail(f"launch args {k}")
marks = [e for e in ev if e["ph"] == "i"]
kinds = {m["name"] for m in marks}
if kinds != {"cpu_preemption", "straggler"} or any(m["args"]["node"] != "node3" for m in marks):
    fail(f"markers {kinds} {marks[:2]}")
# Flows: from the stress-ng preemption to the slow synchronize on node3,
# and from node3's late collective entries to the peers waiting in them.
offs = {(e["pid"], e["tid"], e["ts"]) for e in ev if e["ph"] == "X" and e["name"].startswith("off-cpu (preempted")}
late = {(e["pid"], e["tid"], e["ts"]) for e in ev if e["ph"] == "X" and e["name"] == "ncclAllReduce" and e["pid"] == 3}
starts = {e["id"]: e for e in ev if e["ph"] == "s"}
ends = {e["id"]: e for e in ev if e["ph"] == "f"}
for i, s in starts.items():
    key = (s["pid"], s["tid"], s["ts"])
    if s["name"] == "cpu_preemption" and (key not in offs or ends[i]["pid"] != 3):
        fail(f"preemption flow {s} {ends[i]}")
    if s["name"] == "straggler" and (key not in late or ends[i]["pid"] == 3):
        fail(f"straggler flow {s} {ends[i]}")
if {e["pid"] for e in ends.values() if e["name"] == "straggler"} != {1, 2}:
    fail("straggler flows do not reach both peers")
cs = [e for e in ev if e["ph"] == "C"]
if len(cs) != 15 or set(cs[0]["args"]) != {"cpu %", "mem %", "io busy %"}: fail(f"counters {len(cs)} {cs[:1]}")
if d["otherData"]["clock_offsets_ns"]["node2"] != 250003000: fail(f"otherData {d['otherData']}")
print("content ok:", len(ev), "events")
EOF
# Without the offsets the nodes' collectives do not line up.
"$CW_BIN" export --db "$tmp/big/c.db" --no-skew > "$tmp/ns.json" 2> /dev/null || fail "--no-skew to stdout"
python3 "$check" "$tmp/ns.json" --aligned-allreduce > /dev/null && fail "collectives aligned without offsets"
python3 "$check" "$tmp/ns.json" > /dev/null || fail "--no-skew structure"

# The cap: the newest slices only, with a warning saying what was cut.
"$CW_BIN" export --db "$tmp/big/c.db" --max-events 100 -o "$tmp/cap.json" 2> "$tmp/e" || fail "--max-events"
grep -q 'warning: export: 855 slices in the window, kept the newest [0-9]* (from 20' "$tmp/e" ||
	fail "cap warning: $(cat "$tmp/e")"
python3 "$check" "$tmp/cap.json" > "$tmp/o" || fail "capped structure"
n=$(python3 -c 'import json,sys; print(sum(e["ph"]=="X" for e in json.load(open(sys.argv[1]))["traceEvents"]))' "$tmp/cap.json")
[ "$n" -le 100 ] && [ "$n" -ge 90 ] || fail "capped export has $n slices"
# A window: the first second of node1's data, on the reference clock.
"$CW_BIN" export --db "$tmp/big/c.db" --from 1700000001 --to 1700000002 -o "$tmp/w.json" 2> /dev/null || fail "--from/--to"
python3 - "$tmp/w.json" <<'EOF' || exit 1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
ts = [e["ts"] for e in ev if e["ph"] == "X"]
if not ts or min(ts) < 0 or max(ts) > 1e6: print("FAIL: window", min(ts), max(ts)); sys.exit(1)
EOF

# Errors: one line, the right exit code, nothing written.
expect() { # CODE PATTERN ARGS...
	local code=$1 pat=$2 rc
	shift 2
	"$CW_BIN" export "$@" > "$tmp/o" 2> "$tmp/e"
	rc=$?
	[ $rc = "$code" ] || fail "export $*: exit $rc, want $code: $(cat "$tmp/e")"
	grep -q -- "$pat" "$tmp/e" || fail "export $*: \"$(cat "$tmp/e")\" lacks \"$pat\""
	[ "$(wc -l < "$tmp/e")" = 1 ] || fail "export $*: more than one line"
}
expect 2 'unknown format "otlp"' --format otlp --db "$tmp/big/c.db"
expect 2 'invalid --max-events "0"' --max-events 0 --db "$tmp/big/c.db"
expect 2 'cannot be combined' --since 5s --from 1700000001 --db "$tmp/big/c.db"
expect 2 'invalid duration "soon"' --since soon --db "$tmp/big/c.db"
expect 6 'database "'"$tmp"'/none.db" does not exist' --db "$tmp/none.db" -o "$tmp/none.json"
head -c 4096 /dev/urandom > "$tmp/bad.db"
expect 6 'is not a causeway database' --db "$tmp/bad.db" -o "$tmp/none.json"
[ ! -e "$tmp/none.json" ] || fail "output written on error"
"$CW_BIN" export --db "$tmp/none.db" --json > "$tmp/o" 2> /dev/null
grep -q '^{"error": *"export: database' "$tmp/o" || fail "--json error: $(cat "$tmp/o")"

# Golden: the cluster byte for byte, and the same twice.
"$CW_BIN" export --db "$tmp/big/c.db" -o "$tmp/g1.json" 2> /dev/null || fail "golden export"
"$CW_BIN" export --db "$tmp/big/c.db" -o "$tmp/g2.json" 2> /dev/null || fail "golden export again"
cmp -s "$tmp/g1.json" "$tmp/g2.json" || fail "two exports of one database differ"
python3 "$check" "$tmp/g1.json" --min-flows 1 --aligned-allreduce > /dev/null || fail "golden structure"
if [ -n "${CW_UPDATE_GOLDEN:-}" ]; then
	cp "$tmp/g1.json" "$golden"
	echo "updated $golden"
fi
cmp "$tmp/g1.json" "$golden" || { diff <(tr ',' '\n' < "$golden") <(tr ',' '\n' < "$tmp/g1.json") | head -20; fail "golden differs"; }

# Golden: the demo's incident (fixed start 2026-01-01T00:00:00Z, seed 1),
# seconds 34-36 of the stress-ng storm: preemptions flow into the slow calls.
dgold=$CW_ROOT/tests/golden/export/demo_incident.json
"$CW_BIN" demo incident --db "$tmp/demo.db" > /dev/null || fail "demo incident"
"$CW_BIN" export --db "$tmp/demo.db" --from 2026-01-01T00:00:34Z --to 2026-01-01T00:00:36Z -o "$tmp/d.json" \
	2> /dev/null || fail "demo export"
python3 "$check" "$tmp/d.json" --min-flows 5 > /dev/null || fail "demo trace structure"
grep -q '"name":"off-cpu (preempted by stress-ng)"' "$tmp/d.json" || fail "demo: no stress-ng preemption slice"
# A call whose Python stack was attributed to a waiting thread
# (py_stacks.python_via) names that thread in its slice's args.
cp "$tmp/demo.db" "$tmp/via.db"
sqlite3 "$tmp/via.db" "INSERT INTO py_stacks (hash, depth, frames, user_file, user_line, user_function, python_via)
	VALUES (-77, 1, '[]', 'train.py', 120, 'backward', 4242);
	UPDATE events SET py_stack_id = (SELECT id FROM py_stacks WHERE hash = -77) WHERE id = (SELECT min(id) FROM events
	WHERE source = 'cuda' AND wall_ns >= 1767225634500000000)" || fail "adding an attributed stack"
"$CW_BIN" export --db "$tmp/via.db" --from 2026-01-01T00:00:34Z --to 2026-01-01T00:00:36Z --no-chains -o "$tmp/via.json" \
	2> /dev/null || fail "attributed export"
python3 - "$tmp/via.json" <<'EOF' || exit 1
import json, sys
x = [e["args"] for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X" and "python_via" in e.get("args", {})]
if len(x) != 1 or x[0]["python_via"] != 4242 or x[0].get("python") != "train.py:120 backward":
    print("FAIL: attributed slices", x); sys.exit(1)
EOF
# Checkpoint I/O that outlives the call that issued it cannot nest: block
# I/O requests go to "(I/O N)" lanes of the same thread, durations untouched.
"$CW_BIN" demo io-contention --db "$tmp/io.db" > /dev/null || fail "demo io-contention"
"$CW_BIN" export --db "$tmp/io.db" --since 20s -o "$tmp/io.json" 2> /dev/null || fail "io export"
python3 "$check" "$tmp/io.json" --min-flows 1 > /dev/null || fail "io trace structure"
grep -q '"name":"thread_name","pid":1,"args":{"name":"[^"]* (I/O 1)"}' "$tmp/io.json" || fail "no I/O lane"
# Readahead keeps dozens of requests in flight at once (a Python start-up
# from a cold page cache made 97): each takes a lane; past a thread's 256
# tracks the rest are left out and counted, never an export that fails.
cp "$tmp/io.db" "$tmp/ra.db"
sqlite3 "$tmp/ra.db" "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 299)
	INSERT INTO events (node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op, duration_ns, bytes)
	SELECT e.node, 1000000 + i, e.session_id, e.wall_ns + i * 1000, e.mono_ns + i * 1000, e.pid, e.tid, e.cgroup_id, e.comm,
	'io', 'block_read', 50000000 + i * 1000, 4096
	FROM (SELECT * FROM events WHERE source = 'cuda' ORDER BY wall_ns DESC LIMIT 1) e, k" || fail "adding readahead"
"$CW_BIN" export --db "$tmp/ra.db" --since 20s -o "$tmp/ra.json" 2> "$tmp/ra.err" || fail "readahead export: $(cat "$tmp/ra.err")"
python3 "$check" "$tmp/ra.json" > /dev/null || fail "readahead trace structure"
grep -q "export: [1-9][0-9]* slices left out: each overlapped 256 others on its thread" "$tmp/ra.err" ||
	fail "no count of the slices left out: $(cat "$tmp/ra.err")"
python3 - "$tmp/ra.json" <<'EOF' || exit 1
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"]
tids = {}
for e in ev:
    if e["ph"] == "X":
        tids.setdefault(e["tid"] % (1 << 22), set()).add(e["tid"])
most = max(len(v) for v in tids.values())
if most != 256:
    print("FAIL: the busiest thread has", most, "tracks, want 256"); sys.exit(1)
if not any(n.endswith("(I/O 200)") for n in names):
    print("FAIL: no I/O lane 200:", names[-5:]); sys.exit(1)
EOF
grep -q '"name":"io_contention"' "$tmp/io.json" || fail "no io_contention chain in the trace"
if [ -n "${CW_UPDATE_GOLDEN:-}" ]; then
	cp "$tmp/d.json" "$dgold"
	echo "updated $dgold"
fi
cmp "$tmp/d.json" "$dgold" || { diff <(tr ',' '\n' < "$dgold") <(tr ',' '\n' < "$tmp/d.json") | head -20; fail "demo golden differs"; }
# Inference requests (tests/fixtures/requests_db.py adds 92 to the incident):
# a track per connection after the threads, a slice "METHOD path" per
# request with status, TTFT and bytes in its args, an instant at its first
# body byte, on the clock of the CUDA and off-CPU tracks; golden over 300 ms
# (requests_incident.json). A window narrows them like the slices.
rgold=$CW_ROOT/tests/golden/export/requests_incident.json
cp "$tmp/demo.db" "$tmp/req.db"
python3 "$CW_ROOT/tests/fixtures/requests_db.py" "$tmp/req.db" > /dev/null || fail "requests database"
"$CW_BIN" export --db "$tmp/req.db" -o "$tmp/req.json" 2> "$tmp/e" || fail "requests export: $(cat "$tmp/e")"
grep -q 'export: 92 inference requests on their connections' "$tmp/e" || fail "requests summary: $(cat "$tmp/e")"
python3 "$check" "$tmp/req.json" --min-flows 1 > /dev/null || fail "requests trace structure"
python3 - "$tmp/req.json" "$tmp/req.db" <<'EOF' || exit 1
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
def fail(m): print("FAIL:", m); sys.exit(1)
origin = d["otherData"]["ts_origin_wall_ns"]
us = lambda ns: round((ns - origin) / 1000, 3)
names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
http = [e for e in ev if e["ph"] == "X" and e["cat"] == "http"]
marks = [e for e in ev if e["ph"] == "i" and e["cat"] == "http"]
rows = sqlite3.connect(sys.argv[2]).execute(
    "SELECT id, conn_id, method, path, status, wall_ns, duration_ns, ttft_ns, bytes_in, bytes_out FROM requests").fetchall()
if len(http) != len(rows) or d["otherData"].get("requests") != len(rows): fail(f"{len(http)} request slices for {len(rows)} rows")
by_id = {e["args"]["request_id"]: e for e in http}
cuda = [e for e in ev if e["ph"] == "X" and e["tid"] == 4821 and e["cat"] == "cuda"]
for rid, conn, method, path, status, wall, dur, ttft, bin_, bout in rows:
    e = by_id.get(rid)
    if not e: fail(f"request {rid} has no slice")
    if e["name"] != f"{method} {path}" or names.get(e["tid"]) != f"python :8000 conn {conn}":
        fail(f"request {rid}: {e['name']!r} on {names.get(e['tid'])!r}")
    if e["tid"] < 1 << 30 or e["pid"] != 1: fail(f"request {rid} on a thread's track: {e['tid']}")
    a = e["args"]
    if a.get("status") != status or (a.get("bytes_in"), a.get("bytes_out")) != (bin_, bout) or \
            (ttft is None) != ("ttft_ms" not in a) or (ttft is not None and abs(a["ttft_ms"] - ttft / 1e6) > 1e-9):
        fail(f"request {rid} args {a}")
    if abs(e["ts"] - us(wall)) > 0.002 or abs(e["dur"] - dur / 1000) > 0.002: fail(f"request {rid} at {e['ts']}/{e['dur']}")
    m = [x for x in marks if x["tid"] == e["tid"] and abs(x["ts"] - us(wall + ttft)) < 0.002] if ttft is not None else []
    if ttft is not None and len(m) != 1: fail(f"request {rid}: no TTFT instant at {us(wall + ttft)}")
    # The same clock as the CUDA track of the thread that served it (from
    # its first call on: the demo's process starts before it calls CUDA).
    if e["ts"] >= min(c["ts"] for c in cuda) and not any(c["ts"] <= e["ts"] + e["dur"] and c["ts"] + c["dur"] >= e["ts"] for c in cuda):
        fail(f"request {rid} overlaps no CUDA call of its thread")
if len(marks) != sum(r[7] is not None for r in rows): fail(f"{len(marks)} TTFT instants")
if not any(e["name"] == "GET /<img src=x onerror=alert(1)>" for e in http): fail("hostile path not kept as text")
print("requests ok:", len(http), "slices,", len(marks), "instants")
EOF
"$CW_BIN" export --db "$tmp/req.db" --from 2026-01-01T00:00:37.1Z --to 2026-01-01T00:00:37.4Z --no-chains \
	-o "$tmp/rg.json" 2> /dev/null || fail "requests window export"
python3 "$check" "$tmp/rg.json" > /dev/null || fail "requests window structure"
[ "$(grep -o '"cat":"http","pid":1' "$tmp/rg.json" | wc -l)" = 4 ] || fail "requests window: want 4 requests"
if [ -n "${CW_UPDATE_GOLDEN:-}" ]; then
	cp "$tmp/rg.json" "$rgold"
	echo "updated $rgold"
fi
cmp "$tmp/rg.json" "$rgold" || { diff <(tr ',' '\n' < "$rgold") <(tr ',' '\n' < "$tmp/rg.json") | head -20; fail "requests golden differs"; }
echo "ok"
