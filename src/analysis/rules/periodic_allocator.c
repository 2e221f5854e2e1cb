/* periodic_allocator: an allocator op (cudaMalloc, cuMemAlloc, ...) spikes
 * at a regular period: the caching allocator flushing and re-filling its
 * pool or fragmenting (PyTorch's CUDACachingAllocator calls cudaMalloc
 * again only when its cache misses). Slow calls less than 50 ms apart form
 * one spike; with >= 4 spikes whose intervals have a coefficient of
 * variation <= 0.3, explained_share = slow time in on-period spikes /
 * slow-call time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

#define CW_SPIKE_GAP_NS (50 * NSEC_PER_MSEC)
#define CW_PERIOD_MIN_SPIKES 4
#define CW_PERIOD_MAX_CV 0.3

int cw_rule_periodic_allocator(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], per[32];
	uint64_t *start = NULL, *ns = NULL;
	double *gaps = NULL, *sorted = NULL;
	size_t n = 0;
	double cv, med, share, calls_per_s;
	uint64_t on_ns = 0;
	int ret = 0;

	if (!cw_op_is_alloc(c->op) || ctx->ncalls < CW_PERIOD_MIN_SPIKES)
		return 0;
	start = calloc(ctx->ncalls, sizeof(*start));
	ns = calloc(ctx->ncalls, sizeof(*ns));
	gaps = calloc(ctx->ncalls, sizeof(*gaps));
	sorted = calloc(ctx->ncalls, sizeof(*sorted));
	if (!start || !ns || !gaps || !sorted) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_slowcall *s = &ctx->calls[i];
		if (n && s->mono_ns - start[n - 1] < CW_SPIKE_GAP_NS) {
			ns[n - 1] += s->dur_ns;
			continue;
		}
		start[n] = s->mono_ns;
		ns[n++] = s->dur_ns;
	}
	if (n < CW_PERIOD_MIN_SPIKES)
		goto out;
	for (size_t i = 1; i < n; i++)
		sorted[i - 1] = gaps[i - 1] = (double)(start[i] - start[i - 1]);
	cv = cw_cv(gaps, n - 1);
	med = cw_median(sorted, n - 1);
	if (cv < 0 || cv > CW_PERIOD_MAX_CV || med <= 0)
		goto out;
	/* A spike is on period when the gap before or after it is within
	 * 30 % of the median period. */
	for (size_t i = 0; i < n; i++) {
		int on = 0;
		if (i > 0 && gaps[i - 1] >= 0.7 * med && gaps[i - 1] <= 1.3 * med)
			on = 1;
		if (i + 1 < n && gaps[i] >= 0.7 * med && gaps[i] <= 1.3 * med)
			on = 1;
		if (on)
			on_ns += ns[i];
	}
	share = (double)on_ns / (double)ctx->slow_time_ns;
	calls_per_s = ctx->st->nsecs ? (double)ctx->st->count / (double)ctx->st->nsecs : 0;
	c->kind = CW_KIND_PERIODIC_ALLOCATOR;
	c->explained_share = share;
	cw_chain_headline(c, head, sizeof(head));
	cw_format_duration((uint64_t)med, per, sizeof(per));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: %zu allocator spikes recur every %s (~%.0f %s calls, cv %.2f): the caching allocator"
		 " flushes or fragments its pool at a regular period",
		 head, n, per, med / 1e9 * calls_per_s, c->op, cv);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), cw_sys_wall(ctx->sys, start[0]),
			      "first spike: %s", c->op);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), cw_sys_wall(ctx->sys, start[n - 1]),
			      "spike %zu, period %s", n, per);
	cw_chain_add_fix(c, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
	cw_chain_add_advice(c, "remove torch.cuda.empty_cache() from the training loop");
	cw_chain_add_advice(c, "keep tensor shapes static (pad variable-length batches to fixed buckets)");
	cw_chain_add_fix(c, "python -c 'import torch; print(torch.cuda.memory_summary())'  # inspect fragmentation");
	cw_chain_add_evidence(c, "spikes", (double)n, 1);
	cw_chain_add_evidence(c, "period_ns", med, 1);
	cw_chain_add_evidence(c, "period_cv", cv, 0);
	cw_chain_add_evidence(c, "period_calls", med / 1e9 * calls_per_s, 1);
	ret = 1;
out:
	free(start);
	free(ns);
	free(gaps);
	free(sorted);
	return ret;
}
