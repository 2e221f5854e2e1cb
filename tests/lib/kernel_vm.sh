# shellcheck shell=bash
# Stock Debian kernels booted under qemu (TCG: no KVM needed) with an
# initramfs of busybox, glibc and the files a test names, for the kernel
# matrix (tests/integration/test_kernel_matrix.sh; arm64 in
# bench/long-suite.sh). The kernels are fetched once by
# scripts/install-test-kernels.sh into $CW_KERNEL_CACHE/SUITE-ARCH/
# (vmlinuz, stamp, and a foreign architecture's busybox).
#
#   kernel_vm_initramfs OUT ARCH GUEST_SCRIPT SRC:DEST...   the initramfs
#   kernel_vm_boot SUITE ARCH INITRD LOG TIMEOUT_S           boots it
#
# The initramfs's /init mounts proc, sysfs, devtmpfs, tracefs, debugfs,
# bpffs, cgroup2 at /sys/fs/cgroup and a tmpfs at /tmp, prints
# "CW-VM-BOOT <release>", runs the guest script (its output on the serial
# console, which the boot writes to LOG), prints "CW-VM-EXIT <rc>" and
# powers off. A guest prints its results as lines of its own markers.

CW_FIXTURE_CACHE=${CW_FIXTURE_CACHE:-/var/cache/causeway-fixtures}
CW_KERNEL_CACHE=${CW_KERNEL_CACHE:-$CW_FIXTURE_CACHE/kernels}
# Bump when what install-test-kernels.sh caches changes.
CW_KERNEL_FORMAT=1
# make test's kernels, and the long form's (bench/long-suite.sh).
# shellcheck disable=SC2034 # used by the scripts that source this file
CW_KERNELS_X86="bullseye/amd64 bookworm/amd64 trixie/amd64 sid/amd64"
CW_KERNELS_ARM64="trixie/arm64 sid/arm64"

kernel_vm_dir() { printf '%s/%s-%s\n' "$CW_KERNEL_CACHE" "$1" "$2"; }

# kernel_vm_cached SUITE ARCH: the kernel (and a foreign arch's busybox)
# is there, written by this format of the fetcher.
kernel_vm_cached() {
	local dir
	dir=$(kernel_vm_dir "$1" "$2")
	[ -s "$dir/vmlinuz" ] && grep -qx "format=$CW_KERNEL_FORMAT" "$dir/stamp" 2>/dev/null || return 1
	[ "$2" = "$(dpkg --print-architecture 2>/dev/null)" ] || [ -x "$dir/busybox" ]
}

# kernel_vm_stamp SUITE ARCH KEY: a field of the kernel's stamp.
kernel_vm_stamp() { sed -n "s/^$3=//p" "$(kernel_vm_dir "$1" "$2")/stamp" 2>/dev/null; }

# Where an architecture's shared libraries are found on this host (the
# native ones, or the cross toolchain's for arm64).
_kvm_libdirs() {
	case $1 in
	amd64) echo /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu /lib64 ;;
	arm64) echo /usr/aarch64-linux-gnu/lib /usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu ;;
	esac
}

# _kvm_add_elf STAGE ARCH FILE: the interpreter and the NEEDED libraries of
# FILE, recursively, copied into STAGE under the guest's library paths.
# readelf, not ldd: it reads a foreign architecture's files as well.
_kvm_add_elf() {
	local stage=$1 arch=$2 f=$3 lib d found interp
	local libdir=/lib/x86_64-linux-gnu
	[ "$arch" = arm64 ] && libdir=/lib/aarch64-linux-gnu
	interp=$(readelf -l "$f" 2>/dev/null | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
	if [ -n "$interp" ] && [ ! -e "$stage$interp" ]; then
		found=""
		for d in $(_kvm_libdirs "$arch"); do
			[ -e "$d/${interp##*/}" ] && { found="$d/${interp##*/}"; break; }
		done
		[ -n "$found" ] || { echo "kernel_vm: no ${interp##*/} for $arch" >&2; return 1; }
		mkdir -p "$stage$(dirname "$interp")" "$stage$libdir"
		cp -L "$found" "$stage$interp" && cp -L "$found" "$stage$libdir/${interp##*/}"
	fi
	for lib in $(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$stage$libdir/$lib" ] && continue
		found=""
		for d in $(_kvm_libdirs "$arch"); do
			[ -e "$d/$lib" ] && { found="$d/$lib"; break; }
		done
		[ -n "$found" ] || { echo "kernel_vm: $f needs $lib, not found for $arch" >&2; return 1; }
		mkdir -p "$stage$libdir"
		cp -L "$found" "$stage$libdir/$lib" || return 1
		_kvm_add_elf "$stage" "$arch" "$stage$libdir/$lib" || return 1
	done
}

# kernel_vm_initramfs OUT ARCH GUEST_SCRIPT SRC:DEST...: an uncompressed
# newc cpio (the kernel unpacks it faster under emulation than a
# compressed one) with busybox, /init, the guest script at /guest.sh and
# each SRC at DEST with its libraries.
kernel_vm_initramfs() {
	local out=$1 arch=$2 guest=$3
	shift 3
	local stage
	stage=$(mktemp -d) || return 1
	mkdir -p "$stage"/{bin,sbin,dev,proc,sys,tmp,etc,root} || return 1
	local bb=/bin/busybox
	[ "$arch" = "$(dpkg --print-architecture)" ] || bb=$(kernel_vm_dir trixie "$arch")/busybox
	[ -x "$bb" ] || bb=$(find "$CW_KERNEL_CACHE" -path "*-$arch/busybox" 2>/dev/null | head -1)
	[ -x "$bb" ] || { echo "kernel_vm: no static busybox for $arch" >&2; rm -rf "$stage"; return 1; }
	cp "$bb" "$stage/bin/busybox" || return 1
	# The console must exist before /init runs: the kernel opens it for
	# init's stdin/stdout.
	mknod -m 600 "$stage/dev/console" c 5 1 || { rm -rf "$stage"; return 1; }
	cp "$guest" "$stage/guest.sh" || return 1
	local pair src dest
	for pair in "$@"; do
		src=${pair%%:*} dest=${pair#*:}
		mkdir -p "$stage$(dirname "$dest")"
		cp -L "$src" "$stage$dest" || { rm -rf "$stage"; return 1; }
		if head -c4 "$src" | grep -q 'ELF'; then
			_kvm_add_elf "$stage" "$arch" "$src" || { rm -rf "$stage"; return 1; }
		fi
	done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$stage/etc/passwd"
	echo 'root:x:0:' >"$stage/etc/group"
	cat >"$stage/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin:/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpffs /sys/fs/bpf
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo "CW-VM-BOOT $(uname -r) $(cut -d' ' -f1 /proc/uptime)"
cd /tmp
sh /guest.sh </dev/null
echo "CW-VM-EXIT $? $(cut -d' ' -f1 /proc/uptime)"
sync
poweroff -f
INIT
	chmod +x "$stage/init" "$stage/guest.sh"
	(cd "$stage" && find . | cpio -o -H newc --quiet) >"$out"
	local rc=$?
	rm -rf "$stage"
	return $rc
}

# kernel_vm_boot SUITE ARCH INITRD LOG TIMEOUT_S: boots the cached kernel
# with INITRD under TCG, 2 CPUs, the serial console written to LOG; killed
# after TIMEOUT_S. Returns qemu's status (124: timed out).
kernel_vm_boot() {
	local suite=$1 arch=$2 initrd=$3 log=$4 limit=$5
	local dir
	dir=$(kernel_vm_dir "$suite" "$arch")
	[ -s "$dir/vmlinuz" ] || { echo "kernel_vm: no $suite/$arch kernel in $dir (scripts/install-test-kernels.sh)" >&2; return 1; }
	local qemu console
	local args=(-nodefaults -display none -no-reboot -m 1024 -smp 2 -monitor none
		-serial "file:$log" -kernel "$dir/vmlinuz" -initrd "$initrd")
	case $arch in
	amd64) qemu=qemu-system-x86_64 console=ttyS0 args+=(-accel tcg,thread=multi -cpu max) ;;
	# pauth-impdef: QEMU's cheap pointer-authentication algorithm (the
	# architected one costs much of the guest's time under TCG).
	arm64) qemu=qemu-system-aarch64 console=ttyAMA0 args+=(-M virt -accel tcg,thread=multi -cpu max,pauth-impdef=on) ;;
	*) echo "kernel_vm: unknown arch $arch" >&2; return 1 ;;
	esac
	# quiet + loglevel: the console carries the guest's results, with as
	# few kernel lines among them as possible; panic=-1 with -no-reboot
	# ends qemu on a panic instead of hanging until the time limit.
	timeout -k 5 "$limit" "$qemu" "${args[@]}" \
		-append "console=$console quiet loglevel=3 panic=-1 oops=panic" </dev/null >/dev/null 2>"$log.qemu"
}
