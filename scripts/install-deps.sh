#!/bin/sh
# Installs the Debian/Ubuntu packages causeway needs to build, run and test,
# when any is missing. Idempotent; does nothing when all are present.
set -eu
PKGS="build-essential pkg-config clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev liblzma-dev
libsqlite3-dev sqlite3 libjansson-dev libyaml-dev libmicrohttpd-dev libgnutls28-dev
gnutls-bin libcurl4-openssl-dev libcmocka-dev python3 curl openssl jq"
if [ "${CW_TEST_DEPS:-0}" = 1 ]; then
	# clang-16, clang-19: the BPF objects are built and loaded with each
	# compiler Debian 12 carries (tests/integration/test_bpf_compilers.sh).
	PKGS="$PKGS clang-16 clang-19 stress-ng fio util-linux iproute2 nftables faketime libfaketime bpftrace prometheus nodejs chromium runc mmdebstrap strace
qemu-system-x86 qemu-system-arm busybox-static cpio fuse3 python3-fusepy"
	# fuse3, python3-fusepy: a traced process that serves its own library
	# from a FUSE mount and never answers causeway
	# (tests/integration/test_trace_hostile_fuse.sh).
	# strace: test_trace_hostile_debug_files.sh names every file causeway
	# opens on a hostile process's behalf (util-linux: setpriv, unshare).
	# qemu-system-*, busybox-static, cpio: the kernel matrix boots stock
	# Debian kernels (scripts/install-test-kernels.sh) under emulation with
	# an initramfs (tests/lib/kernel_vm.sh).
	# mmdebstrap: real root filesystems of other Debian releases (tests/lib/debian_root.sh).
	# runc: the container runtime test (tests/integration/test_tenants_runc.sh)
	# runs an OCI bundle assembled locally; no registry, no daemon.
	# npm: the MCP client tests (tests/mcp). NodeSource's nodejs bundles it;
	# Debian's does not.
	command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
fi
# CW_RELEASE_DEPS=1 (the tests need them too): what `make release` needs.
if [ "${CW_TEST_DEPS:-0}" = 1 ] || [ "${CW_RELEASE_DEPS:-0}" = 1 ]; then
	# make release (scripts/release.mk): the static archives the release
	# files link, the arm64 cross toolchain and :arm64 archives, and
	# qemu-user to run the aarch64 file and unit tests; umoci unpacks the
	# OCI image (scripts/build-image.sh) for runc.
	PKGS="$PKGS libnghttp2-dev librtmp-dev libssh2-1-dev libpsl-dev libldap-dev libzstd-dev libbrotli-dev
libunistring-dev libidn2-dev libbz2-dev gcc-aarch64-linux-gnu libstdc++-12-dev-arm64-cross qemu-user-static binfmt-support arch-test umoci"
	for p in libbpf-dev libelf-dev zlib1g-dev libsqlite3-dev libjansson-dev libyaml-dev libmicrohttpd-dev \
		libgnutls28-dev libcurl4-openssl-dev libnghttp2-dev librtmp-dev libssh2-1-dev libpsl-dev libldap-dev \
		libzstd-dev libbrotli-dev libunistring-dev libidn2-dev libcmocka-dev liblzma-dev libdw-dev libbz2-dev; do
		PKGS="$PKGS $p:arm64"
	done
fi
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "causeway: installing missing packages:$missing" >&2
SUDO=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null 2>&1 || { echo "causeway: need root (or sudo) to install:$missing" >&2; exit 1; }
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
case $missing in *:arm64*) dpkg --print-foreign-architectures | grep -qx arm64 || $SUDO dpkg --add-architecture arm64 ;; esac
$SUDO apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
