#!/bin/bash
# The three ways trace attaches its CUDA probes (docs/trace.md, "Probe links"):
# uprobe sessions when some processes are not traced (kernel >= 6.12, as
# here), uprobe_multi entry and return pairs (--no-uprobe-session, or every
# process traced), perf-event pairs (--no-uprobe-multi). Each records every
# call of a launched command and names itself in trace's first line. A
# process that is not traced runs the session program at its calls' entry
# only (the kernel's own run count, --bpf-stats), and under no kind are its
# returns counted as orphaned (returns whose entry the probes missed).
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
LIB=$(cd "$FIX/fakecuda" 2>/dev/null && pwd)/libcudart.so.13
[ -x "$FIX/fake_workload" ] && [ -f "$LIB" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
command -v bpftool >/dev/null || { echo "FAIL: bpftool missing"; exit 1; }
D=$(mktemp -d)
SP=
trap '[ -n "$SP" ] && kill $SP 2>/dev/null; rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda
counter() { sqlite3 "$1" "SELECT coalesce((SELECT value FROM counters WHERE name='$2'), 0)"; }

# Every call of a launched command, under each kind.
for k in "session:uprobe sessions:" "pairs:uprobe_multi pairs:--no-uprobe-session" "perf:perf-event uprobe pairs:--no-uprobe-multi"; do
	IFS=: read -r name kind flag <<<"$k"
	"$CW_BIN" trace --db "$D/$name.db" --no-view --capture full $flag -- "$FIX/fake_workload" -n 2000 -m mix \
		>"$D/$name.out" 2>"$D/$name.err" || fail "$name: trace: $(cat "$D/$name.err")"
	grep -q "probes attached in [0-9]* ms ($kind)" "$D/$name.err" || fail "$name: not attached as $kind: $(head -2 "$D/$name.err")"
	calls=$(awk '$1=="calls" {print $2}' "$D/$name.out")
	rows=$(sqlite3 "$D/$name.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
	echo "$name ($kind): calls $calls, rows $rows, orphaned $(counter "$D/$name.db" trace.cuda.return_orphaned)"
	[ -n "$calls" ] && [ "$rows" = "$calls" ] || fail "$name: $rows rows for $calls calls"
	[ "$(counter "$D/$name.db" trace.cuda.return_orphaned)" = 0 ] || fail "$name: returns counted as orphaned"
done

# Every process traced (no --pid, no command): every call runs its return
# anyway, so the pair, which costs a traced call less.
"$CW_BIN" trace --db "$D/all.db" --no-view --capture full --cuda-lib "$LIB" >/dev/null 2>"$D/all.err" &
tp=$!
for _ in $(seq 100); do grep -q "probes attached" "$D/all.err" && break; sleep 0.1; done
"$FIX/fake_workload" -n 2000 -m sync >"$D/all.out" || fail "every process: workload"
sleep 1.5
kill -INT $tp
wait $tp || fail "every process: trace exit $?: $(cat "$D/all.err")"
grep -q "probes attached in [0-9]* ms (uprobe_multi pairs)" "$D/all.err" || fail "every process: not attached as pairs: $(head -2 "$D/all.err")"
rows=$(sqlite3 "$D/all.db" "SELECT count(*) FROM events WHERE op = 'cudaStreamSynchronize'")
echo "every process (uprobe_multi pairs): 2000 calls, rows $rows"
[ "$rows" = 2000 ] || fail "every process: $rows rows for 2000 calls"

# A process that is not traced, beside one that is (--pid).
sleep 600 &
SP=$!
for k in "session:uprobe sessions:" "pairs:uprobe_multi pairs:--no-uprobe-session"; do
	IFS=: read -r name kind flag <<<"$k"
	"$CW_BIN" trace --db "$D/u$name.db" --no-view --bpf-stats --pid $SP --cuda-lib "$LIB" $flag \
		>/dev/null 2>"$D/u$name.err" &
	tp=$!
	for _ in $(seq 100); do grep -q "probes attached" "$D/u$name.err" && break; sleep 0.1; done
	grep -q "probes attached in [0-9]* ms ($kind)" "$D/u$name.err" || fail "untraced, $name: not attached as $kind: $(cat "$D/u$name.err")"
	"$FIX/fake_workload" -n 3000 -m sync >"$D/u$name.out" || fail "untraced workload"
	runs=$(bpftool prog show -j | python3 -c 'import json, sys
print(sum(p.get("run_cnt", 0) for p in json.load(sys.stdin) if p.get("name") in ("cw_call_session", "cw_call_enter_multi", "cw_call_return_multi")))')
	kill -INT $tp
	wait $tp || fail "untraced, $name: trace exit $?: $(cat "$D/u$name.err")"
	orphaned=$(counter "$D/u$name.db" trace.cuda.return_orphaned)
	rows=$(sqlite3 "$D/u$name.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
	echo "untraced, $name: 3000 calls, program runs $runs, orphaned $orphaned, rows $rows"
	[ "$rows" = 0 ] || fail "untraced, $name: $rows rows of a process not traced"
	[ "$orphaned" = 0 ] || fail "untraced, $name: $orphaned returns of a process not traced counted as orphaned"
	if [ "$name" = session ]; then
		[ "$runs" = 3000 ] || fail "untraced, session: $runs program runs for 3000 calls (the entry only: 3000)"
	else
		[ "$runs" = 6000 ] || fail "untraced, pairs: $runs program runs for 3000 calls (entry and return: 6000)"
	fi
done
echo ok
