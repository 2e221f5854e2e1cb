#include "loader/kernel_features.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loader/umulti_link.h"

/* The kernel versions are mainline's; distributions backport (RHEL 9's
 * 5.14 has most of 6.x's BPF), which is why each row is probed, never
 * read off the version. */
const struct cw_kfeature_def cw_kfeature_defs[CW_KF_N] = {
	[CW_KF_TP_BTF] = { "tp_btf", "5.5 (x86-64), 6.0 (arm64)", "tracepoints as BTF programs (trampolines)",
			   "the same programs as raw_tp: a little slower per event" },
	[CW_KF_TASK_BTF] = { "task_btf", "5.11", "bpf_get_current_task_btf()",
			     "CUDA, driver and NCCL calls cannot be traced (the call probes need it)" },
	[CW_KF_ATTACH_COOKIE] = { "attach_cookie", "5.15", "bpf_get_attach_cookie() in uprobes",
				  "CUDA, driver and NCCL calls cannot be traced (each probe's function is its cookie)" },
	[CW_KF_BPF_LOOP] = { "bpf_loop", "5.17", "bpf_loop()",
			     "the call probes walk Python stacks in a bounded loop (the cuda_noloop build): "
			     "the verifier takes longer at start-up" },
	[CW_KF_SWITCH_STATE] = { "sched_switch_state", "5.18", "sched_switch passes the previous task's state",
				 "the state is read from the task (same result)" },
	[CW_KF_SLEEPABLE_UPROBE] = { "sleepable_uprobe", "6.0", "sleepable uprobes",
				     "a kernel name not yet paged in is read later by the agent" },
	[CW_KF_SOCK_LENGTH] = { "sock_length", "6.3", "sock:sock_send_length / sock_recv_length",
				"no per-thread socket volume; tcp_retransmit_skb still loads" },
	[CW_KF_BLOCK_IO_START] = { "block_io_start", "6.5", "block:block_io_start",
				   "block_rq_issue marks an I/O's start" },
	[CW_KF_UPROBE_MULTI] = { "uprobe_multi", "6.6", "uprobe_multi links (one link per library copy)",
				 "one perf-event link per probe: stopping takes ~0.1 s a probe" },
	[CW_KF_VMA_ITER] = { "vma_iter", "6.7", "task VMA iterator kfuncs (libraries seen as they load)",
			     "a launched command is held at each library load and its maps read; other processes "
			     "are found by the one-second rescan and their first calls before it are lost (counted)" },
	[CW_KF_UPROBE_SESSION] = { "uprobe_session", "6.13", "uprobe sessions (one program at entry and return)",
				   "uprobe_multi pairs: a process that is not traced pays the return probe too "
				   "(~1.4 us a call instead of ~0.8 us)" },
	[CW_KF_SESSION_CTX] = { "session_kfunc_ctx", "after 6.13", "session kfuncs that take the context",
				"the session object built for the older prototype" },
};

static enum cw_tri load_answer(int fd, struct cw_kfeatures *kf)
{
	if (fd >= 0) {
		close(fd);
		return CW_YES;
	}
	if (errno == EPERM || errno == EACCES) {
		kf->probe_errno = errno;
		return CW_UNKNOWN;
	}
	return CW_NO;
}

static enum cw_tri helper(enum bpf_func_id id, struct cw_kfeatures *kf)
{
	int rc = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, NULL);

	if (rc == 1)
		return CW_YES;
	if (rc == 0)
		return CW_NO;
	kf->probe_errno = -rc;
	return CW_UNKNOWN;
}

/* "r0 = 0; exit" as a uprobe (kprobe-type) program. */
static int tiny_kprobe(enum bpf_attach_type expected, __u32 flags)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = expected, .prog_flags = flags);

	return bpf_prog_load(BPF_PROG_TYPE_KPROBE, "cw_probe", "GPL", insns, 2, &opts);
}

/* A uprobe_multi or session link on "/": a kernel that knows the attach
 * type gets as far as the path and refuses a directory (EBADF); one that
 * does not refuses the attach type (EINVAL). Nothing is attached. */
static enum cw_tri umulti_link(uint32_t attach_type, struct cw_kfeatures *kf)
{
	uint64_t off = 0, cookie = 0;
	int fd = tiny_kprobe((enum bpf_attach_type)attach_type, 0), l;

	if (fd < 0)
		return load_answer(fd, kf);
	l = cw_link_umulti(fd, attach_type, "/", &off, &cookie, 1, 0);
	close(fd);
	if (l >= 0) {
		close(l);
		return CW_YES;
	}
	if (l == -EBADF)
		return CW_YES;
	if (l == -EPERM || l == -EACCES) {
		kf->probe_errno = -l;
		return CW_UNKNOWN;
	}
	return CW_NO;
}

/* The FUNC_PROTO of kernel function or tracepoint typedef name, NULL when
 * the kernel has none. */
static const struct btf_type *proto_of(const struct btf *vm, const char *name, int kind)
{
	const struct btf_type *t;
	int id = btf__find_by_name_kind(vm, name, kind);

	if (id < 0)
		return NULL;
	t = btf__type_by_id(vm, (__u32)id);
	/* a tracepoint's typedef is a pointer to its prototype */
	while (t && (btf_is_typedef(t) || btf_is_ptr(t)))
		t = btf__type_by_id(vm, t->type);
	if (kind == BTF_KIND_FUNC && t)
		t = btf__type_by_id(vm, t->type);
	return t && btf_is_func_proto(t) ? t : NULL;
}

static enum cw_tri exists(const struct btf *vm, const char *name, int kind)
{
	if (!vm)
		return CW_UNKNOWN;
	return btf__find_by_name_kind(vm, name, kind) >= 0 ? CW_YES : CW_NO;
}

/* CW_KFEATURES_OFF=key[,key...]: features taken as absent, so the suite
 * runs trace's fallbacks on a kernel that has everything (the kernel
 * matrix runs them on kernels that lack them). It can only take features
 * away. */
static void turn_off_named(struct cw_kfeatures *kf, const char *list)
{
	while (list && *list) {
		size_t n = strcspn(list, ",");

		for (int i = 0; i < CW_KF_N; i++)
			if (strlen(cw_kfeature_defs[i].key) == n && !strncmp(cw_kfeature_defs[i].key, list, n))
				kf->has[i] = CW_NO;
		list += n + (list[n] == ',');
	}
}

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

void cw_kfeatures_probe(struct cw_kfeatures *kf)
{
	libbpf_print_fn_t old = libbpf_set_print(quiet);
	struct btf *vm = btf__load_vmlinux_btf();
	const struct btf_type *t;
	struct cw_features f;

	memset(kf, 0, sizeof(*kf));
	cw_features_probe(&f);
	kf->has[CW_KF_TP_BTF] = f.tp_btf_sched_switch;
	if (f.probe_errno)
		kf->probe_errno = f.probe_errno;
	kf->has[CW_KF_TASK_BTF] = helper(BPF_FUNC_get_current_task_btf, kf);
	kf->has[CW_KF_ATTACH_COOKIE] = helper(BPF_FUNC_get_attach_cookie, kf);
	kf->has[CW_KF_BPF_LOOP] = helper(BPF_FUNC_loop, kf);
	/* sched_switch(void *ctx, preempt, prev, next[, prev_state]) */
	t = vm ? proto_of(vm, "btf_trace_sched_switch", BTF_KIND_TYPEDEF) : NULL;
	kf->has[CW_KF_SWITCH_STATE] = !vm ? CW_UNKNOWN : t && btf_vlen(t) >= 5 ? CW_YES : CW_NO;
	/* 6.0 lets uprobe (kprobe-type) programs be sleepable; before, the
	 * verifier refuses the flag for them. */
	kf->has[CW_KF_SLEEPABLE_UPROBE] = load_answer(tiny_kprobe(0, BPF_F_SLEEPABLE), kf);
	kf->has[CW_KF_SOCK_LENGTH] = exists(vm, "btf_trace_sock_send_length", BTF_KIND_TYPEDEF);
	kf->has[CW_KF_BLOCK_IO_START] = exists(vm, "btf_trace_block_io_start", BTF_KIND_TYPEDEF);
	kf->has[CW_KF_UPROBE_MULTI] = umulti_link(CW_BPF_TRACE_UPROBE_MULTI, kf);
	kf->has[CW_KF_VMA_ITER] = exists(vm, "bpf_iter_task_vma_new", BTF_KIND_FUNC);
	kf->has[CW_KF_UPROBE_SESSION] = umulti_link(CW_BPF_TRACE_UPROBE_SESSION, kf);
	t = vm ? proto_of(vm, "bpf_session_cookie", BTF_KIND_FUNC) : NULL;
	kf->has[CW_KF_SESSION_CTX] = !vm ? CW_UNKNOWN : t && btf_vlen(t) >= 1 ? CW_YES : CW_NO;
	/* Sessions need their kfuncs too. */
	if (kf->has[CW_KF_UPROBE_SESSION] == CW_YES && vm && !proto_of(vm, "bpf_session_cookie", BTF_KIND_FUNC))
		kf->has[CW_KF_UPROBE_SESSION] = CW_NO;
	btf__free(vm);
	libbpf_set_print(old);
	turn_off_named(kf, getenv("CW_KFEATURES_OFF"));
}

static struct cw_kfeatures probed;
static pthread_once_t probed_once = PTHREAD_ONCE_INIT;

static void probe_once(void)
{
	cw_kfeatures_probe(&probed);
}

const struct cw_kfeatures *cw_kfeatures(void)
{
	pthread_once(&probed_once, probe_once);
	return &probed;
}

int cw_kfeature_has(enum cw_kfeature f)
{
	return f < CW_KF_N && cw_kfeatures()->has[f] == CW_YES;
}

int cw_kfeatures_cuda_blocker(const struct cw_kfeatures *kf)
{
	static const enum cw_kfeature needed[] = { CW_KF_TASK_BTF, CW_KF_ATTACH_COOKIE };
	size_t i;

	for (i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (kf->has[needed[i]] == CW_NO)
			return (int)needed[i];
	return -1;
}
