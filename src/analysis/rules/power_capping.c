/* power_capping: the op's slow calls ran while their GPU reported a power
 * clock-event reason (sw_power_cap, hw_power_brake) and its SM clock was
 * measurably lower (>= 5 %) than in its unthrottled samples.
 * explained_share = slow-call time overlapping those samples / slow-call
 * time. Measurement in analysis/gpu_throttle.c. */
#include "analysis/rules/rules.h"

int cw_rule_power_capping(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	return cw_gpu_throttle_chain(ctx, c, 0);
}
