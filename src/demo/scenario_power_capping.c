/* power-capping: an operator lowered the board's power limit, and three
 * times in the run (8 s from t = 20 s, every 30 s) the heaviest phase of
 * the model draws into it: the software power cap holds the board at its
 * limit and the power brake (a PSU alarm on the node) cuts the SM clock
 * to ~600 MHz. Syncs spin ~3.5x longer. NVML shows sw_power_cap +
 * hw_power_brake at the limit with the clock drop. -> power_capping. */
#include "demo/demo.h"
#include "demo/gpu.h"
#include "demo/train.h"
#include "util/timeutil.h"

static void adjust(struct cw_demo_train *tr, uint64_t t, struct cw_gpu_sample *s)
{
	if (!cw_demo_gpu_in_episode(tr, t))
		return;
	s->power_mw = (int64_t)cw_demo_rng_range(&tr->g->rng, 498000, 500000); /* the 500 W limit */
	s->sm_mhz = (int64_t)cw_demo_rng_range(&tr->g->rng, 585, 630);
	s->reasons = (int64_t)(CW_GPU_REASON_SW_POWER_CAP | CW_GPU_REASON_HW_POWER_BRAKE | CW_GPU_REASON_HW_SLOWDOWN);
}

static const struct cw_demo_hooks hooks = {cw_demo_gpu_slow_syncs, NULL, cw_demo_gpu_meta, adjust};

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_power_capping = {
	"power-capping",
	"the board sits at a lowered 500 W power limit with the power brake on: SM clock ~600 MHz three times",
	"power_capping",
	setup,
};
