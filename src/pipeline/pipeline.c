#include "pipeline/pipeline.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/events.h"
#include "pipeline/decode.h"
#include "pipeline/http_track.h"
#include "pipeline/nccl_track.h"
#include "pipeline/ops.h"
#include "pipeline/pystack.h"
#include "util/vec.h"
#include "util/u64map.h"

/* Runtime calls nest driver calls (cudaMalloc -> cuMemAlloc_v2), and
 * callbacks can nest further; deeper nesting than this means returns were
 * lost, and the oldest open entry is given up (counted). */
#define MAX_NESTING 16
#define MAX_THREADS (1 << 20)
#define MAX_KERNEL_NAMES (1 << 18)

struct open_call {
	struct cw_call_entry e;
	int64_t py_stack_id;
	int64_t stack_id;
};

/* A stack record whose call has not arrived yet: with CW_REC_CALL the
 * stacks taken at entry (and the Python stack of a slow call, taken at
 * return) precede the call record, which names them by its entry time. */
struct pending_stack {
	uint64_t ts_ns;
	int64_t py_stack_id;
	int64_t stack_id;
};

/* Enough for every call of a nesting chain to have a stack waiting. */
#define MAX_PENDING_STACKS 4

struct thread_state {
	uint32_t tid;
	int depth;
	struct open_call open[MAX_NESTING];
	struct pending_stack pending[MAX_PENDING_STACKS];
};

struct cw_pipeline {
	struct cw_pipeline_opts o;
	struct cw_pipeline_counters c;
	struct u64map thread_index; /* tid -> threads[] index */
	struct thread_state *threads;
	size_t nthreads, threads_alloc;
	struct u64map seen_pids;    /* pids whose process row exists */
	struct u64map kernel_index; /* hash(pid, handle) -> kernel_names[] index */
	char **kernel_names;
	size_t nkernel_names, kernel_names_alloc;
	struct cw_nccl_track *nccl; /* communicators, sequence numbers */
	struct cw_http_track *http; /* a traced server's requests, made on its first record */
	struct cw_pystack attr_scratch; /* attributed_pystack's frames */
};

int cw_pipeline_new(struct cw_pipeline **out, const struct cw_pipeline_opts *o)
{
	struct cw_pipeline *p;

	*out = NULL;
	if (!o || !o->writer)
		return -EINVAL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->o = *o;
	u64map_init(&p->thread_index, MAX_THREADS);
	u64map_init(&p->seen_pids, MAX_THREADS);
	u64map_init(&p->kernel_index, MAX_KERNEL_NAMES);
	if (cw_nccl_track_new(&p->nccl, o->writer)) {
		free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void cw_pipeline_set_clock(struct cw_pipeline *p, int64_t mono_to_wall_ns)
{
	p->o.mono_to_wall_ns = mono_to_wall_ns;
	if (p->http)
		cw_http_track_set_clock(p->http, mono_to_wall_ns);
}

void cw_pipeline_get_counters(const struct cw_pipeline *p, struct cw_pipeline_counters *out)
{
	*out = p->c;
}

static uint64_t wall_of(const struct cw_pipeline *p, uint64_t mono)
{
	return (uint64_t)((int64_t)mono + p->o.mono_to_wall_ns);
}

static void copy_comm(char *dst, const char *src)
{
	memcpy(dst, src, CW_COMM_LEN);
	dst[CW_COMM_LEN - 1] = '\0';
}

static int write_event(struct cw_pipeline *p, const struct cw_event_row *row)
{
	int err = cw_writer_event(p->o.writer, row);

	if (err)
		p->c.write_errors++;
	else if (p->o.observer)
		p->o.observer(p->o.observer_ctx, row);
	return err;
}

/* First sight of a process: a row so names survive the process. */
static void note_process(struct cw_pipeline *p, const struct cw_hdr *h, const char *comm)
{
	struct cw_process_row pr;
	int64_t dummy;

	if (u64map_get(&p->seen_pids, (uint64_t)h->pid + 1, &dummy))
		return;
	if (u64map_put(&p->seen_pids, (uint64_t)h->pid + 1, 1))
		return;
	memset(&pr, 0, sizeof(pr));
	pr.pid = h->pid;
	pr.comm = comm;
	pr.cgroup_id = h->cgroup_id;
	pr.rank = pr.local_rank = pr.world_size = -1;
	if (cw_writer_process(p->o.writer, &pr))
		p->c.write_errors++;
}

static struct thread_state *thread_get(struct cw_pipeline *p, const struct cw_hdr *h, int create)
{
	int64_t idx;

	if (u64map_get(&p->thread_index, (uint64_t)h->tid + 1, &idx))
		return &p->threads[idx];
	if (!create)
		return NULL;
	if (cw_vec_reserve(&p->threads, &p->threads_alloc, p->nthreads + 1, sizeof(*p->threads), 16) < 0)
		return NULL;
	if (u64map_put(&p->thread_index, (uint64_t)h->tid + 1, (int64_t)p->nthreads))
		return NULL;
	memset(&p->threads[p->nthreads], 0, sizeof(p->threads[0]));
	p->threads[p->nthreads].tid = h->tid;
	{
		char comm[CW_COMM_LEN];

		copy_comm(comm, h->comm);
		note_process(p, h, comm);
		if (cw_writer_thread(p->o.writer, h->pid, h->tid, comm))
			p->c.write_errors++;
	}
	return &p->threads[p->nthreads++];
}

static uint64_t kernel_key(uint32_t pid, uint64_t handle)
{
	uint64_t k = cw_fnv1a(CW_FNV_INIT, &pid, sizeof(pid));

	k = cw_fnv1a(k, &handle, sizeof(handle));
	return k ? k : 1;
}

static const char *kernel_name_of(const struct cw_pipeline *p, uint32_t pid, uint64_t handle)
{
	int64_t idx;

	if (!handle || !u64map_get(&p->kernel_index, kernel_key(pid, handle), &idx))
		return NULL;
	return p->kernel_names[idx];
}

static int on_kernel_name(struct cw_pipeline *p, const struct cw_kernel_name *k)
{
	char name[CW_NAME_LEN];
	int64_t idx;

	memcpy(name, k->name, sizeof(name));
	name[sizeof(name) - 1] = '\0';
	if (!u64map_get(&p->kernel_index, kernel_key(k->hdr.pid, k->handle), &idx)) {
		if (cw_vec_reserve(&p->kernel_names, &p->kernel_names_alloc, p->nkernel_names + 1,
				   sizeof(*p->kernel_names), 64) < 0)
			return -ENOMEM;
		p->kernel_names[p->nkernel_names] = strdup(name);
		if (!p->kernel_names[p->nkernel_names] ||
		    u64map_put(&p->kernel_index, kernel_key(k->hdr.pid, k->handle), (int64_t)p->nkernel_names)) {
			free(p->kernel_names[p->nkernel_names]);
			return -ENOMEM;
		}
		p->nkernel_names++;
	}
	if (cw_writer_kernel_name(p->o.writer, k->hdr.pid, k->handle, name))
		p->c.write_errors++;
	return 0;
}

/* Which argument carries the byte count of an op, -1 for none. BPF puts
 * memcpy and memset byte counts in args[2] for every variant (2D and peer
 * copies are normalized there), allocation sizes stay where the API has
 * them. */
static int bytes_arg(unsigned op)
{
	switch (op) {
	case CW_OP_cudaMalloc:
	case CW_OP_cudaMallocAsync:
	case CW_OP_cudaMallocManaged:
	case CW_OP_cudaMallocHost:
	case CW_OP_cudaHostAlloc:
	case CW_OP_cuMemAlloc:
	case CW_OP_cuMemAllocAsync:
	case CW_OP_cuMemAllocManaged:
	case CW_OP_cuMemCreate:
		return 1;
	case CW_OP_cudaMemcpy:
	case CW_OP_cudaMemcpyAsync:
	case CW_OP_cudaMemcpy2D:
	case CW_OP_cudaMemcpy2DAsync:
	case CW_OP_cudaMemcpyPeer:
	case CW_OP_cudaMemcpyPeerAsync:
	case CW_OP_cudaMemset:
	case CW_OP_cudaMemsetAsync:
	case CW_OP_cuMemcpy:
	case CW_OP_cuMemcpyAsync:
	case CW_OP_cuMemcpyHtoD:
	case CW_OP_cuMemcpyHtoDAsync:
	case CW_OP_cuMemcpyDtoH:
	case CW_OP_cuMemcpyDtoHAsync:
	case CW_OP_cuMemcpyDtoD:
	case CW_OP_cuMemcpyDtoDAsync:
		return 2;
	default:
		return -1;
	}
}

static const char *memcpy_direction(unsigned op, uint64_t kind)
{
	/* cudaMemcpyKind: 0 HtoH, 1 HtoD, 2 DtoH, 3 DtoD, 4 default (UVA). */
	static const char *const kinds[] = { "HtoH", "HtoD", "DtoH", "DtoD", "default" };

	switch (op) {
	case CW_OP_cudaMemcpy:
	case CW_OP_cudaMemcpyAsync:
	case CW_OP_cudaMemcpy2D:
	case CW_OP_cudaMemcpy2DAsync:
		return kind < 5 ? kinds[kind] : NULL;
	case CW_OP_cudaMemcpyPeer:
	case CW_OP_cudaMemcpyPeerAsync:
		return "peer";
	case CW_OP_cuMemcpyHtoD:
	case CW_OP_cuMemcpyHtoDAsync:
		return "HtoD";
	case CW_OP_cuMemcpyDtoH:
	case CW_OP_cuMemcpyDtoHAsync:
		return "DtoH";
	case CW_OP_cuMemcpyDtoD:
	case CW_OP_cuMemcpyDtoDAsync:
		return "DtoD";
	default:
		return NULL;
	}
}

static int is_launch(unsigned op)
{
	return op == CW_OP_cudaLaunchKernel || op == CW_OP_cudaLaunchKernelExC || op == CW_OP_cuLaunchKernel ||
	       op == CW_OP_cuLaunchKernelEx;
}

static int is_sync(unsigned op)
{
	return op == CW_OP_cudaStreamSynchronize || op == CW_OP_cudaDeviceSynchronize ||
	       op == CW_OP_cudaEventSynchronize || op == CW_OP_cuStreamSynchronize || op == CW_OP_cuCtxSynchronize ||
	       op == CW_OP_cuEventSynchronize;
}

/* Emits a paired call. end_ns is the return time, or the flush time for an
 * unfinished call. */
/* A call without a Python stack from a Python process's thread that runs
 * no Python: the stack of the Python thread waiting on it, marked with
 * that thread's TID (pyframe/attribute.h). 0 when none. */
static int64_t attributed_pystack(struct cw_pipeline *p, const struct cw_call_entry *e)
{
	struct cw_pystack *s = &p->attr_scratch;
	uint32_t via = 0;
	int64_t id;

	if (!p->o.py || !p->o.py->attribute)
		return 0;
	memset(&s->hdr, 0, sizeof(s->hdr));
	s->hdr.pid = e->hdr.pid;
	s->hdr.tid = e->hdr.tid;
	if (p->o.py->attribute(p->o.py->ctx, e->hdr.pid, e->hdr.tid, s, &via) <= 0 || !via)
		return 0;
	id = cw_pystack_intern_via(p->o.writer, p->o.py, s, via, &p->c.py_unresolved);
	if (id < 0)
		p->c.write_errors++;
	return id > 0 ? id : 0;
}

static int emit_call(struct cw_pipeline *p, const struct open_call *oc, uint64_t end_ns, int has_ret, int64_t ret)
{
	const struct cw_call_entry *e = &oc->e;
	struct cw_event_row row;
	char comm[CW_COMM_LEN], detail[192];
	const char *dir;
	int bi, i;

	memset(&row, 0, sizeof(row));
	copy_comm(comm, e->hdr.comm);
	row.mono_ns = e->hdr.ts_ns;
	row.wall_ns = wall_of(p, e->hdr.ts_ns);
	row.duration_ns = end_ns > e->hdr.ts_ns ? end_ns - e->hdr.ts_ns : 0;
	row.pid = e->hdr.pid;
	row.tid = e->hdr.tid;
	row.cgroup_id = e->hdr.cgroup_id;
	row.comm = comm;
	row.source = cw_source_name(e->hdr.source);
	row.op = cw_op_name(e->hdr.op);
	row.nargs = 4;
	for (i = 0; i < 4; i++)
		row.args[i] = (int64_t)e->args[i];
	bi = bytes_arg(e->hdr.op);
	if (bi >= 0) {
		row.has_bytes = 1;
		row.bytes = (int64_t)e->args[bi];
	} else if (e->hdr.source == CW_SRC_NCCL &&
		   (row.bytes = cw_nccl_call_bytes(e->hdr.op, (int64_t)e->args[0], (int64_t)(int32_t)e->args[1])) >= 0) {
		row.has_bytes = 1;
	}
	row.has_ret = has_ret;
	row.ret = ret;
	row.device = e->device;
	row.stack_id = oc->stack_id;
	row.py_stack_id = oc->py_stack_id ? oc->py_stack_id : attributed_pystack(p, e);
	detail[0] = '\0';
	dir = memcpy_direction(e->hdr.op, e->args[3]);
	if (dir)
		snprintf(detail, sizeof(detail), "%s", dir);
	else if (is_launch(e->hdr.op) && kernel_name_of(p, e->hdr.pid, e->args[0]))
		snprintf(detail, sizeof(detail), "%s", kernel_name_of(p, e->hdr.pid, e->args[0]));
	if (!has_ret)
		snprintf(detail + strlen(detail), sizeof(detail) - strlen(detail), "%sunfinished",
			 detail[0] ? " " : "");
	row.detail = detail[0] ? detail : NULL;
	p->c.calls++;
	i = write_event(p, &row);
	if (e->hdr.source == CW_SRC_NCCL && cw_nccl_track_call(p->nccl, e, row.wall_ns, end_ns, has_ret, ret))
		p->c.write_errors++;
	else if (is_sync(e->hdr.op) && cw_nccl_track_sync(p->nccl, e->hdr.tid, row.wall_ns, row.duration_ns, has_ret))
		p->c.write_errors++;
	return i;
}

static int on_entry(struct cw_pipeline *p, const struct cw_call_entry *e)
{
	struct thread_state *t = thread_get(p, &e->hdr, 1);

	if (!t)
		return -ENOMEM;
	if (t->depth == MAX_NESTING) {
		/* Returns were lost; give up the oldest open entry. */
		p->c.overflow_entries++;
		memmove(&t->open[0], &t->open[1], sizeof(t->open[0]) * (MAX_NESTING - 1));
		t->depth--;
	}
	memset(&t->open[t->depth], 0, sizeof(t->open[0]));
	t->open[t->depth].e = *e;
	t->depth++;
	return 0;
}

static int on_return(struct cw_pipeline *p, const struct cw_call_return *r)
{
	struct thread_state *t = thread_get(p, &r->hdr, 0);
	int i, j, err;

	if (t) {
		for (i = t->depth - 1; i >= 0; i--) {
			const struct cw_hdr *h = &t->open[i].e.hdr;

			if (h->op == r->hdr.op && h->source == r->hdr.source)
				break;
		}
		if (i >= 0) {
			/* Entries opened after this one never returned (a lost
			 * uretprobe or a longjmp out of a callback). */
			for (j = t->depth - 1; j > i; j--) {
				p->c.unfinished_entries++;
				emit_call(p, &t->open[j], r->hdr.ts_ns, 0, 0);
			}
			err = emit_call(p, &t->open[i], r->hdr.ts_ns, 1, r->retval);
			t->depth = i;
			return err;
		}
	}
	p->c.unpaired_returns++;
	return 0;
}

static struct open_call *entry_for_stack(struct thread_state *t, const struct cw_hdr *h)
{
	/* Entry/return pairs: the stack record follows its entry immediately
	 * on the same CPU, so it belongs to the innermost open entry with the
	 * same timestamp. */
	if (!t || !t->depth || t->open[t->depth - 1].e.hdr.ts_ns != h->ts_ns)
		return NULL;
	return &t->open[t->depth - 1];
}

/* Gives up a pending stack whose call never came: each of its stacks is
 * an orphan. */
static void orphan_pending(struct cw_pipeline *p, struct pending_stack *ps)
{
	p->c.orphan_stacks += (ps->py_stack_id > 0) + (ps->stack_id > 0);
	memset(ps, 0, sizeof(*ps));
}

/* The slot of t's pending stacks for a call that entered at ts: the one
 * already holding ts, else a free one, else the oldest (its stack is
 * given up as an orphan: its call record was lost). */
static struct pending_stack *pending_slot(struct cw_pipeline *p, struct thread_state *t, uint64_t ts)
{
	struct pending_stack *free_slot = NULL, *oldest = &t->pending[0];
	int i;

	for (i = 0; i < MAX_PENDING_STACKS; i++) {
		struct pending_stack *ps = &t->pending[i];

		if (ps->ts_ns == ts && (ps->py_stack_id || ps->stack_id))
			return ps;
		if (!ps->py_stack_id && !ps->stack_id) {
			if (!free_slot)
				free_slot = ps;
		} else if (ps->ts_ns < oldest->ts_ns) {
			oldest = ps;
		}
	}
	if (free_slot)
		return free_slot;
	orphan_pending(p, oldest);
	return oldest;
}

/* Attaches an interned stack to its open entry, or keeps it for the call
 * record that follows. */
static void attach_stack(struct cw_pipeline *p, const struct cw_hdr *h, int64_t id, int python)
{
	struct thread_state *t = thread_get(p, h, 1);
	struct open_call *oc;
	struct pending_stack *ps;

	if (!t) {
		p->c.orphan_stacks++;
		return;
	}
	oc = entry_for_stack(t, h);
	if (oc) {
		*(python ? &oc->py_stack_id : &oc->stack_id) = id;
		return;
	}
	ps = pending_slot(p, t, h->ts_ns);
	ps->ts_ns = h->ts_ns;
	*(python ? &ps->py_stack_id : &ps->stack_id) = id;
}

/* A stack interned as id (0: empty, < 0: the writer refused it). */
static int on_stack(struct cw_pipeline *p, const struct cw_hdr *h, int64_t id, int python)
{
	if (id > 0)
		attach_stack(p, h, id, python);
	else if (id < 0)
		p->c.write_errors++;
	return 0;
}

static int on_pystack(struct cw_pipeline *p, const struct cw_pystack *s)
{
	return on_stack(p, &s->hdr, cw_pystack_intern(p->o.writer, p->o.py, s, &p->c.py_unresolved), 1);
}

static int on_ustack(struct cw_pipeline *p, const struct cw_ustack *s)
{
	return on_stack(p, &s->hdr, cw_ustack_intern(p->o.writer, p->o.sym, s), 0);
}

/* A whole call (CW_REC_CALL): stored at once with the stacks that came
 * ahead of it. */
static int on_call(struct cw_pipeline *p, const struct cw_call *c)
{
	struct thread_state *t = thread_get(p, &c->e.hdr, 1);
	struct open_call oc;
	int i;

	if (!t)
		return -ENOMEM;
	memset(&oc, 0, sizeof(oc));
	oc.e = c->e;
	oc.e.hdr.type = CW_REC_CALL_ENTRY;
	oc.e.hdr.size = sizeof(oc.e);
	if (c->e.flags & (CW_CALL_F_PYSTACK | CW_CALL_F_USTACK))
		for (i = 0; i < MAX_PENDING_STACKS; i++) {
			struct pending_stack *ps = &t->pending[i];

			if (ps->ts_ns != c->e.hdr.ts_ns || (!ps->py_stack_id && !ps->stack_id))
				continue;
			oc.py_stack_id = ps->py_stack_id;
			oc.stack_id = ps->stack_id;
			memset(ps, 0, sizeof(*ps));
			break;
		}
	return emit_call(p, &oc, c->end_ns, 1, c->retval);
}

static int on_offcpu(struct cw_pipeline *p, const struct cw_offcpu *o)
{
	struct cw_offcpu_row row;
	char comm[CW_COMM_LEN], by[CW_COMM_LEN], waker[CW_COMM_LEN];
	int err;

	if (!thread_get(p, &o->hdr, 1))
		return -ENOMEM;
	copy_comm(comm, o->hdr.comm);
	copy_comm(by, o->by_comm);
	copy_comm(waker, o->waker_comm);
	memset(&row, 0, sizeof(row));
	row.pid = o->hdr.pid;
	row.tid = o->hdr.tid;
	row.comm = comm;
	row.start_mono_ns = o->hdr.ts_ns;
	row.end_mono_ns = o->end_ns >= o->hdr.ts_ns ? o->end_ns : o->hdr.ts_ns;
	row.wall_ns = wall_of(p, o->hdr.ts_ns);
	row.reason = o->reason == CW_OFFCPU_PREEMPTED ? "preempted" : "blocked";
	row.cpu = (int32_t)o->cpu;
	row.by_pid = o->by_pid;
	row.by_tid = o->by_tid;
	row.by_comm = by[0] ? by : NULL;
	row.by_cgroup_id = o->by_cgroup_id;
	row.waker_pid = o->waker_pid;
	row.waker_comm = waker[0] ? waker : NULL;
	err = cw_writer_offcpu(p->o.writer, &row);
	if (err) {
		p->c.write_errors++;
	} else {
		p->c.offcpu++;
		if (p->o.offcpu_observer)
			p->o.offcpu_observer(p->o.observer_ctx, &row);
	}
	return err;
}

/* Fills the common part of an instant or kernel-side event row. */
static void base_row(const struct cw_pipeline *p, const struct cw_hdr *h, char *comm, struct cw_event_row *row)
{
	memset(row, 0, sizeof(*row));
	copy_comm(comm, h->comm);
	row->mono_ns = h->ts_ns;
	row->wall_ns = wall_of(p, h->ts_ns);
	row->pid = h->pid;
	row->tid = h->tid;
	row->cgroup_id = h->cgroup_id;
	row->comm = comm;
	row->source = cw_source_name(h->source);
	row->op = cw_op_name(h->op);
	row->device = -1;
}

static int on_block_io(struct cw_pipeline *p, const struct cw_block_io *b)
{
	struct cw_event_row row;
	char comm[CW_COMM_LEN], rwbs[sizeof(b->rwbs) + 1];

	base_row(p, &b->hdr, comm, &row);
	memcpy(rwbs, b->rwbs, sizeof(b->rwbs));
	rwbs[sizeof(b->rwbs)] = '\0';
	row.duration_ns = b->complete_ns > b->hdr.ts_ns ? b->complete_ns - b->hdr.ts_ns : 0;
	row.nargs = 3;
	row.args[0] = (int64_t)b->sector;
	row.args[1] = b->dev;
	row.args[2] = b->error;
	row.has_bytes = 1;
	row.bytes = b->bytes;
	row.detail = rwbs;
	return write_event(p, &row);
}

static void format_addr(char *out, size_t len, unsigned family, const __u8 *a, unsigned port)
{
	if (family == 10) /* AF_INET6 */
		snprintf(out, len, "[%x:%x:%x:%x:%x:%x:%x:%x]:%u", a[0] << 8 | a[1], a[2] << 8 | a[3],
			 a[4] << 8 | a[5], a[6] << 8 | a[7], a[8] << 8 | a[9], a[10] << 8 | a[11],
			 a[12] << 8 | a[13], a[14] << 8 | a[15], port);
	else
		snprintf(out, len, "%u.%u.%u.%u:%u", a[0], a[1], a[2], a[3], port);
}

static int on_net(struct cw_pipeline *p, const struct cw_net *n)
{
	struct cw_event_row row;
	char comm[CW_COMM_LEN], src[64], dst[64], detail[160];

	base_row(p, &n->hdr, comm, &row);
	format_addr(src, sizeof(src), n->family, n->saddr, n->sport);
	format_addr(dst, sizeof(dst), n->family, n->daddr, n->dport);
	snprintf(detail, sizeof(detail), "%s -> %s", src, dst);
	row.nargs = 2;
	row.args[0] = n->family;
	row.args[1] = n->state;
	row.has_bytes = n->bytes != 0;
	row.bytes = (int64_t)n->bytes;
	row.detail = detail;
	return write_event(p, &row);
}

static int on_mem(struct cw_pipeline *p, const struct cw_mem *m)
{
	struct cw_event_row row;
	char comm[CW_COMM_LEN], victim[CW_COMM_LEN];
	uint64_t bytes;

	base_row(p, &m->hdr, comm, &row);
	copy_comm(victim, m->victim_comm);
	row.nargs = 3;
	row.args[0] = (int64_t)m->pages;
	row.args[1] = (int64_t)m->interval_ns;
	row.args[2] = m->victim_pid;
	row.has_bytes = 1;
	/* Page counts come from the kernel side and recorded streams alike:
	 * saturate instead of overflowing. */
	bytes = m->bytes ? m->bytes : m->pages > (uint64_t)INT64_MAX / 4096 ? (uint64_t)INT64_MAX : m->pages * 4096;
	row.bytes = bytes > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)bytes;
	row.detail = m->hdr.op == CW_OP_oom_kill ? victim : NULL;
	return write_event(p, &row);
}

static int on_proc(struct cw_pipeline *p, const struct cw_proc *pr)
{
	struct cw_process_row prow;
	struct cw_event_row row;
	char comm[CW_COMM_LEN], file[CW_PATH_LEN + 1];
	int err;

	base_row(p, &pr->hdr, comm, &row);
	memcpy(file, pr->filename, CW_PATH_LEN);
	file[CW_PATH_LEN] = '\0';
	row.nargs = 3;
	row.args[0] = pr->parent_pid;
	row.args[1] = pr->child_pid;
	row.args[2] = pr->exit_code;
	row.detail = file[0] ? file : NULL;
	err = write_event(p, &row);
	memset(&prow, 0, sizeof(prow));
	prow.rank = prow.local_rank = prow.world_size = -1;
	prow.comm = comm;
	switch (pr->hdr.op) {
	case CW_OP_fork: {
		int64_t seen;

		prow.pid = pr->child_pid;
		prow.ppid = pr->parent_pid ? pr->parent_pid : pr->hdr.pid;
		prow.start_wall_ns = row.wall_ns;
		/* Rings are read in any order: the child's exec or its own
		 * records may have named it already, and the parent's name at
		 * fork must not replace that. */
		if (u64map_get(&p->seen_pids, (uint64_t)pr->child_pid + 1, &seen))
			prow.comm = NULL;
		break;
	}
	case CW_OP_exec:
		prow.pid = pr->hdr.pid;
		prow.cmdline = row.detail;
		/* Records written before exec (an off-CPU interval of the
		 * child waiting to exec) may be read after this one from their
		 * own ring: as the first sight of the pid they would rename it
		 * back (note_process). */
		(void)u64map_put(&p->seen_pids, (uint64_t)pr->hdr.pid + 1, 1);
		break;
	case CW_OP_exit:
		if (p->http)
			cw_http_track_exit(p->http, pr->hdr.pid, pr->hdr.ts_ns);
		prow.pid = pr->hdr.pid;
		prow.has_exit = 1;
		prow.exit_code = pr->exit_code;
		break;
	default:
		return err;
	}
	if (cw_writer_process(p->o.writer, &prow))
		p->c.write_errors++;
	return err;
}

static int on_snapshot(struct cw_pipeline *p, const struct cw_snapshot *s)
{
	struct cw_snapshot_row row = {
		.mono_ns = s->hdr.ts_ns,
		.wall_ns = wall_of(p, s->hdr.ts_ns),
		.cpu_pct = s->cpu_pct_x100 / 100.0,
		.mem_pct = s->mem_pct_x100 / 100.0,
		.load1 = s->load1_x100 / 100.0,
		.io_busy_pct = s->io_busy_pct_x100 / 100.0,
		.swap_used_bytes = (int64_t)s->swap_used_bytes,
		.page_alloc_per_s = (int64_t)s->page_alloc_per_s,
		.io_bytes_per_s = (int64_t)s->io_bytes_per_s,
		.ncpu = (int)s->ncpu,
	};
	int err = cw_writer_snapshot(p->o.writer, &row);

	if (err)
		p->c.write_errors++;
	return err;
}

/* A traced server's socket call (trace --inference). Its thread is
 * named like any other, so explain can say whose requests these are. */
static int http_track(struct cw_pipeline *p)
{
	int err;

	if (!p->http) {
		if ((err = cw_http_track_new(&p->http, p->o.writer)))
			return err;
		cw_http_track_set_clock(p->http, p->o.mono_to_wall_ns);
	}
	return 0;
}

static int on_http(struct cw_pipeline *p, const struct cw_http_io *r)
{
	int err = http_track(p);

	if (err)
		return err;
	(void)thread_get(p, &r->hdr, 1);
	return cw_http_track_record(p->http, r);
}

void cw_pipeline_http_totals(const struct cw_pipeline *p, struct cw_http_track_totals *out)
{
	memset(out, 0, sizeof(*out));
	if (p->http)
		cw_http_track_totals(p->http, out);
}

int cw_pipeline_http_own_client(struct cw_pipeline *p, uint16_t port)
{
	int err = http_track(p);

	if (!err)
		cw_http_track_own_client(p->http, port);
	return err;
}

int cw_pipeline_feed(struct cw_pipeline *p, const void *data, size_t size)
{
	const struct cw_hdr *h;

	p->c.records++;
	switch (cw_decode(data, size, &h)) {
	case CW_DECODE_OK:
		break;
	case CW_DECODE_SHORT:
		p->c.rejected_size++;
		return -EINVAL;
	case CW_DECODE_VERSION:
		p->c.rejected_version++;
		return -EINVAL;
	default:
		p->c.rejected_type++;
		return -EINVAL;
	}
	switch (h->type) {
	case CW_REC_CALL_ENTRY: return on_entry(p, data);
	case CW_REC_CALL_RETURN: return on_return(p, data);
	case CW_REC_CALL: return on_call(p, data);
	case CW_REC_OFFCPU: return on_offcpu(p, data);
	case CW_REC_BLOCK_IO: return on_block_io(p, data);
	case CW_REC_NET: return on_net(p, data);
	case CW_REC_MEM: return on_mem(p, data);
	case CW_REC_PROC: return on_proc(p, data);
	case CW_REC_PYSTACK: return on_pystack(p, data);
	case CW_REC_USTACK: return on_ustack(p, data);
	case CW_REC_KERNEL_NAME: return on_kernel_name(p, data);
	case CW_REC_SNAPSHOT: return on_snapshot(p, data);
	case CW_REC_HTTP_IO: return on_http(p, data);
	default:
		p->c.rejected_type++;
		return -EINVAL;
	}
}

static void store_counters(struct cw_pipeline *p)
{
	struct cw_writer *w = p->o.writer;

	cw_writer_counter_set(w, "pipeline.records", p->c.records);
	cw_writer_counter_set(w, "pipeline.rejected_size", p->c.rejected_size);
	cw_writer_counter_set(w, "pipeline.rejected_version", p->c.rejected_version);
	cw_writer_counter_set(w, "pipeline.rejected_type", p->c.rejected_type);
	cw_writer_counter_set(w, "pipeline.unpaired_returns", p->c.unpaired_returns);
	cw_writer_counter_set(w, "pipeline.unfinished_entries", p->c.unfinished_entries);
	cw_writer_counter_set(w, "pipeline.open_at_end", p->c.open_at_end);
	cw_writer_counter_set(w, "pipeline.overflow_entries", p->c.overflow_entries);
	cw_writer_counter_set(w, "pipeline.orphan_stacks", p->c.orphan_stacks);
	cw_writer_counter_set(w, "pipeline.py_unresolved", p->c.py_unresolved);
	cw_writer_counter_set(w, "pipeline.write_errors", p->c.write_errors);
	cw_writer_counter_set(w, "pipeline.calls", p->c.calls);
	cw_writer_counter_set(w, "pipeline.offcpu", p->c.offcpu);
}

/* Emits every open entry of t older than cutoff as unfinished, counted in
 * *count. */
static void close_stale(struct cw_pipeline *p, struct thread_state *t, uint64_t now, uint64_t cutoff,
			uint64_t *count)
{
	int i, keep = 0;

	for (i = 0; i < t->depth; i++) {
		if (t->open[i].e.hdr.ts_ns < cutoff) {
			(*count)++;
			emit_call(p, &t->open[i], now, 0, 0);
		} else {
			t->open[keep++] = t->open[i];
		}
	}
	t->depth = keep;
}

int cw_pipeline_flush(struct cw_pipeline *p, uint64_t now, uint64_t max_open_ns)
{
	size_t i;

	if (max_open_ns && now > max_open_ns)
		for (i = 0; i < p->nthreads; i++)
			close_stale(p, &p->threads[i], now, now - max_open_ns, &p->c.unfinished_entries);
	if (p->http)
		cw_http_track_tick(p->http, now);
	store_counters(p);
	return cw_writer_flush(p->o.writer);
}

int cw_pipeline_finish(struct cw_pipeline *p, uint64_t now)
{
	size_t i;

	for (i = 0; i < p->nthreads; i++)
		close_stale(p, &p->threads[i], now, UINT64_MAX, &p->c.open_at_end);
	if (p->http)
		cw_http_track_finish(p->http, now);
	store_counters(p);
	return cw_writer_flush(p->o.writer);
}

void cw_pipeline_free(struct cw_pipeline *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nthreads; i++) {
		struct thread_state *t = &p->threads[i];
		uint64_t last = t->depth ? t->open[t->depth - 1].e.hdr.ts_ns : 0;
		int j;

		close_stale(p, t, last, UINT64_MAX, &p->c.unfinished_entries);
		for (j = 0; j < MAX_PENDING_STACKS; j++)
			orphan_pending(p, &t->pending[j]);
	}
	store_counters(p);
	for (i = 0; i < p->nkernel_names; i++)
		free(p->kernel_names[i]);
	free(p->kernel_names);
	free(p->threads);
	u64map_free(&p->thread_index);
	u64map_free(&p->seen_pids);
	u64map_free(&p->kernel_index);
	cw_nccl_track_free(p->nccl);
	cw_http_track_free(p->http);
	free(p);
}
