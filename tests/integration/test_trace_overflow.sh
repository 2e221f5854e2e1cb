#!/bin/bash
# Forced overflow: a tiny ring under a tight call loop. Every call the
# workload made is accounted for exactly: stored + dropped (call record
# reserve failed, or the open-call table full) + aggregated in the kernel + given up by the pipeline (nesting
# overflow after lost returns). No crash, database intact. Once with
# aggregation off (pure drops), once with aggregate-before-drop on.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
[ -x "$FIX/fake_workload" ] && [ -f "$FIX/fakecuda/libcudart.so.13" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
N=150000
for agg in 0 50; do
	db=$D/o$agg.db
	# --capture full: a record per call overflows the ring.
	LD_LIBRARY_PATH=$FIX/fakecuda "$CW_BIN" trace --db "$db" --no-view --capture full --ring-kb 4 --agg-pct $agg -- \
		"$FIX/fake_workload" -n $N -m sync -w 1500 >"$D/out" 2>"$D/err" || fail "trace: $(cat "$D/err")"
	grep -qx "calls $N" "$D/out" || fail "workload: $(cat "$D/out")"
	c() { sqlite3 "$db" "SELECT coalesce((SELECT value FROM counters WHERE name='$1'), 0)"; }
	stored=$(sqlite3 "$db" "SELECT count(*) FROM events WHERE op='cudaStreamSynchronize'")
	dropped=$(( $(c trace.cuda.dropped) + $(c trace.cuda.state_map_full) ))
	aggregated=$(c trace.cuda.aggregated)
	overflow=$(c pipeline.overflow_entries)
	calls=$(c trace.cuda.calls)
	ring=$(c trace.ring_drops.cuda)
	echo "agg=$agg: calls seen $calls, stored $stored, dropped $dropped, aggregated $aggregated, pipeline overflow $overflow, ring drops $ring"
	[ "$calls" = $N ] || fail "the probe saw $calls calls, the workload made $N"
	[ $((stored + dropped + aggregated + overflow)) = $N ] || fail "accounting: $stored + $dropped + $aggregated + $overflow != $N"
	[ "$ring" -ge "$dropped" ] || fail "ring drop counter $ring < dropped entries $dropped"
	if [ $agg = 0 ]; then
		[ "$dropped" -gt 0 ] || fail "a 4 KiB ring under $N calls should overflow"
		[ "$aggregated" = 0 ] || fail "aggregation is off"
	else
		[ "$aggregated" -gt 0 ] || fail "nothing was aggregated"
		aggc=$(c trace.aggregated.cudaStreamSynchronize.count)
		[ "$aggc" = "$aggregated" ] || fail "per-op aggregate $aggc != $aggregated"
	fi
	sqlite3 "$db" "PRAGMA integrity_check" | grep -qx ok || fail "integrity"
done
echo ok
