/* throttle: 30 s into training the GPU throttles (thermal or power cap)
 * for 10 s: each step's kernels run slower and the loss.item()
 * cudaStreamSynchronize, which spin-waits on CPU, takes ~50 ms more. No
 * other process, no off-CPU time, no I/O or memory pressure: nothing
 * explains the slow calls but the step rate, which falls to about a third
 * for those seconds. -> throughput_drop. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define THROTTLE_AT (30 * NSEC_PER_SEC)
#define THROTTLE_LEN (10 * NSEC_PER_SEC)

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	if (p->op == CW_OP_cudaStreamSynchronize && cw_demo_in_window(tr, p->start, THROTTLE_AT, 0, THROTTLE_LEN))
		cw_demo_plan_stretch(p, 48 * NSEC_PER_MSEC + cw_demo_rng_range(&tr->g->rng, 0, 4) * NSEC_PER_MSEC);
}

static const struct cw_demo_hooks hooks = { plan, NULL, NULL, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_throttle = {
	"throttle",
	"the GPU throttles for 10 s: syncs take ~50 ms longer and the step rate falls to a third",
	"throughput_drop",
	setup,
};
