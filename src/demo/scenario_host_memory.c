/* host-memory: the trainer pins a fresh 64 MiB staging buffer with
 * cudaHostAlloc every 4 steps, and its container sits near its memory
 * limit: the node has plenty of memory (no node-wide pressure), but for
 * 6 s every 20 s from t = 12 s each pinning runs direct reclaim in the
 * cgroup: 25-45 ms instead of ~1.2 ms, mostly on CPU with short sleeps
 * on writeback, while the thread allocates ~400,000 pages/s.
 * -> host_memory. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define HM_AT (12 * NSEC_PER_SEC)
#define HM_EVERY (20 * NSEC_PER_SEC)
#define HM_LEN (6 * NSEC_PER_SEC)
#define PIN_BYTES (64ULL << 20)

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (p->op != CW_OP_cudaHostAlloc || !cw_demo_in_window(tr, p->start, HM_AT, HM_EVERY, HM_LEN))
		return;
	cw_demo_plan_stretch(p, cw_demo_rng_range(r, 20, 36) * NSEC_PER_MSEC);
	for (int i = 0; i < 2; i++)
		cw_demo_plan_off(p, cw_demo_rng_range(r, 1500, 3000) * NSEC_PER_USEC, CW_OFFCPU_BLOCKED, NULL,
				 &cw_demo_irq);
	/* mem.bpf.c's per-thread window over the call: every page pinned. */
	cw_demo_page_alloc(tr->g, &cw_demo_main_task, p->start, PIN_BYTES / 4096, p->dur);
}

static const struct cw_demo_hooks hooks = { plan, NULL, NULL, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->cfg.hostalloc_every = 4;
	tr->cfg.copy_bytes = PIN_BYTES;
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_host_memory = {
	"host-memory",
	"pinned cudaHostAlloc runs direct reclaim in a container near its memory limit (node not under pressure)",
	"host_memory",
	setup,
};
