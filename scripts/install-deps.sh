#!/bin/sh
# Installs the Debian/Ubuntu packages causeway needs to build, run and test,
# when any is missing. Idempotent; does nothing when all are present.
set -eu
PKGS="build-essential pkg-config clang llvm libbpf-dev bpftool libelf-dev zlib1g-dev liblzma-dev
libsqlite3-dev sqlite3 libjansson-dev libyaml-dev libmicrohttpd-dev libgnutls28-dev
gnutls-bin libcurl4-openssl-dev libcmocka-dev python3 curl openssl jq"
if [ "${CW_TEST_DEPS:-0}" = 1 ]; then
	PKGS="$PKGS stress-ng fio util-linux iproute2 nftables faketime libfaketime bpftrace prometheus nodejs chromium runc mmdebstrap"
	# mmdebstrap: real root filesystems of other Debian releases (tests/lib/debian_root.sh).
	# runc: the container runtime test (tests/integration/test_tenants_runc.sh)
	# runs an OCI bundle assembled locally; no registry, no daemon.
	# npm: the MCP client tests (tests/mcp). NodeSource's nodejs bundles it;
	# Debian's does not.
	command -v npm >/dev/null 2>&1 || PKGS="$PKGS npm"
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
$SUDO apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
