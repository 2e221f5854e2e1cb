/* The measurement behind thermal_throttling and power_capping: how much
 * of an op's slow-call time ran while the call's device reported a
 * clock-event reason of the family, and how far its SM clock fell
 * against the device's unthrottled samples (or its max clock). A reason
 * bit with no measured clock drop (>= CW_THROTTLE_MIN_DROP) explains
 * nothing: the calls were slow for another reason. */
#include <stdio.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/gpuctx.h"
#include "util/timeutil.h"

#define CW_THROTTLE_MIN_DROP 0.05

static int is_thermal(const struct cw_gsample *s)
{
	return s->reasons > 0 && (s->reasons & (int64_t)CW_GPU_REASON_THERMAL);
}

static int is_power(const struct cw_gsample *s)
{
	return s->reasons > 0 && (s->reasons & (int64_t)CW_GPU_REASON_POWER);
}

static int is_unthrottled(const struct cw_gsample *s)
{
	return s->reasons >= 0 &&
	       !(s->reasons & (int64_t)(CW_GPU_REASON_THERMAL | CW_GPU_REASON_POWER | CW_GPU_REASON_HW_SLOWDOWN));
}

int cw_gpu_throttle_chain(const struct cw_rule_ctx *ctx, struct cw_chain *c, int thermal)
{
	const struct cw_gpuctx *g = ctx->sys->gpu;
	cw_gsample_pred pred = thermal ? is_thermal : is_power;
	const struct cw_gsample *hit = NULL;
	const struct cw_gdev *dev;
	uint64_t overlap = 0, calls_hit = 0;
	int64_t base, low;
	double share, drop;
	char head[128], why[96], dname[160];

	if (!g || !g->n || !ctx->slow_time_ns)
		return 0;
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_slowcall *k = &ctx->calls[i];
		uint64_t o = cw_gpuctx_overlap(g, k->device, k->mono_ns, k->mono_ns + k->dur_ns, pred, &hit);
		overlap += o;
		calls_hit += o > 0;
	}
	if (!overlap || !hit)
		return 0;
	dev = cw_gpuctx_dev(g, hit->device);
	base = cw_gpuctx_median_clock(g, hit->device, is_unthrottled);
	if (base <= 0 && dev)
		base = dev->max_sm_mhz;
	low = cw_gpuctx_median_clock(g, hit->device, pred);
	if (base <= 0 || low < 0)
		return 0;
	drop = (double)(base - low) / (double)base;
	if (drop < CW_THROTTLE_MIN_DROP)
		return 0;
	share = (double)overlap / (double)ctx->slow_time_ns;
	c->kind = thermal ? CW_KIND_THERMAL_THROTTLING : CW_KIND_POWER_CAPPING;
	c->explained_share = share;
	cw_gpu_reasons_text(hit->reasons & ~(int64_t)CW_GPU_REASON_IDLE, why, sizeof(why));
	if (dev)
		snprintf(dname, sizeof(dname), "GPU %d (%s, %s)", hit->device, dev->name[0] ? dev->name : "?",
			 dev->pci[0] ? dev->pci : "?");
	else
		snprintf(dname, sizeof(dname), "GPU %d", hit->device);
	cw_chain_headline(c, head, sizeof(head));
	if (thermal)
		cw_chain_summary(c,
			 "%s: %.0f %% of the slow calls' time ran while %s was thermally throttled (%s at %lld C):"
			 " SM clock %lld -> %lld MHz (-%.0f %%)",
			 head, share * 100, dname, why, (long long)hit->temp, (long long)base, (long long)low, drop * 100);
	else
		cw_chain_summary(c,
			 "%s: %.0f %% of the slow calls' time ran while %s was power capped (%s at %.0f W):"
			 " SM clock %lld -> %lld MHz (-%.0f %%)",
			 head, share * 100, dname, why, hit->power_mw / 1000.0, (long long)base, (long long)low,
			 drop * 100);
	cw_chain_add_timeline(c, CW_LAYER_DRIVER, hit->wall, "%s clock-event reasons %s, SM clock %lld MHz%s", dname, why,
			      (long long)hit->sm_mhz, thermal ? "" : "");
	if (thermal) {
		cw_chain_add_fix(c, "nvidia-smi -q -d TEMPERATURE,PERFORMANCE -i %d  # slowdown temperature and active reasons",
				 hit->device);
		cw_chain_add_advice(c, "check the node's cooling: inlet temperature, fans, airflow and blanking panels");
		cw_chain_add_advice(c, "move the job off GPU %d until it is cooled (dcgmi diag -r 2 checks it)", hit->device);
	} else {
		cw_chain_add_fix(c, "nvidia-smi -q -d POWER -i %d  # draw against the enforced power limit", hit->device);
		cw_chain_add_fix(c, "nvidia-smi -i %d -pl \"$(nvidia-smi -i %d --query-gpu=power.default_limit --format=csv,noheader,nounits)\"  # restore the default power limit", hit->device, hit->device);
		cw_chain_add_advice(c, "if hw_power_brake is set, check the node's power supplies and power delivery");
	}
	cw_chain_add_evidence(c, "throttled_overlap_ns", (double)overlap, 1);
	cw_chain_add_evidence(c, "throttled_calls", (double)calls_hit, 1);
	cw_chain_add_evidence(c, "device", hit->device, 1);
	cw_chain_add_evidence(c, "sm_clock_base_mhz", (double)base, 1);
	cw_chain_add_evidence(c, "sm_clock_throttled_mhz", (double)low, 1);
	cw_chain_add_evidence(c, "clock_drop", drop, 0);
	cw_chain_add_evidence(c, "clock_reasons", (double)hit->reasons, 1);
	if (hit->temp >= 0)
		cw_chain_add_evidence(c, "temp_c", (double)hit->temp, 1);
	if (hit->power_mw >= 0)
		cw_chain_add_evidence(c, "power_mw", (double)hit->power_mw, 1);
	return 1;
}
