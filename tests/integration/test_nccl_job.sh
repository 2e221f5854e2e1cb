#!/bin/bash
# A traced multi-process job on the fake NCCL (fixtures/fake_nccl.c,
# nccl_job.c): ranks are processes, each collective's wait happens in the
# next cudaStreamSynchronize. explain names the late rank and why it is
# late, in turn: a CPU hog on its CPU (culprit stress-ng), a blocking
# O_DIRECT read, a data-loader thread, plain extra compute (8 ranks); the
# other ranks' chains point at it. A rank that stops before collective N,
# asleep or blocked on a lock, is named by nccl_hang with N and its state
# (its threads' kernel waits from /proc while it is still there). Real BPF.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/nccl_job" ] && [ -f "$FIX/fakenccl/libnccl.so.2" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v stress-ng >/dev/null || { echo "stress-ng not installed"; exit 77; }
D=$(mktemp -d /var/tmp/cw-nccl-job.$$.XXXXXX)
groups=()
cleanup() {
	# A killed job leaves its fake NCCL's shm segment (named by its pid).
	for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null; rm -f /dev/shm/cwfakenccl-"$g"-*; done
	[ -n "${hog:-}" ] && kill "$hog" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
CPU=$(($(nproc) - 1))

straggler() { # NAME RANKS CAUSE EXPECT_BECAUSE EXPECT_CULPRIT_PREFIX [job args...]
	local name=$1 n=$2 cause=$3 because=$4 culprit=$5
	shift 5
	"$CW_BIN" trace --db "$D/$name.db" --no-view -- "$FIX/nccl_job" -n "$n" -s 20 -S 2 -c "$cause" "$@" \
		>"$D/$name.out" 2>&1 || fail "$name: trace: $(cat "$D/$name.out")"
	"$CW_BIN" explain --db "$D/$name.db" --json --no-store >"$D/$name.json" || fail "$name: explain"
	python3 - "$name" "$n" "$because" "$culprit" "$D/$name.json" <<'PY' || fail "$name: $(head -c 2500 "$D/$name.json")"
import json, sys
name, n, because, culprit, path = sys.argv[1:]
ch = json.load(open(path))["chains"]
s = [c for c in ch if c["root_cause"]["kind"] == "nccl_straggler"]
assert len(s) == 1, [c["root_cause"]["kind"] for c in ch]
s = s[0]
assert s["rank"] == 2, s["rank"]
assert s["root_cause"]["because"] == because, s["root_cause"]
if culprit != "-":
    assert (s["culprit"] or {}).get("comm", "").startswith(culprit), s["culprit"]
assert s["evidence"]["late_collectives"] >= 16, s["evidence"]
assert ch[0]["root_cause"]["kind"] == "nccl_straggler", "not the top chain"
waits = [c for c in ch if c["root_cause"]["kind"] == "nccl_wait"]
assert sorted(c["rank"] for c in waits) == [r for r in range(int(n)) if r != 2], waits
assert all(c["caused_by"]["rank"] == 2 and c["caused_by"]["pid"] == s["pid"] for c in waits)
print("ok", name, s["root_cause"]["summary"][:200])
PY
	# Every collective of every rank, numbered on one communicator.
	[ "$(sqlite3 "$D/$name.db" "SELECT count(*) || ' ' || count(DISTINCT comm_id) || ' ' || max(seq) || ' ' || min(bytes)
		FROM nccl_calls WHERE op = 'ncclAllReduce' AND ret = 0 AND done_wall_ns IS NOT NULL")" = "$((20 * n)) 1 20 4194304" ] ||
		fail "$name: nccl_calls: $(sqlite3 "$D/$name.db" "SELECT count(*), count(DISTINCT comm_id), max(seq) FROM nccl_calls")"
}

# A hog at a higher weight on the straggler's CPU (the straggler pins itself there).
nice -n -10 stress-ng --cpu 1 --taskset $CPU --timeout 30s >/dev/null 2>&1 &
hog=$!
sleep 0.3
straggler hog 4 hog cpu_preemption stress-ng -P $CPU
kill $hog; wait $hog 2>/dev/null; hog=
dd if=/dev/urandom of="$D/data.bin" bs=1M count=64 status=none
straggler read 4 read io_contention - -f "$D/data.bin"
straggler loader 4 loader dataloader_starvation pt_loader
straggler compute 8 compute compute -

# Hangs: rank 3 stops before collective 10; trace is stopped after 3.5 s
# while the job still runs (the others sit in their synchronization).
# SEQ 1: the hang falls right after start-up, so the waiting ranks' first
# synchronizations are the hung ones (they must not read as cold start).
hang() { # MODE WCHAN BLOCKED_IN [SEQ]
	local m=$1 seq=${4:-10}
	local f=h$m$seq
	"$CW_BIN" trace --db "$D/$f.db" --no-view -- "$FIX/nccl_job" -n 4 -s 1000 -H 3 -N "$seq" -m "$m" -o "$D/$f.pid" \
		>"$D/$f.out" 2>&1 &
	local tp=$!
	# The job starts once the probes are attached: seconds on a fresh or
	# loaded host. The hang's 3.5 s count from then.
	for _ in $(seq 600); do [ -s "$D/$f.pid" ] && break; sleep 0.1; done
	[ -s "$D/$f.pid" ] || fail "$m: the job did not start: $(cat "$D/$f.out")"
	groups+=("$(cat "$D/$f.pid")")
	sleep 3.5
	kill -INT $tp
	wait $tp
	# The default threshold (10 s) is not reached; 2 s is.
	"$CW_BIN" explain --db "$D/$f.db" --json --no-store | grep -q '"nccl_hang"' && fail "$m: hang below the threshold"
	"$CW_BIN" explain --db "$D/$f.db" --json --no-store --hang-after 2s >"$D/$f.json" || fail "$m: explain"
	"$CW_BIN" explain --db "$D/$f.db" --no-store --hang-after 2s >"$D/$f.txt" || fail "$m: explain text"
	python3 - "$m" "$2" "$D/$f.json" "$3" "$seq" "$D/$f.txt" <<'PY' || fail "hang $m: $(head -c 2500 "$D/$f.json")"
import json, sys
mode, wchan, path, blocked_in, seq, txt = sys.argv[1:]
seq = int(seq)
d = json.load(open(path))
top = d["chains"][0]
rc = top["root_cause"]
assert rc["kind"] == "nccl_hang", [c["root_cause"]["kind"] for c in d["chains"]]
assert rc["missing_ranks"] == [3] and rc["seq"] == seq, rc
# The waits the hang made are never start-up cost.
assert not [c for c in d["chains"] if c["root_cause"]["kind"] == "cold_start"], [c["root_cause"]["summary"] for c in d["chains"]]
# The wavefront: where the ranks diverge and what each is doing, from
# the thread states trace stored at its end.
wf = top["wavefront"]
assert wf["seq"] == seq and wf["missing_ranks"] == [3] and wf["ranks_total"] == 4, wf
ranks = {r["rank"]: r for r in wf["ranks"]}
assert sorted(ranks) == [0, 1, 2, 3] and wf["ranks"][0]["rank"] == 3, wf
m = ranks[3]
assert not m["entered"] and m["last_seq"] == seq - 1 and m["pid"] == top["pid"], m
assert m["state_from"] == "end_of_trace" and m["thread_state"] == "blocked", m
assert m["thread"]["tid"] == m["tid"] and m["thread"]["blocked_in"] == blocked_in, m
assert m["thread"]["wchan"].startswith(wchan), m
for r in (0, 1, 2):
    w = ranks[r]
    assert w["entered"] and w["last_seq"] == seq, w
    assert w["last_call"] == "cudaStreamSynchronize" and w["last_call_open"], w
    assert w["thread_state"] == "in_call" and w["thread"]["in_call"] == "cudaStreamSynchronize", w
text = open(txt).read()
assert "wavefront at collective #%d (4 of 4 ranks shown)" % seq in text, text
assert "rank 3 (pid %d): missing, last entered #%d" % (m["pid"], seq - 1) in text, text
st = rc["missing_state"][0]
assert st.startswith("rank 3 (pid %d" % top["pid"]), st
assert "last call " + ("ncclCommInitRank" if seq == 1 else "cudaStreamSynchronize") in st, st
assert "; now: thread %d sleeping in %s" % (top["pid"], wchan) in st, st
# The waiting ranks' synchronizations are explained by the hang.
assert not [w for w in d["warnings"] if w.startswith("cudaStreamSynchronize")], d["warnings"]
print("ok hang", mode, st)
PY
	kill -KILL -- "-$(cat "$D/$f.pid")"
	rm -f /dev/shm/cwfakenccl-"$(cat "$D/$f.pid")"-*
}
hang sleep __do_sys_pause sleep
hang lock futex futex
hang sleep __do_sys_pause sleep 1

# Live: trace's view warns while the job hangs (2 s floor, 5 s run).
command -v script >/dev/null || { echo "util-linux script not installed"; exit 77; }
script -qec "'$CW_BIN' trace --db '$D/live.db' --duration 5s --hang-after 2s -- '$FIX/nccl_job' -n 4 -s 1000 -H 3 -N 10 -m sleep -o '$D/live.pid'" \
	"$D/live.tty" >/dev/null
[ -s "$D/live.pid" ] && groups+=("$(cat "$D/live.pid")")
sed 's/\x1b\[[0-9;]*[HJ]//g' "$D/live.tty" | grep -aEq '^warning: NCCL hang: collective #10 entered by 3 of 4 processes [0-9.]+s ago; behind: rank 3 \(pid [0-9]+, at #9\)' ||
	fail "no live hang warning: $(sed 's/\x1b\[[0-9;]*[HJ]//g' "$D/live.tty" | grep -a warning | tail -3)"
echo ok
