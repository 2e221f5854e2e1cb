#!/bin/bash
# NCCL RAS at a hang: a traced job on the fake NCCL (fixtures/nccl_job.c)
# where rank 3 stops before collective #10, with a RAS service on a
# loopback port (fixtures/ras_server.c: the documented line protocol and
# JSON report; rank 3 reported behind at 9 collectives). trace
# --hang-after 2s sees the hang, asks RAS once and stores its answer;
# explain's nccl_hang chain carries it (JSON "ras" and the text line).
# Without a server the chain says RAS did not answer, and explain still
# exits 0. Real BPF.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
for f in nccl_job ras_server fakenccl/libnccl.so.2; do
	[ -e "$FIX/$f" ] || { echo "missing fixture $f (make fixtures)"; exit 1; }
done
D=$(mktemp -d /var/tmp/cw-nccl-ras.$$.XXXXXX)
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

# run NAME PORT [JOB ARGS]: trace the hanging job for 5.5 s, asking RAS
# at PORT (the hang is seen after about 2.5 s: trace goes on for a few
# ticks, in which it must not ask again).
run() {
	local name=$1 port=$2
	shift 2
	"$CW_BIN" trace --db "$D/$name.db" --no-view --hang-after 2s --nccl-ras "127.0.0.1:$port" -- \
		"$FIX/nccl_job" -n 4 -s 1000 -H 3 -N 10 -m sleep -o "$D/$name.pid" "$@" >"$D/$name.out" 2>&1 &
	local tp=$!
	for _ in $(seq 300); do [ -s "$D/$name.pid" ] && break; sleep 0.1; done
	[ -s "$D/$name.pid" ] || fail "$name: the job did not start: $(cat "$D/$name.out")"
	groups+=("$(cat "$D/$name.pid")")
	sleep 5.5
	kill -INT $tp
	wait $tp
	"$CW_BIN" explain --db "$D/$name.db" --json --no-store --hang-after 2s >"$D/$name.json" || fail "$name: explain"
	"$CW_BIN" explain --db "$D/$name.db" --no-store --hang-after 2s >"$D/$name.txt" || fail "$name: explain text"
	kill -KILL -- "-$(cat "$D/$name.pid")"
}

# With the service, on a socket rank 0 of the job listens on (as NCCL's
# RAS thread does): the answer is verified as the job's.
port=$(free_port)
run ras "$port" -R "$port" -C "exec '$FIX/ras_server' -f 3 -n 4 -s 10 -b 3 -c '$D/asked'"
python3 - "$D/ras.json" "$D/ras.txt" <<'PY' || fail "with RAS: $(head -c 3000 "$D/ras.json")"
import json, sys
d = json.load(open(sys.argv[1]))
top = d["chains"][0]
assert top["root_cause"]["kind"] == "nccl_hang", [c["root_cause"]["kind"] for c in d["chains"]]
assert top["root_cause"]["missing_ranks"] == [3] and top["root_cause"]["seq"] == 10, top["root_cause"]
ras = top["ras"]
assert ras["status"] == "answered" and ras["nccl_version"] == "2.29.1" and ras["communicators"] == 1, ras
assert ras["source"] == "verified" and ras["truncated"] is False, ras
assert ras["source_why"].startswith("the listener on 127.0.0.1:"), ras
c = ras["comms"][0]
assert c["hash"] == "0x6e63636c2d6a6f62" and c["size"] == 4 and c["ranks_answered"] == 4, c
assert c["collectives_max"] == 10 and c["collectives_min"] == 9 and c["missing_count"] == 0, c
assert [(r["rank"], r["pid"], r["collectives"]) for r in c["behind"]] == [(3, 1003, 9)], c
assert ras["suspected"].startswith("NCCL hang: collective #10 entered by 3 of 4 processes"), ras
assert ras["asked_wall_ns"] > 0, ras
text = open(sys.argv[2]).read()
assert "  nccl ras answered (NCCL 2.29.1, 1 communicator); communicator 0x6e63636c2d6a6f62 of 4 ranks: most at 10" \
       " collectives, behind: rank 3 (pid 1003 on 127.0.0.1) at 9 collectives\n" in text, text
print("ok with RAS:", c["behind"])
PY
# Asked once, stored once.
[ "$(wc -l < "$D/asked")" = 1 ] || fail "RAS asked $(wc -l < "$D/asked") times"
[ "$(sqlite3 "$D/ras.db" "SELECT count(*) FROM events WHERE source = 'ras' AND op = 'status'")" = 1 ] ||
	fail "stored RAS rows: $(sqlite3 "$D/ras.db" "SELECT count(*) FROM events WHERE source = 'ras'")"
[ "$(sqlite3 "$D/ras.db" "SELECT sum(value) FROM counters WHERE name = 'trace.nccl_ras.asked'")" = 1 ] ||
	fail "counter trace.nccl_ras.asked"

# Without it: nothing listens on the port.
port=$(free_port)
run none "$port"
python3 - "$D/none.json" "$D/none.txt" "$port" <<'PY' || fail "without RAS: $(head -c 3000 "$D/none.json")"
import json, sys
d = json.load(open(sys.argv[1]))
top = d["chains"][0]
assert top["root_cause"]["kind"] == "nccl_hang", [c["root_cause"]["kind"] for c in d["chains"]]
ras = top["ras"]
assert ras["status"] == "no_answer", ras
assert ras["why"] == "connect 127.0.0.1:%s: Connection refused" % sys.argv[3], ras
assert "comms" not in ras, ras
text = open(sys.argv[2]).read()
assert "  nccl ras asked, did not answer (connect 127.0.0.1:%s: Connection refused)\n" % sys.argv[3] in text, text
print("ok without RAS:", ras["why"])
PY
echo ok
