// SPDX-License-Identifier: GPL-2.0
/* proc: process lifecycle of tracked processes, on the critical ring.
 *
 * fork: a new process (not a thread) forked by a tracked process is added
 *       to the tracked set here, in the kernel, before it can run, so no
 *       event of the child is missed.
 * exec: the new image's filename.
 * exit: once per process, when its last thread exits; the tgid leaves the
 *       tracked set.
 */
#include "common.bpf.h"

CW_DECLARE_RING(rb_critical, 256 << 10);

static __always_inline int on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct cw_proc *r;

	/* A new thread shares the tgid and is already covered. */
	if (ctgid == ptgid || !cw_tgid_tracked(ptgid))
		return 0;
	cw_track(ctgid);
	r = cw_reserve(&rb_critical, sizeof(*r), CW_DROP_PROC);
	if (!r)
		return 0;
	cw_hdr_task(&r->hdr, CW_REC_PROC, sizeof(*r), CW_SRC_PROC, CW_OP_fork, parent);
	r->parent_pid = ptgid;
	r->child_pid = ctgid;
	r->exit_code = 0;
	r->pad = 0;
	bpf_probe_read_kernel_str(r->filename, sizeof(r->filename), &child->comm);
	bpf_ringbuf_submit(r, 0);
	return 0;
}

static __always_inline int on_exec(struct task_struct *p, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct cw_proc *r;
	const char *fn;

	if (!cw_tgid_tracked(tgid))
		return 0;
	r = cw_reserve(&rb_critical, sizeof(*r), CW_DROP_PROC);
	if (!r)
		return 0;
	cw_hdr_task(&r->hdr, CW_REC_PROC, sizeof(*r), CW_SRC_PROC, CW_OP_exec, p);
	r->parent_pid = BPF_CORE_READ(p, real_parent, tgid);
	r->child_pid = tgid;
	r->exit_code = 0;
	r->pad = 0;
	fn = BPF_CORE_READ(bprm, filename);
	if (bpf_probe_read_kernel_str(r->filename, sizeof(r->filename), fn) < 0)
		r->filename[0] = 0;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

/* signal->live is decremented in do_exit() before the tracepoint on every
 * kernel since 2.6; it reaching 0 means this is the last thread. (6.16+
 * also passes group_dead, but older kernels do not.) exit_code is the
 * kernel's wait status: (status << 8) | terminating signal. */
static __always_inline int on_exit(struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	struct cw_proc *r;

	if (!cw_tgid_tracked(tgid))
		return 0;
	if (BPF_CORE_READ(p, signal, live.counter) != 0)
		return 0;
	cw_untrack(tgid);
	r = cw_reserve(&rb_critical, sizeof(*r), CW_DROP_PROC);
	if (!r)
		return 0;
	cw_hdr_task(&r->hdr, CW_REC_PROC, sizeof(*r), CW_SRC_PROC, CW_OP_exit, p);
	r->parent_pid = BPF_CORE_READ(p, real_parent, tgid);
	r->child_pid = tgid;
	r->exit_code = BPF_CORE_READ(p, exit_code);
	r->pad = 0;
	r->filename[0] = 0;
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(proc_fork_btf, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(proc_fork_raw, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(parent, child);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(proc_exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return on_exec(p, bprm);
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(proc_exec_raw, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return on_exec(p, bprm);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(proc_exit_btf, struct task_struct *p)
{
	return on_exit(p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(proc_exit_raw, struct task_struct *p)
{
	return on_exit(p);
}

char LICENSE[] SEC("license") = "GPL";
