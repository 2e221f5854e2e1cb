/* graph_launch_tail: the tail is in the graph launches themselves
 * (cudaGraphLaunch, cuGraphLaunch) while their thread was on CPU or
 * blocked outside I/O and memory pressure: the driver re-uploads the
 * executable graph (first launch after instantiation or update, or after
 * its memory was trimmed), serializes behind another launch of the same
 * exec, or a large graph's submission itself is slow. Time the thread
 * sat preempted, behind block I/O or in memory pressure belongs to those
 * rules. explained_share = (slow time - preempted - blocked_io -
 * blocked_mem) / slow-call time. */
#include <stdio.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

/* Below this much time inside slow launches, a tail is scheduler and
 * virtual-machine jitter (a 30 us launch now and then taking 170 us), not
 * a cause: 11 such launches in 3 s once made a chain beside real graph
 * churn. */
#define GRAPH_TAIL_MIN_OWN_NS (10ULL * 1000000ULL)

int cw_rule_graph_launch_tail(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], own[32];
	uint64_t other, ownt;
	double share;

	if (!cw_op_is_graph_launch(c->op) || !ctx->slow_time_ns)
		return 0;
	other = ctx->preempted_ns + ctx->blocked_io_ns + ctx->blocked_mem_ns;
	if (other >= ctx->slow_time_ns)
		return 0;
	ownt = ctx->slow_time_ns - other;
	if (ownt < GRAPH_TAIL_MIN_OWN_NS)
		return 0;
	share = (double)ownt / (double)ctx->slow_time_ns;
	c->kind = CW_KIND_GRAPH_LAUNCH_TAIL;
	c->explained_share = share;
	cw_chain_headline(c, head, sizeof(head));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: the graph launches themselves carry the tail: thread %lld (%s) spent %.0f %% of its %zu slow"
		 " launches' time inside the launch, not preempted, blocked on I/O or in memory pressure",
		 head, (long long)c->tid, c->comm, share * 100, ctx->ncalls);
	cw_format_duration(ownt, own, sizeof(own));
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), ctx->calls[0].wall_ns,
			      "first slow %s; %s inside %zu slow launches", c->op, own, ctx->ncalls);
	cw_chain_add_advice(c, "cudaGraphUpload(graphExec, stream) right after instantiation, so the first launch does not upload");
	cw_chain_add_advice(c, "torch.cuda.graphs: capture once and replay; update with cudaGraphExecUpdate instead of re-instantiating");
	cw_chain_add_advice(c, "launch each graph exec from one stream; concurrent launches of one exec serialize");
	cw_chain_add_advice(c, "split very large graphs or use device-side launch (cudaGraphInstantiateFlagDeviceLaunch)");
	cw_chain_add_evidence(c, "launch_own_ns", (double)ownt, 1);
	cw_chain_add_evidence(c, "preempted_ns", (double)ctx->preempted_ns, 1);
	cw_chain_add_evidence(c, "blocked_ns", (double)ctx->blocked_ns, 1);
	cw_chain_add_evidence(c, "slow_launches", (double)ctx->ncalls, 1);
	return 1;
}
