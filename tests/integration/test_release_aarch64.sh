#!/bin/bash
# The arm64 release file, cross-built here (make release-aarch64): it needs
# nothing beyond glibc <= 2.34 and its loader, and it runs version, check,
# demo, explain, query, export and serve (asked by its own HTTPS client with
# the generated token) in a minimal Debian 12 arm64 root without causeway's
# libraries. The long form (CW_LONG=1, bench/long-suite.sh) also cross-builds
# the whole unit suite the same way (make release-unit-aarch64) and runs it
# under qemu-user: about three minutes more on 2 cores. qemu-user passes no
# bpf(2) through, so check reports BPF unavailable there: loading arm64 BPF
# needs an arm64 kernel.
set -u
: "${CW_ROOT:?}"
fail() { echo "FAIL: $*"; exit 1; }
cd "$CW_ROOT" || exit 1
make -s --no-print-directory release-aarch64 >/dev/null || fail "make release-aarch64"
F=$CW_ROOT/build/release/causeway-linux-aarch64
scripts/release-check.sh "$F" AArch64 || fail "release-check"
scripts/release-check.sh "$CW_ROOT/build/release/causeway-linux-x86_64" AArch64 >/dev/null 2>&1 &&
	fail "release-check took the x86-64 file for AArch64"

. tests/lib/release_root.sh
binfmt_aarch64 || fail "cannot run aarch64 programs through qemu-user"

if [ -n "${CW_LONG:-}" ]; then
	make -s --no-print-directory release-unit-aarch64 >/dev/null || fail "make release-unit-aarch64"
	# The unit suite, one at a time (two slow each other down on 2 cores).
	units=$(ls build/release/aarch64/tests/test_* | grep -v '\.d$')
	L=$(mktemp -d /tmp/cw-aarch64.XXXXXX)
	trap 'rm -rf "$L"' EXIT
	export L
	[ "$(echo "$units" | wc -l)" -ge 30 ] || fail "only $(echo "$units" | wc -l) aarch64 unit tests"
	# Linked as the release file is: no libstdc++ (test_demangle demangles
	# with the static libsupc++) and nothing of causeway's libraries but cmocka.
	for u in $units; do
		readelf -dW "$u" | grep -q 'NEEDED.*\(libstdc++\|libbpf\|libsqlite3\|libcurl\|libgnutls\)' &&
			fail "$u needs $(readelf -dW "$u" | grep NEEDED | tr -s ' ' | cut -d' ' -f6 | tr '\n' ' ')"
	done
	echo "$units" | xargs -I{} sh -c '
		m=$(readelf -h "$1" | sed -n "s/^ *Machine: *//p"); [ "$m" = AArch64 ] || { echo "FAIL: $1 is for $m"; exit 255; }
		CW_QEMU_USER=1 CW_BUILD=build/release/aarch64 timeout 240 "$1" >"$L/log" 2>&1 ||
			{ echo "FAIL: $1"; tail -n 30 "$L/log"; exit 255; }' sh {} || fail "aarch64 unit suite"
	echo "aarch64 unit suite: $(echo "$units" | wc -l) programs passed under qemu-user"
else
	echo "aarch64 unit suite: in the long form (CW_LONG=1)"
fi

. tests/lib/debian_root.sh
root=$(debian_root bookworm arm64) || fail "no bookworm arm64 root (mmdebstrap, qemu-user-static)"
lib=$(release_root_lacks "$root" aarch64-linux-gnu) || fail "the root has $lib"
[ "$(readelf -h "$root/bin/bash" | sed -n 's/^ *Machine: *//p')" = AArch64 ] || fail "$root is not an arm64 root"
release_in_root "$root" "$F" serve || fail "in the bookworm arm64 root"
