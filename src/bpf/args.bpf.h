/* args.bpf.h: integer arguments of a probed function at its first
 * instruction, per calling convention, and the architecture tag every
 * causeway BPF object carries (loader/bpf_arch.c refuses an object built for
 * another architecture than the agent's). BPF-only; the build passes
 * -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64 (Makefile, scripts/release.mk).
 *
 * x86-64 (System V AMD64 ABI 3.2.3): six integer registers (rdi, rsi, rdx,
 * rcx, r8, r9); the 7th and later arguments are on the stack above the
 * return address, the 7th at sp + 8. An aggregate over 16 bytes (class
 * MEMORY) is copied onto the stack there and takes no register.
 *
 * AArch64 (AAPCS64 6.8.2): eight integer registers (x0-x7); the return
 * address is in x30, so the 9th and later arguments start at sp itself. A
 * composite over 16 bytes is copied by the caller and passed by reference:
 * its address takes the next register. Aggregates up to 16 bytes (a dim3)
 * take two consecutive registers on both.
 */
#ifndef CW_ARGS_BPF_H
#define CW_ARGS_BPF_H

#if defined(__TARGET_ARCH_x86)
#define CW_BPF_ARCH "x86_64"
#define CW_REG_ARGS 6
/* Byte offset from sp at entry of the n-th argument (n > CW_REG_ARGS). */
#define CW_STACK_ARG_OFF(n) (8 * ((n) - CW_REG_ARGS))
/* Registers a by-value aggregate over 16 bytes takes (its address). */
#define CW_BIG_BYVAL_REGS 0
/* libbpf < 1.2 stops at PARM5; x86-64 SysV passes the sixth in r9. */
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) ((x)->r9)
#endif
#define CW_LOAD_REG_ARGS(ctx, p)                                                                             \
	do {                                                                                                 \
		(p)[0] = PT_REGS_PARM1(ctx);                                                                 \
		(p)[1] = PT_REGS_PARM2(ctx);                                                                 \
		(p)[2] = PT_REGS_PARM3(ctx);                                                                 \
		(p)[3] = PT_REGS_PARM4(ctx);                                                                 \
		(p)[4] = PT_REGS_PARM5(ctx);                                                                 \
		(p)[5] = PT_REGS_PARM6(ctx);                                                                 \
	} while (0)
#elif defined(__TARGET_ARCH_arm64)
#define CW_BPF_ARCH "aarch64"
#define CW_REG_ARGS 8
#define CW_STACK_ARG_OFF(n) (8 * ((n) - CW_REG_ARGS - 1))
#define CW_BIG_BYVAL_REGS 1
/* arch/arm64/include/uapi/asm/ptrace.h; the build's vmlinux.h comes from an
 * x86-64 host's BTF (scripts/release.mk), which has no such type. */
#ifndef CW_VMLINUX_HAS_USER_PT_REGS
struct user_pt_regs {
	__u64 regs[31];
	__u64 sp;
	__u64 pc;
	__u64 pstate;
};
#endif
/* libbpf 1.1's bpf_tracing.h names x0-x4 only; a uprobe's ctx is the
 * user_pt_regs view of the task's registers (regs[0..30], sp, pc). */
#define CW_LOAD_REG_ARGS(ctx, p)                                                                             \
	do {                                                                                                 \
		const struct user_pt_regs *u_ = (const struct user_pt_regs *)(ctx);                          \
		(p)[0] = u_->regs[0];                                                                        \
		(p)[1] = u_->regs[1];                                                                        \
		(p)[2] = u_->regs[2];                                                                        \
		(p)[3] = u_->regs[3];                                                                        \
		(p)[4] = u_->regs[4];                                                                        \
		(p)[5] = u_->regs[5];                                                                        \
		(p)[6] = u_->regs[6];                                                                        \
		(p)[7] = u_->regs[7];                                                                        \
	} while (0)
#else
#error "build causeway's BPF objects with -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64"
#endif

/* The tag loader/bpf_arch.c reads from the object's ELF (.rodata). */
const char cw_bpf_arch[16] = CW_BPF_ARCH;

#endif
