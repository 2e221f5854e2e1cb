#!/bin/bash
# export --nodes in bounded memory: the client's peak RSS (getrusage of the
# finished process) exporting an agent that holds 4N calls stays within a
# small bound of its peak for N calls, and both traces hold every call.
# The SQLite caches of the client's temporary databases, a fixed bound of
# their own (64 MiB by default), are set to 1 MiB ($CW_SCRATCH_CACHE_KIB)
# so that they are full at N already and what is left to grow is the
# client's own memory per call (a map of written slices, a thread's slice
# boundaries: some 60 bytes a call before they left memory). --no-chains:
# the explain engine's rules hold bounds of their own (gpu_time_slicing
# reads up to 1,000,000 launches), not this test's subject.
. "$CW_ROOT/tests/lib/plain_agents.sh"

"$CW_BIN" --node node-a demo incident --db "$tmp/n.db" > /dev/null || fail "demo"
cp "$tmp/n.db" "$tmp/n4.db"
# N4: the demo's calls three more times, later in time (ids and times shifted).
sqlite3 "$tmp/n4.db" "
	WITH RECURSIVE r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r WHERE k < 3),
	m(m) AS (SELECT max((SELECT max(id) FROM calls), (SELECT max(id) FROM kevents))),
	sp(sp) AS (SELECT max(second) - min(second) + 1 FROM aggregates)
	INSERT INTO calls (id, th, op, t, dur, a0, a1, a2, a3, bytes, s, ret, stack, pystack, anomalous, sq, ar)
	SELECT c.id + r.k * m, th, op, t + r.k * sp * 1000000000, dur, a0, a1, a2, a3, bytes, c.s, ret, stack,
	       pystack, anomalous, CASE WHEN sq IS NULL THEN NULL ELSE sq + r.k * m END, ar FROM calls c, r, m, sp;
	WITH RECURSIVE r(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM r WHERE k < 3),
	sp(sp) AS (SELECT max(second) - min(second) + 1 FROM aggregates)
	INSERT INTO aggregates (node, source, op, second, count, sum_ns, max_ns, hist)
	SELECT node, source, op, second + r.k * sp, count, sum_ns, max_ns, hist FROM aggregates, r, sp;" ||
	fail "growing the store"

peak() { # DB: "KiB calls-in-trace calls-in-store" for one fleet export of DB
	local db=$1 addr
	plain_agent "$db" --node node-a
	CW_SCRATCH_CACHE_KIB=1024 python3 - "$CW_BIN" "$ADDR" "$tmp/t.json" <<'PY' || fail "export of $db"
import json, resource, subprocess, sys
bin, addr, out = sys.argv[1:4]
p = subprocess.run([bin, "export", "--nodes", addr, "--node-timeout", "20s", "--max-events", "100000000",
                    "--no-chains", "-o", out], stderr=subprocess.PIPE, text=True)
if p.returncode:
    sys.exit("export: " + p.stderr)
kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
d = json.load(open(out))
print(kib, sum(1 for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cuda", "driver")))
PY
	kill "$LAST_PID"
}
read -r k1 got1 < <(peak "$tmp/n.db")
read -r k4 got4 < <(peak "$tmp/n4.db")
want1=$(sqlite3 "$tmp/n.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
want4=$(sqlite3 "$tmp/n4.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
[ "$want4" -ge $((4 * want1)) ] || fail "the grown store holds $want4 calls, not 4 x $want1"
[ "$got1" = "$want1" ] || fail "N: the trace holds $got1 of $want1 calls"
[ "$got4" = "$want4" ] || fail "4N: the trace holds $got4 of $want4 calls"
# 3 x 48,880 calls more. The client's answer buffers and heap settle over
# the first pages, a step of some 7-8 MiB that N's short export does not
# reach (from 4N to 8N the peak stayed flat at ~50 MiB); 12 MiB leaves
# room for that step and none for ~60 bytes a call (~9 MiB more here).
[ $((k4 - k1)) -lt 12288 ] || fail "peak RSS grew from $k1 KiB ($want1 calls) to $k4 KiB ($want4 calls)"
echo "ok: peak RSS $k1 KiB for $want1 calls, $k4 KiB for $want4 calls"
