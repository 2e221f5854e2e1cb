#include "demo/gen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pipeline/ops.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/vec.h"

/* One queued record. Python stacks are kept as their header plus a site
 * number and expanded to a full struct cw_pystack (576 bytes) only when
 * fed: a run queues tens of thousands of them. */
struct cw_demo_qrec {
	uint64_t deliver; /* when a ring buffer would hand it to userspace */
	uint64_t seq;     /* queue order, the tie-breaker */
	size_t off;
	uint16_t len;
	uint16_t site; /* > 0: a Python stack of that site */
};

/* ---- PRNG ---- */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void cw_demo_rng_seed(struct cw_demo_rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t cw_demo_rng_next(struct cw_demo_rng *r)
{
	uint64_t *s = r->s;
	uint64_t res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return res;
}

double cw_demo_rng_unit(struct cw_demo_rng *r)
{
	return (double)(cw_demo_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

uint64_t cw_demo_rng_range(struct cw_demo_rng *r, uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	return lo + cw_demo_rng_next(r) % (hi - lo + 1);
}

/* Standard normal (Box-Muller). */
static double cw_demo_rng_normal(struct cw_demo_rng *r)
{
	double u = cw_demo_rng_unit(r), v = cw_demo_rng_unit(r);

	if (u < 1e-300)
		u = 1e-300;
	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

uint64_t cw_demo_jitter(struct cw_demo_rng *r, uint64_t x, double sigma, double cap)
{
	double f = exp(sigma * cw_demo_rng_normal(r));

	if (cap > 1 && f > cap)
		f = cap;
	if (cap > 1 && f < 1 / cap)
		f = 1 / cap;
	return (uint64_t)((double)x * f + 0.5);
}

/* ---- queue ---- */

void cw_demo_gen_init(struct cw_demo_gen *g, uint64_t seed)
{
	memset(g, 0, sizeof(*g));
	cw_demo_rng_seed(&g->rng, seed);
}

void cw_demo_gen_release(struct cw_demo_gen *g)
{
	free(g->q);
	free(g->arena);
	memset(g, 0, sizeof(*g));
}

static void *queue(struct cw_demo_gen *g, uint64_t deliver, size_t len, int site)
{
	struct cw_demo_qrec *r;

	if (g->err)
		return NULL;
	if (cw_vec_reserve(&g->q, &g->cap, g->n + 1, sizeof(*g->q), 4096) < 0)
		goto nomem;
	/* Records are 8-byte aligned in the arena so they can be read in place. */
	len = (len + 7) & ~(size_t)7;
	if (cw_vec_reserve(&g->arena, &g->acap, g->alen + len, 1, 1 << 20) < 0)
		goto nomem;
	r = &g->q[g->n];
	r->deliver = deliver;
	r->seq = g->n;
	r->off = g->alen;
	r->len = (uint16_t)len;
	r->site = (uint16_t)site;
	g->n++;
	memset(g->arena + g->alen, 0, len);
	g->alen += len;
	if (deliver > g->last_ns)
		g->last_ns = deliver;
	return g->arena + r->off;
nomem:
	g->err = -ENOMEM;
	return NULL;
}

static void fill_hdr(struct cw_hdr *h, unsigned type, size_t size, unsigned source, unsigned op, uint64_t ts,
		     const struct cw_demo_task *t)
{
	h->type = (__u16)type;
	h->size = (__u16)size;
	h->version = CW_EVENTS_VERSION;
	h->source = (__u8)source;
	h->op = (__u16)op;
	h->ts_ns = ts;
	if (t) {
		h->pid = t->pid;
		h->tid = t->tid;
		h->cgroup_id = t->cgroup_id;
		/* comm is a fixed 16-byte field, NUL-padded like the kernel's. */
		cw_copy_padded(h->comm, t->comm, CW_COMM_LEN - 1);
	}
}

static void copy_comm(char *dst, const char *src)
{
	if (src)
		cw_copy_padded(dst, src, CW_COMM_LEN - 1);
}

static void queue_call(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t dur, unsigned op,
		       int64_t ret, const uint64_t *args, int nargs, int device, int site, int open)
{
	/* cuda.bpf.c emits a whole call at its return; a Python stack taken
	 * for it precedes it on the ring, stamped with the entry's time. A
	 * call still open when the trace ends is an entry the agent's sweep
	 * finds in the open-call table (stored unfinished). */
	unsigned src = cw_op_source(op);
	int with_stack = site > CW_SITE_NONE && site < CW_SITE_MAX;
	struct cw_call_entry *e;
	struct cw_call *c = NULL;

	if (with_stack) {
		struct cw_hdr *h = queue(g, ts, sizeof(*h), site);

		if (!h)
			return;
		fill_hdr(h, CW_REC_PYSTACK, sizeof(struct cw_pystack), CW_SRC_PYTHON, CW_OP_pystack, ts, t);
	}
	if (open) {
		e = queue(g, ts, sizeof(*e), 0);
		if (!e)
			return;
		fill_hdr(&e->hdr, CW_REC_CALL_ENTRY, sizeof(*e), src, op, ts, t);
	} else {
		c = queue(g, ts + dur, sizeof(*c), 0);
		if (!c)
			return;
		fill_hdr(&c->e.hdr, CW_REC_CALL, sizeof(*c), src, op, ts, t);
		e = &c->e;
	}
	for (int i = 0; i < nargs && args; i++)
		e->args[i] = args[i];
	e->device = device;
	e->flags = with_stack ? CW_CALL_F_PYSTACK : 0;
	if (c) {
		c->end_ns = ts + dur;
		c->retval = ret; /* 0: cudaSuccess */
	}
}

void cw_demo_call(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t dur, unsigned op,
		  const uint64_t args[4], int device, int site)
{
	queue_call(g, t, ts, dur, op, 0, args, 4, device, site, 0);
}

void cw_demo_call6(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t dur, unsigned op,
		   const uint64_t args[6], int device, int site)
{
	queue_call(g, t, ts, dur, op, 0, args, 6, device, site, 0);
}

void cw_demo_call_open(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, unsigned op,
		       const uint64_t args[6], int device, int site)
{
	queue_call(g, t, ts, 0, op, 0, args, 6, device, site, 1);
}

void cw_demo_call_ret(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t dur, unsigned op,
		      const uint64_t args[6], int device, int site, int64_t ret)
{
	queue_call(g, t, ts, dur, op, ret, args, 6, device, site, 0);
}

void cw_demo_offcpu(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t start, uint64_t end, int reason,
		    const struct cw_demo_task *by, const struct cw_demo_task *waker)
{
	/* sched.bpf.c emits the interval when the thread is switched back in. */
	struct cw_offcpu *o = queue(g, end, sizeof(*o), 0);

	if (!o)
		return;
	fill_hdr(&o->hdr, CW_REC_OFFCPU, sizeof(*o), CW_SRC_SCHED, CW_OP_offcpu, start, t);
	o->end_ns = end;
	o->reason = (__u32)reason;
	o->cpu = (__u32)t->cpu;
	if (by) {
		o->by_pid = by->pid;
		o->by_tid = by->tid;
		o->by_cgroup_id = by->cgroup_id;
		copy_comm(o->by_comm, by->comm);
	}
	if (waker) {
		o->waker_pid = waker->pid;
		o->waker_tid = waker->tid;
		copy_comm(o->waker_comm, waker->comm);
	}
	/* prev_state: TASK_RUNNING (0) when preempted, TASK_INTERRUPTIBLE (1)
	 * when it went to sleep. */
	o->state = reason == CW_OFFCPU_PREEMPTED ? 0 : 1;
}

void cw_demo_http(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, unsigned op, int fd,
		  uint16_t port, const char *bytes, uint64_t len)
{
	/* http.bpf.c emits a socket call when it returns. */
	struct cw_http_io *r = queue(g, ts, sizeof(*r), 0);
	size_t have = bytes ? strlen(bytes) : 0;

	if (!r)
		return;
	fill_hdr(&r->hdr, CW_REC_HTTP_IO, sizeof(*r), CW_SRC_NET, op, ts, t);
	r->fd = fd;
	r->port = port;
	r->len = (__s64)(len ? len : have);
	r->head_len = (__u16)(have < CW_HTTP_IO_HEAD ? have : CW_HTTP_IO_HEAD);
	memcpy(r->head, bytes ? bytes : "", r->head_len);
}

void cw_demo_block_io(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t issue, uint64_t complete,
		      uint32_t bytes, uint64_t sector, int write)
{
	/* io.bpf.c emits a request on block_rq_complete. */
	struct cw_block_io *b = queue(g, complete, sizeof(*b), 0);

	if (!b)
		return;
	fill_hdr(&b->hdr, CW_REC_BLOCK_IO, sizeof(*b), CW_SRC_IO, write ? CW_OP_block_write : CW_OP_block_read,
		 issue, t);
	b->complete_ns = complete;
	b->sector = sector;
	b->bytes = bytes;
	b->dev = (259u << 20) | 0; /* nvme0n1: MKDEV(259, 0) in the kernel's 12:20 encoding */
	memcpy(b->rwbs, write ? "WS" : "RA", 3);
}

void cw_demo_page_alloc(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t pages,
			uint64_t interval_ns)
{
	struct cw_mem *m = queue(g, ts, sizeof(*m), 0);

	if (!m)
		return;
	fill_hdr(&m->hdr, CW_REC_MEM, sizeof(*m), CW_SRC_MEM, CW_OP_page_alloc, ts, t);
	m->pages = pages;
	m->interval_ns = interval_ns;
}

void cw_demo_oom_kill(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts,
		      const struct cw_demo_task *victim, uint64_t rss_pages, uint64_t limit_bytes, uint64_t total_vm)
{
	/* mem.bpf.c: the header is the task that ran into the OOM. */
	struct cw_mem *m = queue(g, ts, sizeof(*m), 0);

	if (!m)
		return;
	fill_hdr(&m->hdr, CW_REC_MEM, sizeof(*m), CW_SRC_MEM, CW_OP_oom_kill, ts, t);
	m->pages = rss_pages;
	m->interval_ns = limit_bytes;
	m->victim_pid = victim->pid;
	copy_comm(m->victim_comm, victim->comm);
	m->bytes = total_vm;
}

void cw_demo_retransmit(struct cw_demo_gen *g, const struct cw_demo_task *owner, uint64_t ts, const uint8_t saddr[4],
			uint16_t sport, const uint8_t daddr[4], uint16_t dport)
{
	/* net.bpf.c: attributed to the socket's last user. */
	struct cw_net *n = queue(g, ts, sizeof(*n), 0);

	if (!n)
		return;
	fill_hdr(&n->hdr, CW_REC_NET, sizeof(*n), CW_SRC_NET, CW_OP_tcp_retransmit, ts, owner);
	n->family = 2; /* AF_INET */
	n->sport = sport;
	n->dport = dport;
	n->state = 1; /* TCP_ESTABLISHED */
	memcpy(n->saddr, saddr, 4);
	memcpy(n->daddr, daddr, 4);
}

void cw_demo_proc(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, unsigned op, uint32_t child,
		  int exit_code, const char *filename)
{
	struct cw_proc *p = queue(g, ts, sizeof(*p), 0);

	if (!p)
		return;
	fill_hdr(&p->hdr, CW_REC_PROC, sizeof(*p), CW_SRC_PROC, op, ts, t);
	if (op == CW_OP_fork) {
		p->parent_pid = t->pid;
		p->child_pid = child;
	}
	p->exit_code = exit_code;
	if (filename)
		cw_copy_padded(p->filename, filename, CW_PATH_LEN - 1);
}

void cw_demo_kernel_name(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t handle,
			 const char *name)
{
	struct cw_kernel_name *k = queue(g, ts, sizeof(*k), 0);

	if (!k)
		return;
	fill_hdr(&k->hdr, CW_REC_KERNEL_NAME, sizeof(*k), CW_SRC_CUDA, CW_OP_kernel_name, ts, t);
	k->handle = handle;
	cw_copy_padded(k->name, name, CW_NAME_LEN - 1);
}

void cw_demo_snapshot(struct cw_demo_gen *g, uint64_t ts, const struct cw_demo_snap *s)
{
	static const struct cw_demo_task sampler = { .comm = "causeway" };
	struct cw_snapshot *r = queue(g, ts, sizeof(*r), 0);

	if (!r)
		return;
	fill_hdr(&r->hdr, CW_REC_SNAPSHOT, sizeof(*r), CW_SRC_SYSTEM, CW_OP_snapshot, ts, &sampler);
	r->cpu_pct_x100 = (__u32)(s->cpu_pct * 100 + 0.5);
	r->mem_pct_x100 = (__u32)(s->mem_pct * 100 + 0.5);
	r->swap_used_bytes = s->swap_used_bytes;
	r->load1_x100 = (__u32)(s->load1 * 100 + 0.5);
	r->ncpu = s->ncpu;
	r->page_alloc_per_s = s->page_alloc_per_s;
	r->io_bytes_per_s = s->io_bytes_per_s;
	r->io_busy_pct_x100 = (__u32)(s->io_busy_pct * 100 + 0.5);
}

/* ---- delivery ---- */

static int qrec_cmp(const void *a, const void *b)
{
	const struct cw_demo_qrec *x = a, *y = b;

	if (x->deliver != y->deliver)
		return x->deliver < y->deliver ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static double now_s(void)
{
	return (double)cw_monotonic_ns() / 1e9;
}

int cw_demo_gen_feed(struct cw_demo_gen *g, struct cw_pipeline *p, double speed, int progress,
		     struct cw_demo_feed_stats *st)
{
	struct cw_pystack ps;
	double start = now_s(), last_report = start;
	uint64_t first;
	int shown = 0;

	memset(st, 0, sizeof(*st));
	if (g->err)
		return g->err;
	if (!g->n)
		return 0;
	qsort(g->q, g->n, sizeof(*g->q), qrec_cmp);
	first = g->q[0].deliver;
	for (size_t i = 0; i < g->n; i++) {
		const struct cw_demo_qrec *r = &g->q[i];
		const void *data = g->arena + r->off;
		size_t size = ((const struct cw_hdr *)data)->size;

		if (speed > 0) {
			/* Sleep until this record is due at speed x real time. */
			double due = start + (double)(r->deliver - first) / 1e9 / speed, now = now_s();

			if (due > now) {
				struct timespec ts = { (time_t)(due - now), (long)((due - now - (double)(time_t)(due - now)) * 1e9) };

				nanosleep(&ts, NULL);
				now = now_s();
			}
			if (progress && now - last_report >= 1.0) {
				fprintf(stderr, "\rcauseway: demo: %5.1f s of %.1f s synthetic time, %llu records",
					(double)(r->deliver - first) / 1e9, (double)(g->last_ns - first) / 1e9,
					(unsigned long long)st->records);
				last_report = now;
				shown = 1;
			}
		}
		if (r->site) {
			memset(&ps, 0, sizeof(ps));
			memcpy(&ps.hdr, data, sizeof(ps.hdr));
			ps.py_version = 0x030c; /* CPython 3.12 */
			ps.nframes = cw_demo_site_frames(r->site, ps.frames, CW_PY_MAX_FRAMES);
			data = &ps;
			size = sizeof(ps);
		}
		st->records++;
		if (cw_pipeline_feed(p, data, size))
			st->rejected++;
	}
	if (shown)
		fputc('\n', stderr);
	st->elapsed_s = now_s() - start;
	return st->rejected ? -EPROTO : 0;
}
