#!/bin/bash
# NCCL RAS answers that are large, spoofed, hostile or silent (issue 37),
# on the hanging fake-NCCL job of test_nccl_ras.sh (rank 3 stops before
# collective #10; trace --hang-after 2s asks RAS once):
#   whole     a 2,375-byte answer (32 ranks, 16 unreachable, from the rank
#             0 socket: verified) is stored and shown whole, not "not asked"
#   spoofed   a listener that is no process of the job answers like NCCL:
#             shown as unverified (JSON status, text), never as NCCL's; its
#             host's C1 and bidi controls reach the terminal escaped
#   hostile   4 MiB of empty objects: read to the 1 MiB cap, marked
#             truncated, trace's peak memory within 24 MiB of a trace
#             whose RAS did not answer
#   silent    a listener that accepts and never answers: trace hangs up on
#             it within 1 s of SIGINT (not at the query's 6 s deadline),
#             ring drops 0, stored as "stopped before an answer"
# Real BPF.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
for f in nccl_job ras_server fakenccl/libnccl.so.2; do
	[ -e "$FIX/$f" ] || { echo "missing fixture $f (make fixtures)"; exit 1; }
done
D=$(mktemp -d /var/tmp/cw-nccl-ras-h.$$.XXXXXX)
groups=()
srv=
cleanup() {
	for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null; rm -f /dev/shm/cwfakenccl-"$g"-*; done
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME PORT [JOB ARGS]: trace the hanging job, asking RAS at PORT;
# returns once the job runs (trace's pid in $tp).
start() {
	local name=$1 port=$2
	shift 2
	"$CW_BIN" trace --db "$D/$name.db" --no-view --hang-after 2s --nccl-ras "127.0.0.1:$port" -- \
		"$FIX/nccl_job" -n 4 -s 1000 -H 3 -N 10 -m sleep -o "$D/$name.pid" "$@" >"$D/$name.out" 2>&1 &
	tp=$!
	for _ in $(seq 300); do [ -s "$D/$name.pid" ] && break; sleep 0.1; done
	[ -s "$D/$name.pid" ] || fail "$name: the job did not start: $(cat "$D/$name.out")"
	groups+=("$(cat "$D/$name.pid")")
}
# finish NAME: SIGINT to trace, its peak memory (kB) in $hwm before, the
# stop's seconds in $stop_s, explain JSON and text.
finish() {
	local name=$1 t0 t1
	hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$tp/status")
	t0=$(date +%s.%N)
	sigint_at=$t0
	kill -INT "$tp"
	wait "$tp"
	t1=$(date +%s.%N)
	stop_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	"$CW_BIN" explain --db "$D/$name.db" --json --no-store --hang-after 2s >"$D/$name.json" || fail "$name: explain"
	"$CW_BIN" explain --db "$D/$name.db" --no-store --hang-after 2s >"$D/$name.txt" || fail "$name: explain text"
	kill -KILL -- "-$(cat "$D/$name.pid")"
}
# wait_asked NAME: until trace has asked (its query thread started), 30 s at most.
wait_asked() {
	for _ in $(seq 300); do
		grep -q "status" "$D/$1.asked" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$1: RAS was never asked: $(cat "$D/$1.out")"
}

# The answer of a 32-rank job with 16 ranks unreachable (2,375 bytes as
# trace stores it): rank 0's listener (verified).
python3 - "$D/big.json" <<'PY'
import json, sys
ranks = [{"rank": r, "host": "10.1.0.%d" % r, "pid": 2000 + r, "status": {"async_error": 0},
          "collective_counts": {"AllReduce": 10}} for r in range(16)]
missing = [{"rank": r, "host": "gpu-node-%03d.rack-07.cluster.example" % r, "pid": 3000 + r,
            "status": {"unresponsive": True, "considered_dead": r % 2 == 0}} for r in range(16, 32)]
json.dump({"nccl_version": "2.29.1", "communicators": [{"hash": "0x6e63636c2d6a6f62", "size": 32, "ranks_count": 16,
           "missing_ranks_count": 16, "ranks": ranks, "missing_ranks": missing}],
           "ras": {"timeouts_count": 0}}, open(sys.argv[1], "w"), indent=2)
PY
port=$(free_port)
start whole "$port" -R "$port" -C "exec '$FIX/ras_server' -f 3 -a '$D/big.json' -c '$D/whole.asked'"
sleep 5.5
finish whole
stored=$(sqlite3 "$D/whole.db" "SELECT length(detail) FROM events WHERE source = 'ras' AND op = 'status'")
[ "${stored:-0}" -gt 2048 ] || fail "whole: the stored answer is $stored bytes, not over 2 KiB"
python3 - "$D/whole.json" "$D/whole.txt" <<'PY' || fail "whole: $(head -c 3000 "$D/whole.json")"
import json, sys
d = json.load(open(sys.argv[1]))
top = [c for c in d["chains"] if c["root_cause"]["kind"] == "nccl_hang"][0]
ras = top["ras"]
assert ras["status"] == "answered" and ras["source"] == "verified" and ras["truncated"] is False, ras
c = ras["comms"][0]
assert c["size"] == 32 and c["missing_count"] == 16 and c["missing_ranks"] == list(range(16, 32)), c
assert [(r["rank"], r["pid"], r["host"]) for r in c["missing"]][-1] == (31, 3031, "gpu-node-031.rack-07.cluster.example"), c
text = open(sys.argv[2]).read()
assert "  nccl ras answered (NCCL 2.29.1, 1 communicator); communicator 0x6e63636c2d6a6f62 of 32 ranks:" \
       " most at 10 collectives, not reached: rank 16 (pid 3016 on gpu-node-016.rack-07.cluster.example)" in text, text
assert "not asked" not in text, text
print("ok whole:", len(json.dumps(ras)), "bytes")
PY

# A spoofed listener: not a process of the job; its host names carry a
# C1 CSI (U+009B), a raw 0x9b byte and a right-to-left override.
python3 - "$D/spoof.json" <<'PY'
import sys
body = ('{"nccl_version": "2.29.1", "communicators": [{"hash": "0x1", "size": 4, "ranks_count": 4,'
        ' "missing_ranks_count": 0, "ranks": ['
        '{"rank": 0, "host": "10.9.9.9", "pid": 1, "collective_counts": {"AllReduce": 10}},'
        '{"rank": 3, "host": "10.9.9.9\u009b31m\u202etxt.exe", "pid": 1, "collective_counts": {"AllReduce": 9}}]}]}')
open(sys.argv[1], "wb").write(body.encode())
PY
port=$(free_port)
"$FIX/ras_server" -p "$port" -a "$D/spoof.json" -r "$D/ready" -c "$D/spoof.asked" &
srv=$!
for _ in $(seq 50); do [ -e "$D/ready" ] && break; sleep 0.1; done
[ -e "$D/ready" ] || fail "ras_server did not start"
start spoof "$port"
sleep 5.5
finish spoof
kill "$srv"; wait "$srv" 2>/dev/null; srv=
python3 - "$D/spoof.json" "$D/spoof.txt" <<'PY' || fail "spoof: $(head -c 3000 "$D/spoof.json")"
import json, sys
d = json.load(open(sys.argv[1]))
top = [c for c in d["chains"] if c["root_cause"]["kind"] == "nccl_hang"][0]
ras = top["ras"]
assert ras["status"] == "unverified" and ras["source"] == "unverified" and ras["answer"] == "answered", ras
assert "is held by none of the job's" in ras["source_why"], ras
text = open(sys.argv[2], "rb").read().decode("utf-8", "replace")
line = [l for l in text.split("\n") if l.startswith("  nccl ras ")][0]
assert line.startswith("  nccl ras answered by a listener not of the traced job, unverified (the listener on 127.0.0.1:"), line
assert "\u009b" not in text and "\u202e" not in text and "\x1b" not in text, repr(line)
assert "\\u009b31m\\u202etxt.exe" in line, line
assert "nccl ras answered (NCCL" not in text, text
print("ok spoofed:", line[:140])
PY

# Hostile: 4 MiB of empty objects from the job's own listener; against a
# trace whose RAS refused the connection.
port=$(free_port)
start base "$port"
sleep 5.5
finish base
base_hwm=$hwm
base_stop_s=$stop_s
port=$(free_port)
start hostile "$port" -R "$port" -C "exec '$FIX/ras_server' -f 3 -H -c '$D/hostile.asked'"
sleep 5.5
wait_asked hostile
sleep 1
finish hostile
python3 - "$D/hostile.json" <<'PY' || fail "hostile: $(head -c 3000 "$D/hostile.json")"
import json, sys
d = json.load(open(sys.argv[1]))
ras = [c for c in d["chains"] if c["root_cause"]["kind"] == "nccl_hang"][0]["ras"]
assert ras["status"] == "answered" and ras["truncated"] is True and ras["communicators"] > 300000, ras
print("ok hostile: communicators", ras["communicators"], "truncated")
PY
grep -q "nccl ras answered, answer truncated at 1 MiB" "$D/hostile.txt" || fail "hostile text: $(grep 'nccl ras' "$D/hostile.txt")"
[ $((hwm - base_hwm)) -lt 24576 ] || fail "hostile: trace peaked at $hwm kB against $base_hwm kB"
echo "ok hostile: peak $hwm kB against $base_hwm kB"

# Silent: accepts and never answers; Ctrl-C at once.
port=$(free_port)
start silent "$port" -R "$port" -C "exec '$FIX/ras_server' -f 3 -q -c '$D/silent.asked'"
for _ in $(seq 300); do
	ss -tn state established "( sport = :$port )" | grep -q ":$port" && break
	sleep 0.1
done
ss -tn state established "( sport = :$port )" | grep -q ":$port" || fail "silent: trace never connected"
sleep 0.5
finish silent
# When trace hung up on the silent listener, against SIGINT (finish's t0):
# the query is given up at once, not at its 6 s deadline.
closed=$(awk '/^closed/ {print $2}' "$D/silent.asked")
[ -n "$closed" ] || fail "silent: the listener never saw trace hang up"
gave_up=$(awk -v a="$sigint_at" -v b="$closed" 'BEGIN { printf "%.3f", b - a }')
echo "ok silent: trace hung up $gave_up s after SIGINT, stopped in $stop_s s (no query pending: $base_stop_s s)"
[ "$(awk -v g="$gave_up" 'BEGIN { print (g < 1.0) }')" = 1 ] || fail "silent: trace hung up $gave_up s after SIGINT"
grep -q "ring drops 0," "$D/silent.out" || fail "silent: $(grep 'stopped;' "$D/silent.out")"
python3 - "$D/silent.json" <<'PY' || fail "silent: $(head -c 3000 "$D/silent.json")"
import json, sys
d = json.load(open(sys.argv[1]))
ras = [c for c in d["chains"] if c["root_cause"]["kind"] == "nccl_hang"][0]["ras"]
assert ras["status"] == "no_answer" and ras["why"] == "stopped before an answer", ras
PY
echo ok
