/* --capture summary: the userspace half of the calls folded in the kernel
 * (cuda.bpf.c fold_call). Once a second, under the consumer lock: the
 * monotonic -> wall offset and each op's fold threshold are pushed into
 * the probes, and every closed second of fold_hist is drained into the
 * store's per-second aggregates (exact counts, the same log-linear
 * buckets), so percentiles and baselines read every call in either mode. */
#include <string.h>

#include "metrics/live_metrics.h"
#include "pipeline/ops.h"
#include "trace/gpu.h"
#include "trace/session.h"
#include "trace/view.h"
#include "util/timeutil.h"

/* A call folds when under this multiple of its op's median: the store
 * flags a call anomalous above 3x (store/writer_aggregates.c), so every
 * call it would flag keeps its row, with a margin for the median's drift
 * between pushes. */
#define FOLD_FACTOR 2

static void push_thresholds(struct trace *t, int64_t off)
{
	uint64_t th[CW_OP_MAX];
	unsigned i;

	memset(th, 0, sizeof(th));
	for (i = 1; i < CW_HOOK_REGISTER_FUNCTION; i++) {
		const char *op = cw_op_name(i);

		if (op)
			th[i] = FOLD_FACTOR * cw_writer_op_median(t->w, cw_source_name(cw_op_source(i)), op);
	}
	cw_cuda_probes_fold_set(t->cp, off, th);
}

static void one_folded(void *ctx, const struct cw_fold_key *k, const struct cw_fold_val *v)
{
	struct trace *t = ctx;
	const char *op = k->op < CW_OP_MAX ? cw_op_name(k->op) : NULL;
	struct cw_hist h;
	unsigned b;

	if (!v->count)
		return;
	if (!op) {
		/* No name to store it under: counted, never silent. */
		t->fold_lost += v->count;
		return;
	}
	cw_hist_reset(&h);
	h.count = v->count;
	h.sum_ns = v->sum_ns;
	h.min_ns = v->min_ns;
	h.max_ns = v->max_ns;
	for (b = 0; b < CW_FOLD_BUCKETS && b < CW_HIST_BUCKETS; b++)
		h.buckets[b] = v->buckets[b];
	if (cw_writer_folded(t->w, k->pid, cw_source_name(cw_op_source(k->op)), op, k->second, &h)) {
		t->fold_lost += v->count;
		return;
	}
	t->folded += v->count;
	trace_gpu_folded(t->gpu, k->pid, cw_source_name(cw_op_source(k->op)), op, k->second, v->count);
	if (t->metrics)
		cw_live_metrics_folded(t->metrics, k->pid, cw_source_name(cw_op_source(k->op)), op, &h);
	if (t->view)
		cw_trace_view_fold(t->view, cw_source_name(cw_op_source(k->op)), op, &h);
}

/* Consumer lock held. The loop calls this every 100 ms, so an op starts
 * folding a fraction of a second after its first 32 calls. */
void trace_fold_thresholds(struct trace *t)
{
	if (t->o.capture_summary && t->cp && t->w)
		push_thresholds(t, t->fold_off);
}

/* Consumer lock held. final: every second, open or not (the session's
 * end). */
void trace_fold_tick(struct trace *t, int64_t mono_to_wall_ns, int final)
{
	int64_t last;

	if (!t->o.capture_summary || !t->cp || !t->w)
		return;
	t->fold_off = mono_to_wall_ns;
	push_thresholds(t, mono_to_wall_ns);
	last = final ? INT64_MAX : (int64_t)(cw_realtime_ns() / NSEC_PER_SEC) - CW_FOLD_CLOSE_S;
	cw_cuda_probes_fold_drain(t->cp, last, one_folded, t);
}
