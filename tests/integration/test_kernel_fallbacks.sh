#!/bin/bash
# trace's fallbacks on this kernel, as kernels without the features would
# take them (CW_KFEATURES_OFF takes probed features away; the kernel matrix,
# test_kernel_matrix.sh, runs the real older kernels): for each class of
# kernel, `check` says trace can run and loads what trace loads, and trace
# of a launched command starts without a libbpf line, says each fallback
# in one line and records every call from the first. A kernel that cannot
# trace CUDA calls (no attach cookies, before 5.15) is named so by check
# (exit 4) and by trace, which then exits non-zero without a libbpf line.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
LIB=$(cd "$FIX/fakecuda" 2>/dev/null && pwd)/libcudart.so.13
[ -x "$FIX/fake_workload" ] && [ -f "$LIB" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# name : features taken away : a fallback line trace must print
cases=(
	"6.1:uprobe_multi,uprobe_session,vma_iter:no uprobe_multi links"
	"6.6:uprobe_session,vma_iter:no task VMA iterator kfuncs"
	"5.15:bpf_loop,sched_switch_state,sleepable_uprobe,sock_length,block_io_start,uprobe_multi,uprobe_session,vma_iter:no bpf_loop()"
)
for c in "${cases[@]}"; do
	IFS=: read -r name off line <<<"$c"
	CW_KFEATURES_OFF=$off "$CW_BIN" check --json >"$D/$name.check" 2>"$D/$name.checkerr"
	rc=$?
	[ $rc = 0 ] || fail "$name: check exit $rc: $(jq -c '.checks[] | select(.status=="fail")' "$D/$name.check")"
	bad=$(jq -r '.checks[] | select(.name | startswith("load")) | select(.status != "ok") | .detail' "$D/$name.check")
	[ -z "$bad" ] || fail "$name: check's loads: $bad"
	CW_KFEATURES_OFF=$off "$CW_BIN" trace --db "$D/$name.db" --no-view --capture full -- \
		"$FIX/fake_workload" -L "$LIB" -n 1000 -m mix >"$D/$name.out" 2>"$D/$name.err" ||
		fail "$name: trace failed: $(cat "$D/$name.err")"
	grep -q '^libbpf' "$D/$name.err" && fail "$name: libbpf printed: $(grep -m1 '^libbpf' "$D/$name.err")"
	grep -q "causeway: this kernel has $line" "$D/$name.err" || fail "$name: no fallback line \"$line\": $(cat "$D/$name.err")"
	calls=$(awk '$1=="calls" {print $2}' "$D/$name.out")
	rows=$(sqlite3 "$D/$name.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
	echo "$name: $(grep -o '(uprobe[^)]*pairs\|(perf[^)]*)\|(uprobe sessions)' "$D/$name.err" | head -1), calls $calls, rows $rows, $(grep -c 'this kernel has no' "$D/$name.err") fallback lines"
	[ -n "$calls" ] && [ "$rows" = "$calls" ] || fail "$name: $rows rows for $calls calls"
done

# Before 5.15: no attach cookies, no CUDA tracing; check says so first.
CW_KFEATURES_OFF=attach_cookie "$CW_BIN" check --no-load >"$D/5.10.check" 2>&1
rc=$?
[ $rc = 4 ] || fail "5.10: check exit $rc, want 4: $(tail -3 "$D/5.10.check")"
grep -q '^trace cannot run here' "$D/5.10.check" || fail "5.10: check did not say trace cannot run"
grep -q '^fail.*attach_cookie' "$D/5.10.check" || fail "5.10: check did not name attach_cookie"
CW_KFEATURES_OFF=attach_cookie "$CW_BIN" trace --db "$D/510.db" --no-view -- "$FIX/fake_workload" -L "$LIB" -n 10 \
	>"$D/510.out" 2>"$D/510.err"
rc=$?
[ $rc = 4 ] || fail "5.10: trace exit $rc, want 4 (a missing kernel feature): $(cat "$D/510.err")"
grep -q '^libbpf' "$D/510.err" && fail "5.10: libbpf printed"
grep -q 'cannot trace CUDA calls.*attach_cookie\|cannot trace CUDA calls.*bpf_get_attach_cookie' "$D/510.err" ||
	fail "5.10: trace's error does not say why: $(cat "$D/510.err")"
echo "5.10: check and trace both say: $(grep -m1 'cannot trace' "$D/510.err")"
