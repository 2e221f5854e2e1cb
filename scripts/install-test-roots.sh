#!/bin/bash
# install-test-roots.sh: builds, once, the Debian root filesystems the
# integration tests chroot into (tests/lib/debian_root.sh caches them
# outside the repository, keyed by what went into them), so that a fresh
# machine pays for them here, in make test's set-up, and not inside one
# test's time limit: the arm64 root is made under qemu-user and took
# four minutes on a loaded 2-core machine. A root already cached costs
# nothing. Exits 77 when not root (the tests that need them skip then).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "install-test-roots: not root; the Debian-root tests will skip"; exit 77; }
. "$ROOT/tests/lib/debian_root.sh"
rc=0
# One line per root a test or script asks for, with exactly its packages.
while read -r suite arch pkgs; do
	[ -n "$suite" ] || continue
	# shellcheck disable=SC2086 # the package list is words
	debian_root "$suite" "$arch" $pkgs >/dev/null || {
		echo "install-test-roots: cannot build $suite/$arch ${pkgs:-minimal}" >&2
		rc=1
	}
done <<'ROOTS'
bookworm amd64
bookworm arm64
bookworm amd64 curl ca-certificates
sid amd64 python3.14 python3.15
sid amd64 python3.14 python3-torch
sid amd64 llama.cpp-tools python3-gguf
ROOTS
exit $rc
