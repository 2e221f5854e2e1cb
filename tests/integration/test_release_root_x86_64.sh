#!/bin/bash
# The x86-64 release file (make release-x86_64) needs nothing beyond glibc
# <= 2.34 (scripts/release-check.sh: NEEDED and symbol versions, which also
# refuses the ordinary build and a file that needs GLIBC_2.36), and runs
# version, check, demo, explain, query, export and serve (asked by its own
# HTTPS client with the generated token, refused with a wrong one) in a
# minimal Debian 12 root that has none of causeway's libraries.
set -u
: "${CW_ROOT:?}" "${CW_BUILD:?}"
fail() { echo "FAIL: $*"; exit 1; }
cd "$CW_ROOT" || exit 1
make -s --no-print-directory release-x86_64 >/dev/null || fail "make release-x86_64"
F=$CW_ROOT/build/release/causeway-linux-x86_64
scripts/release-check.sh "$F" X86-64 || fail "release-check"

# The check can fail: the ordinary build, and a file that needs glibc 2.36.
scripts/release-check.sh "$CW_BUILD/causeway" X86-64 >/dev/null && fail "release-check accepted the ordinary build"
T=$(mktemp -d /tmp/cw-release.XXXXXX)
trap 'rm -rf "$T"' EXIT
printf '#include <stdlib.h>\nint main(void) { return (int)(arc4random() & 1); }\n' >"$T/new.c"
cc -o "$T/new" "$T/new.c" || fail "cc"
out=$(scripts/release-check.sh "$T/new" X86-64) && fail "release-check accepted GLIBC_2.36"
echo "$out" | grep -q 'requires GLIBC_2.36' || fail "release-check: $out"

. tests/lib/debian_root.sh
. tests/lib/release_root.sh
root=$(debian_root bookworm amd64) || fail "no bookworm amd64 root (mmdebstrap)"
lib=$(release_root_lacks "$root" x86_64-linux-gnu) || fail "the root has $lib"
release_in_root "$root" "$F" serve check || fail "in the bookworm root"
