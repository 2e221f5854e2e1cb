#!/bin/bash
# The arm64 release file, cross-built here (make release-aarch64): it needs
# nothing beyond glibc <= 2.34 and its loader, its whole unit suite (built
# the same way, make release-unit-aarch64) passes under qemu-user, and it
# runs version, check, demo, explain, query, export and serve (asked by its
# own HTTPS client with the generated token) in a minimal Debian 12 arm64
# root without causeway's libraries. qemu-user passes no bpf(2) through, so
# check reports BPF unavailable there: loading arm64 BPF needs an arm64 kernel.
set -u
: "${CW_ROOT:?}"
fail() { echo "FAIL: $*"; exit 1; }
cd "$CW_ROOT" || exit 1
make -s --no-print-directory release-aarch64 release-unit-aarch64 >/dev/null || fail "make release-aarch64"
F=$CW_ROOT/build/release/causeway-linux-aarch64
scripts/release-check.sh "$F" AArch64 || fail "release-check"
scripts/release-check.sh "$CW_ROOT/build/release/causeway-linux-x86_64" AArch64 >/dev/null 2>&1 &&
	fail "release-check took the x86-64 file for AArch64"

# Foreign binaries run through binfmt_misc and qemu-user-static; register it
# when this boot has not (it is kernel state, lost at reboot).
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
	[ -e /proc/sys/fs/binfmt_misc/register ] ||
		mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || fail "cannot mount binfmt_misc"
	update-binfmts --enable qemu-aarch64 || fail "cannot register qemu-aarch64 (qemu-user-static, binfmt-support)"
fi
grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 || fail "qemu-aarch64 is registered without fix-binary"

# The unit suite, one at a time (two slow each other down on 2 cores).
units=$(ls build/release/aarch64/tests/test_* | grep -v '\.d$')
L=$(mktemp -d /tmp/cw-aarch64.XXXXXX)
trap 'rm -rf "$L"' EXIT
export L
[ "$(echo "$units" | wc -l)" -ge 30 ] || fail "only $(echo "$units" | wc -l) aarch64 unit tests"
echo "$units" | xargs -I{} sh -c '
	f=$(file -b "$1"); case $f in *aarch64*) ;; *) echo "FAIL: $1 is $f"; exit 255 ;; esac
	CW_QEMU_USER=1 CW_BUILD=build/release/aarch64 timeout 240 "$1" >"$L/log" 2>&1 ||
		{ echo "FAIL: $1"; tail -n 30 "$L/log"; exit 255; }' sh {} || fail "aarch64 unit suite"
echo "aarch64 unit suite: $(echo "$units" | wc -l) programs passed under qemu-user"

. tests/lib/debian_root.sh
. tests/lib/release_root.sh
root=$(debian_root bookworm arm64) || fail "no bookworm arm64 root (mmdebstrap, qemu-user-static)"
lib=$(release_root_lacks "$root" aarch64-linux-gnu) || fail "the root has $lib"
[ "$(readelf -h "$root/bin/bash" | sed -n 's/^ *Machine: *//p')" = AArch64 ] || fail "$root is not an arm64 root"
release_in_root "$root" "$F" serve || fail "in the bookworm arm64 root"
