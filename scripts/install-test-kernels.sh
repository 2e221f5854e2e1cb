#!/bin/bash
# install-test-kernels.sh [SUITE/ARCH...]: fetches, once, Debian's stock
# cloud kernels that the kernel matrix (tests/integration/test_kernel_matrix.sh,
# tests/lib/kernel_vm.sh) boots under qemu, and caches each one's vmlinuz
# outside the repository with a stamp naming the package and version it came
# from. A kernel already cached costs nothing; CW_KERNELS_REFRESH=1 fetches
# the suite's current one again.
#
# Each suite is read with its own throw-away apt configuration (lists,
# cache, status and sources of that suite only), so the host's apt state is
# never touched. The cloud kernels have what the matrix needs built in
# (BPF, BTF, cgroup2, tracefs, the serial console), so no modules are kept.
#
# With no argument: the x86-64 kernels of `make test` and the arm64 ones of
# the long form (bench/long-suite.sh). Prints nothing on success when every
# kernel is cached; exits 1 when one cannot be fetched (the matrix then fails
# loudly for that kernel), 77 when not root.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/tests/lib/kernel_vm.sh"
[ "$(id -u)" = 0 ] || { echo "install-test-kernels: not root; the kernel matrix will fail" >&2; exit 77; }
command -v apt-get >/dev/null 2>&1 || { echo "install-test-kernels: apt-get not found" >&2; exit 1; }

MIRROR=${CW_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# fetch_kernel SUITE ARCH: into $CW_KERNEL_CACHE/SUITE-ARCH/{vmlinuz,stamp}.
fetch_kernel() {
	local suite=$1 arch=$2
	local dir="$CW_KERNEL_CACHE/$suite-$arch"
	kernel_vm_cached "$suite" "$arch" && [ "${CW_KERNELS_REFRESH:-0}" != 1 ] && return 0
	mkdir -p "$CW_KERNEL_CACHE" || return 1
	(
		flock 9
		kernel_vm_cached "$suite" "$arch" && [ "${CW_KERNELS_REFRESH:-0}" != 1 ] && exit 0
		local tmp="$dir.tmp.$$"
		rm -rf "$dir".tmp.*
		mkdir -p "$tmp/apt/lists/partial" "$tmp/apt/cache/archives/partial" "$tmp/deb" "$tmp/x" || exit 1
		: >"$tmp/apt/status"
		echo "deb [trusted=yes] $MIRROR $suite main" >"$tmp/apt/sources.list"
		# The suite's Release can be past its Valid-Until in a mirror;
		# nothing here is installed, only unpacked for a test VM.
		local apt=(-q -o "Dir::Etc::SourceList=$tmp/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
			-o "Dir::State::Lists=$tmp/apt/lists" -o "Dir::Cache=$tmp/apt/cache"
			-o "Dir::State::Status=$tmp/apt/status" -o Dir::Etc::Preferences=/dev/null
			-o Dir::Etc::PreferencesParts=/dev/null -o "APT::Architecture=$arch"
			-o "APT::Architectures::=$arch" -o 'Acquire::Check-Valid-Until=false'
			-o 'Acquire::Languages=none' -o 'Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false'
			-o Debug::NoLocking=1)
		echo "install-test-kernels: fetching $suite/$arch's cloud kernel once into $dir" >&2
		apt-get "${apt[@]}" update >"$tmp/apt.log" 2>&1 || { cat "$tmp/apt.log" >&2; rm -rf "$tmp"; exit 1; }
		# The meta package names the versioned image package.
		local meta="linux-image-cloud-$arch" img
		img=$(apt-cache "${apt[@]}" depends "$meta" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -1)
		[ -n "$img" ] || { echo "install-test-kernels: $suite/$arch: $meta names no image package" >&2; rm -rf "$tmp"; exit 1; }
		local pkgs=("$img") ver
		# sid's image package is signed and holds no vmlinuz of its own
		# in some versions: the kernel sits in a linux-binary-* package it
		# depends on.
		local bin
		bin=$(apt-cache "${apt[@]}" depends "$img" 2>/dev/null | sed -n 's/^ *Depends: \(linux-binary-[^ ]*\).*/\1/p' | head -1)
		[ -n "$bin" ] && pkgs+=("$bin")
		# A foreign architecture's VM needs that architecture's busybox
		# for its initramfs (the host's busybox-static serves its own).
		[ "$arch" != "$(dpkg --print-architecture)" ] && pkgs+=(busybox-static)
		ver=$(apt-cache "${apt[@]}" show "$img" 2>/dev/null | sed -n 's/^Version: //p' | head -1)
		(cd "$tmp/deb" && apt-get "${apt[@]}" download "${pkgs[@]}") >"$tmp/apt.log" 2>&1 || {
			cat "$tmp/apt.log" >&2
			rm -rf "$tmp"
			exit 1
		}
		local d
		for d in "$tmp"/deb/*.deb; do dpkg-deb -x "$d" "$tmp/x" || { rm -rf "$tmp"; exit 1; }; done
		# /boot/vmlinuz-RELEASE, or (sid) /usr/lib/modules/RELEASE/vmlinuz.
		local vmlinuz release
		vmlinuz=$(find "$tmp/x/boot" -name 'vmlinuz-*' -type f 2>/dev/null | head -1)
		release=${vmlinuz##*/vmlinuz-}
		if [ -z "$vmlinuz" ]; then
			vmlinuz=$(find "$tmp/x/usr/lib/modules" -name vmlinuz -type f 2>/dev/null | head -1)
			release=$(basename "$(dirname "$vmlinuz")")
		fi
		[ -n "$vmlinuz" ] || { echo "install-test-kernels: $suite/$arch: no vmlinuz in ${pkgs[*]}" >&2; rm -rf "$tmp"; exit 1; }
		mkdir -p "$tmp/out"
		cp "$vmlinuz" "$tmp/out/vmlinuz" || exit 1
		if [ -x "$tmp/x/bin/busybox" ] || [ -x "$tmp/x/usr/bin/busybox" ]; then
			cp "$(find "$tmp/x/bin/busybox" "$tmp/x/usr/bin/busybox" 2>/dev/null | head -1)" "$tmp/out/busybox" || exit 1
		fi
		# The release name (6.1.0-28-cloud-amd64) and the package version
		# (6.1.119-1): what the matrix's results and docs/kernels.md cite.
		printf 'format=%s\nsuite=%s\narch=%s\nrelease=%s\npackage=%s\nversion=%s\nfrom=%s\n' "$CW_KERNEL_FORMAT" "$suite" "$arch" \
			"$release" "$img" "$ver" "${pkgs[*]}" >"$tmp/out/stamp"
		rm -rf "$dir"
		mv "$tmp/out" "$dir" && rm -rf "$tmp"
	) 9>"$dir.lock"
}

if [ $# = 0 ]; then
	# shellcheck disable=SC2086 # the lists are words
	set -- $CW_KERNELS_X86 $CW_KERNELS_ARM64
fi
rc=0
for k in "$@"; do
	fetch_kernel "${k%/*}" "${k#*/}" || {
		echo "install-test-kernels: cannot fetch ${k}'s kernel" >&2
		rc=1
	}
done
exit $rc
