/* oom-kill: the trainer's host memory grows every step (a Python list
 * keeps every batch's loss tensor and its graph): its page allocations
 * climb from ~20 to ~90 MiB/s, it pins a staging buffer every 16 steps,
 * and in the run's last second its container (8 GiB memory.max) hits the
 * limit: the kernel's OOM killer kills it with ~7.9 GiB resident.
 * -> oom_kill. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define LIMIT (8ULL << 30)

static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	double f = t > tr->t0 ? (double)(t - tr->t0) / (double)(tr->end - tr->t0) : 0;
	uint64_t mib_s = 20 + (uint64_t)(70 * f);

	s->mem_pct += 20 * f;
	/* The trainer's own allocations, on top of the loop's baseline. */
	cw_demo_page_alloc(tr->g, &cw_demo_main_task, t, (mib_s << 20) / 4096, NSEC_PER_SEC);
	if (t + NSEC_PER_SEC >= tr->end && t < tr->end)
		cw_demo_oom_kill(tr->g, &cw_demo_main_task, t + 600 * NSEC_PER_MSEC, &cw_demo_main_task,
				 (LIMIT - (96ULL << 20)) / 4096, LIMIT, 21ULL << 30);
}

static const struct cw_demo_hooks hooks = { NULL, second, NULL, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->cfg.hostalloc_every = 16;
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_oom_kill = {
	"oom-kill",
	"the trainer's host memory grows every step until its container's 8 GiB limit OOM-kills it",
	"oom_kill",
	setup,
};
