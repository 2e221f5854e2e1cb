/* cold_start: the op's slow calls are its first calls (its first active
 * second or its first 5 % of calls), each >= 20x the steady-state p50,
 * and later calls are fine: lazy module loading, context creation, cuDNN
 * autotuning (CUDA >= 11.7 loads modules lazily on first launch). */
#include <stdio.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

#define CW_COLD_FACTOR 20.0

int cw_rule_cold_start(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], first[32];
	uint64_t early_ns = 0, early_n = 0, late_n = 0;
	double share, ratio;

	if (!ctx->slow_time_ns || !c->p50_ns)
		return 0;
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_slowcall *s = &ctx->calls[i];
		if (s->early && (double)s->dur_ns >= CW_COLD_FACTOR * (double)c->p50_ns) {
			early_ns += s->dur_ns;
			early_n++;
		} else {
			late_n++;
		}
	}
	if (!early_n)
		return 0;
	share = (double)early_ns / (double)ctx->slow_time_ns;
	ratio = (double)early_ns / (double)early_n / (double)c->p50_ns;
	c->kind = CW_KIND_COLD_START;
	c->explained_share = share;
	cw_chain_headline(c, head, sizeof(head));
	cw_format_duration(early_ns / early_n, first, sizeof(first));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: the first %llu calls took %s on average (%.0fx the steady-state p50), then the op settled;"
		 " %.0f %% of slow time is start-up cost",
		 head, (unsigned long long)early_n, first, ratio, share * 100);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), ctx->calls[0].wall_ns,
			      "first slow %s: %s", c->op, first);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), ctx->calls[ctx->ncalls - 1].wall_ns,
			      "%llu slow calls after start-up", (unsigned long long)late_n);
	cw_chain_add_advice(c, "run a few warm-up iterations before timing or serving traffic");
	cw_chain_add_fix(c, "export CUDA_MODULE_LOADING=EAGER");
	cw_chain_add_fix(c, "nvidia-smi -pm 1");
	cw_chain_add_code(c, "torch.backends.cudnn.benchmark = False  # when autotuning dominates start-up");
	cw_chain_add_evidence(c, "early_calls", (double)early_n, 1);
	cw_chain_add_evidence(c, "late_slow_calls", (double)late_n, 1);
	cw_chain_add_evidence(c, "early_time_ns", (double)early_ns, 1);
	cw_chain_add_evidence(c, "early_over_p50", ratio, 0);
	return 1;
}
