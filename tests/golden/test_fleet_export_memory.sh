#!/bin/bash
# export --nodes in bounded memory: exporting an agent that holds 4N
# calls, the client's peak RSS (getrusage of the finished process) stays
# within a coarse bound of its peak for N calls, and over the last three
# quarters of the 4N trace the trace writer's peak (the kernel's peak-RSS
# mark reset at a quarter) grows by less than 768 KiB (~5 bytes a slice);
# both traces hold every call. The client hands the fetch's freed heap back
# before the trace (malloc_trim), else the per-slice growth hid in it.
# The SQLite caches of the client's temporary databases, a fixed bound of
# their own (64 MiB by default), are set to 1 MiB ($CW_SCRATCH_CACHE_KIB)
# so that they are full early. Break-checked: the written slices' ids in
# memory (a 1 GiB cache for their list: ~6 bytes a slice, 896 KiB; a
# u64map beside it: 87 bytes) and every slice's bounds kept (59 bytes) each
# fail it. --no-chains: the explain engine's rules hold bounds of their
# own (gpu_time_slicing reads up to 1,000,000 launches), not this test's
# subject.
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

peak() { # DB [AT]: "KiB calls-in-trace trace-bytes [reset-KiB reset-bytes after-KiB]" for one fleet export of DB
	local db=$1
	plain_agent "$db" --node node-a
	mkdir -p "$tmp/out"
	CW_SCRATCH_CACHE_KIB=1024 python3 - "$CW_BIN" "$ADDR" "$tmp/out" "${2:-0}" <<'PY' || fail "export of $db"
import json, os, resource, subprocess, sys, time
bin, addr, out, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
trace = os.path.join(out, "t.json")
p = subprocess.Popen([bin, "export", "--nodes", addr, "--node-timeout", "20s", "--max-events", "100000000",
                      "--no-chains", "-o", trace], stderr=subprocess.PIPE, text=True)
reset = None
def written():  # the trace so far, under its temporary name until the end
    return sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
def status(key):
    with open("/proc/%d/status" % p.pid) as f:
        return int(next(l for l in f if l.startswith(key + ":")).split()[1])
# Once the trace holds AT bytes (written as the slices stream past, the
# fetch long over), the kernel's peak-RSS mark is reset to the RSS of the
# moment (clear_refs 5): the peak the finished process reports is then
# that of the rest of the trace alone.
while at and reset is None and p.poll() is None:
    try:
        if written() >= at:
            before = status("VmHWM")
            with open("/proc/%d/clear_refs" % p.pid, "w") as f:
                f.write("5")
            reset = status("VmRSS"), written(), before
    except (OSError, StopIteration):
        break
    time.sleep(0.02)
err = p.communicate()[1]
if p.returncode:
    sys.exit("export: " + err)
kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
after = kib
if reset:  # the whole run's peak: before the reset or after it
    kib = max(kib, reset[2])
d = json.load(open(trace))
print(kib, sum(1 for e in d["traceEvents"] if e.get("ph") == "X" and e.get("cat") in ("cuda", "driver")),
      os.path.getsize(trace), *((reset[0], reset[1], after) if reset else ()))
os.unlink(trace)
PY
	kill "$LAST_PID"
}
read -r k1 got1 bytes1 < <(peak "$tmp/n.db")
# 4N: the peak reset once the trace holds as many bytes as N's whole trace
# (a quarter of it).
read -r k4 got4 bytes4 reset_kib reset_bytes after_kib < <(peak "$tmp/n4.db" "$bytes1")
want1=$(sqlite3 "$tmp/n.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
want4=$(sqlite3 "$tmp/n4.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
[ "$want4" -ge $((4 * want1)) ] || fail "the grown store holds $want4 calls, not 4 x $want1"
[ "$got1" = "$want1" ] || fail "N: the trace holds $got1 of $want1 calls"
[ "$got4" = "$want4" ] || fail "4N: the trace holds $got4 of $want4 calls"
[ -n "${reset_kib:-}" ] || fail "4N: the trace's first $bytes1 bytes were not seen before the export ended"
# The whole run, fetch included: 3 x 48,880 calls more. The client's
# answer buffers and heap settle over the first pages, a step of some 7-8
# MiB that N's short export does not reach (from 2N to 8N the peak stayed
# flat at ~51 MiB), so this bound is coarse: 12 MiB.
[ $((k4 - k1)) -lt 12288 ] || fail "peak RSS grew from $k1 KiB ($want1 calls) to $k4 KiB ($want4 calls)"
# The trace writer past its first quarter, where nothing is left to warm
# up (the fetch is over, the caches are full): its peak over the remaining
# ~3 x 48,880 slices stays within 1 MiB of its RSS at the reset. Keeping
# the written slices' ids in memory (~20 bytes a slice) or every slice's
# bounds for the lanes (~32) adds 3-6 MiB here; 1 MiB is ~7 bytes a slice.
slices_after=$(( (bytes4 - reset_bytes) * want4 / bytes4 ))
[ $((after_kib - reset_kib)) -lt 768 ] ||
	fail "the trace writer's peak RSS grew from $reset_kib KiB to $after_kib KiB over its last ~$slices_after" \
		"slices ($(( (after_kib - reset_kib) * 1024 / slices_after )) bytes a slice)"
echo "ok: peak RSS $k1 KiB for $want1 calls, $k4 KiB for $want4 calls;" \
	"trace writer $reset_kib -> $after_kib KiB over its last ~$slices_after slices"
