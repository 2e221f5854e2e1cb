/* cold-start: the first calls pay for initialisation. The first 20
 * cudaMalloc (CUDA context creation, the caching allocator's first
 * segments) and the first 20 cudaLaunchKernel (lazy module loading, on by
 * default since CUDA 12.2) take 50-200x their steady-state time, on CPU
 * and without contention; every later call is normal. -> cold_start. */
#include "demo/demo.h"
#include "demo/train.h"

#define COLD_CALLS 20

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if ((p->op == CW_OP_cudaMalloc || p->op == CW_OP_cudaLaunchKernel) && p->nth < COLD_CALLS)
		cw_demo_plan_stretch(p, p->dur * cw_demo_rng_range(r, 49, 199));
}

static const struct cw_demo_hooks hooks = { plan, NULL, NULL, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_cold_start = {
	"cold-start",
	"the first 20 cudaMalloc and cudaLaunchKernel calls are 50-200x slower (context and lazy module loading)",
	"cold_start",
	setup,
};
