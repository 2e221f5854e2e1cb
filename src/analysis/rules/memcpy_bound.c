/* memcpy_bound: host<->device copies take >= 30 % of the node's active
 * wall time in the window (sum of memcpy call time / seconds with GPU
 * activity). Typical of pageable host memory (the driver stages copies
 * through a bounce buffer) and of copies not overlapped with compute.
 * explained_share = that share, capped at 1. */
#include <stdio.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

#define CW_MEMCPY_SHARE 0.30

int cw_rule_memcpy_bound(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	uint64_t copy_ns = 0, copies = 0;
	int64_t first = INT64_MAX, last = INT64_MIN;
	const struct cw_opstat *top = NULL;
	double span, share;
	char head[128], tot[32];
	int ret;

	for (size_t i = 0; i < ctx->nops; i++) {
		const struct cw_opstat *s = &ctx->ops[i];
		if (strcmp(s->node, ctx->sys->node) || !s->nsecs)
			continue;
		if (strcmp(s->source, "cuda") && strcmp(s->source, "driver") && strcmp(s->source, "graph") &&
		    strcmp(s->source, "nccl"))
			continue;
		if (s->secs[0].second < first)
			first = s->secs[0].second;
		if (s->secs[s->nsecs - 1].second > last)
			last = s->secs[s->nsecs - 1].second;
		if (cw_op_is_memcpy(s->op)) {
			copy_ns += s->sum_ns;
			copies += s->count;
			if (!top || s->sum_ns > top->sum_ns)
				top = s;
		}
	}
	if (!top || last < first)
		return 0;
	span = (double)(last - first + 1) * 1e9;
	share = (double)copy_ns / span;
	if (share < CW_MEMCPY_SHARE)
		return 0;
	if (share > 1)
		share = 1;
	/* top is one of the node's ops (the loop skips the others). */
	cw_chain_from_opstat(c, top);
	c->kind = CW_KIND_MEMCPY_BOUND;
	c->slow_count = top->count;
	c->explained_share = share;
	c->slow_time_ns = copy_ns;
	c->explained_ns = copy_ns;
	if ((ret = cw_chain_identity_of_node(ctx, c)) < 0)
		return ret;
	if (ctx->opts->pid && !c->pid)
		return 0;
	cw_chain_headline(c, head, sizeof(head));
	cw_format_duration(copy_ns, tot, sizeof(tot));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: %llu memory copies took %s, %.0f %% of the %.0f s of GPU activity; the step is bound by"
		 " host<->device copies rather than compute",
		 head, (unsigned long long)copies, tot, share * 100, span / 1e9);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), (uint64_t)first * NSEC_PER_SEC,
			      "%s: %llu calls, p50 %.1f ms, %.0f %% of all copy time", top->op,
			      (unsigned long long)top->count, (double)top->p50_ns / 1e6,
			      copy_ns ? (double)top->sum_ns / (double)copy_ns * 100 : 0);
	cw_chain_add_code(c, "DataLoader(..., pin_memory=True)");
	cw_chain_add_code(c, "tensor.to(device, non_blocking=True)  # async copy from pinned memory");
	cw_chain_add_advice(c, "overlap copies with compute on a separate torch.cuda.Stream()");
	cw_chain_add_advice(c, "keep tensors on the GPU between steps instead of round-tripping through the host");
	cw_chain_add_evidence(c, "copy_time_ns", (double)copy_ns, 1);
	cw_chain_add_evidence(c, "copies", (double)copies, 1);
	cw_chain_add_evidence(c, "active_seconds", span / 1e9, 1);
	cw_chain_add_evidence(c, "wall_share", share, 0);
	return 1;
}
