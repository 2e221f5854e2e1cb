/* pystack.bpf.h: the calling thread's Python stack, captured in BPF at a
 * uprobe (CUDA runtime/driver/NCCL entry), as (code object address,
 * instruction offset) pairs. Names and lines are resolved later, in
 * userspace (src/pyframe/resolver.c), which keeps the probe cheap: at most
 * CW_PY_MAX_FRAMES iterations of three or four user-memory reads.
 *
 * Two maps, filled by userspace (src/pyframe/pystack_loader.c):
 *  - cw_py_procs: tgid -> struct cw_py_bpf_proc, the offsets of that
 *    process's CPython version (per-minor tables for 3.10-3.12,
 *    _Py_DebugOffsets read from the target for 3.13+);
 *  - cw_py_tstate: tid -> PyThreadState address, kept current by walking
 *    the interpreter's thread list when a process is added and periodically.
 * Reading the thread state from the interpreter's TLS instead would need
 * the glibc TSD layout (3.10-3.12) or a disassembled TLS offset (3.13's
 * _Py_tss_tstate); the map is version-independent and exact.
 *
 * The first part is plain C so the loader can include it. */
#ifndef CW_PYSTACK_BPF_H
#define CW_PYSTACK_BPF_H

#if defined(__bpf__)
#include "vmlinux.h"
#else
#include <linux/types.h>
#endif

#define CW_PY_BPF_PROCS_MAX 4096
#define CW_PY_BPF_TSTATE_MAX 65536

/* Offsets for one traced Python process. Field meanings as in
 * src/pyframe/offsets.h; -1 marks an absent field. */
struct cw_py_bpf_proc {
	__u32 py_version;       /* PY_VERSION_HEX >> 16, e.g. 0x030c */
	__u32 frame_kind;       /* 1: PyFrameObject (3.10), 2: _PyInterpreterFrame (3.11+) */
	__u32 ts_frame;         /* tstate -> frame (3.10), cframe (3.11/3.12), current_frame (3.13) */
	__s32 cframe_current;   /* cframe -> current_frame, -1 when ts_frame is the frame */
	__u32 fr_back, fr_code, fr_lasti;
	__s32 fr_owner;         /* owner byte, -1 before 3.12 */
	__u32 co_code_adaptive; /* 3.11+: inline bytecode offset in the code object */
	__u32 ob_type;
	__u64 code_type;        /* &PyCode_Type in the target, 0 unknown (no check) */
	__u64 code_mask;        /* f_executable & code_mask is the object (3.14+ tag bits) */
	__s32 fr_tlbc_index;    /* free-threaded 3.14+: the frame's thread-local bytecode index, -1 none */
	__u32 co_tlbc;          /* free-threaded 3.14+: the code's _PyCodeArray pointer */
};

/* Most entries a _PyCodeArray is trusted to have (CW_PY_TLBC_MAX). */
#define CW_PY_BPF_TLBC_MAX 4096

#if defined(__bpf__)

#include <bpf/bpf_helpers.h>
#include "events.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CW_PY_BPF_PROCS_MAX);
	__type(key, __u32);
	__type(value, struct cw_py_bpf_proc);
} cw_py_procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CW_PY_BPF_TSTATE_MAX);
	__type(key, __u32);
	__type(value, __u64);
} cw_py_tstate SEC(".maps");

/* 3.12+ frames with owner >= 3 are interpreter shims, not user code (3 is
 * the C stack on 3.12/3.13 and the interpreter's entry frame on 3.14+, 4
 * the C stack on 3.14). */
#define CW_PY_BPF_OWNED_BY_CSTACK 3

static __always_inline __u64 cw_py_read_u64(__u64 addr)
{
	__u64 v = 0;

	if (bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		return 0;
	return v;
}

/* Per-CPU scratch record: the walk fills it, then one bpf_ringbuf_output
 * copies it after the entry (576 bytes). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cw_pystack);
} cw_py_scratch SEC(".maps");

struct cw_py_walk {
	struct cw_py_bpf_proc o;
	__u64 frame;
	__u32 n;
	__u32 truncated;
};

/* The walk's state lives in a map value, not on the stack: the verifier
 * tracks a stack variable's exact value, so with the frame count on the
 * stack it verified the bpf_loop body once per count (kernels that
 * verify callbacks until their states converge, 6.7+), some 350,000
 * instructions and seconds of start-up for the call programs. A map
 * value's contents are unknown to it: the body converges at once. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cw_py_walk);
} cw_py_walk_scratch SEC(".maps");

/* One frame per bpf_loop iteration (kernel >= 5.17): the verifier checks
 * the body once instead of unrolling 64 paths of branches. Returns 1 to
 * stop. */
/* bpf_loop's context must be on the stack: it holds the map value. */
struct cw_py_walk_ref {
	struct cw_py_walk *w;
};

static __noinline long cw_py_step(__u64 i, void *arg)
{
	struct cw_py_walk *w = ((struct cw_py_walk_ref *)arg)->w;
	const struct cw_py_bpf_proc *o = &w->o;
	__u32 zero = 0, lasti, slot;
	struct cw_pystack *s;
	__u64 frame = w->frame, code, ip, base, tlbc;
	__u8 owner = 0;
	__s32 lasti32, idx = 0;

	if (!frame)
		return 1;
	if (w->n >= CW_PY_MAX_FRAMES) {
		w->truncated = 1;
		return 1;
	}
	s = bpf_map_lookup_elem(&cw_py_scratch, &zero);
	if (!s)
		return 1;
	if (o->fr_owner >= 0 && bpf_probe_read_user(&owner, 1, (const void *)(frame + (__u32)o->fr_owner)))
		return 1;
	code = cw_py_read_u64(frame + o->fr_code) & o->code_mask;
	w->frame = cw_py_read_u64(frame + o->fr_back);
	if (owner >= CW_PY_BPF_OWNED_BY_CSTACK)
		return 0; /* shim or entry frame: its executable may be None */
	if (!code)
		return 1;
	if (o->code_type && cw_py_read_u64(code + o->ob_type) != o->code_type)
		return 0; /* an executable that is not code (3.13+) */
	if (o->frame_kind == 1) {
		/* 3.10: f_lasti is an int in code units, -1 not started */
		if (bpf_probe_read_user(&lasti32, 4, (const void *)(frame + o->fr_lasti)))
			return 1;
		lasti = lasti32 < 0 ? 0xffffffff : (__u32)lasti32;
	} else {
		/* 3.11/3.12 prev_instr, 3.13 instr_ptr: into the inline bytecode,
		 * or on free-threaded builds into the thread-local copy
		 * co_tlbc->entries[tlbc_index] (entry 0 is the inline one) */
		ip = cw_py_read_u64(frame + o->fr_lasti);
		base = code + o->co_code_adaptive;
		if (o->fr_tlbc_index >= 0 &&
		    bpf_probe_read_user(&idx, 4, (const void *)(frame + (__u32)o->fr_tlbc_index)) == 0 && idx != 0) {
			tlbc = cw_py_read_u64(code + o->co_tlbc);
			base = 0;
			if (idx > 0 && tlbc && (__u64)idx < cw_py_read_u64(tlbc) && idx < CW_PY_BPF_TLBC_MAX)
				base = cw_py_read_u64(tlbc + 8 + 8 * (__u64)idx);
		}
		lasti = base && ip >= base ? (__u32)((ip - base) / 2) : 0xffffffff;
	}
	slot = w->n & (CW_PY_MAX_FRAMES - 1);
	s->frames[slot].code = code;
	s->frames[slot].lasti = lasti;
	s->frames[slot].pad = 0;
	w->n++;
	return 0;
}

/* Walks the current thread's Python stack and outputs a CW_REC_PYSTACK
 * record carrying h's identity (pid, tid, timestamp: the consumer ties it
 * to the open call entry with that tid and timestamp) to ring. Returns 1
 * when a record was output. Threads that run no Python cost one or two map
 * lookups. */
static __always_inline int cw_emit_pystack(void *ring, const struct cw_hdr *h)
{
	__u32 pid = h->pid, tid = h->tid, zero = 0;
	const struct cw_py_bpf_proc *o;
	struct cw_py_walk_ref ref;
	struct cw_py_walk *w;
	struct cw_pystack *s;
	__u64 *tsp;

	o = bpf_map_lookup_elem(&cw_py_procs, &pid);
	if (!o)
		return 0;
	tsp = bpf_map_lookup_elem(&cw_py_tstate, &tid);
	if (!tsp || !*tsp)
		return 0;
	w = bpf_map_lookup_elem(&cw_py_walk_scratch, &zero);
	if (!w)
		return 0;
	w->o = *o;
	w->n = 0;
	w->truncated = 0;
	w->frame = cw_py_read_u64(*tsp + o->ts_frame);
	if (w->frame && o->cframe_current >= 0)
		w->frame = cw_py_read_u64(w->frame + (__u32)o->cframe_current);
	if (!w->frame)
		return 0; /* the thread holds no Python frame right now */
	/* 2x the depth: skipped shim frames do not eat recorded depth */
	ref.w = w;
#if CW_NO_BPF_LOOP
	/* Kernels before 5.17 (Ubuntu 22.04's 5.15): a bounded loop (5.3),
	 * which the verifier walks once per iteration (the cuda_noloop
	 * object, Makefile). */
	for (__u32 i = 0; i < 2 * CW_PY_MAX_FRAMES; i++)
		if (cw_py_step(i, &ref))
			break;
#else
	bpf_loop(2 * CW_PY_MAX_FRAMES, cw_py_step, &ref, 0);
#endif
	if (!w->n)
		return 0;
	s = bpf_map_lookup_elem(&cw_py_scratch, &zero);
	if (!s)
		return 0;
	__builtin_memcpy(&s->hdr, h, sizeof(s->hdr));
	s->hdr.type = CW_REC_PYSTACK;
	s->hdr.size = sizeof(*s);
	s->hdr.source = CW_SRC_PYTHON;
	s->hdr.op = CW_OP_pystack;
	s->nframes = w->n;
	s->truncated = w->truncated || (w->frame && w->n >= CW_PY_MAX_FRAMES);
	s->py_version = o->py_version;
	s->pad = 0;
	/* Default wakeup (an idle consumer is woken), unlike call records:
	 * the consumer resolves these frames by reading the process's memory,
	 * which must happen before the process exits, and a stack is often
	 * taken just before it does (the last calls of a short script). */
	if (bpf_ringbuf_output(ring, s, sizeof(*s), 0)) {
		cw_drop(CW_DROP_PYSTACK);
		return 0;
	}
	return 1;
}

/* At a call entry e (filled, reserved on ring, not yet submitted): the
 * record's ring position is after e's, so the consumer reads it right
 * after e even though it is committed first. */
static __always_inline void cw_capture_pystack(void *ring, struct cw_call_entry *e)
{
	if (cw_emit_pystack(ring, &e->hdr))
		e->flags |= CW_CALL_F_PYSTACK;
}

#endif /* __bpf__ */
#endif
