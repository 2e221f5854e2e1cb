/* healthy: the training loop as train.c builds it and nothing else:
 * log-normal jitter clamped below 2x, short blocked waits inside syncs
 * woken by the GPU interrupt, a kworker now and then between calls.
 * explain must find no chain. */
#include "demo/demo.h"
#include "demo/train.h"

static void setup(struct cw_demo_train *tr)
{
	(void)tr;
}

const struct cw_demo_scenario cw_demo_scenario_healthy = {
	"healthy",
	"a steady training loop with natural jitter only: nothing to explain",
	NULL,
	setup,
};
