/* cuda-no-device: the trainer runs in a container started without the
 * NVIDIA runtime, so no GPU is visible: every CUDA call returns
 * cudaErrorNoDevice (100) within microseconds, and the job's retry loop
 * keeps stepping. Only the first calls are slow (driver initialization);
 * nothing on the host is wrong.
 * -> cuda_error (no_device), naming the code, the process and the line. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define CUDA_ERROR_NO_DEVICE 100 /* cudaErrorNoDevice */

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	if (!p->op)
		return;
	/* A call that fails at its first check returns at once; the first
	 * calls of each op take longer while the runtime tries to load and
	 * initialize the driver. */
	p->ret = CUDA_ERROR_NO_DEVICE;
	p->dur = (p->nth < 3 ? cw_demo_rng_range(&tr->g->rng, 20000, 40000) : cw_demo_rng_range(&tr->g->rng, 2, 5)) *
		 NSEC_PER_USEC;
	p->noff = 0;
}

static const struct cw_demo_hooks hooks = {plan, NULL, NULL, NULL};

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_cuda_no_device = {
	"cuda-no-device",
	"no GPU is visible in the trainer's container: every CUDA call fails with cudaErrorNoDevice",
	"cuda_error",
	setup,
};
