#!/bin/bash
# A hang seen by a whole-host trace (no launched command): a 4-rank job on
# the fake NCCL (fixtures/nccl_job.c) starts once trace is attached; rank 3
# stops before collective #24 and the others sit in the synchronization
# after it until trace is stopped. Their calls still open at the stop are
# the hang's evidence: stored unfinished (detail 'unfinished', no return
# code, ending at the stop), counted apart from the losses (pipeline
# losses 0, pipeline.open_at_end), and explain's nccl_hang chain names
# rank 3 and collective #24 from them. Real BPF.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/nccl_job" ] && [ -f "$FIX/fakenccl/libnccl.so.2" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d /var/tmp/cw-nccl-hang-host.$$.XXXXXX)
tp=
job=
cleanup() {
	[ -n "$tp" ] && kill -INT "$tp" 2>/dev/null
	[ -n "$job" ] && { kill -KILL -- "-$job" 2>/dev/null; rm -f /dev/shm/cwfakenccl-"$job"-*; }
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$CW_BIN" trace --db "$D/h.db" --no-view >"$D/trace.out" 2>&1 &
tp=$!
for _ in $(seq 600); do grep -q '^causeway: tracing every' "$D/trace.out" && break; sleep 0.1; done
grep -q '^causeway: tracing every' "$D/trace.out" || fail "trace did not attach: $(cat "$D/trace.out")"
("$FIX/nccl_job" -n 4 -s 1000 -H 3 -N 24 -m sleep -o "$D/job.pid" >"$D/job.out" 2>&1 &)
for _ in $(seq 50); do [ -s "$D/job.pid" ] && break; sleep 0.1; done
[ -s "$D/job.pid" ] || fail "the job did not start: $(cat "$D/job.out")"
job=$(cat "$D/job.pid")
# 23 collectives of 20 ms, then the hang: about 3 s of it.
sleep 3.5
kill -INT "$tp"
wait "$tp" || fail "trace: $(cat "$D/trace.out")"
tp=
grep -Eq '^causeway: stopped after tracing [^;]*; ring drops [0-9]+, aggregated [0-9]+, pipeline losses 0, ' "$D/trace.out" ||
	fail "open calls counted as losses: $(grep stopped "$D/trace.out")"
grep -Eq '; [0-9]+ calls still open stored unfinished$' "$D/trace.out" ||
	fail "no open calls named at the stop: $(grep stopped "$D/trace.out")"
ranks=$(pgrep -g "$job" -d, nccl_job)
# The three waiting ranks' synchronizations, open at the stop.
[ "$(sqlite3 "$D/h.db" "SELECT count(*) FROM events WHERE pid IN ($ranks) AND op = 'cudaStreamSynchronize'
	AND detail = 'unfinished' AND ret IS NULL AND duration_ns > 2000000000")" = 3 ] ||
	fail "unfinished calls: $(sqlite3 "$D/h.db" "SELECT pid, op, duration_ns, detail, ret FROM events
		WHERE pid IN ($ranks) AND (detail = 'unfinished' OR ret IS NULL)")"
[ "$(sqlite3 "$D/h.db" "SELECT (SELECT value FROM counters WHERE name = 'pipeline.open_at_end') >= 3
	AND (SELECT value FROM counters WHERE name = 'pipeline.unfinished_entries') = 0")" = 1 ] ||
	fail "counters: $(sqlite3 "$D/h.db" "SELECT name, value FROM counters WHERE name LIKE 'pipeline.%'")"
"$CW_BIN" explain --db "$D/h.db" --json --no-store --hang-after 2s >"$D/h.json" || fail "explain"
python3 - "$D/h.json" <<'PY' || fail "explain: $(head -c 2500 "$D/h.json")"
import json, sys
ch = json.load(open(sys.argv[1]))["chains"]
h = [c for c in ch if c["root_cause"]["kind"] == "nccl_hang"]
assert len(h) == 1, [c["root_cause"]["kind"] for c in ch]
rc = h[0]["root_cause"]
assert rc["missing_ranks"] == [3] and rc["seq"] == 24, rc
wf = {r["rank"]: r for r in h[0]["wavefront"]["ranks"]}
for r in (0, 1, 2):
    assert wf[r]["entered"] and wf[r]["last_seq"] == 24 and wf[r]["last_call_open"], wf[r]
assert not wf[3]["entered"] and wf[3]["last_seq"] == 23, wf[3]
print("ok", rc["summary"][:160])
PY
echo ok
