#!/bin/bash
# The dashboard's routes read schema v7's base tables (calls, kevents) by key
# and keep the old statements for an older file read as it is: the same
# demo data as a v7 file and rewritten as a v6 file (one wide events table)
# must give the same answers, route by route. A second thread's call and a
# block read added to the v7 file check the narrow statements' filters (the
# per-thread CUDA lane, the per-process I/O lane).
. "$CW_ROOT/tests/integration/fleet_lib.sh"

"$CW_BIN" demo incident --db "$T/v7.db" >/dev/null 2>&1 || fail "demo incident"
sqlite3 -bail "$T/v7.db" <<'EOF' || fail "adding rows"
INSERT INTO events (node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op, duration_ns,
	detail, ret, device, anomalous)
	SELECT node, seq, session_id, wall_ns, mono_ns, pid, 4999, cgroup_id, 'worker', source, op, duration_ns,
	detail, ret, device, 0 FROM events WHERE tid = 4821 AND source = 'cuda' ORDER BY id LIMIT 1 OFFSET 20000;
INSERT INTO events (node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op, duration_ns,
	bytes, detail, anomalous)
	SELECT node, seq, session_id, wall_ns, mono_ns, 4821, 4821, cgroup_id, 'python', 'io', 'block_read', 5000000,
	4096, 'R', 0 FROM events WHERE tid = 4999;
EOF
[ "$(sqlite3 "$T/v7.db" "SELECT (SELECT count(*) FROM calls c JOIN call_threads t ON t.id = c.th WHERE t.tid = 4999)
	|| (SELECT count(*) FROM kevents WHERE op = 'block_read' AND duration_ns = 5000000)")" = 11 ] ||
	fail "the added rows are not where schema v7 keeps them"

# The v6 layout: the events view's rows in one table with v1's columns and
# the v2/v4 partial indexes; the narrow tables and the view's triggers gone.
cp "$T/v7.db" "$T/v6.db"
views=$(sqlite3 "$T/v7.db" "SELECT group_concat(sql, ';') FROM sqlite_master WHERE name IN ('cuda_events', 'nccl_events')")
ddl=$(sed -n '/^CREATE TABLE events (/,/^);/p' "$CW_ROOT/src/store/schema.sql" | sed 's/CREATE TABLE events/CREATE TABLE ev6/')
sqlite3 -bail "$T/v6.db" <<EOF || fail "rewriting as v6"
$ddl
INSERT INTO ev6 SELECT id, node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op, duration_ns,
	arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id, py_stack_id, anomalous FROM events ORDER BY id;
DROP VIEW cuda_events; DROP VIEW nccl_events;
DROP TRIGGER events_insert; DROP TRIGGER events_update; DROP TRIGGER events_delete; DROP VIEW events;
DROP TABLE calls; DROP TABLE kevents; DROP TABLE call_threads; DROP TABLE call_ops; DROP TABLE strings;
DROP TABLE call_args;
ALTER TABLE ev6 RENAME TO events;
$views;
CREATE INDEX events_slow ON events (op, duration_ns) WHERE anomalous = 1;
CREATE INDEX events_io ON events (node, wall_ns) WHERE source = 'io';
CREATE INDEX events_retx ON events (node, wall_ns, mono_ns, pid, detail, op) WHERE op = 'tcp_retransmit';
CREATE INDEX events_oom ON events (node, wall_ns) WHERE op = 'oom_kill';
CREATE INDEX events_pagealloc ON events (node, pid, wall_ns) WHERE op = 'page_alloc';
PRAGMA user_version = 6;
EOF
chmod 444 "$T/v6.db" # serve reads it as it is, never migrating

start_agent "old$$" "$T/v6.db" --no-tls
B6=http://127.0.0.1:$PORT/api/v1
start_agent "old$$" "$T/v7.db" --no-tls
B7=http://127.0.0.1:$PORT/api/v1
[ "$(sqlite3 "$T/v6.db" 'PRAGMA user_version')" = 6 ] || fail "the v6 file was migrated"

w0=$(sqlite3 "$T/v7.db" "SELECT wall_ns FROM events WHERE tid = 4999") || fail "no added call"
python3 - "$B6" "$B7" "$w0" <<'EOF' || fail "v6 and v7 answers"
import json, sys, urllib.request, cw_auth
B6, B7, w0 = sys.argv[1], sys.argv[2], int(sys.argv[3])
near = "from=%d&to=%d" % (w0 - 1000000, w0 + 1000000)
get = lambda b, u: json.load(urllib.request.urlopen(b + u))
w = get(B7, "/chains")["chains"][0]["timeline_window"]
win = "from=%d&to=%d" % (w["from_ns"], w["to_ns"])
routes = ["/overview", "/timeline?tid=4821&" + win, "/timeline?tid=4999&" + win, "/timeline?pid=4821&" + win,
          "/timeline?tid=4821", "/timeline?tid=4999", "/timeline?pid=4821&" + near, "/ops/detail?op=cudaStreamSynchronize&limit=20",
          "/ops/detail?op=cudaMemcpyAsync&limit=5", "/ops?by=line", "/ops?per_tenant=1", "/ops?pid=4821",
          "/gpu", "/tenants", "/ops/series?points=60"]
for u in routes:
    a, b = get(B6, u), get(B7, u)
    assert a == b, (u, json.dumps(a)[:300], json.dumps(b)[:300])
ov = get(B7, "/overview")
assert ov["counts"]["events"] == 49070, ov["counts"]
# The per-thread CUDA lane keeps to its thread; the I/O lane is the process's.
lanes = lambda t: {l["lane"]: l for l in t["lanes"]}
other = lanes(get(B7, "/timeline?tid=4999"))
assert len(other["cuda"]["intervals"]) == 1 and other["cuda"]["tid"] == 4999, other["cuda"]
io = lanes(get(B7, "/timeline?pid=4821&" + near))["io"]
assert [i["end_ns"] - i["start_ns"] for i in io["intervals"]] == [5000000] and io["pid"] == 4821, io
main = get(B7, "/timeline?tid=4821&" + win)
assert all(l["tid"] in (4821, None) for l in main["lanes"]), [l["tid"] for l in main["lanes"]]
EOF
echo ok
