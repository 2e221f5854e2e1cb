/* nccl-error: the trainer (rank 0 of a data-parallel job) all-reduces its
 * gradients once a second from its communication thread; from t = 40 s
 * NCCL's shared-memory transport cannot grow its segment (/dev/shm is
 * full in the container) and every ncclAllReduce returns ncclSystemError
 * (2). -> nccl_error (nccl_system), naming the code and the line. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define FAIL_AT (40 * NSEC_PER_SEC)
#define NCCL_SYSTEM_ERROR 2 /* ncclSystemError */

/* The trainer's gradient all-reduce thread (DDP's reducer). */
static const struct cw_demo_task comm_thread = {4821, 4838, 0, "python", 5};

static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	uint64_t a[6] = {0x7f3a40000000ULL, 0x7f3a40000000ULL, 25u << 20, 7 /* ncclFloat32 */, 0, 0x5a10};
	int failing = t >= tr->t0 + FAIL_AT;

	(void)s;
	if (t < tr->t0)
		return;
	cw_demo_call_ret(tr->g, &comm_thread, t + 300 * NSEC_PER_MSEC,
			 (failing ? cw_demo_rng_range(&tr->g->rng, 40, 90) : cw_demo_rng_range(&tr->g->rng, 900, 1400)) *
				 NSEC_PER_USEC,
			 CW_OP_ncclAllReduce, a, 0, CW_SITE_BWD, failing ? NCCL_SYSTEM_ERROR : 0);
}

static const struct cw_demo_hooks hooks = {NULL, second, NULL, NULL};

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_nccl_error = {
	"nccl-error",
	"from t = 40 s every ncclAllReduce fails with ncclSystemError (/dev/shm full in the container)",
	"nccl_error",
	setup,
};
