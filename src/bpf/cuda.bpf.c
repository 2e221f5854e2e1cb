// SPDX-License-Identifier: GPL-2.0
/* cuda: uprobes and uretprobes on the CUDA runtime (libcudart), CUDA graphs,
 * the CUDA driver (libcuda) and NCCL (libnccl).
 *
 * One entry program and one return program serve every hooked function;
 * the attach cookie (cuda.bpf.h) names the op and its source, so the hook
 * table lives in userspace (src/loader/uprobe_attach.c) and a library copy
 * costs attaches, not programs.
 *
 * Entry:  the call's entry (arguments normalized per op, see fill_args and
 *         docs/probes-cuda.md, and the thread's current device) is built in
 *         the open-call table (call_slots, call_state for collisions; see
 *         cuda.bpf.h), keyed by (tid, op) so runtime -> driver nesting is
 *         fine.
 * Return: one CW_REC_CALL record, the entry plus the return code
 *         (cudaError_t, CUresult and ncclResult_t are all C enums: a 32-bit
 *         int in eax). One ring record per call instead of an entry/return
 *         pair halves the ring work and the header helpers on the traced
 *         thread. Calls still open are in the open-call table, where
 *         userspace finds them (cw_cuda_probes_take_inflight).
 *
 * Summary capture (cfg_capture_summary, trace --capture summary): a call
 * that is fast for its op, succeeded, is not NCCL or graph, is past its
 * process's first calls and is not the sample is folded at return into
 * fold_slots or fold_hist (fold_call) and emits nothing; the rest emit as
 * above.
 *
 * Losses: a failed ring reserve is counted in cw_drops (per source) and in
 * cuda_stats. When the ring holds more than cfg_agg_bytes at return, a
 * call is counted into agg_hist (per op, log2 duration buckets) instead of
 * being emitted: aggregate before dropping.
 */
#include "common.bpf.h"
#include "cuda.bpf.h"
#include "pystack.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Aggregate instead of emitting when the ring holds more than this many
 * bytes; 0 never aggregates. */
const volatile __u64 cfg_agg_bytes = 0;
/* A quarter of rb_cuda's size (the loader sets it with the size): the
 * call record wakes the consumer as it crosses it (cw_submit). */
const volatile __u64 cfg_ring_quarter = (8 << 20) / 4;
/* 1: only processes in cw_tracked (--pid, a launched command and their
 * children). 0: every process that runs a hooked library copy, which is
 * how processes started after trace are traced from their first call. */
const volatile __u8 cfg_filter_tracked = 1;
/* Python stacks for the processes the loader registered in cw_py_procs
 * (trace --py-stacks): CW_PY_OFF; CW_PY_SLOW, the default, walks at the
 * return of a slow call only (the calling thread's Python frames are the
 * same at return as at entry: the call is synchronous), so fast calls pay
 * a per-CPU mean update instead of a walk of microseconds; CW_PY_ALL walks
 * at every entry. A call is slow when it took at least cfg_py_floor_ns and
 * 3x its op's running mean (per CPU, over every traced process's calls:
 * asking whether the caller is a Python process is a hash lookup, so it is
 * asked of slow calls only). A failing call is walked too, whatever its
 * time: failures are causes explain names with their line (a failing
 * call returns fast); codes that report a state are not failures
 * (cudaErrorNotReady and CUDA_ERROR_NOT_READY, 600, from a query;
 * ncclInProgress, 7, from a non-blocking communicator). */
const volatile __u8 cfg_py_mode = CW_PY_SLOW;
const volatile __u64 cfg_py_floor_ns = 10000;
/* 1: the calling thread's native user stack (frame-pointer walk) after each
 * call entry (trace --native-stacks). Off by default: code built without
 * frame pointers yields one or two frames, and the walk costs per call. */
const volatile __u8 cfg_native_stacks = 0;

/* --capture summary: fold fast calls in the kernel (cuda.bpf.h, fold_call
 * below). 0 keeps a full record of every call. */
const volatile __u8 cfg_capture_summary = 0;
/* Every cfg_fold_sample-th foldable call of a (thread, op, second), the
 * first included, keeps its full record (a power of two). */
const volatile __u32 cfg_fold_sample = 128;

/* Set by userspace (src/trace/fold.c): the monotonic -> wall-clock offset
 * the pipeline stamps rows with, so a folded call lands in the same wall
 * second its row would have; and per op, the duration under which a call
 * is fast (0: no estimate yet, nothing folds). Globals, not maps: a load
 * each, no lookup. */
__s64 fold_wall_off = 0;
__u64 fold_thresh[CW_OP_MAX];

/* 1: only calls of threads whose cgroup v2 id is in cw_cgroup_allow. */
const volatile __u8 cfg_filter_cgroup = 0;

/* The cgroups a tenant filter allows, descendants included: userspace
 * walks the tree and adds each one as it appears (src/tenant/allow.c).
 * A hash lookup on a u64 key: one per call entry, only with a filter;
 * four loads reach the key (task -> css_set -> cgroup -> kernfs node). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CW_CGROUP_ALLOW_MAX);
	__type(key, __u64);
	__type(value, __u8);
} cw_cgroup_allow SEC(".maps");

static __always_inline int cw_cgroup_allowed(__u64 id)
{
	return bpf_map_lookup_elem(&cw_cgroup_allow, &id) != 0;
}

CW_DECLARE_RING(rb_cuda, 8 << 20);

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_CS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} cuda_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_OP_MAX);
	__type(key, __u32);
	__type(value, struct cw_cuda_agg);
} agg_hist SEC(".maps");

/* Folded calls (cuda.bpf.h). Preallocated: an update never allocates on
 * the traced thread; a full map is counted and the call kept whole. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CW_FOLD_MAX);
	__type(key, struct cw_fold_key);
	__type(value, struct cw_fold_val);
} fold_hist SEC(".maps");

/* The first tier (cuda.bpf.h, struct cw_fold_slot); the loader sizes it
 * and sets cfg_fold_slot_mask to its entries - 1. */
const volatile __u32 cfg_fold_slot_mask = CW_FOLD_SLOTS - 1;
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, CW_FOLD_SLOTS);
	__type(key, __u32);
	__type(value, struct cw_fold_slot);
} fold_slots SEC(".maps");

/* An all-zero value to create fold_hist entries from (the BPF stack is
 * too small for one); never written. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cw_fold_val);
} fold_zero SEC(".maps");

/* A process's first foldable calls of an op: a word (pid << 32) | (op <<
 * 16) | count in first_slots[hash(pid, op)]. A slot another (pid, op)
 * holds is taken over with count 1: a collision keeps more full records,
 * never fewer. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, CW_FOLD_FIRST_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} first_slots SEC(".maps");

/* Each thread's current CUDA device (cudaSetDevice, cuCtxSetCurrent),
 * read at every call entry. Direct-mapped by tid like the open calls: a
 * word (tid << 32) | (device + 1) in dev_slots[tid % DEV_SLOTS], device
 * + 1 == 0 meaning none; a thread whose word another thread holds keeps
 * its device in tid_dev, which is only looked up once something went
 * there (tid_dev_used). */
#define DEV_SLOTS 65536
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DEV_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} dev_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __s32);
} tid_dev SEC(".maps");

__u32 tid_dev_used = 0;

static __always_inline __s32 thread_device(__u32 tid)
{
	__u32 i = tid & (DEV_SLOTS - 1);
	__u64 *w = bpf_map_lookup_elem(&dev_slots, &i), v;
	__s32 *d;

	if (w) {
		v = *w;
		if ((__u32)(v >> 32) == tid)
			return (__s32)(__u32)v - 1;
	}
	if (!tid_dev_used)
		return -1;
	d = bpf_map_lookup_elem(&tid_dev, &tid);
	return d ? *d : -1;
}

/* dev < 0: the thread has no current device. */
static __always_inline void set_thread_device(__u32 tid, __s32 dev)
{
	__u32 i = tid & (DEV_SLOTS - 1);
	__u64 *w = bpf_map_lookup_elem(&dev_slots, &i), v, nv;
	__u32 holder;

	nv = ((__u64)tid << 32) | (__u32)(dev < 0 ? 0 : dev + 1);
	if (w) {
		v = *w;
		holder = (__u32)(v >> 32);
		if ((holder == 0 || holder == tid) && __sync_val_compare_and_swap(w, v, nv) == v)
			return;
	}
	if (dev < 0) {
		bpf_map_delete_elem(&tid_dev, &tid);
		return;
	}
	tid_dev_used = 1;
	bpf_map_update_elem(&tid_dev, &tid, &dev, BPF_ANY);
}

/* Forgets an exited thread's device, so a thread that is later given the
 * same tid (pids wrap) starts with none, as a new thread does. */
static __always_inline void forget_thread_device(__u32 tid)
{
	__u32 i = tid & (DEV_SLOTS - 1);
	__u64 *w = bpf_map_lookup_elem(&dev_slots, &i), v;

	if (w) {
		v = *w;
		if (v && (__u32)(v >> 32) == tid)
			__sync_val_compare_and_swap(w, v, 0);
	}
	if (tid_dev_used)
		bpf_map_delete_elem(&tid_dev, &tid);
}

/* CUcontext -> device, learned when contexts are created or retained. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __s32);
} ctx_dev SEC(".maps");

/* Open calls (cuda.bpf.h): the slot table, and the hash map for calls
 * whose slot another open call holds. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, CW_CALL_SLOTS);
	__type(key, __u32);
	__type(value, struct cw_call_slot);
} call_slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cw_call_key);
	__type(value, struct cw_call_state);
} call_state SEC(".maps");

static __always_inline struct cw_call_slot *call_slot(const struct cw_call_key *k)
{
	__u32 idx = cw_call_slot_index(k->tid, k->op);

	return bpf_map_lookup_elem(&call_slots, &idx);
}

/* Claims k's slot for a new open call: when it is free, or holds an
 * older call of the same thread and op that never returned. The slot comes
 * back with its type cleared; the caller fills it and sets the type last
 * (cw_call_slot). NULL when another open call holds it. */
static __always_inline struct cw_call_slot *claim_slot(const struct cw_call_key *k)
{
	__u64 me = CW_CALL_OWNER(k->tid, k->op), held;
	struct cw_call_slot *s = call_slot(k);

	if (!s)
		return NULL;
	held = __sync_val_compare_and_swap(&s->owner, 0, me);
	if (held != 0 && held != me)
		return NULL;
	s->st.e.hdr.type = 0;
	barrier();
	return s;
}

/* Keeps st as k's open call: in its slot when claim_slot gets it, else in
 * call_state. Returns nonzero when neither had room. */
static __always_inline int keep_open(const struct cw_call_key *k, const struct cw_call_state *st)
{
	struct cw_call_slot *s = claim_slot(k);

	if (s) {
		__builtin_memcpy(&s->st, st, sizeof(*st));
		barrier();
		s->st.e.hdr.type = st->e.hdr.type;
		return 0;
	}
	return bpf_map_update_elem(&call_state, k, st, BPF_ANY);
}

/* k's open call, and where it is: *slot is set when it is in call_slots. */
static __always_inline struct cw_call_state *find_open(const struct cw_call_key *k, struct cw_call_slot **slot)
{
	struct cw_call_slot *s = call_slot(k);

	if (s && s->owner == CW_CALL_OWNER(k->tid, k->op)) {
		*slot = s;
		return &s->st;
	}
	*slot = NULL;
	return bpf_map_lookup_elem(&call_state, k);
}

/* Ends k's open call. Returns 0 when this return owned it; nonzero when
 * userspace took it meanwhile as unfinished (cw_cuda_probes_take_inflight),
 * and then the return must not emit it too. */
static __always_inline int close_open(const struct cw_call_key *k, struct cw_call_slot *slot)
{
	__u64 me = CW_CALL_OWNER(k->tid, k->op);

	if (!slot)
		return bpf_map_delete_elem(&call_state, k) != 0;
	/* The type is cleared before the slot is freed, so a sweep never
	 * takes this thread's next call for this one; only while the slot is
	 * still ours (after a sweep took it, another call may be filling it). */
	if (slot->owner != me)
		return 1;
	slot->st.e.hdr.type = 0;
	return __sync_val_compare_and_swap(&slot->owner, me, 0) != me;
}

/* The argument registers and stack pointer, loaded once at the top of a
 * program: the verifier refuses ctx loads at computed offsets, which is
 * what clang makes of PT_REGS_PARMn() spread over switch arms. */
struct uregs {
	__u64 p[CW_REG_ARGS];
	__u64 sp;
};

static __always_inline void load_regs(struct pt_regs *ctx, struct uregs *r)
{
	CW_LOAD_REG_ARGS(ctx, r->p);
	r->sp = PT_REGS_SP(ctx);
}

static __always_inline void submit(void *rec, __u64 size)
{
	cw_submit(&rb_cuda, rec, size);
}

static __always_inline void cs_count(__u32 idx)
{
	cw_count(&cuda_stats, idx);
}

static __always_inline __u32 drop_idx(__u32 src)
{
	if (src == CW_SRC_DRIVER)
		return CW_DROP_DRIVER;
	if (src == CW_SRC_NCCL)
		return CW_DROP_NCCL;
	return CW_DROP_CUDA;
}

/* Whether task t's calls are traced: cfg_filter_tracked, then (trace
 * --cgroup/--container/--pod/--slurm-job) its cgroup must be allowed. */
static __always_inline int traced(struct task_struct *t)
{
	if (cfg_filter_tracked && !cw_tgid_tracked(cw_task_tgid(t, true)))
		return 0;
	return !cfg_filter_cgroup || cw_cgroup_allowed(cw_task_cgroup(t, true));
}

/* The n-th integer argument (n >= 7) of a function at its first
 * instruction: a register up to CW_REG_ARGS (6 on x86-64, 8 on AArch64),
 * then the stack (args.bpf.h). n is a constant at every call. */
static __always_inline __u64 stack_arg(const struct uregs *r, int n)
{
	__u64 v = 0;

	if (n <= CW_REG_ARGS)
		return r->p[n - 1];
	bpf_probe_read_user(&v, sizeof(v), (void *)(r->sp + CW_STACK_ARG_OFF(n)));
	return v;
}

static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) { v >>= 32; r += 32; }
	if (v >> 16) { v >>= 16; r += 16; }
	if (v >> 8) { v >>= 8; r += 8; }
	if (v >> 4) { v >>= 4; r += 4; }
	if (v >> 2) { v >>= 2; r += 2; }
	if (v >> 1) r += 1;
	return r;
}

/* The communicator id every rank of one communicator shares: a hash of
 * its 128-byte ncclUniqueId (NCCL_UNIQUE_ID_BYTES in nccl.h), which rank
 * 0 created and every rank received, so ranks on different nodes agree.
 * FNV-1a over the id's 16 words (pipeline/nccl_track.h CW_NCCL_UID_HASH
 * is the same function); 0 when the id is unreadable. */
static __always_inline __u64 unique_id_hash(__u64 addr)
{
	__u64 h = 0xcbf29ce484222325ULL, w;

	for (int i = 0; i < 16; i++) {
		w = 0;
		if (bpf_probe_read_user(&w, sizeof(w), (const void *)(addr + 8 * i)))
			return 0;
		h ^= w;
		h *= 0x100000001b3ULL;
	}
	return h ? h : 1;
}

/* Arguments as stored: ABI order, except where the op's interesting values
 * would not fit the four columns the store keeps (args[0..3]):
 *  - memcpy/memset: bytes in args[2], cudaMemcpyKind in args[3];
 *  - launches: the function handle in args[0] (kernel name lookup);
 *  - NCCL: count, datatype, reduction op or peer/root, comm. */
static __always_inline void fill_args(const struct uregs *r, __u32 op, __u64 *a)
{
	__u64 p1 = r->p[0], p2 = r->p[1], p3 = r->p[2], p4 = r->p[3], p5 = r->p[4], p6 = r->p[5];
	const __u64 na = (__u64)-1; /* not applicable */

	a[0] = p1; a[1] = p2; a[2] = p3; a[3] = p4; a[4] = p5; a[5] = p6;
	switch (op) {
	case CW_OP_cudaLaunchKernel:
		/* (func, dim3 grid, dim3 block, args, sharedMem, stream): a 12-byte
		 * dim3 travels in two registers (x|y<<32, z), so the grid is
		 * p2/p3, the block p4/p5, and the stream is the 8th slot. */
		a[5] = stack_arg(r, 8);
		break;
	case CW_OP_cudaLaunchKernelExC: /* (config *, func, args) */
	case CW_OP_cuLaunchKernelEx:    /* (config *, f, params, extra) */
		a[0] = p2; a[1] = p1;
		break;
	case CW_OP_cudaMemcpy2D:      /* (dst, dpitch, src, spitch, width, height, kind) */
	case CW_OP_cudaMemcpy2DAsync: /* ... kind, stream) */
		a[0] = p1; a[1] = p3; a[2] = p5 * p6; a[3] = stack_arg(r, 7); a[4] = p5; a[5] = p6;
		break;
	case CW_OP_cudaMemcpyPeer:      /* (dst, dstDev, src, srcDev, count) */
	case CW_OP_cudaMemcpyPeerAsync: /* ... count, stream) */
		a[0] = p1; a[1] = p3; a[2] = p5; a[3] = 3 /* cudaMemcpyDeviceToDevice */; a[4] = p2; a[5] = p4;
		break;
	case CW_OP_cuMemcpy:      /* (dst, src, bytes) */
	case CW_OP_cuMemcpyAsync: /* ... stream) */
		a[3] = 4; /* cudaMemcpyDefault: unified addressing decides */
		a[4] = op == CW_OP_cuMemcpyAsync ? p4 : 0;
		break;
	case CW_OP_cuMemcpyHtoD:
	case CW_OP_cuMemcpyHtoDAsync:
		a[3] = 1;
		a[4] = op == CW_OP_cuMemcpyHtoDAsync ? p4 : 0;
		break;
	case CW_OP_cuMemcpyDtoH:
	case CW_OP_cuMemcpyDtoHAsync:
		a[3] = 2;
		a[4] = op == CW_OP_cuMemcpyDtoHAsync ? p4 : 0;
		break;
	case CW_OP_cuMemcpyDtoD:
	case CW_OP_cuMemcpyDtoDAsync:
		a[3] = 3;
		a[4] = op == CW_OP_cuMemcpyDtoDAsync ? p4 : 0;
		break;
	/* NCCL 2.x signatures (nccl.h of 2.28). Collectives and p2p: count,
	 * datatype, reduction op / root / peer, comm, stream, and the root of
	 * ncclReduce (docs/probes-cuda.md); the per-communicator sequence
	 * number is counted in userspace (pipeline/nccl_track.c). */
	case CW_OP_ncclAllReduce:     /* (send, recv, count, dtype, op, comm, stream) */
	case CW_OP_ncclReduceScatter: /* (send, recv, recvcount, dtype, op, comm, stream) */
	case CW_OP_ncclBroadcast:     /* (send, recv, count, dtype, root, comm, stream) */
		a[0] = p3; a[1] = p4; a[2] = p5; a[3] = p6; a[4] = stack_arg(r, 7); a[5] = na;
		break;
	case CW_OP_ncclAllGather: /* (send, recv, sendcount, dtype, comm, stream) */
	case CW_OP_ncclAlltoAll:  /* (send, recv, count, dtype, comm, stream) */
		a[0] = p3; a[1] = p4; a[2] = na; a[3] = p5; a[4] = p6; a[5] = na;
		break;
	case CW_OP_ncclReduce: /* (send, recv, count, dtype, op, root, comm, stream) */
		a[0] = p3; a[1] = p4; a[2] = p5; a[3] = stack_arg(r, 7); a[4] = stack_arg(r, 8); a[5] = p6;
		break;
	case CW_OP_ncclBcast: /* (buff, count, dtype, root, comm, stream) */
	case CW_OP_ncclSend:  /* (send, count, dtype, peer, comm, stream) */
	case CW_OP_ncclRecv:  /* (recv, count, dtype, peer, comm, stream) */
		a[0] = p2; a[1] = p3; a[2] = p4; a[3] = p5; a[4] = p6; a[5] = na;
		break;
	case CW_OP_ncclCommInitRank: /* (comm *, nranks, ncclUniqueId, rank): the
				      * 128-byte id is passed in memory: on x86-64
				      * at the caller's stack, sp + 8 at the first
				      * instruction, so rank is the third register;
				      * on AArch64 by reference in the third, so
				      * rank is the fourth (args.bpf.h) */
	case CW_OP_ncclCommInitRankConfig: /* ... rank, config *) */
		a[0] = p2; a[2] = r->p[2 + CW_BIG_BYVAL_REGS]; a[3] = p1;
		a[1] = unique_id_hash(CW_BIG_BYVAL_REGS ? p3 : r->sp + 8);
		a[4] = op == CW_OP_ncclCommInitRankConfig ? r->p[3 + CW_BIG_BYVAL_REGS] : 0; a[5] = 0;
		break;
	case CW_OP_ncclCommInitRankScalable: /* (comm *, nranks, rank, nId, ncclUniqueId *ids, config *) */
		a[0] = p2; a[1] = unique_id_hash(p5); a[2] = p3; a[3] = p1; a[4] = p4; a[5] = 0;
		break;
	case CW_OP_ncclCommInitAll: /* (comm *, ndev, devlist) */
		a[0] = p2; a[1] = na; a[2] = na; a[3] = p1; a[4] = p3; a[5] = 0;
		break;
	case CW_OP_ncclCommSplit: /* (comm, color, key, newcomm *, config *) */
		a[0] = p2; a[1] = p3; a[2] = na; a[3] = p1; a[4] = p4; a[5] = 0;
		break;
	case CW_OP_ncclCommDestroy:  /* (comm) */
	case CW_OP_ncclCommAbort:    /* (comm) */
	case CW_OP_ncclCommFinalize: /* (comm) */
		a[0] = 0; a[1] = na; a[2] = na; a[3] = p1; a[4] = 0; a[5] = 0;
		break;
	case CW_OP_ncclCommGetAsyncError: /* (comm, ncclResult_t *asyncError) */
		a[0] = 0; a[1] = na; a[2] = na; a[3] = p1; a[4] = p2; a[5] = 0;
		break;
	case CW_OP_ncclGroupStart:
	case CW_OP_ncclGroupEnd:
		a[0] = a[1] = a[2] = a[3] = a[4] = a[5] = 0;
		break;
	default:
		break;
	}
}

/* Ops with work at return: what to remember at entry. */
static __always_inline int return_work(const struct uregs *r, __u32 op, __u64 *a, __u64 *b)
{
	switch (op) {
	case CW_OP_cudaSetDevice:   /* (int device) */
	case CW_OP_cuCtxSetCurrent: /* (CUcontext) */
		*a = r->p[0];
		return 1;
	case CW_OP_cuModuleGetFunction: /* (CUfunction *, CUmodule, const char *name) */
	case CW_OP_cuLibraryGetKernel:  /* (CUkernel *, CUlibrary, const char *name) */
		*a = r->p[0];
		*b = r->p[2];
		return 1;
	case CW_HOOK_PRIMARY_CTX_RETAIN: /* (CUcontext *, CUdevice) */
		*a = r->p[0];
		*b = r->p[1];
		return 1;
	case CW_HOOK_CTX_CREATE_V2: /* (CUcontext *, flags, CUdevice) */
		*a = r->p[0];
		*b = r->p[2];
		return 1;
	case CW_HOOK_CTX_CREATE_V3: /* (CUcontext *, params, numParams, flags, CUdevice) */
		*a = r->p[0];
		*b = r->p[4];
		return 1;
	case CW_HOOK_CTX_CREATE_V4: /* (CUcontext *, CUctxCreateParams *, flags, CUdevice) */
		*a = r->p[0];
		*b = r->p[3];
		return 1;
	default:
		return 0;
	}
}

static __always_inline void emit_kernel_name(__u64 handle, __u64 name_ptr)
{
	struct cw_kernel_name *k;

	k = bpf_ringbuf_reserve(&rb_cuda, sizeof(*k), 0);
	if (!k) {
		cw_drop(CW_DROP_KNAME);
		cs_count(CW_CS_KNAME_DROPPED);
		return;
	}
	cw_hdr_current(&k->hdr, CW_REC_KERNEL_NAME, sizeof(*k), CW_SRC_CUDA, CW_OP_kernel_name);
	k->handle = handle;
	if (bpf_probe_read_user_str(k->name, sizeof(k->name), (const void *)name_ptr) < 0) {
		/* Not paged in yet (nvcc's registration constructor runs before
		 * the executable's .rodata was touched) and a uprobe cannot
		 * fault: leave the address for userspace to read
		 * (CW_KNAME_DEFERRED in cuda.bpf.h). */
		k->name[0] = 0;
		__builtin_memcpy(&k->name[8], &name_ptr, sizeof(name_ptr));
	}
	submit(k, sizeof(*k));
}

/* op -> running mean duration of the op's calls (ns, 1/16 EWMA). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_OP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} py_mean SEC(".maps");

/* CW_PY_SLOW, at return, before the call record is reserved (so the stack
 * record precedes it in the ring): a slow call of a registered Python
 * process gets its stack, stamped with the entry's header. Returns 1 when
 * emitted. */
static __always_inline int call_failed(__u32 src, int ret)
{
	return ret != 0 && ret != 600 && !(src == CW_SRC_NCCL && ret == 7);
}

/* Adds d to op's running mean; returns the mean before, or -1 when the
 * map has no slot. */
static __always_inline __s64 py_mean_add(__u32 op, __u64 d)
{
	__u64 *mean = bpf_map_lookup_elem(&py_mean, &op), m;

	if (!mean)
		return -1;
	m = *mean;
	*mean = d >= m ? m + ((d - m) >> 4) : m - ((m - d) >> 4);
	return (__s64)m;
}

/* force: walk whatever the call's time (a failing call, the sample of
 * --capture summary). */
static __always_inline int py_stack_at_return(const struct cw_call_state *s, __u32 op, __u64 now, int force)
{
	__u64 ts = s->e.hdr.ts_ns, d;
	struct cw_hdr h;
	__s64 m;

	d = now > ts ? now - ts : 0;
	m = py_mean_add(op, d);
	if (m < 0)
		return 0;
	if (!force && (d < cfg_py_floor_ns || d < 3 * (__u64)m))
		return 0;
	if (!bpf_map_lookup_elem(&cw_py_procs, &s->e.hdr.pid))
		return 0;
	__builtin_memcpy(&h, &s->e.hdr, sizeof(h));
	return cw_emit_pystack(&rb_cuda, &h);
}

/* Per-CPU scratch for a native stack: bpf_get_stack fills it, then one
 * bpf_ringbuf_output copies only the frames found. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cw_ustack);
} ustack_scratch SEC(".maps");

/* Emits a CW_REC_USTACK with e's header now; the call record that
 * follows at return carries CW_CALL_F_USTACK. */
static __always_inline void capture_ustack(struct pt_regs *ctx, struct cw_call_entry *e)
{
	struct cw_ustack *s;
	__u32 zero = 0;
	long n;

	s = bpf_map_lookup_elem(&ustack_scratch, &zero);
	if (!s)
		return;
	n = bpf_get_stack(ctx, s->ips, sizeof(s->ips), BPF_F_USER_STACK);
	if (n <= 0)
		return;
	__builtin_memcpy(&s->hdr, &e->hdr, sizeof(s->hdr));
	s->hdr.type = CW_REC_USTACK;
	s->hdr.size = sizeof(*s);
	s->nips = (__u32)n / sizeof(s->ips[0]);
	s->pad = 0;
	/* Woken like Python stacks: symbolizing reads the process's maps. */
	if (bpf_ringbuf_output(&rb_cuda, s, sizeof(*s), 0)) {
		cw_drop(CW_DROP_USTACK);
		return;
	}
	e->flags |= CW_CALL_F_USTACK;
}

/* Fills an open call's state in place (its slot, or the stack when the
 * slot is held), all but e.hdr.type; the stack records of CW_PY_ALL and
 * --native-stacks go on the ring now, ahead of the call record. */
static __always_inline void fill_call(struct pt_regs *ctx, const struct uregs *r, struct task_struct *t,
				      __u32 op, __u32 src, struct cw_call_state *st)
{
	/* The header from the task's BTF pointer: plain loads where the pid,
	 * cgroup and comm helpers were three helper calls per traced call
	 * (uprobe cookies need kernel >= 5.15 already, get_current_task_btf
	 * 5.11). Type 0: the caller publishes it. */
	cw_hdr_task_from(&st->e.hdr, 0, sizeof(struct cw_call), src, op, t, true);
	st->a = 0;
	st->b = 0;
	st->work = return_work(r, op, &st->a, &st->b);
	fill_args(r, op, st->e.args);
	st->e.device = thread_device(st->e.hdr.tid);
	st->e.flags = 0;
	st->pad = 0;
	if (cfg_py_mode == CW_PY_ALL)
		cw_capture_pystack(&rb_cuda, &st->e);
	if (cfg_native_stacks)
		capture_ustack(ctx, &st->e);
}

/* The single path every call entry takes: the entry is built where it
 * stays open, in its slot (no copy) or, when another call holds the slot,
 * on the stack and then in call_state. */
static __always_inline int open_call(struct pt_regs *ctx, const struct uregs *r, struct task_struct *t, __u32 op,
				     __u32 src)
{
	struct cw_call_slot *slot;
	struct cw_call_state st;
	struct cw_call_key k;

	k.tid = cw_task_tid(t, true);
	k.op = op;
	slot = claim_slot(&k);
	if (slot) {
		fill_call(ctx, r, t, op, src, &slot->st);
		barrier();
		slot->st.e.hdr.type = CW_REC_CALL;
		return 0;
	}
	fill_call(ctx, r, t, op, src, &st);
	st.e.hdr.type = CW_REC_CALL;
	if (bpf_map_update_elem(&call_state, &k, &st, BPF_ANY))
		cs_count(CW_CS_STATE_FULL);
	return 0;
}

static __always_inline void set_ctx_device(__u64 pctx, __u64 dev)
{
	__u64 c = 0;
	__s32 d = (__s32)dev;

	if (bpf_probe_read_user(&c, sizeof(c), (const void *)pctx) == 0 && c)
		bpf_map_update_elem(&ctx_dev, &c, &d, BPF_ANY);
}

/* The graph a capture produced and the exec an instantiation produced,
 * read through the output pointer at return into an argument slot the
 * function does not use, so graph ids can be followed from capture to
 * launch (docs/probes-cuda.md):
 *  - cudaStreamEndCapture(stream, cudaGraph_t *): args[2] = the graph;
 *  - cudaGraphInstantiate(cudaGraphExec_t *, graph, ...) and the
 *    WithFlags forms (runtime and driver): args[3] = the exec
 *    (cudaGraphInstantiate has three parameters since CUDA 12, the
 *    WithFlags forms three). */
static __always_inline void graph_handle_out(__u32 op, struct cw_call_entry *e)
{
	__u64 h = 0;

	switch (op) {
	case CW_OP_cudaStreamEndCapture:
		if (bpf_probe_read_user(&h, sizeof(h), (const void *)e->args[1]) == 0)
			e->args[2] = h;
		break;
	case CW_OP_cudaGraphInstantiate:
	case CW_OP_cudaGraphInstantiateWithFlags:
	case CW_OP_cuGraphInstantiateWithFlags:
		if (bpf_probe_read_user(&h, sizeof(h), (const void *)e->args[0]) == 0)
			e->args[3] = h;
		break;
	default:
		break;
	}
}

/* Work at return, whether or not the call itself was emitted: the device
 * and kernel-name state must stay right even while the ring is full. */
static __always_inline void do_return_work(__u32 op, const struct cw_call_state *s, __u32 tid, int ret)
{
	__s32 *cd;
	__u64 h = 0;

	if (ret != 0)
		return;
	switch (op) {
	case CW_OP_cudaSetDevice:
		set_thread_device(tid, (__s32)s->a);
		break;
	case CW_OP_cuCtxSetCurrent:
		if (!s->a) {
			set_thread_device(tid, -1);
			break;
		}
		cd = bpf_map_lookup_elem(&ctx_dev, &s->a);
		if (cd)
			set_thread_device(tid, *cd);
		break;
	case CW_OP_cuModuleGetFunction:
	case CW_OP_cuLibraryGetKernel:
		if (bpf_probe_read_user(&h, sizeof(h), (const void *)s->a) == 0 && h)
			emit_kernel_name(h, s->b);
		break;
	case CW_HOOK_PRIMARY_CTX_RETAIN:
	case CW_HOOK_CTX_CREATE_V2:
	case CW_HOOK_CTX_CREATE_V3:
	case CW_HOOK_CTX_CREATE_V4:
		set_ctx_device(s->a, s->b);
		break;
	default:
		break;
	}
}

/* NCCL outputs known at return: the communicator an init or split
 * created (read through its output pointer, args[3] or args[4], into
 * args[5]), and the error ncclCommGetAsyncError reported (into args[2]). */
static __always_inline void nccl_return_args(__u32 op, struct cw_call_entry *e)
{
	__u64 v = 0;
	__s32 err = 0;

	switch (op) {
	case CW_OP_ncclCommInitRank:
	case CW_OP_ncclCommInitRankConfig:
	case CW_OP_ncclCommInitRankScalable:
	case CW_OP_ncclCommInitAll: /* the first of the ndev comms */
		if (bpf_probe_read_user(&v, sizeof(v), (const void *)e->args[3]) == 0)
			e->args[5] = v;
		break;
	case CW_OP_ncclCommSplit:
		if (bpf_probe_read_user(&v, sizeof(v), (const void *)e->args[4]) == 0)
			e->args[5] = v;
		break;
	case CW_OP_ncclCommGetAsyncError:
		if (bpf_probe_read_user(&err, sizeof(err), (const void *)e->args[4]) == 0)
			e->args[2] = (__u64)(__s64)err;
		break;
	default:
		break;
	}
}

static __always_inline void agg_add(__u32 op, __u64 d)
{
	struct cw_cuda_agg *h = bpf_map_lookup_elem(&agg_hist, &op);
	__u32 b;

	if (!h)
		return;
	h->count++;
	h->sum_ns += d;
	if (d > h->max_ns)
		h->max_ns = d;
	b = log2_u64(d) & (CW_AGG_BUCKETS - 1);
	h->buckets[b]++;
}

/* util/hist.c cw_hist_bucket: 8 linear buckets per power of two. */
static __always_inline __u32 fold_bucket(__u64 ns)
{
	__u32 msb;

	if (ns < (1u << CW_FOLD_HIST_SUB_BITS))
		return (__u32)ns;
	msb = log2_u64(ns);
	return (msb - CW_FOLD_HIST_SUB_BITS + 1) * (1u << CW_FOLD_HIST_SUB_BITS) +
	       ((__u32)(ns >> (msb - CW_FOLD_HIST_SUB_BITS)) & ((1u << CW_FOLD_HIST_SUB_BITS) - 1));
}

/* (pid, op)'s word in first_slots. */
static __always_inline __u32 first_slot(__u32 pid, __u32 op)
{
	return ((pid * 0x9E3779B1u) ^ (op * 0x85EBCA77u)) >> 8 & (CW_FOLD_FIRST_SLOTS - 1);
}

/* A process's first-call words go with it, so a process later given the
 * same pid (pids wrap) keeps its own first calls' rows, as any new
 * process does, instead of folding from its first call on. Once per
 * process (at its last thread's exit), one word per op. */
static __always_inline void forget_first_calls(__u32 pid)
{
	__u32 op, i;
	__u64 *w, v;

	for (op = 1; op < CW_HOOK_REGISTER_FUNCTION; op++) {
		i = first_slot(pid, op);
		w = bpf_map_lookup_elem(&first_slots, &i);
		if (!w)
			continue;
		v = *w;
		if ((v & ~0xffffULL) == (((__u64)pid << 32) | ((__u64)op << 16)))
			__sync_val_compare_and_swap(w, v, 0);
	}
}

/* k's value in fold_slots: its LIVE slot, or the slot it claims when that
 * is FREE (zeroed by the drain); NULL when another key holds the slot. */
static __always_inline struct cw_fold_val *fold_in_slot(const struct cw_fold_key *k)
{
	__u32 i = cw_fold_slot_index(k->tid, k->op, k->second, cfg_fold_slot_mask);
	struct cw_fold_slot *s = bpf_map_lookup_elem(&fold_slots, &i);
	__u64 st;

	if (!s)
		return NULL;
	st = s->state;
	if (st == CW_FOLD_SLOT_LIVE) {
		if (s->key.tid == k->tid && s->key.op == k->op && s->key.second == k->second && s->key.pid == k->pid)
			return &s->val;
		return NULL;
	}
	if (st != CW_FOLD_SLOT_FREE ||
	    __sync_val_compare_and_swap(&s->state, CW_FOLD_SLOT_FREE, CW_FOLD_SLOT_FILLING) != CW_FOLD_SLOT_FREE)
		return NULL;
	__builtin_memcpy(&s->key, k, sizeof(*k));
	barrier();
	s->state = CW_FOLD_SLOT_LIVE;
	return &s->val;
}

/* --capture summary, for a successful non-NCCL call that took d ns:
 * returns 1 when it was folded into fold_hist (no record), 0 when it keeps
 * its full record, with *sample set when it is the sample. Each reason to
 * keep a foldable call is counted, so userspace can account for every
 * call: folded (drained) + kept (rows). */
static __always_inline int fold_call(const struct cw_call_state *s, __u32 op, __u64 d, int *sample)
{
	__u32 pid = s->e.hdr.pid, i, z = 0;
	struct cw_fold_val *f, *zero;
	struct cw_fold_key k;
	__u64 th, *w, me, v;

	/* The mask is the verifier's bound on the index: clang 16 and 19 knew
	 * op < CW_OP_MAX from an earlier test and dropped it, and the
	 * verifier, which had not tied that test to this register, refused
	 * the load ("R2 max value is outside of the allowed memory range").
	 * barrier_var hides what clang knows, so the mask stays. */
	i = op;
	barrier_var(i);
	th = fold_thresh[i & (CW_OP_MAX - 1)];
	if (d >= th || d >= CW_FOLD_MAX_NS) {
		cs_count(CW_CS_KEPT_SLOW);
		return 0;
	}
	i = first_slot(pid, op);
	w = bpf_map_lookup_elem(&first_slots, &i);
	if (!w)
		return 0;
	me = ((__u64)pid << 32) | ((__u64)op << 16);
	v = *w;
	if ((v & ~0xffffULL) != me || (v & 0xffff) < CW_FOLD_FIRST) {
		*w = (v & ~0xffffULL) != me ? me | 1 : v + 1;
		cs_count(CW_CS_KEPT_FIRST);
		return 0;
	}
	k.pid = pid;
	k.tid = s->e.hdr.tid;
	k.op = op;
	k.pad = 0;
	/* Unsigned: BPF has no signed division before cpu v4; wall time is
	 * positive. */
	k.second = (__s64)((s->e.hdr.ts_ns + (__u64)fold_wall_off) / 1000000000ULL);
	f = fold_in_slot(&k);
	if (!f)
		f = bpf_map_lookup_elem(&fold_hist, &k);
	if (!f) {
		zero = bpf_map_lookup_elem(&fold_zero, &z);
		if (!zero || bpf_map_update_elem(&fold_hist, &k, zero, BPF_NOEXIST) ||
		    !(f = bpf_map_lookup_elem(&fold_hist, &k))) {
			cs_count(CW_CS_FOLD_FULL);
			return 0;
		}
	}
	if ((f->seen++ & (cfg_fold_sample - 1)) == 0) {
		*sample = 1;
		cs_count(CW_CS_KEPT_SAMPLED);
		return 0;
	}
	if (!f->count || d < f->min_ns)
		f->min_ns = d;
	f->count++;
	f->sum_ns += d;
	if (d > f->max_ns)
		f->max_ns = d;
	f->buckets[fold_bucket(d) & (CW_FOLD_BUCKETS - 1)]++;
	return 1;
}

/* A call's entry, op and source in cookie. Returns 1 when its return has
 * nothing to do (a process not traced, a registration, a hook with no
 * work at return), which a session program uses to skip the return; 0
 * otherwise, with *tid the calling thread. */
static __always_inline int enter_call(struct pt_regs *ctx, __u64 cookie, __u32 *tid)
{
	__u32 op = CW_COOKIE_OP(cookie);
	struct task_struct *t = bpf_get_current_task_btf();
	struct cw_call_key k;
	struct cw_call_state st;
	struct uregs r;

	if (!traced(t))
		return 1;
	load_regs(ctx, &r);
	if (op == CW_HOOK_REGISTER_FUNCTION) {
		/* (void **fatCubinHandle, const char *hostFun, char *deviceFun,
		 *  const char *deviceName, ...): launches pass hostFun. */
		emit_kernel_name(r.p[1], r.p[2]);
		return 1;
	}
	*tid = cw_task_tid(t, true);
	if (op >= CW_HOOK_PRIMARY_CTX_RETAIN) {
		__builtin_memset(&st, 0, sizeof(st));
		k.tid = *tid;
		k.op = op;
		st.work = return_work(&r, op, &st.a, &st.b);
		if (!st.work)
			return 1;
		keep_open(&k, &st);
		return 0;
	}
	/* Also when the call found no room (counted): its return is then
	 * counted as orphaned, as without sessions. */
	open_call(ctx, &r, t, op, CW_COOKIE_SRC(cookie));
	return 0;
}

static __always_inline int enter_body(struct pt_regs *ctx)
{
	__u32 tid;

	enter_call(ctx, bpf_get_attach_cookie(ctx), &tid);
	return 0;
}

/* A call's return: op and source from the attach cookie, tid the calling
 * thread (a session program has all three in its session cookie). */
static __always_inline int return_call(struct pt_regs *ctx, __u32 op, __u32 src, __u32 tid)
{
	int ret = (int)PT_REGS_RC(ctx);
	struct cw_call_slot *slot;
	struct cw_call_state *sp;
	struct cw_call_key k;
	struct cw_call *c;
	__u64 now, avail, d;
	__u32 pyflag = 0;
	int failed, sample = 0;

	/* No tracked check: an open call exists only for a call whose entry
	 * passed it. */
	k.tid = tid;
	k.op = op;
	sp = find_open(&k, &slot);
	if (!sp) {
		/* A return whose entry was missed (the probes attached
		 * mid-call), not one of a process that is not traced: the pair
		 * runs every process's returns. */
		if (op < CW_HOOK_REGISTER_FUNCTION && traced(bpf_get_current_task_btf()))
			cs_count(CW_CS_RET_ORPHAN);
		return 0;
	}
	if (sp->work)
		do_return_work(op, sp, k.tid, ret);
	if (op >= CW_HOOK_REGISTER_FUNCTION)
		goto done;
	now = bpf_ktime_get_ns();
	failed = call_failed(src, ret);
	/* Graph calls stay whole: userspace follows graph ids from capture
	 * to launch through them. */
	if (cfg_capture_summary && src != CW_SRC_NCCL && src != CW_SRC_GRAPH && !failed) {
		d = now > sp->e.hdr.ts_ns ? now - sp->e.hdr.ts_ns : 0;
		if (fold_call(sp, op, d, &sample)) {
			if (cfg_py_mode == CW_PY_SLOW)
				py_mean_add(op, d);
			goto done;
		}
	}
	/* One query serves the aggregation test and the wakeup decision
	 * (cw_submit's, with the bytes this record adds). */
	avail = bpf_ringbuf_query(&rb_cuda, BPF_RB_AVAIL_DATA);
	if (cfg_agg_bytes && avail > cfg_agg_bytes) {
		agg_add(op, now > sp->e.hdr.ts_ns ? now - sp->e.hdr.ts_ns : 0);
		cs_count(CW_CS_AGGREGATED);
		goto done;
	}
	if (cfg_py_mode == CW_PY_SLOW && py_stack_at_return(sp, op, now, failed || sample))
		pyflag = CW_CALL_F_PYSTACK;
	c = bpf_ringbuf_reserve(&rb_cuda, sizeof(*c), 0);
	if (!c) {
		cw_drop(drop_idx(src));
		cs_count(CW_CS_DROPPED);
		goto done;
	}
	__builtin_memcpy(&c->e, &sp->e, sizeof(c->e));
	if (ret == 0)
		graph_handle_out(op, &c->e);
	c->e.flags |= pyflag;
	if (src == CW_SRC_NCCL && ret == 0)
		nccl_return_args(op, &c->e);
	c->end_ns = now;
	c->retval = ret;
	/* The call is emitted by whichever side ends it: this return, or the
	 * agent's sweep of calls open too long, which stored it already. */
	if (close_open(&k, slot)) {
		bpf_ringbuf_discard(c, BPF_RB_NO_WAKEUP);
		return 0;
	}
	bpf_ringbuf_submit(c, cw_wakeup_flag(avail + sizeof(*c), cfg_ring_quarter, sizeof(*c)));
	return 0;
done:
	close_open(&k, slot);
	return 0;
}

static __always_inline int return_body(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);

	return return_call(ctx, CW_COOKIE_OP(cookie), CW_COOKIE_SRC(cookie), (__u32)bpf_get_current_pid_tgid());
}

/* Every exiting thread (sched_process_exit fires per thread): its device
 * word goes with it, and with the last thread of a process its first-call
 * words. A few instructions for a thread that never set one. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(cw_thread_exit, struct task_struct *p)
{
	forget_thread_device(cw_task_tid(p, true));
	/* The process's last thread: do_exit has counted it out of
	 * signal->live before this tracepoint. */
	if (cfg_capture_summary && !p->signal->live.counter)
		forget_first_calls(cw_task_tgid(p, true));
	return 0;
}

/* Three attach flavours of the same bodies. cw_call_session is loaded
 * with expected_attach_type BPF_TRACE_UPROBE_SESSION (kernel >= 6.13):
 * one program at entry and return, one link per library copy; the entry
 * keeps the thread and the attach cookie in the session's own cookie, so
 * the return calls no helper to find them, and an entry with nothing to
 * do at return (a process not traced) skips the return probe altogether.
 * The *_multi programs, loaded with BPF_TRACE_UPROBE_MULTI (>= 6.6), are
 * the pair of links per library copy it falls back to: one unregister
 * synchronization at detach instead of one per probe (~100 ms each on
 * 6.x). The plain programs are the per-probe perf-event fallback. */
/* The session kfuncs took no argument in 6.13 and take the program's
 * context in later kernels (sid's 7.2, for fsession programs). libbpf
 * (1.1) refuses to load an object whose extern's prototype differs from
 * the kernel's, weak or not, so the object is built twice (Makefile: cuda_sessctx, with
 * CW_SESSION_KFUNC_CTX) and the loader opens the one whose prototype
 * matches the running kernel's BTF (loader/kernel_features.c). */
#if CW_SESSION_KFUNC_CTX
extern __u64 *bpf_session_cookie(void *ctx) __ksym __weak;
extern bool bpf_session_is_return(void *ctx) __ksym __weak;
#define CW_SESSION_COOKIE(ctx) bpf_session_cookie(ctx)
#define CW_SESSION_IS_RETURN(ctx) bpf_session_is_return(ctx)
#else
extern __u64 *bpf_session_cookie(void) __ksym __weak;
extern bool bpf_session_is_return(void) __ksym __weak;
#define CW_SESSION_COOKIE(ctx) bpf_session_cookie()
#define CW_SESSION_IS_RETURN(ctx) bpf_session_is_return()
#endif

/* The session program's two halves are subprograms, not inlined: their
 * locals (an open call's state at entry, the record at return) then share
 * the 512-byte stack instead of adding up in one frame. Inlined, clang 14
 * gave one frame of 512 bytes, and the Python walk's bpf_loop callback
 * took the combined stack to 544 ("combined stack size of 2 calls is 544.
 * Too large"): rejected on every kernel without private BPF stacks (x86-64
 * JIT before 6.13, arm64). */
static __noinline int session_enter(struct pt_regs *ctx, __u64 c, __u32 *tid)
{
	return enter_call(ctx, c, tid);
}

static __noinline int session_return(struct pt_regs *ctx, __u64 c)
{
	return return_call(ctx, CW_COOKIE_OP(c), CW_COOKIE_SRC(c), (__u32)(c >> 32));
}

SEC("uprobe")
int cw_call_session(struct pt_regs *ctx)
{
	__u64 *sc = CW_SESSION_COOKIE(ctx), c;
	__u32 tid = 0;

	if (!CW_SESSION_IS_RETURN(ctx)) {
		c = bpf_get_attach_cookie(ctx);
		if (session_enter(ctx, c, &tid))
			return 1; /* no return probe */
		*sc = ((__u64)tid << 32) | (__u32)c;
		return 0;
	}
	return session_return(ctx, *sc);
}

SEC("uprobe")
int cw_call_enter(struct pt_regs *ctx)
{
	return enter_body(ctx);
}

SEC("uretprobe")
int cw_call_return(struct pt_regs *ctx)
{
	return return_body(ctx);
}

SEC("uprobe")
int cw_call_enter_multi(struct pt_regs *ctx)
{
	return enter_body(ctx);
}

SEC("uprobe")
int cw_call_return_multi(struct pt_regs *ctx)
{
	return return_body(ctx);
}

/* __cudaRegisterFunction(handle, hostFun, deviceFun, ...) as a sleepable
 * uprobe (kernel >= 6.0): nvcc's registration constructor runs before the
 * executable's .rodata page holding deviceFun was touched, and only a
 * sleepable program may fault it in (bpf_copy_from_user). The loader
 * attaches this one to __cudaRegisterFunction when the kernel accepts it,
 * and the generic entry program (which defers the read to userspace)
 * otherwise. */
SEC("uprobe.s")
int cw_register_function(struct pt_regs *ctx)
{
	struct cw_kernel_name *k;
	__u64 name_ptr, room;
	struct uregs r;

	if (!traced(bpf_get_current_task_btf()))
		return 0;
	load_regs(ctx, &r);
	name_ptr = r.p[2];
	k = bpf_ringbuf_reserve(&rb_cuda, sizeof(*k), 0);
	if (!k) {
		cw_drop(CW_DROP_KNAME);
		cs_count(CW_CS_KNAME_DROPPED);
		return 0;
	}
	cw_hdr_current(&k->hdr, CW_REC_KERNEL_NAME, sizeof(*k), CW_SRC_CUDA, CW_OP_kernel_name);
	k->handle = r.p[1];
	__builtin_memset(k->name, 0, sizeof(k->name));
	if (bpf_copy_from_user(k->name, sizeof(k->name) - 1, (const void *)name_ptr)) {
		/* The name ends near the end of its mapping: copy to the page end. */
		room = 4096 - (name_ptr & 4095);
		if (room > sizeof(k->name) - 1)
			room = sizeof(k->name) - 1;
		if (room == 0 || bpf_copy_from_user(k->name, room, (const void *)name_ptr)) {
			__builtin_memset(k->name, 0, sizeof(k->name));
			__builtin_memcpy(&k->name[CW_KNAME_DEFERRED_OFF], &name_ptr, sizeof(name_ptr));
		}
	}
	k->name[sizeof(k->name) - 1] = 0;
	submit(k, sizeof(*k));
	return 0;
}
