#!/bin/bash
# bench/fault_run.sh BUILD [DURATION_S] [RATE]: the fault run (root).
#
# trace records fake_workload's cudaStreamSynchronize calls at RATE calls/s
# (default 50000, two paced threads) for DURATION_S seconds (default 1800,
# the long form; 60-90 s by hand) into a database on a tmpfs of its own
# (FS_MB, default 256 MiB, with --size-cap 96MiB), serving the API on a
# loopback port, while at once:
#   - the filesystem fills up (the WAL is truncated by a checkpoint, then a
#     file takes every free block) and frees again, every FILL_EVERY s
#     (default 40) for FILL_FOR s (default 8);
#   - another writer (sqlite3, BEGIN IMMEDIATE) holds the database's write
#     lock for LOCK_FOR s (default 5) every LOCK_EVERY s (default 25);
#   - slow clients hold SLOW connections (default 12) to the API, each
#     dribbling its request headers a byte a second, while a prober makes a
#     proper request every 2 s;
#   - the agent is SIGSTOPped for STOP_FOR s (default 3) every STOP_EVERY s
#     (default 20) and SIGCONTinued.
# Checks at the end: trace did not crash (exit 0, or 6 when rows were lost
# and said so), every call the workload made is accounted for by the
# counters (stored in the pipeline, dropped, aggregated, nesting overflow,
# or dropped while the store was locked), every loss is in the stop line
# and in explain's warnings, and PRAGMA integrity_check is ok. Prints one
# summary block for bench/RESULTS.md.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root (BPF, mount)"; exit 1; }
BUILD=$(cd "${1:-build}" && pwd) || exit 1
DUR=${2:-1800}
RATE=${3:-50000}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export CW_BIN=$BUILD/causeway CW_BUILD=$BUILD CW_ROOT=$ROOT
# T (a temp dir), PIDS, cleanup, fail and mkcerts (the API's certificates).
. "$ROOT/tests/integration/fleet_lib.sh"
FIX=$BUILD/fixtures
LIB=$FIX/fakecuda/libcudart.so.13
[ -x "$FIX/fake_workload" ] && [ -f "$LIB" ] || fail "missing fixtures (make BUILD=$BUILD fixtures)"
: "${FS_MB:=256}" "${FILL_EVERY:=40}" "${FILL_FOR:=8}" "${LOCK_EVERY:=25}" "${LOCK_FOR:=5}"
: "${SLOW:=12}" "${STOP_EVERY:=20}" "${STOP_FOR:=3}"
MNT=$T/mnt
mkdir -p "$MNT"
BG=()
finish() {
	local p
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
	[ -n "${TP:-}" ] && kill -CONT "$TP" 2>/dev/null
	mountpoint -q "$MNT" && umount "$MNT"
	cleanup
}
trap finish EXIT
mount -t tmpfs -o size=${FS_MB}m "cw_fault_$$" "$MNT" || fail "cannot mount a tmpfs"
mkcerts
cat >"$T/cw.yaml" <<YAML
node: fault-node
server:
  tls:
    cert: $PKI/server.crt
    key: $PKI/server.key
    client_ca: $PKI/ca.crt
YAML
DB=$MNT/fault.db
threads=2
START=$SECONDS
END=$((START + DUR))
LD_LIBRARY_PATH=$FIX/fakecuda "$CW_BIN" --config "$T/cw.yaml" trace --db "$DB" --no-view --size-cap 96MiB \
	--lock-wait 60s --serve 127.0.0.1:0 --cuda-lib "$LIB" -- \
	"$FIX/fake_workload" -t $threads -T "$DUR" -r $((RATE / threads)) -m sync >"$T/w.out" 2>"$T/t.err" &
TP=$!
PORT=
for _ in $(seq 1 200); do
	PORT=$(sed -n 's/.*serving https:\/\/127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$T/t.err")
	[ -n "$PORT" ] && break
	kill -0 $TP 2>/dev/null || break
	sleep 0.1
done
[ -n "$PORT" ] || fail "trace did not start serving: $(cat "$T/t.err")"
stop_at=$((END - 10)) # faults end 10 s before the workload, so the final counters can be written

# The disk fills and frees.
(
	n=0
	while [ $SECONDS -lt $((stop_at - FILL_FOR)) ]; do
		sleep "$FILL_EVERY"
		[ $SECONDS -lt $((stop_at - FILL_FOR)) ] || break
		# Under --size-cap the file reuses its free pages and the WAL its
		# blocks, so a full filesystem would cost nothing: truncate the WAL
		# first (as a checkpointing tool would), so that writing needs
		# blocks again.
		sqlite3 "$DB" ".timeout 5000" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null 2>&1
		avail=$(df -k --output=avail "$MNT" | tail -1)
		dd if=/dev/zero of="$MNT/fill" bs=1K count="$avail" 2>/dev/null
		n=$((n + 1))
		sleep "$FILL_FOR"
		rm -f "$MNT/fill"
	done
	echo "$n" >"$T/fills"
) &
BG+=($!)
# Another writer takes the lock.
(
	n=0
	while [ $SECONDS -lt $((stop_at - LOCK_FOR)) ]; do
		sleep "$LOCK_EVERY"
		[ $SECONDS -lt $((stop_at - LOCK_FOR)) ] || break
		(printf '.timeout 10000\nBEGIN IMMEDIATE;\nINSERT OR REPLACE INTO meta VALUES (%s, %s);\n' "'fault_lock'" "'$n'"
		 sleep "$LOCK_FOR"; echo "COMMIT;") | sqlite3 "$DB" >/dev/null 2>>"$T/locker.err"
		n=$((n + 1))
	done
	echo "$n" >"$T/locks"
) &
BG+=($!)
# The agent is stopped and continued.
(
	n=0
	while [ $SECONDS -lt $((stop_at - STOP_FOR)) ]; do
		sleep "$STOP_EVERY"
		[ $SECONDS -lt $((stop_at - STOP_FOR)) ] || break
		kill -STOP $TP 2>/dev/null || break
		sleep "$STOP_FOR"
		kill -CONT $TP
		n=$((n + 1))
	done
	echo "$n" >"$T/stops"
) &
BG+=($!)
# Slow clients and a prober.
python3 - "$PORT" "$PKI" "$SLOW" $((stop_at - SECONDS)) >"$T/clients" 2>&1 <<'PY' &
import socket, ssl, sys, threading, time
port, pki, nslow, dur = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
end = time.time() + dur
ctx = ssl.create_default_context(cafile=pki + "/ca.crt")
ctx.load_cert_chain(pki + "/client.crt", pki + "/client.key")
st = {"slow_opened": 0, "slow_closed_by_server": 0, "probe_ok": 0, "probe_fail": 0}
lock = threading.Lock()
def bump(k):
    with lock:
        st[k] += 1
def slow():
    req = b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4000
    while time.time() < end:
        try:
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
            bump("slow_opened")
            for b in req:
                if time.time() > end:
                    break
                s.send(bytes([b]))
                time.sleep(1)
            s.close()
        except (OSError, ssl.SSLError):
            bump("slow_closed_by_server")
            time.sleep(1)
def probe():
    while time.time() < end:
        try:
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5), server_hostname="127.0.0.1")
            s.sendall(b"GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = s.recv(4096)
            s.close()
            bump("probe_ok" if data.startswith(b"HTTP/1.1 200") else "probe_fail")
        except (OSError, ssl.SSLError):
            bump("probe_fail")
        time.sleep(2)
ts = [threading.Thread(target=slow, daemon=True) for _ in range(nslow)] + [threading.Thread(target=probe, daemon=True)]
for t in ts:
    t.start()
while time.time() < end:
    time.sleep(1)
print(" ".join("%s %d" % kv for kv in st.items()))
PY
BG+=($!)

wait $TP
rc=$?
TP=
for p in "${BG[@]}"; do wait "$p" 2>/dev/null; done
BG=()
rm -f "$MNT/fill"
c() { sqlite3 "$DB" "SELECT coalesce((SELECT sum(value) FROM counters WHERE name='$1'), 0)"; }
calls=$(sed -n 's/^calls //p' "$T/w.out")
seen=$(c trace.cuda.calls)
piped=$(sqlite3 "$DB" "SELECT coalesce(sum(value), 0) FROM counters WHERE name = 'pipeline.calls'")
dropped=$(( $(c trace.cuda.dropped) + $(c trace.cuda.state_map_full) ))
aggregated=$(c trace.cuda.aggregated)
overflow=$(c pipeline.overflow_entries)
held=$(c trace.store_wait.held)
held_dropped=$(c trace.store_wait.dropped)
failed=$(c store.failed_rows)
pruned=$(c store.pruned_events)
ring=$(sqlite3 "$DB" "SELECT coalesce(sum(value), 0) FROM counters WHERE name LIKE 'trace.ring_drops.%'")
integrity=$(sqlite3 "$DB" "PRAGMA integrity_check")
"$CW_BIN" explain --db "$DB" --no-store >"$T/explain" 2>&1
warned=$(grep -c '^warning: session ' "$T/explain")
stopline=$(grep 'causeway: stopped' "$T/t.err")
echo "fault run: ${DUR}s at $RATE calls/s offered; fills $(cat "$T/fills" 2>/dev/null), locks $(cat "$T/locks" 2>/dev/null), stops $(cat "$T/stops" 2>/dev/null)"
echo "  trace exit $rc; ${stopline#causeway: }"
grep -v 'causeway: stopped\|causeway: tracing\|serving https' "$T/t.err" | sort | uniq -c | sort -rn | sed 's/^/  stderr: /' | cut -c1-200 | head -12
echo "  workload calls $calls; probes saw $seen; to the store $piped; dropped $dropped (ring drops, all rings: $ring); aggregated $aggregated; overflow $overflow"
echo "  held while locked $held, dropped while locked $held_dropped; store failed rows $failed; pruned by --size-cap $pruned"
echo "  clients: $(cat "$T/clients")"
echo "  integrity_check: $integrity; explain loss warnings: $warned"
ok=1
[ "$rc" = 0 ] || [ "$rc" = 6 ] || { echo "  FAIL: trace exit $rc"; ok=0; }
[ "$integrity" = ok ] || { echo "  FAIL: integrity"; ok=0; }
[ -n "$calls" ] && [ "$seen" = "$calls" ] || { echo "  FAIL: the probes saw $seen of $calls calls"; ok=0; }
acc=$((piped + dropped + aggregated + overflow))
[ "$acc" -le "${calls:-0}" ] && [ $((acc + held_dropped)) -ge "${calls:-0}" ] \
	|| { echo "  FAIL: accounting: $piped + $dropped + $aggregated + $overflow (+ $held_dropped held) vs $calls"; ok=0; }
if [ $((failed + held_dropped + ring + aggregated)) -gt 0 ]; then
	[ "$warned" -ge 1 ] || { echo "  FAIL: losses without an explain warning"; ok=0; }
	[ "$rc" = 6 ] || [ "$((failed + held_dropped))" = 0 ] || { echo "  FAIL: store losses but exit $rc"; ok=0; }
fi
[ $ok = 1 ] && echo "  result: ok" || { echo "  result: FAIL"; exit 1; }
