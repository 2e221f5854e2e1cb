# shellcheck shell=bash
# The kernel matrix (docs/kernels.md, "Tested kernels"): the release file
# booted under qemu on a stock Debian kernel (tests/lib/kernel_vm.sh) runs
# tests/integration/kernel_matrix_guest.sh there: check, a launched
# workload (1 cudaMalloc, 30,000 launches, 3,000 syncs, every call from the
# first), --pid of a running process, --container on a cgroup v2, and the
# scheduler layer with explain naming a pinned hog. The test fails on each
# miss of issue 35's "done when" (scripts/kernel-matrix.py judge) and when
# docs/kernels.md's row for the kernel says otherwise than what it saw
# (scripts/kernel-matrix.py doc). What it saw is kept in
# $CW_BUILD/kernel-matrix/SUITE-ARCH.json (and the console log beside it).
#
#   . kernel_matrix_lib.sh; kernel_matrix SUITE ARCH
set -u
. "$CW_ROOT/tests/lib/kernel_vm.sh"

kernel_matrix() {
	local suite=$1 arch=$2
	[ "$(id -u)" = 0 ] || { echo "needs root (mknod for the initramfs's console)"; exit 77; }
	local rarch=x86_64 cross=""
	[ "$arch" = arm64 ] && rarch=aarch64 cross=aarch64-linux-gnu-
	local rel=$CW_BUILD/release/causeway-linux-$rarch
	[ -x "$rel" ] || { echo "FAIL: no $rel (make release-$rarch)"; exit 1; }
	kernel_vm_cached "$suite" "$arch" || {
		echo "FAIL: no $suite/$arch kernel in $(kernel_vm_dir "$suite" "$arch") (scripts/install-test-kernels.sh $suite/$arch)"
		exit 1
	}
	local out=$CW_BUILD/kernel-matrix
	mkdir -p "$out" || exit 1
	local D
	D=$(mktemp -d) || exit 1
	# shellcheck disable=SC2064 # D is fixed now
	trap "rm -rf '$D'" EXIT
	local fix=$CW_BUILD/fixtures
	if [ -n "$cross" ]; then
		# The stand-in CUDA fixtures for arm64, built as the release's
		# cross compiler builds (tests/fixtures/Makefile's flags).
		fix=$D/fix
		mkdir -p "$fix/fakecuda"
		local fcf=(-std=gnu11 -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter -pthread)
		"${cross}gcc" "${fcf[@]}" -o "$fix/fake_workload" "$CW_ROOT/tests/fixtures/fake_workload.c" -ldl -lpthread &&
			"${cross}gcc" "${fcf[@]}" -I/usr/local/cuda-13.0/include -shared -fPIC -Wl,-soname,libcudart.so.13 \
				-o "$fix/fakecuda/libcudart.so.13" "$CW_ROOT/tests/fixtures/fake_cudart.c" ||
			{ echo "FAIL: cannot cross-build the arm64 fixtures"; exit 1; }
	fi
	[ -x "$fix/fake_workload" ] && [ -f "$fix/fakecuda/libcudart.so.13" ] || { echo "FAIL: missing fixtures (make fixtures)"; exit 1; }
	local files=("$rel:/cw/causeway" "$fix/fake_workload:/cw/fake_workload"
		"$fix/fakecuda/libcudart.so.13:/cw/fakecuda/libcudart.so.13")
	# bpftool lists the programs the kernel holds while trace runs (the
	# host's own, so x86-64 only).
	local bpftool
	bpftool=$(command -v bpftool || echo /usr/sbin/bpftool)
	[ -z "$cross" ] && [ -x "$bpftool" ] && files+=("$bpftool:/sbin/bpftool")
	local t0=$SECONDS
	kernel_vm_initramfs "$D/initrd" "$arch" "$CW_ROOT/tests/integration/kernel_matrix_guest.sh" "${files[@]}" ||
		{ echo "FAIL: cannot build the initramfs"; exit 1; }
	local log=$out/$suite-$arch.log limit=${CW_KERNEL_VM_LIMIT:-540}
	[ "$arch" = arm64 ] && limit=${CW_KERNEL_VM_LIMIT:-840}
	kernel_vm_boot "$suite" "$arch" "$D/initrd" "$log" "$limit"
	local qrc=$?
	echo "$suite/$arch: $(kernel_vm_stamp "$suite" "$arch" release) ($(kernel_vm_stamp "$suite" "$arch" version)): qemu exit $qrc after $((SECONDS - t0)) s"
	[ $qrc = 124 ] && echo "the VM ran past its ${limit} s limit"
	python3 "$CW_ROOT/scripts/kernel-matrix.py" observe "$log" "$(kernel_vm_dir "$suite" "$arch")/stamp" \
		"$CW_BUILD/release/$rarch/bpf" >"$out/$suite-$arch.json" || { echo "FAIL: cannot read the console log"; exit 1; }
	kernel_matrix_show "$out/$suite-$arch.json"
	local rc=0
	python3 "$CW_ROOT/scripts/kernel-matrix.py" judge "$out/$suite-$arch.json" ${CW_MATRIX_UNSUPPORTED:+--unsupported} |
		sed 's/^/FAIL: /'
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
	python3 "$CW_ROOT/scripts/kernel-matrix.py" doc "$CW_ROOT/docs/kernels.md" "$out/$suite-$arch.json" | sed 's/^/FAIL: /'
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
	[ $rc = 0 ] || { echo "console log: $log"; tail -n 5 "$log.qemu" 2>/dev/null; }
	exit $rc
}

# What a run saw, for the test's log: the results, check's per-feature
# lines, the programs loaded and left out, each trace's stderr.
kernel_matrix_show() {
	python3 - "$1" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
print("booted %s at %.1f s, guest done at %s s" % (o.get("booted", "no"), o.get("boot_s", 0), o.get("guest_s", "never")))
for k, v in o["results"].items():
    if not k.endswith("_progs"):
        print("  %s = %s" % (k, v))
print("check:")
for l in o["outputs"].get("check", []):
    print("  | " + l)
print("check's BPF loads:" if o["check_loads"] else "check names no BPF loads")
for obj, d in o["check_loads"].items():
    print("  %s: %s" % (obj, d))
print("programs (seen loaded while trace ran):" if o["programs_seen"] else "programs: none seen loaded (no bpftool in the guest, or trace loaded none)")
for obj, p in o["programs"].items():
    print("  %s: loaded %s; not loaded %s" % (obj, " ".join(p["loaded"]) or "-", " ".join(p["not_loaded"]) or "-"))
for k in ("launch_err", "pid_err", "cg_err", "query_err", "inf_err", "inf_rows"):
    lines = o["outputs"].get(k, [])
    print("%s (%d lines):" % (k, len(lines)))
    for l in lines[:25]:
        print("  | " + l[:300])
    if len(lines) > 25:
        print("  | ... %d more" % (len(lines) - 25))
PY
}
