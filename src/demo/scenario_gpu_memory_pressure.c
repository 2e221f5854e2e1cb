/* gpu-memory-pressure: the trainer keeps a reference to every step's
 * loss tensor (a history list for logging), so device memory climbs from
 * 41 GiB to 78.5 of 80 GiB by t = 45 s and stays there. Varying batch
 * shapes make cudaMalloc run every step; once the device is nearly full
 * the caching allocator frees its cache and retries (cudaFree plus a
 * device synchronize inside the call) on about one call in four, which
 * then takes 3-8 ms instead of ~20 us, at irregular times.
 * -> gpu_memory_pressure. */
#include "demo/demo.h"
#include "demo/gpu.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define FULL_AT (45 * NSEC_PER_SEC)
#define GIB (1LL << 30)

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (p->op == CW_OP_cudaMalloc && p->step >= 0 && p->start >= tr->t0 + FULL_AT &&
	    cw_demo_rng_unit(r) < 0.25)
		cw_demo_plan_stretch(p, cw_demo_rng_range(r, 3000, 8000) * NSEC_PER_USEC);
}

static void adjust(struct cw_demo_train *tr, uint64_t t, struct cw_gpu_sample *s)
{
	int64_t used;

	if (t < tr->t0)
		return;
	/* Linear growth to 78.5 GiB at FULL_AT, then flat. */
	used = t >= tr->t0 + FULL_AT ? (int64_t)(78.5 * GIB)
				       : 41 * GIB + (int64_t)((37.5 * GIB) * (double)(t - tr->t0) / (double)FULL_AT);
	s->mem_used = used + (int64_t)cw_demo_rng_range(&tr->g->rng, 0, 64) * (1 << 20);
	if (s->mem_used > s->mem_total - s->mem_reserved)
		s->mem_used = s->mem_total - s->mem_reserved;
}

static const struct cw_demo_hooks hooks = {plan, NULL, cw_demo_gpu_meta, adjust};

static void setup(struct cw_demo_train *tr)
{
	tr->cfg.malloc_every = 1;
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_gpu_memory_pressure = {
	"gpu-memory-pressure",
	"device memory leaks to 98 % and cudaMalloc starts freeing and retrying (3-8 ms) at irregular times",
	"gpu_memory_pressure",
	setup,
};
