#!/bin/bash
# The BPF objects as clang 14, 16 and 19 build them (the compilers Debian 12
# carries) each load and trace on this kernel. The suite's own build is made
# with the default clang; this test builds causeway again with each other
# clang into build/clang-N and, for every build: `check` loads and unloads
# every object as trace loads them (launched-command and every-process
# settings) and must report each load ok with the same programs loaded; a
# launched workload is traced and every one of its calls stored. A compiler
# that lays out a program differently (clang 14: one 544-byte frame for the
# session program, rejected; clang 19: a return program the verifier
# refused) fails here rather than on a user's machine.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
FIX=$CW_BUILD/fixtures
LIB=$(cd "$FIX/fakecuda" 2>/dev/null && pwd)/libcudart.so.13
[ -x "$FIX/fake_workload" ] && [ -f "$LIB" ] || { echo "missing fixtures (make fixtures)"; exit 1; }
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export LD_LIBRARY_PATH=$FIX/fakecuda

# What a kernel without these features loads instead: the raw_tp
# programs, per-probe entry and return programs, discovery without the VMA
# iterator, no sleepable probe.
FALLBACKS=tp_btf,uprobe_multi,uprobe_session,vma_iter,sleepable_uprobe

# The loads check made, one "name: status" line each; the programs loaded
# in OUT.progs. With FB set, as a kernel without FALLBACKS would load them.
loads() { # BIN OUT
	CW_KFEATURES_OFF=${FB:+$FALLBACKS} "$1" check --json >"$2.json" 2>"$2.err"
	jq -r '.checks[] | select(.name | startswith("load")) | "\(.name): \(.status)"' "$2.json" >"$2.loads"
	jq -r '.bpf_programs[] | select(.loaded) | "\(.object) \(.program)"' "$2.json" | sort >"$2.progs"
	[ -s "$2.loads" ] || fail "$1: check made no load: $(cat "$2.err")"
	if grep -v ': ok$' "$2.loads"; then
		jq -r '.checks[] | select(.name | startswith("load")) | select(.status != "ok") | .detail' "$2.json"
		return 1
	fi
	grep -q '^libbpf' "$2.err" && fail "$1: check let libbpf print: $(grep -m1 '^libbpf' "$2.err")"
	return 0
}

traced_all() { # BIN NAME
	"$1" trace --db "$D/$2.db" --no-view --capture full -- "$FIX/fake_workload" -n 1000 -m mix \
		>"$D/$2.out" 2>"$D/$2.err" || fail "$2: trace: $(cat "$D/$2.err")"
	grep -q '^libbpf' "$D/$2.err" && fail "$2: libbpf printed: $(grep -m1 '^libbpf' "$D/$2.err")"
	calls=$(awk '$1=="calls" {print $2}' "$D/$2.out")
	rows=$(sqlite3 "$D/$2.db" "SELECT count(*) FROM events WHERE source IN ('cuda', 'driver')")
	echo "$2: $(grep -o 'attached in [0-9]* ms ([^)]*)' "$D/$2.err"), calls $calls, rows $rows"
	[ -n "$calls" ] && [ "$rows" = "$calls" ] || fail "$2: $rows rows for $calls calls"
}

default=$(clang --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p;q')
echo "suite build: clang $default"
loads "$CW_BIN" "$D/default" || fail "clang $default: a load failed"
FB=1 loads "$CW_BIN" "$D/default-fb" || fail "clang $default: a fallback load failed"
grep -q 'cw_call_return$' "$D/default-fb.progs" && grep -q 'sched_switch_raw$' "$D/default-fb.progs" &&
	grep -q 'cw_loader_state_maps$' "$D/default-fb.progs" || fail "the fallback programs were not loaded"
traced_all "$CW_BIN" "clang$default"
for v in 14 16 19; do
	[ "$v" = "$default" ] && continue
	command -v "clang-$v" >/dev/null || fail "clang-$v is not installed (scripts/install-deps.sh installs it)"
	b=$CW_BUILD/clang-$v
	make -C "$CW_ROOT" --no-print-directory -j"$(nproc)" BUILD="$CW_BUILD" "$b/causeway" \
		>"$D/make$v.log" 2>&1 || fail "clang-$v: build failed: $(tail -5 "$D/make$v.log")"
	loads "$b/causeway" "$D/c$v" || fail "clang $v: a load failed"
	cmp -s "$D/default.progs" "$D/c$v.progs" ||
		fail "clang $v loads other programs than clang $default: $(diff "$D/default.progs" "$D/c$v.progs")"
	FB=1 loads "$b/causeway" "$D/c$v-fb" || fail "clang $v: a fallback load failed"
	cmp -s "$D/default-fb.progs" "$D/c$v-fb.progs" || fail "clang $v: other fallback programs"
	traced_all "$b/causeway" "clang$v"
done
echo "every compiler's objects load and trace"
