/* network: every 15 s from t = 10 s, for 4 s, the link to the all-reduce
 * peer 10.0.3.7:29500 drops packets: NCCL's socket (owned by the
 * trainer, pid 4821, through its proxy thread) retransmits 2-4 times per
 * step, some after a 200 ms+ timeout, and the trainer's
 * cudaStreamSynchronize, which waits for the all-reduce kernel, is 4-6x
 * slower, asleep until the GPU finishes. -> network. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define NET_AT (10 * NSEC_PER_SEC)
#define NET_EVERY (15 * NSEC_PER_SEC)
#define NET_LEN (4 * NSEC_PER_SEC)

static const struct cw_demo_task proxy = { 4821, 4838, 0x2f1aULL, "python", 5 };
static const uint8_t me[4] = { 10, 0, 3, 5 }, peer[4] = { 10, 0, 3, 7 };

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;
	uint64_t extra;
	int n;

	if (p->op != CW_OP_cudaStreamSynchronize || !cw_demo_in_window(tr, p->start, NET_AT, NET_EVERY, NET_LEN))
		return;
	extra = (uint64_t)((double)p->dur * (3.0 + 2.0 * cw_demo_rng_unit(r)));
	for (int i = 0; i < 2; i++)
		cw_demo_plan_off(p, extra / 2, CW_OFFCPU_BLOCKED, NULL, &cw_demo_irq);
	n = 2 + (int)cw_demo_rng_range(r, 0, 2);
	for (int i = 0; i < n; i++)
		cw_demo_retransmit(tr->g, &proxy, p->start + (uint64_t)(i + 1) * (p->dur / (uint64_t)(n + 1)), me, 41822,
				   peer, 29500);
}

static const struct cw_demo_hooks hooks = { plan, NULL, NULL, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_network = {
	"network",
	"packet loss to the all-reduce peer: TCP retransmits stall the step for 4 s every 15 s",
	"network",
	setup,
};
