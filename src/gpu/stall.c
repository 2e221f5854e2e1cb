#include "gpu/stall.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROCS 256
#define NSEC_PER_S 1000000000ULL

struct cw_stall {
	struct cw_stall_opts o;
	struct cw_stall_proc *procs;
	int nprocs;
};

int cw_stall_new(struct cw_stall **out, const struct cw_stall_opts *o)
{
	struct cw_stall *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->procs = calloc(MAX_PROCS, sizeof(*s->procs));
	if (!s->procs) {
		free(s);
		return -ENOMEM;
	}
	if (o)
		s->o = *o;
	*out = s;
	return 0;
}

void cw_stall_free(struct cw_stall *s)
{
	if (!s)
		return;
	free(s->procs);
	free(s);
}

static struct cw_stall_op *op_get(struct cw_stall_proc *p, const char *op)
{
	struct cw_stall_op *o;

	for (int i = 0; i < p->nops; i++)
		if (!strcmp(p->ops[i].op, op))
			return &p->ops[i];
	if (p->nops == CW_STALL_OPS)
		return NULL;
	o = &p->ops[p->nops++];
	memset(o, 0, sizeof(*o));
	snprintf(o->op, sizeof(o->op), "%s", op);
	return o;
}

static void push_gap(struct cw_stall_op *o, uint64_t gap)
{
	o->gaps[o->next] = gap;
	o->next = (o->next + 1) % CW_STALL_GAPS;
	if (o->ngaps < CW_STALL_GAPS)
		o->ngaps++;
}

/* op's slot for sec, cleared for it when it held an older second; NULL
 * when it holds a newer one. */
static void *sec_slot(struct cw_stall_op *o, int64_t sec)
{
	unsigned i = (unsigned)((uint64_t)sec % CW_STALL_SECS);

	if (o->secs[i].sec > sec)
		return NULL;
	if (o->secs[i].sec != sec) {
		o->secs[i].sec = sec;
		o->secs[i].rows = 0;
		o->secs[i].folded = 0;
	}
	return &o->secs[i];
}

void cw_stall_proc_row_second(struct cw_stall_proc *p, const char *op, int64_t sec, uint32_t rows)
{
	struct cw_stall_op *o = op_get(p, op);

	if (o && sec > 0 && sec_slot(o, sec))
		o->secs[(uint64_t)sec % CW_STALL_SECS].rows += rows;
}

void cw_stall_proc_folded(struct cw_stall_proc *p, const char *op, int64_t sec, uint64_t count)
{
	struct cw_stall_op *o = op_get(p, op);

	if (o && sec > 0 && count && sec_slot(o, sec))
		o->secs[(uint64_t)sec % CW_STALL_SECS].folded += count;
}

void cw_stall_proc_call(struct cw_stall_proc *p, uint32_t tid, const char *op, uint64_t start_ns, uint64_t end_ns)
{
	struct cw_stall_op *o = op_get(p, op);

	if (o) {
		if (o->last_start && start_ns > o->last_start)
			push_gap(o, start_ns - o->last_start);
		if (start_ns > o->last_start)
			o->last_start = start_ns;
	}
	(void)end_ns;
	p->calls++;
	if (start_ns >= p->last_ns) {
		p->last_ns = start_ns;
		p->last_tid = tid;
		snprintf(p->last_op, sizeof(p->last_op), "%s", op);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t cw_stall_proc_step(const struct cw_stall_proc *p, unsigned min_calls)
{
	uint64_t best = 0, v[CW_STALL_GAPS];

	if (!min_calls)
		min_calls = CW_STALL_MIN_CALLS;
	for (int i = 0; i < p->nops; i++) {
		const struct cw_stall_op *o = &p->ops[i];
		/* n calls make n - 1 gaps. */
		unsigned n = 0;

		if (o->ngaps + 1 < min_calls)
			continue;
		/* Seconds with folded calls: their rate is the rhythm. */
		for (int k = 0; k < CW_STALL_SECS; k++)
			if (o->secs[k].folded)
				v[n++] = NSEC_PER_S / (o->secs[k].folded + o->secs[k].rows);
		if (!n) {
			memcpy(v, o->gaps, o->ngaps * sizeof(v[0]));
			n = o->ngaps;
		}
		qsort(v, n, sizeof(v[0]), cmp_u64);
		if (v[n / 2] > best)
			best = v[n / 2];
	}
	return best;
}

uint64_t cw_stall_threshold(uint64_t step_ns, const struct cw_stall_opts *o)
{
	uint64_t floor = o && o->floor_ns ? o->floor_ns : CW_STALL_FLOOR_NS;
	unsigned f = o && o->factor ? o->factor : CW_STALL_FACTOR;
	uint64_t t = step_ns * f;

	return t > floor ? t : floor;
}

int cw_stall_procs(const struct cw_stall *s, uint32_t *pids, uint32_t *last_tids, int max)
{
	int n = 0;

	for (int i = 0; i < s->nprocs && n < max; i++, n++) {
		pids[n] = s->procs[i].pid;
		last_tids[n] = s->procs[i].last_tid;
	}
	return n;
}

static struct cw_stall_proc *proc_get(struct cw_stall *s, uint32_t pid, int create)
{
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	if (!create || s->nprocs == MAX_PROCS)
		return NULL;
	memset(&s->procs[s->nprocs], 0, sizeof(s->procs[0]));
	s->procs[s->nprocs].pid = pid;
	return &s->procs[s->nprocs++];
}

void cw_stall_call(struct cw_stall *s, uint32_t pid, uint32_t tid, const char *op, uint64_t start_ns, uint64_t end_ns)
{
	struct cw_stall_proc *p = proc_get(s, pid, 1);

	if (!p)
		return;
	cw_stall_proc_call(p, tid, op, start_ns, end_ns);
	p->reported = 0;
}

void cw_stall_row_second(struct cw_stall *s, uint32_t pid, const char *op, uint64_t mono_ns, uint64_t wall_ns)
{
	struct cw_stall_proc *p = proc_get(s, pid, 0);
	uint64_t end;

	if (!p || !wall_ns)
		return;
	cw_stall_proc_row_second(p, op, (int64_t)(wall_ns / NSEC_PER_S), 1);
	end = mono_ns + (NSEC_PER_S - wall_ns % NSEC_PER_S);
	if (end > p->last_sec_end_ns)
		p->last_sec_end_ns = end;
}

void cw_stall_folded(struct cw_stall *s, uint32_t pid, const char *op, int64_t sec, uint64_t count)
{
	struct cw_stall_proc *p = proc_get(s, pid, 0);

	if (p)
		cw_stall_proc_folded(p, op, sec, count);
}

void cw_stall_exited(struct cw_stall *s, uint32_t pid)
{
	for (int i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid) {
			s->procs[i] = s->procs[--s->nprocs];
			return;
		}
}

int cw_stall_check(struct cw_stall *s, uint64_t now, int (*alive)(uint32_t pid, void *ctx), void *ctx,
		   struct cw_stall_hit *out, int max)
{
	int n = 0;

	for (int i = 0; i < s->nprocs && n < max; i++) {
		struct cw_stall_proc *p = &s->procs[i];
		uint64_t step, thr, from = p->last_ns;

		if (s->o.summary && p->last_sec_end_ns > from)
			from = p->last_sec_end_ns;
		if (p->reported || now <= from)
			continue;
		step = cw_stall_proc_step(p, s->o.min_calls);
		if (!step)
			continue;
		thr = cw_stall_threshold(step, &s->o);
		if (now - from <= thr)
			continue;
		if (alive && !alive(p->pid, ctx))
			continue;
		p->reported = 1;
		out[n] = (struct cw_stall_hit){
			.pid = p->pid, .last_tid = p->last_tid, .last_ns = p->last_ns, .step_ns = step,
			.threshold_ns = thr, .silent_ns = now - p->last_ns, .calls = p->calls,
		};
		memcpy(out[n].last_op, p->last_op, sizeof(out[n].last_op));
		n++;
	}
	return n;
}
