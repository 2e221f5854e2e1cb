#!/bin/bash
# The store under faults operators hit (docs/trace.md "When the store
# cannot take rows"):
#  - a write lock another process holds: trace keeps draining into memory,
#    stores every record with its session row once the lock goes, and
#    fails loudly (exit 6, one error line) when it outlasts --lock-wait;
#  - a database a running trace writes is not replaced by demo;
#  - a full disk during trace: "disk full" on stderr, every failed row
#    counted, the file consistent, and readers warn with the share;
#  - other commands on a full disk name the cause; a database on a
#    read-only filesystem is readable (as root and as nobody).
# Filesystems are small tmpfs mounts of this test's own, never the disk.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root (BPF, mount)"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v sqlite3 >/dev/null || { echo "sqlite3 CLI missing"; exit 77; }
D=$(mktemp -d /tmp/cw_faults.$$.XXXX)
MNT=$D/mnt
mkdir -p "$MNT"
chmod 755 "$D"
cleanup() {
	stop_locker
	mountpoint -q "$MNT" && umount "$MNT"
	rm -rf "$D"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
LIB=$FIX/fakecuda/libcudart.so.13
q() { sqlite3 "$1" "$2"; }
c() { sqlite3 "$1" "SELECT coalesce((SELECT sum(value) FROM counters WHERE name='$2'), 0)"; }

# An empty causeway database in WAL mode, and a writer holding its lock
# for $2 seconds (BEGIN IMMEDIATE kept open).
fresh_db() { "$CW_BIN" demo healthy --db "$1" >/dev/null && q "$1" "DELETE FROM sessions; DELETE FROM events; DELETE FROM counters; DELETE FROM offcpu; DELETE FROM snapshots; DELETE FROM processes;" || fail "fresh db"; }
# The holder runs in its own process group (setsid) so that stopping it
# stops the sqlite3 and the sleep it feeds as well.
hold_lock() {
	setsid bash -c '(echo "BEGIN IMMEDIATE;"; echo "INSERT INTO meta VALUES ('"'locker', 'x'"');"; sleep "$2"; echo "COMMIT;") | sqlite3 "$1"' \
		hold_lock "$1" "$2" &
	LOCKER=$!
	sleep 0.5
}
stop_locker() { [ -n "${LOCKER:-}" ] && kill -- "-$LOCKER" 2>/dev/null; wait "$LOCKER" 2>/dev/null; LOCKER=; }

# 1. A short lock: held from before the trace starts until after the
# workload ends. Nothing is lost and the session row, counters and
# every event's session id are there.
part1() {
	db=$D/short.db
	fresh_db "$db"
	hold_lock "$db" 5
	LD_LIBRARY_PATH=$FIX/fakecuda "$CW_BIN" trace --db "$db" --no-view --cuda-lib "$LIB" -- \
		"$FIX/fake_workload" -T 2 -r 20000 -m sync >"$D/out" 2>"$D/err"
	rc=$?
	wait "$LOCKER"; LOCKER=
	[ $rc = 0 ] || fail "short lock: trace exited $rc: $(cat "$D/err")"
	grep -q 'is locked by another process; holding records in memory' "$D/err" || fail "short lock: no visible message: $(cat "$D/err")"
	calls=$(sed -n 's/^calls //p' "$D/out")
	[ -n "$calls" ] && [ "$calls" -gt 1000 ] || fail "short lock: workload: $(cat "$D/out")"
	[ "$(q "$db" "SELECT count(*) FROM sessions WHERE kind = 'trace'")" = 1 ] || fail "short lock: no session row"
	sid=$(q "$db" "SELECT id FROM sessions WHERE kind = 'trace'")
	# Every call: a row, or folded in the kernel (summary capture, the default).
	stored=$(q "$db" "SELECT (SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize')
		+ (SELECT coalesce(sum(count), 0) FROM folded WHERE op = 'cudaStreamSynchronize')")
	[ "$(q "$db" "SELECT count(*) FROM events WHERE session_id IS NOT $sid")" = 0 ] || fail "short lock: events without the session"
	held=$(c "$db" trace.store_wait.held)
	echo "short lock: calls $calls, stored $stored, held in memory $held, waited $(c "$db" trace.store_wait.ms) ms"
	[ "$held" -gt 0 ] || fail "short lock: counter trace.store_wait.held missing"
	[ "$stored" = "$calls" ] || fail "short lock: stored $stored of $calls calls"
	[ "$(c "$db" store.events)" = "$(q "$db" "SELECT count(*) FROM events")" ] || fail "short lock: store.events counter"
	[ "$(c "$db" trace.store_wait.dropped)" = 0 ] || fail "short lock: dropped records"
	grep -q 'store losses 0; discovery' "$D/err" || fail "short lock: exit line: $(cat "$D/err")"
}

# 2. A long lock: trace gives up after --lock-wait with one error line and
# exit 6, without waiting for the lock, and counts what it held.
part2() {
	db=$D/long.db
	fresh_db "$db"
	hold_lock "$db" 30
	start=$SECONDS
	LD_LIBRARY_PATH=$FIX/fakecuda "$CW_BIN" trace --db "$db" --no-view --lock-wait 2s --cuda-lib "$LIB" -- \
		"$FIX/fake_workload" -T 20 -r 5000 -m sync >"$D/out" 2>"$D/err"
	rc=$?
	took=$((SECONDS - start))
	stop_locker
	[ $rc = 6 ] || fail "long lock: exit $rc, want 6: $(cat "$D/err")"
	[ $took -lt 15 ] || fail "long lock: trace ran $took s, past its 2 s lock wait"
	grep -q 'error\|stayed locked by another process past --lock-wait 2.00s: [1-9][0-9]* records were not stored' "$D/err" \
		|| fail "long lock: no error line: $(cat "$D/err")"
	[ "$(grep -c 'stayed locked' "$D/err")" = 1 ] || fail "long lock: want one error line"
	echo "long lock: $(grep 'stayed locked' "$D/err")"
}

# 3. demo does not replace a database a running trace writes.
part3() {
	db=$D/live.db
	"$CW_BIN" demo healthy --db "$db" >/dev/null || fail "demo db"
	# Emptied here, not by the background job's redirection, which may
	# run after the first look below: part 2's "recording" must not be
	# taken for this trace's.
	: >"$D/err"
	LD_LIBRARY_PATH=$FIX/fakecuda "$CW_BIN" trace --db "$db" --no-view --cuda-lib "$LIB" -- \
		"$FIX/fake_workload" -T 3 -r 2000 -m sync >"$D/out" 2>"$D/err" &
	tpid=$!
	for _ in $(seq 300); do grep -q recording "$D/err" && break; sleep 0.1; done
	grep -q recording "$D/err" || fail "live: trace did not start: $(cat "$D/err")"
	"$CW_BIN" demo healthy --db "$db" >/dev/null 2>"$D/derr"
	drc=$?
	wait $tpid || fail "live: trace failed: $(cat "$D/err")"
	[ $drc = 6 ] && grep -q 'another causeway process (a trace) is writing it' "$D/derr" || fail "live: demo exit $drc: $(cat "$D/derr")"
	[ "$(q "$db" "SELECT count(*) FROM sessions WHERE kind = 'trace'")" = 1 ] || fail "live: the trace's session is gone"
	[ "$(q "$db" "SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize'")" -gt 100 ] || fail "live: the trace's events are gone"
	echo "live trace: demo refused"
}

# 4. A full disk during trace.
part4() {
	# 6 MB: schema v7 stores a call in about 40 bytes, so the 150,000
	# calls below need more than the disk has. A cap larger than the
	# disk (with none, trace caps the store at a quarter of the free
	# space: test_trace_size_cap.sh) lets the disk fill.
	mount -t tmpfs -o size=6m "cw_faults_$$" "$MNT" || { echo "cannot mount tmpfs"; exit 77; }
	db=$MNT/full.db
	# --capture full: the disk is filled with a row per call (summary
	# capture would fold most of them and never fill it).
	LD_LIBRARY_PATH=$FIX/fakecuda "$CW_BIN" trace --db "$db" --no-view --capture full --size-cap 1GiB --cuda-lib "$LIB" -- \
		"$FIX/fake_workload" -T 5 -r 30000 -m sync >"$D/out" 2>"$D/err"
	rc=$?
	[ $rc = 6 ] || fail "full: exit $rc: $(cat "$D/err")"
	grep -q '^causeway: disk full: rows cannot be stored' "$D/err" || fail "full: not said when it happened: $(cat "$D/err")"
	lost=$(sed -n 's/.*store losses \([0-9]*\) (disk full);.*/\1/p' "$D/err")
	[ -n "$lost" ] && [ "$lost" -gt 10000 ] || fail "full: exit line: $(cat "$D/err")"
	grep -q "error.*disk full: $lost rows could not be stored\|^causeway: disk full: $lost rows could not be stored" "$D/err" || fail "full: final line: $(cat "$D/err")"
	calls=$(sed -n 's/^calls //p' "$D/out")
	stored=$(q "$db" "SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize'")
	rows=$(q "$db" "SELECT (SELECT count(*) FROM events) + (SELECT count(*) FROM offcpu) + (SELECT count(*) FROM snapshots) + (SELECT count(*) FROM processes)")
	echo "full disk: calls $calls, stored $stored calls ($rows rows), failed $lost rows"
	[ $((stored + lost)) -ge "$calls" ] || fail "full: $stored stored + $lost failed < $calls calls"
	[ "$(q "$db" "PRAGMA integrity_check")" = ok ] || fail "full: integrity"
	[ "$(c "$db" store.failed_rows)" -gt 0 ] || fail "full: store.failed_rows not stored"
	# Readers warn, with the share.
	"$CW_BIN" explain --db "$db" --no-store >"$D/x" 2>&1 || fail "full: explain: $(cat "$D/x")"
	grep -q 'warning: session 1 (trace, node .*) lost [0-9]* of [0-9]* records ([0-9.]*%): [0-9]* refused by the store' "$D/x" \
		|| fail "full: explain has no loss warning: $(tail -3 "$D/x")"
	"$CW_BIN" explain --db "$db" --no-store --json | python3 -c 'import json, sys; d = json.load(sys.stdin); l = d["losses"][0]; assert l["store_failed"] > 0 and 0 < l["lost_share"] < 1, l; assert any("refused by the store" in w for w in d["warnings"]), d["warnings"]' \
		|| fail "full: explain --json losses"
	"$CW_BIN" query --db "$db" "SELECT count(*) FROM events" >/dev/null 2>"$D/x" || fail "full: query"
	grep -q 'warning: session 1 .* lost [0-9]* of' "$D/x" || fail "full: query has no loss warning: $(cat "$D/x")"
	# (Only the warning is checked here: whether this trace's slices nest
	# within export's lane limit is not what this test is about.)
	"$CW_BIN" export --db "$db" -o "$D/e.json" 2>"$D/x"
	grep -q 'warning: session 1 .* lost [0-9]* of' "$D/x" || fail "full: export has no loss warning: $(cat "$D/x")"
}

# 5. Other commands on a full disk name the cause (not "Protocol error",
# "Input/output error" or "no transaction is active"): a demo database on
# a tmpfs filled up, and a second demo written there while room runs out.
part5() {
	local db=$MNT/a.db x
	mount -t tmpfs -o size=32m "cw_faults_$$" "$MNT" || fail "mount"
	"$CW_BIN" demo --db "$db" >/dev/null || fail "full: first demo"
	avail=$(df -k --output=avail "$MNT" | tail -1)
	dd if=/dev/zero of="$MNT/fill" bs=1K count=$((avail - 1000)) 2>/dev/null
	"$CW_BIN" demo healthy --db "$MNT/d.db" >/dev/null 2>"$D/x"
	rc=$?
	[ $rc = 6 ] && grep -q 'disk full' "$D/x" || fail "full: demo while room runs out said (exit $rc): $(cat "$D/x")"
	rm -f "$MNT/fill"
	dd if=/dev/zero of="$MNT/fill" bs=1M count=64 2>/dev/null
	for cmd in "demo healthy --db $db" "explain --db $db" "query --db $db SELECT\ 1" "export --db $db -o $D/e.json" "merge $db -o $MNT/m.db"; do
		eval "\"\$CW_BIN\" $cmd" >/dev/null 2>"$D/x"
		rc=$?
		x=$(cat "$D/x")
		[ $rc = 6 ] && [[ $x == *"disk full"* ]] || fail "full disk: $cmd exited $rc: $x"
	done
	echo "full disk: demo, explain, query, export and merge say \"disk full\""
	umount "$MNT"
}

# 6. A database on a read-only filesystem is read, not "does not exist".
part6() {
	mount -t tmpfs -o size=48m "cw_faults_$$" "$MNT" || fail "mount"
	"$CW_BIN" demo healthy --db "$MNT/ro.db" >/dev/null || fail "ro: demo"
	# Merged and closed: no -wal or -shm left, so a reader must make a -shm,
	# which SQLite cannot on a read-only filesystem.
	q "$MNT/ro.db" "PRAGMA wal_checkpoint(TRUNCATE)" >/dev/null
	[ ! -e "$MNT/ro.db-shm" ] || fail "ro: -shm left behind"
	chmod 755 "$MNT"; chmod 644 "$MNT/ro.db"
	mount -o remount,ro "$MNT" || fail "remount ro"
	want=$(q "$MNT/ro.db" "SELECT count(*) FROM events" 2>/dev/null || true)
	for who in root nobody; do
		run=()
		[ $who = nobody ] && run=(setpriv --reuid=65534 --regid=65534 --clear-groups)
		n=$("${run[@]}" "$CW_BIN" query --db "$MNT/ro.db" --json "SELECT count(*) AS n FROM events" 2>"$D/x" \
			| python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["n"])') || fail "ro ($who): query: $(cat "$D/x")"
		[ "$n" -gt 0 ] || fail "ro ($who): query read $n events"
		"${run[@]}" "$CW_BIN" explain --db "$MNT/ro.db" >"$D/o" 2>"$D/x" || fail "ro ($who): explain: $(cat "$D/x")"
		grep -q 'chains are not stored' "$D/x" || fail "ro ($who): explain did not say it stores nothing: $(cat "$D/x")"
		"${run[@]}" "$CW_BIN" export --db "$MNT/ro.db" -o - >/dev/null 2>"$D/x" || fail "ro ($who): export: $(cat "$D/x")"
		"${run[@]}" "$CW_BIN" demo healthy --db "$MNT/new.db" >/dev/null 2>"$D/x"
		grep -qiE 'read-only file ?system' "$D/x" || fail "ro ($who): demo: $(cat "$D/x")"
		echo "read-only filesystem ($who): query $n events, explain, export ok"
	done
}

# Each part in a subshell: a failure ends that part only, so one run
# shows every part that fails. CW_FAULTS_PARTS="1 4" runs some of them.
failed=0
for n in ${CW_FAULTS_PARTS:-1 2 3 4 5 6}; do
	( "part$n" ) || failed=1
	mountpoint -q "$MNT" && umount "$MNT"
done
[ $failed = 0 ] && echo ok
exit $failed
