# shellcheck shell=bash
# release_in_root ROOT FILE [release_smoke.sh args...]: runs
# tests/lib/release_smoke.sh on the release file FILE inside the Debian root
# ROOT (tests/lib/debian_root.sh), chrooted, in a private mount namespace:
# the cached root is never written (a tmpfs over its /tmp holds the file and
# everything the commands write) and holds none of causeway's libraries.
# A foreign-architecture root runs through binfmt_misc and qemu-user-static
# (fix-binary, so qemu need not be inside the root).
release_in_root() {
	local root=$1 file=$2
	shift 2
	unshare --mount --propagation private bash -eu -c '
		root=$1 file=$2 smoke=$3
		shift 3
		mount -t tmpfs -o size=512m,mode=1777 cw-release "$root/tmp"
		mkdir "$root/tmp/cw"
		cp "$file" "$root/tmp/cw/causeway"
		cp "$smoke" "$root/tmp/cw/release_smoke.sh"
		mount -t proc proc "$root/proc"
		mount --rbind /sys "$root/sys"
		mount --rbind /dev "$root/dev"
		exec chroot "$root" /bin/bash /tmp/cw/release_smoke.sh /tmp/cw "$@"
	' release_in_root "$root" "$file" "$CW_ROOT/tests/lib/release_smoke.sh" "$@"
}

# release_root_lacks ROOT MULTIARCH: fails (prints the library) when ROOT has
# any of the libraries the ordinary build links; the release file must run
# without them.
release_root_lacks() {
	local root=$1 ma=$2 l
	for l in libbpf.so.1 libsqlite3.so.0 libjansson.so.4 libyaml-0.so.2 libmicrohttpd.so.12 \
		libcurl.so.4 libelf.so.1 libnghttp2.so.14; do
		if [ -e "$root/usr/lib/$ma/$l" ] || [ -e "$root/lib/$ma/$l" ]; then
			echo "$l"
			return 1
		fi
	done
	return 0
}

# binfmt_aarch64: aarch64 programs run here through binfmt_misc and
# qemu-user-static; registers it when this boot has not (kernel state, lost
# at reboot). Fails (message on stderr) when it cannot.
binfmt_aarch64() {
	if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
		[ -e /proc/sys/fs/binfmt_misc/register ] ||
			mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || return 1
		update-binfmts --enable qemu-aarch64 >&2 || {
			echo "cannot register qemu-aarch64 (qemu-user-static, binfmt-support)" >&2
			return 1
		}
	fi
	# fix-binary: the emulator need not exist inside a chroot.
	grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 || {
		echo "qemu-aarch64 is registered without fix-binary" >&2
		return 1
	}
}
