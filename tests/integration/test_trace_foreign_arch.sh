#!/bin/bash
# trace leaves programs of another architecture alone: on a host that runs
# arm64 programs through qemu-user (binfmt_misc; CI runners and build hosts
# do), /lib/ld-linux-aarch64.so.1 matches the loader globs of live
# discovery, and a uprobe there would write x86-64's breakpoint into the
# arm64 loader's _dl_debug_state in every emulated process: SIGILL at their
# start. Under system-wide trace, arm64 programs run to the end, and x86-64
# CUDA calls are still recorded, every one; an arm64 libcudart named with
# --cuda-lib is refused, not probed.
set -u
[ "$(id -u)" = 0 ] || { echo "needs root for BPF"; exit 77; }
: "${CW_ROOT:?}" "${CW_BIN:?}" "${CW_BUILD:?}"
fail() { echo "FAIL: $*"; exit 1; }
FIX=$CW_BUILD/fixtures
FAKE=$FIX/fakecuda/libcudart.so.13
[ -x "$FIX/first_call" ] && [ -f "$FAKE" ] || fail "missing fixtures (make fixtures)"
[ -e /lib/ld-linux-aarch64.so.1 ] || fail "no arm64 loader (libc6:arm64, scripts/install-deps.sh)"
command -v aarch64-linux-gnu-gcc >/dev/null || fail "no aarch64-linux-gnu-gcc (scripts/install-deps.sh)"
. "$CW_ROOT/tests/lib/release_root.sh"
binfmt_aarch64 || fail "cannot run aarch64 programs through qemu-user"
D=$(mktemp -d /tmp/cw-foreign.XXXXXX)
tp=
trap '[ -n "$tp" ] && kill -9 $tp 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
printf '#include <stdio.h>\nint main(void) { puts("hello from arm64"); return 0; }\n' >"$D/hello.c"
aarch64-linux-gnu-gcc -o "$D/hello" "$D/hello.c" || fail "cross compile"
[ "$("$D/hello")" = "hello from arm64" ] || fail "arm64 program does not run before trace"
mkdir -p "$D/ld" && cp "$FAKE" "$D/ld/"

"$CW_BIN" trace --db "$D/t.db" --no-view --duration 60s >"$D/out" 2>&1 &
tp=$!
for _ in $(seq 200); do grep -q '^causeway: tracing' "$D/out" && break; sleep 0.05; done
grep -q '^causeway: tracing' "$D/out" || fail "trace did not start: $(cat "$D/out")"
for i in 1 2 3; do
	out=$("$D/hello" 2>&1)
	[ "$out" = "hello from arm64" ] || fail "arm64 program $i under trace: '$out' (rc $?)"
done
line=$(LD_LIBRARY_PATH=$D/ld "$FIX/first_call" 12) || fail "x86-64 workload"
kill -INT $tp
wait $tp || fail "trace exited $?: $(cat "$D/out")"
tp=
read -r _ pid _ want <<<"$line"
got=$(sqlite3 "$D/t.db" "SELECT count(*) FROM events WHERE pid=$pid AND op='cudaStreamSynchronize'")
[ "$got" = "$want" ] || fail "x86-64 pid $pid made $want calls, $got recorded"
printf 'int cudaMalloc(void **p, unsigned long n) { return 0; }\n' >"$D/fc.c"
mkdir -p "$D/arm" && aarch64-linux-gnu-gcc -shared -fPIC -o "$D/arm/libcudart.so.13" "$D/fc.c" || fail "cross lib"
"$CW_BIN" trace --db "$D/a.db" --no-view --cuda-lib "$D/arm/libcudart.so.13" -- true >"$D/aout" 2>&1 &&
	fail "trace attached to an arm64 libcudart: $(cat "$D/aout")"
grep -q "arm/libcudart.so.13" "$D/aout" || fail "refusal does not name the library: $(cat "$D/aout")"
echo "ok: 3 arm64 programs ran under trace; $got of $want x86-64 calls recorded"
