/* periodic-spike: the caching allocator misses every step (varying batch
 * shapes), so cudaMalloc runs once per step at ~20 us; every 200 steps
 * the pool is flushed (an empty_cache() in the loop) and the next
 * cudaMalloc takes ~50x as the driver maps fresh memory. The spikes are
 * regular in time. -> periodic_allocator. */
#include "demo/demo.h"
#include "demo/train.h"

#define PERIOD_STEPS 200

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (p->op == CW_OP_cudaMalloc && p->step >= 0 && p->step % PERIOD_STEPS == PERIOD_STEPS / 2)
		cw_demo_plan_stretch(p, p->dur * cw_demo_rng_range(r, 45, 55));
}

static const struct cw_demo_hooks hooks = { plan, NULL, NULL, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->cfg.malloc_every = 1;
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_periodic_spike = {
	"periodic-spike",
	"cudaMalloc takes ~50x (1 ms+) once every 200 steps, at a regular period",
	"periodic_allocator",
	setup,
};
