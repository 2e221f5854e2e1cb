# shellcheck shell=bash
# Real root filesystems of other Debian releases and architectures for tests:
# a distribution's own interpreter, a container's root, a machine without
# causeway's libraries. Built once with mmdebstrap and cached outside the
# repository, keyed by what went into them, so every later run (and CI on
# the same machine) reuses the directory.
#
#   root=$(debian_root sid amd64 python3.14 python3.15) || skip ...
#
# Prints the directory on stdout; progress and errors go to stderr. Returns
# 1 when mmdebstrap or the registry is not there (the caller decides whether
# that is a failure or a printed skip).

CW_FIXTURE_CACHE=${CW_FIXTURE_CACHE:-/var/cache/causeway-fixtures}
# Bump when the way roots are built changes, so stale caches are rebuilt.
CW_DEBIAN_ROOT_FORMAT=1

debian_root() {
	local suite=$1 arch=$2
	shift 2
	local pkgs
	pkgs=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
	local key
	key=$(printf '%s|%s|%s|%s' "$CW_DEBIAN_ROOT_FORMAT" "$suite" "$arch" "$pkgs" | sha256sum | cut -c1-16)
	local dir="$CW_FIXTURE_CACHE/roots/$suite-$arch-$key"
	if [ -f "$dir/.causeway-root-ok" ]; then
		printf '%s\n' "$dir"
		return 0
	fi
	command -v mmdebstrap >/dev/null 2>&1 || {
		echo "debian_root: mmdebstrap not installed" >&2
		return 1
	}
	mkdir -p "$CW_FIXTURE_CACHE/roots" || return 1
	# One builder per root at a time: parallel tests wait for the first.
	(
		flock 9
		[ -f "$dir/.causeway-root-ok" ] && exit 0
		local tmp="$dir.tmp.$$"
		# A build killed half-way (a test's time limit) leaves its
		# directory behind; under the lock none of them is in use.
		rm -rf "$dir".tmp.*
		echo "debian_root: building $suite/$arch root (${pkgs:-minimal}) once into $dir" >&2
		# sid's Release file can be past its Valid-Until date in the
		# registry mirror; the check is off for that reason only.
		mmdebstrap --quiet --variant=apt --architectures="$arch" \
			--aptopt='Acquire::Check-Valid-Until "false"' \
			${pkgs:+--include="$pkgs"} "$suite" "$tmp" \
			http://deb.debian.org/debian >&2 || {
			rm -rf "$tmp"
			exit 1
		}
		: >"$tmp/.causeway-root-ok"
		rm -rf "$dir"
		mv "$tmp" "$dir"
	) 9>"$dir.lock" || return 1
	printf '%s\n' "$dir"
}
