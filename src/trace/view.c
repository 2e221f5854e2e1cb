/* trace_view: per-op live table, host context, losses and warnings. */
#include "trace/view.h"

#include "trace/nccl_live.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hist.h"
#include "bpf/events.h"
#include "util/timeutil.h"
#include "util/term.h"

#define MAX_OPS 160
#define MAX_THREADS 4096 /* open addressing; power of two */
#define MAX_BY 4
/* A slow op worth a warning: p99 at least this long. */
#define WARN_MIN_P99_NS (1 * NSEC_PER_MSEC)

struct op_stat {
	char source[16];
	char op[48];
	uint64_t count, interval_count, errors, aggregated, folded;
	uint64_t slowest_ns;
	uint32_t slowest_tid;
	struct cw_hist hist;
};

struct by_count {
	char comm[CW_COMM_LEN];
	uint32_t n;
};

struct thread_stat {
	uint32_t tid, pid;
	uint32_t preempted, blocked;
	uint64_t offcpu_ns;
	struct by_count by[MAX_BY];
};

struct cw_trace_view {
	struct op_stat ops[MAX_OPS];
	int nops;
	struct thread_stat *threads;
	int nthreads;
	struct cw_snapshot snap;
	int have_snap;
	uint64_t last_render_ns;
	char gpu[CW_TRACE_VIEW_GPUS][200];
	char alerts[4][256];
	int nalerts;
	struct cw_nccl_live nccl;
	uint64_t hang_floor_ns; /* 0: 10 s */
};

void cw_trace_view_gpu_line(struct cw_trace_view *v, int i, const char *line)
{
	if (i < 0 || i >= CW_TRACE_VIEW_GPUS)
		return;
	snprintf(v->gpu[i], sizeof(v->gpu[i]), "%s", line ? line : "");
}

void cw_trace_view_alert(struct cw_trace_view *v, const char *text)
{
	if (v->nalerts == 4) {
		memmove(v->alerts[0], v->alerts[1], sizeof(v->alerts[0]) * 3);
		v->nalerts = 3;
	}
	snprintf(v->alerts[v->nalerts++], sizeof(v->alerts[0]), "%s", text);
}

int cw_trace_view_new(struct cw_trace_view **out)
{
	struct cw_trace_view *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	v->threads = calloc(MAX_THREADS, sizeof(*v->threads));
	if (!v->threads) {
		free(v);
		return -ENOMEM;
	}
	v->last_render_ns = cw_monotonic_ns();
	*out = v;
	return 0;
}

void cw_trace_view_free(struct cw_trace_view *v)
{
	if (!v)
		return;
	free(v->threads);
	free(v);
}

static struct op_stat *op_get(struct cw_trace_view *v, const char *source, const char *op)
{
	int i;

	for (i = 0; i < v->nops; i++)
		if (!strcmp(v->ops[i].op, op) && !strcmp(v->ops[i].source, source))
			return &v->ops[i];
	if (v->nops == MAX_OPS)
		return NULL;
	memset(&v->ops[v->nops], 0, sizeof(v->ops[0]));
	snprintf(v->ops[v->nops].source, sizeof(v->ops[0].source), "%s", source);
	snprintf(v->ops[v->nops].op, sizeof(v->ops[0].op), "%s", op);
	cw_hist_reset(&v->ops[v->nops].hist);
	return &v->ops[v->nops++];
}

static struct thread_stat *thread_get(struct cw_trace_view *v, uint32_t tid, int create)
{
	uint32_t h = (tid * 2654435761u) & (MAX_THREADS - 1), i;

	for (i = 0; i < MAX_THREADS; i++) {
		struct thread_stat *t = &v->threads[(h + i) & (MAX_THREADS - 1)];

		if (t->tid == tid)
			return t;
		if (!t->tid) {
			/* Keep a quarter free so probes stay short. */
			if (!create || v->nthreads >= MAX_THREADS * 3 / 4)
				return NULL;
			t->tid = tid;
			v->nthreads++;
			return t;
		}
	}
	return NULL;
}

static int is_call_source(const char *s)
{
	return !strcmp(s, "cuda") || !strcmp(s, "driver") || !strcmp(s, "graph") || !strcmp(s, "nccl");
}

void cw_trace_view_observe(void *ctx, const struct cw_event_row *row)
{
	struct cw_trace_view *v = ctx;
	struct op_stat *o;

	if (!row->source || !row->op)
		return;
	cw_nccl_live_observe(&v->nccl, row);
	o = op_get(v, row->source, row->op);
	if (!o)
		return;
	o->count++;
	o->interval_count++;
	if (row->has_ret && row->ret != 0)
		o->errors++;
	cw_hist_add(&o->hist, row->duration_ns);
	if (row->duration_ns >= o->slowest_ns) {
		o->slowest_ns = row->duration_ns;
		o->slowest_tid = row->tid;
	}
}

void cw_trace_view_record(struct cw_trace_view *v, const void *data, size_t size)
{
	const struct cw_hdr *h = data;

	if (size < sizeof(*h))
		return;
	if (h->type == CW_REC_SNAPSHOT && size >= sizeof(struct cw_snapshot)) {
		memcpy(&v->snap, data, sizeof(v->snap));
		v->have_snap = 1;
	} else if (h->type == CW_REC_OFFCPU && size >= sizeof(struct cw_offcpu)) {
		const struct cw_offcpu *r = data;
		struct thread_stat *t = thread_get(v, h->tid, 1);
		int i, slot = -1;

		if (!t)
			return;
		t->pid = h->pid;
		t->offcpu_ns += r->end_ns > h->ts_ns ? r->end_ns - h->ts_ns : 0;
		if (r->reason != CW_OFFCPU_PREEMPTED) {
			t->blocked++;
			return;
		}
		t->preempted++;
		for (i = 0; i < MAX_BY; i++) {
			if (!strncmp(t->by[i].comm, r->by_comm, CW_COMM_LEN)) {
				slot = i;
				break;
			}
			if (slot < 0 && !t->by[i].n)
				slot = i;
		}
		if (slot < 0) {
			/* Replace the rarest: the frequent preemptors are the story. */
			slot = 0;
			for (i = 1; i < MAX_BY; i++)
				if (t->by[i].n < t->by[slot].n)
					slot = i;
			t->by[slot].n = 0;
		}
		if (!t->by[slot].n)
			memcpy(t->by[slot].comm, r->by_comm, CW_COMM_LEN);
		t->by[slot].comm[CW_COMM_LEN - 1] = '\0';
		t->by[slot].n++;
	}
}

void cw_trace_view_set_aggregated(struct cw_trace_view *v, const char *source, const char *op, uint64_t count)
{
	struct op_stat *o = op_get(v, source, op);

	if (o)
		o->aggregated = count;
}

void cw_trace_view_fold(struct cw_trace_view *v, const char *source, const char *op, const struct cw_hist *h)
{
	struct op_stat *o = op_get(v, source, op);

	if (!o)
		return;
	cw_hist_merge(&o->hist, h);
	o->count += h->count;
	o->interval_count += h->count;
	o->folded += h->count;
}

static int cmp_count(const void *a, const void *b)
{
	const struct op_stat *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : strcmp(x->op, y->op);
}

void cw_trace_view_set_hang_floor(struct cw_trace_view *v, uint64_t ns)
{
	v->hang_floor_ns = ns;
}

int cw_trace_view_warnings(struct cw_trace_view *v, char (*lines)[256], int max)
{
	int i, n = 0;

	/* A hang first: it stops the job. */
	if (max > 0 && cw_nccl_live_hang(&v->nccl, cw_realtime_ns(), v->hang_floor_ns, lines[n], 256))
		n++;
	for (i = 0; i < v->nops && n < max; i++) {
		struct op_stat *o = &v->ops[i];
		struct thread_stat *t;
		char p99[32], off[32];
		uint64_t q99;
		int b, top = -1;

		if (!is_call_source(o->source) || o->count < 5)
			continue;
		q99 = cw_hist_quantile(&o->hist, 0.99);
		if (q99 < WARN_MIN_P99_NS)
			continue;
		cw_format_duration(q99, p99, sizeof(p99));
		t = thread_get(v, o->slowest_tid, 0);
		if (t)
			for (b = 0; b < MAX_BY; b++)
				if (t->by[b].n && (top < 0 || t->by[b].n > t->by[top].n))
					top = b;
		if (t && top >= 0 && t->preempted)
			snprintf(lines[n++], 256, "%s p99 %s \u2014 thread %u preempted %u times by %s", o->op, p99,
				 t->tid, t->preempted, t->by[top].comm);
		else if (t && t->blocked) {
			cw_format_duration(t->offcpu_ns, off, sizeof(off));
			snprintf(lines[n++], 256, "%s p99 %s \u2014 thread %u blocked %u times (%s off CPU)", o->op,
				 p99, t->tid, t->blocked, off);
		}
	}
	return n;
}

void cw_trace_view_render(struct cw_trace_view *v, FILE *f, const struct cw_trace_view_status *st, int tty)
{
	struct op_stat sorted[MAX_OPS];
	char el[32], warn[3][256];
	uint64_t now = cw_monotonic_ns();
	double dt = (double)(now - v->last_render_ns) / 1e9;
	int i, nw;

	if (dt <= 0)
		dt = 1;
	memcpy(sorted, v->ops, sizeof(v->ops[0]) * (size_t)v->nops);
	qsort(sorted, (size_t)v->nops, sizeof(sorted[0]), cmp_count);
	char *body = NULL;
	size_t blen = 0;
	FILE *const out = f;

	if (tty)
		fputs("\033[H\033[2J", f);
	/* The screen shows stored text (op and library symbol names, the
	 * comm of a preempting task): written out escaped (util/term.h). */
	f = open_memstream(&body, &blen);
	if (!f)
		return;
	cw_format_duration(st->elapsed_ns, el, sizeof(el));
	fprintf(f, "causeway trace  %s  processes %d  libraries %d  probes %d  db %s\n", el, st->nprocs,
		st->nlibs, st->nprobes, st->db ? st->db : "-");
	if (v->have_snap)
		fprintf(f, "host: cpu %.1f%%  mem %.1f%%  load %.2f  swap %.1f MiB  io %.1f MiB/s (busy %.0f%%)\n",
			v->snap.cpu_pct_x100 / 100.0, v->snap.mem_pct_x100 / 100.0, v->snap.load1_x100 / 100.0,
			(double)v->snap.swap_used_bytes / (1 << 20), (double)v->snap.io_bytes_per_s / (1 << 20),
			v->snap.io_busy_pct_x100 / 100.0);
	for (i = 0; i < CW_TRACE_VIEW_GPUS; i++)
		if (v->gpu[i][0])
			fprintf(f, "%s\n", v->gpu[i]);
	fprintf(f, "losses: ring drops %llu  aggregated in kernel %llu  pipeline %llu  store %llu%s\n",
		(unsigned long long)st->ring_drops, (unsigned long long)st->aggregated,
		(unsigned long long)st->pipeline_losses, (unsigned long long)(st->store_failed + st->held_dropped),
		st->aggregated ? "  (ring over its fill threshold: counted, not stored per call)" : "");
	if (st->held_ns) {
		char held[32], lim[32];

		cw_format_duration(st->held_ns, held, sizeof(held));
		cw_format_duration(st->held_limit_ns, lim, sizeof(lim));
		fprintf(f, "STORE: database locked by another process for %s (giving up after %s); "
			   "%llu records held in memory, %llu dropped\n",
			held, lim, (unsigned long long)st->held_records, (unsigned long long)st->held_dropped);
	}
	if (st->store_problem)
		fprintf(f, "STORE: %s: %llu rows could not be stored\n", st->store_problem,
			(unsigned long long)st->store_failed);
	fprintf(f, "\n%-8s %-26s %10s %9s %9s %9s %9s  %s\n", "SOURCE", "OP", "COUNT", "RATE/s", "P50", "P95",
		"P99", "FLAGS");
	for (i = 0; i < v->nops && i < 40; i++) {
		struct op_stat *o = &sorted[i];
		char p50[16], p95[16], p99[16], flags[64] = "";

		cw_format_duration(cw_hist_quantile(&o->hist, 0.50), p50, sizeof(p50));
		cw_format_duration(cw_hist_quantile(&o->hist, 0.95), p95, sizeof(p95));
		cw_format_duration(cw_hist_quantile(&o->hist, 0.99), p99, sizeof(p99));
		if (o->errors)
			snprintf(flags + strlen(flags), sizeof(flags) - strlen(flags), "err:%llu ",
				 (unsigned long long)o->errors);
		if (o->aggregated)
			snprintf(flags + strlen(flags), sizeof(flags) - strlen(flags), "agg:%llu ",
				 (unsigned long long)o->aggregated);
		if (o->folded)
			snprintf(flags + strlen(flags), sizeof(flags) - strlen(flags), "fold:%llu ",
				 (unsigned long long)o->folded);
		if (is_call_source(o->source) && cw_hist_quantile(&o->hist, 0.99) >= WARN_MIN_P99_NS &&
		    cw_hist_quantile(&o->hist, 0.99) > 4 * cw_hist_quantile(&o->hist, 0.50))
			snprintf(flags + strlen(flags), sizeof(flags) - strlen(flags), "tail ");
		fprintf(f, "%-8s %-26s %10llu %9.1f %9s %9s %9s  %s\n", o->source, o->op,
			(unsigned long long)o->count, o->interval_count / dt, p50, p95, p99, flags);
	}
	nw = cw_trace_view_warnings(v, warn, 3);
	if (nw || v->nalerts)
		fputc('\n', f);
	for (i = 0; i < v->nalerts; i++)
		fprintf(f, "warning: %s\n", v->alerts[i]);
	for (i = 0; i < nw; i++)
		fprintf(f, "warning: %s\n", warn[i]);
	if (!fclose(f))
		(void)cw_term_put_lines(out, body);
	free(body);
	f = out;
	fflush(f);
	for (i = 0; i < v->nops; i++)
		v->ops[i].interval_count = 0;
	v->last_render_ns = now;
}
