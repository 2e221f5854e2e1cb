#!/bin/bash
# A stripped binary whose function symbols survive only in MiniDebugInfo
# (.gnu_debugdata: an xz-compressed ELF with a .symtab, as Fedora ships
# them): `where` names its frames from there. The program is built here,
# its MiniDebugInfo made the way distributions make it (objcopy, xz), its
# .symtab stripped; the hidden function it sleeps in is in neither .symtab
# nor .dynsym, so only the MiniDebugInfo can name it.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root to read another process's memory"; exit 77; }
for t in cc objcopy xz nm; do command -v $t >/dev/null || { echo "FAIL: $t missing (scripts/install-deps.sh)"; exit 1; }; done
D=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
cat > "$D/prog.c" <<'C'
#include <unistd.h>
/* inner's frame (pause keeps its frame pointer) names the sleeper */
__attribute__((visibility("hidden"), noinline)) void cw_minidebug_inner(void)
{
	for (;;)
		pause();
}
__attribute__((visibility("hidden"), noinline)) void cw_minidebug_sleeper(void)
{
	cw_minidebug_inner();
	__asm__ volatile("");
}
int main(void)
{
	cw_minidebug_sleeper();
	return 0;
}
C
cc -O1 -g -fno-omit-frame-pointer -o "$D/prog" "$D/prog.c" || fail "cc"
# the MiniDebugInfo recipe: function symbols not already in .dynsym
nm -D "$D/prog" --format=posix --defined-only | awk '{print $1}' | sort > "$D/dynsyms"
nm "$D/prog" --format=posix --defined-only | awk '$2 ~ /^[Tt]$/ {print $1}' | sort > "$D/funcsyms"
comm -13 "$D/dynsyms" "$D/funcsyms" > "$D/keep"
grep -qx cw_minidebug_sleeper "$D/keep" || fail "the sleeper is not a kept symbol"
objcopy --only-keep-debug "$D/prog" "$D/mini.debug"
objcopy -S --remove-section .gdb_index --remove-section .comment --keep-symbols="$D/keep" "$D/mini.debug" "$D/mini"
xz -f "$D/mini"
objcopy --strip-all --remove-section .gnu_debuglink "$D/prog" "$D/stripped"
objcopy --add-section .gnu_debugdata="$D/mini.xz" "$D/stripped"
nm "$D/stripped" 2>&1 | grep -q cw_minidebug_sleeper && fail "the stripped binary still has .symtab"
nm -D "$D/stripped" | grep -q cw_minidebug_sleeper && fail "the sleeper is in .dynsym"
"$D/stripped" &
pid=$!
sleep 0.3
"$CW_BIN" where --json "$pid" > "$D/got" 2>&1
grep -q '"stripped!cw_minidebug_sleeper+0x' "$D/got" || fail "where does not name the sleeper: $(cat "$D/got")"
grep -q '"stripped!main+0x' "$D/got" || fail "where does not name main: $(cat "$D/got")"
echo ok
