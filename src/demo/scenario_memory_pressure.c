/* memory-pressure: three times in the run (9 s from t = 15 s, every 30 s)
 * a host-memory hog pushes the node to ~97 % used: swap grows ~60 MiB/s
 * and page allocation storms at ~300,000 pages/s. The trainer uploads
 * batches with a synchronous cudaMemcpy from pageable memory and
 * re-pins staging buffers with cudaHostAlloc every 8 steps; during the
 * pressure windows both block in direct reclaim and swap-in.
 * -> memory_pressure. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define MP_AT (15 * NSEC_PER_SEC)
#define MP_EVERY (30 * NSEC_PER_SEC)
#define MP_LEN (9 * NSEC_PER_SEC)
#define SWAP_RATE (60ULL << 20) /* bytes per second of pressure */

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (!cw_demo_in_window(tr, p->start, MP_AT, MP_EVERY, MP_LEN))
		return;
	if (p->op == CW_OP_cudaHostAlloc) {
		/* Pinning needs free pages now: reclaim them synchronously. */
		for (int i = 0; i < 3; i++)
			cw_demo_plan_off(p, cw_demo_rng_range(r, 5, 15) * NSEC_PER_MSEC, CW_OFFCPU_BLOCKED, NULL,
					 &cw_demo_irq);
	} else if (p->op == CW_OP_cudaMemcpy && cw_demo_rng_unit(r) < 0.5) {
		/* The pageable source was swapped out: fault it back in. */
		for (int i = 0; i < 2; i++)
			cw_demo_plan_off(p, cw_demo_rng_range(r, 2500, 7500) * NSEC_PER_USEC, CW_OFFCPU_BLOCKED, NULL,
					 &cw_demo_irq);
	}
}

static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	struct cw_demo_rng *r = &tr->g->rng;
	uint64_t in = cw_demo_window_overlap(tr, t, t + NSEC_PER_SEC, MP_AT, MP_EVERY, MP_LEN);
	uint64_t before = cw_demo_window_overlap(tr, tr->t0, t + NSEC_PER_SEC, MP_AT, MP_EVERY, MP_LEN);
	double f = (double)in / 1e9;

	/* Swap fills during pressure and stays used after it. */
	s->swap_used_bytes = (uint64_t)((double)before / 1e9 * (double)SWAP_RATE);
	if (!in) {
		s->mem_pct = before ? 78 + cw_demo_rng_unit(r) : s->mem_pct;
		return;
	}
	s->mem_pct = 96.5 + 1.5 * cw_demo_rng_unit(r);
	s->page_alloc_per_s += (uint64_t)(f * (double)cw_demo_rng_range(r, 260000, 340000));
	s->cpu_pct += 18 * f; /* kswapd and direct reclaim */
	s->load1 += 6 * f;
}

static const struct cw_demo_hooks hooks = { plan, second, NULL, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->cfg.copy_op = CW_OP_cudaMemcpy;
	tr->cfg.copy_bytes = 16ULL << 20;
	tr->cfg.copy_ns = 1400 * NSEC_PER_USEC;
	tr->cfg.hostalloc_every = 8;
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_memory_pressure = {
	"memory-pressure",
	"swap and page-allocation storms (mem ~97%) stall cudaHostAlloc and pageable cudaMemcpy in reclaim",
	"memory_pressure",
	setup,
};
