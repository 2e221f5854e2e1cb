#!/bin/bash
# trace's bad-input contract: one clear line, a distinct exit code each.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root (to run the not-root case as nobody)"; exit 77; }
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() { # code, stderr pattern, args...
	local want=$1 pat=$2; shift 2
	"$CW_BIN" trace "$@" >"$D/out" 2>"$D/err"
	local rc=$?
	[ $rc = "$want" ] || fail "trace $*: exit $rc, want $want ($(cat "$D/err" "$D/out"))"
	grep -q -- "$pat" "$D/err" "$D/out" || fail "trace $*: no \"$pat\" in: $(cat "$D/err" "$D/out")"
}
"$CW_BIN" trace --help | grep -q '^usage: causeway trace' || fail "--help"
expect 2 'unknown option "--bogus"' --bogus
expect 2 'bad --pid "x1"' --pid x1
expect 2 'bad --duration "soon"' --duration soon
expect 2 'bad --ring-kb "0"' --ring-kb 0
expect 2 '"--" must be followed by a command' --
expect 5 'no process with pid 4194300' --db "$D/x.db" --pid 4194300
expect 5 '"/bin/true" exports none of the hooked CUDA/NCCL functions' --db "$D/x.db" --cuda-lib /bin/true
expect 5 'cannot read "/nonexistent/libcudart.so"' --db "$D/x.db" --cuda-lib /nonexistent/libcudart.so
expect 6 '/proc/no/such/dir/t.db' --db /proc/no/such/dir/t.db --duration 1s
# --json errors are JSON on stdout.
"$CW_BIN" trace --json --pid 4194300 --db "$D/x.db" >"$D/out" 2>/dev/null
[ $? = 5 ] || fail "--json exit code"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert "4194300" in d["error"]' "$D/out" || fail "--json error: $(cat "$D/out")"
# Not root.
chmod 755 "$D"
setpriv --reuid=65534 --regid=65534 --clear-groups "$CW_BIN" trace --db "$D/n.db" --duration 1s >"$D/out" 2>"$D/err"
[ $? = 3 ] || fail "not root: exit $? ($(cat "$D/err"))"
grep -q 'needs root' "$D/err" || fail "not root message: $(cat "$D/err")"
# A library copy that does export the symbols is accepted.
"$CW_BIN" trace --db "$D/ok.db" --no-view --cuda-lib /usr/local/cuda-13.0/lib64/libcudart.so.13 --duration 1s 2>"$D/err" \
	|| fail "--cuda-lib with the real runtime: $(cat "$D/err")"
grep -q '1 libraries' "$D/err" || fail "attached: $(cat "$D/err")"
# Per-function perf-event uprobes instead of uprobe_multi links (on a small
# library: each detaches in ~0.1 s).
"$CW_BIN" trace --db "$D/pf.db" --no-view --no-uprobe-multi --cuda-lib "$CW_BUILD/fixtures/fakecuda/libcudart.so.13" \
	--duration 1s 2>"$D/err" || fail "--no-uprobe-multi: $(cat "$D/err")"
grep -q '1 libraries, [1-9][0-9]* probes' "$D/err" || fail "--no-uprobe-multi attached: $(cat "$D/err")"
echo ok
