/* dataloader-starvation: one DataLoader worker (pid 4870, comm
 * "pt_data_worker") decodes images slower than the GPU consumes them.
 * Every step the trainer blocks on the worker's result queue (a futex /
 * pipe read) for ~12 ms and is woken by the worker, while its GPU calls
 * stay fast and the GPU sits idle: ~60 % of each step is that wait.
 * -> dataloader_starvation. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (p->op == 0 && p->gap == CW_GAP_BATCH)
		cw_demo_plan_off(p, cw_demo_rng_range(r, 10500, 14500) * NSEC_PER_USEC, CW_OFFCPU_BLOCKED, NULL,
				 &cw_demo_worker_task);
}

static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	struct cw_demo_rng *r = &tr->g->rng;

	(void)t;
	/* The worker saturates its core decoding; the trainer mostly waits. */
	s->cpu_pct = 14 + 3 * cw_demo_rng_unit(r);
	s->load1 = 1.6 + 0.3 * cw_demo_rng_unit(r);
}

static const struct cw_demo_hooks hooks = { plan, second, NULL, NULL };

static void setup(struct cw_demo_train *tr)
{
	/* A small model: the GPU finishes each step's kernels quickly. */
	tr->cfg.kernel_ns = 350 * NSEC_PER_USEC;
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_dataloader_starvation = {
	"dataloader-starvation",
	"the trainer waits ~60% of each step for a slow DataLoader worker while the GPU idles",
	"dataloader_starvation",
	setup,
};
