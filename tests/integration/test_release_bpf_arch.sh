#!/bin/bash
# BPF objects per architecture (src/bpf/args.bpf.h): every object of both
# release builds is a BPF ELF object (ELF machine "Linux BPF") tagged with
# its build's architecture (cw_bpf_arch, which loader/bpf_arch.c checks),
# and the argument-access code follows each calling convention: a uprobe
# program reads x86-64's six argument registers and sp from struct pt_regs
# (rdi 112, rsi 104, rdx 96, rcx 88, r8 72, r9 64, sp 152) and AArch64's
# eight from user_pt_regs (x0..x7 at 0..56, sp 248); stack arguments start
# at the 7th (sp + 8) on x86-64 and at the 9th (sp + 0) on AArch64; a
# 128-byte by-value argument takes a register only on AArch64.
set -u
: "${CW_ROOT:?}"
fail() { echo "FAIL: $*"; exit 1; }
cd "$CW_ROOT" || exit 1
make -s --no-print-directory release-x86_64 release-aarch64 >/dev/null || fail "make release"
T=$(mktemp -d /tmp/cw-bpfarch.XXXXXX)
trap 'rm -rf "$T"' EXIT

# tag OBJ: the cw_bpf_arch string of a BPF object.
tag() {
	local line sec val size
	line=$(readelf -sW "$1" | awk '$8 == "cw_bpf_arch" { print $7, $2, $3 }')
	[ -n "$line" ] || return 1
	read -r sec val size <<<"$line"
	llvm-objcopy -O binary --only-section=.rodata "$1" "$T/rodata" || return 1
	dd if="$T/rodata" bs=1 skip=$((16#$val)) count="$size" 2>/dev/null | tr -d '\0'
}

n=0
for arch in x86_64 aarch64; do
	objs=(build/release/$arch/bpf/*.bpf.o)
	[ ${#objs[@]} -ge 7 ] || fail "$arch: ${#objs[@]} BPF objects"
	for o in "${objs[@]}"; do
		m=$(readelf -h "$o" | sed -n 's/^ *Machine: *//p')
		[ "$m" = "Linux BPF" ] || fail "$o: ELF machine '$m'"
		t=$(tag "$o") || fail "$o: no cw_bpf_arch"
		[ "$t" = "$arch" ] || fail "$o: tagged '$t', built for $arch"
		n=$((n + 1))
	done
done

# A probe built as the objects are, per architecture: what it loads from
# its context, and the stack offsets args.bpf.h computes.
cat >"$T/probe.bpf.c" <<'SRC'
#include "common.bpf.h"
char LICENSE[] SEC("license") = "GPL";
__u64 out[CW_REG_ARGS + 1];
#if defined(__TARGET_ARCH_x86)
_Static_assert(CW_REG_ARGS == 6 && CW_STACK_ARG_OFF(7) == 8 && CW_STACK_ARG_OFF(8) == 16, "SysV stack args");
_Static_assert(CW_BIG_BYVAL_REGS == 0, "SysV: class MEMORY takes no register");
#else
_Static_assert(CW_REG_ARGS == 8 && CW_STACK_ARG_OFF(9) == 0 && CW_STACK_ARG_OFF(11) == 16, "AAPCS64 stack args");
_Static_assert(CW_BIG_BYVAL_REGS == 1, "AAPCS64: a composite over 16 bytes is passed by reference");
#endif
SEC("uprobe")
int probe(struct pt_regs *ctx)
{
	__u64 p[CW_REG_ARGS];
	CW_LOAD_REG_ARGS(ctx, p);
	for (int i = 0; i < CW_REG_ARGS; i++)
		out[i] = p[i];
	out[CW_REG_ARGS] = PT_REGS_SP(ctx);
	return 0;
}
SRC
offsets() {
	llvm-objdump -d --no-show-raw-insn "$1" |
		sed -n 's/.*= \*(u64 \*)(r1 + \([0-9]*\))$/\1/p' | sort -n | tr '\n' ' '
}
for arch in x86 arm64; do
	clang -g -O2 -target bpf -D__TARGET_ARCH_$arch -Ibuild/release/x86_64/gen -Isrc -Isrc/bpf -Wall -Werror \
		-c "$T/probe.bpf.c" -o "$T/probe-$arch.o" || fail "probe for $arch does not build"
done
got=$(offsets "$T/probe-x86.o")
[ "$got" = "64 72 88 96 104 112 152 " ] || fail "x86-64 context loads: $got"
got=$(offsets "$T/probe-arm64.o")
[ "$got" = "0 8 16 24 32 40 48 56 248 " ] || fail "AArch64 context loads: $got"
echo "ok: $n BPF objects tagged per architecture; argument registers per ABI"
