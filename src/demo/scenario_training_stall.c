/* training-stall: the loop steps steadily until t = 45 s, when
 * loss.item()'s cudaStreamSynchronize never returns (a peer's collective
 * that never completes leaves the stream waiting): the main thread
 * sleeps in the driver, off CPU, with no CUDA call for 46 s, until the
 * job is killed at the end. Host snapshots, the worker's activity and GPU
 * telemetry (an idle GPU) go on. -> training_stall, naming pid 4821, the
 * synchronize it is stuck in and the blocked thread. */
#include "demo/demo.h"
#include "demo/gpu.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define STALL_AT (45 * NSEC_PER_SEC)
#define STALL_LEN (46 * NSEC_PER_SEC)

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	int *stalled = tr->ctx;

	if (*stalled || p->op != CW_OP_cudaStreamSynchronize || p->start < tr->t0 + STALL_AT)
		return;
	*stalled = 1;
	/* Woken only by the kill: no waker. */
	cw_demo_plan_off(p, STALL_LEN, CW_OFFCPU_BLOCKED, NULL, NULL);
	tr->end = p->start; /* the loop ends with this step */
}

static void adjust(struct cw_demo_train *tr, uint64_t t, struct cw_gpu_sample *s)
{
	/* An idle GPU once the loop stops. */
	if (t >= tr->t0 + STALL_AT + NSEC_PER_SEC) {
		s->gpu_util = 0;
		s->mem_util = 0;
		s->power_mw = 72000;
		s->temp_gpu = 38;
		s->reasons = (int64_t)CW_GPU_REASON_IDLE;
		s->sm_mhz = 345;
	}
}

static const struct cw_demo_hooks hooks = {plan, NULL, cw_demo_gpu_meta, adjust};

static void setup(struct cw_demo_train *tr)
{
	static int stalled;

	stalled = 0;
	tr->ctx = &stalled;
	/* Training ends during the stall: the blocked batch wait is the
	 * last thing the loop does. */
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_training_stall = {
	"training-stall",
	"cudaStreamSynchronize never returns at t = 45 s: no CUDA call for 46 s until the job is killed",
	"training_stall",
	setup,
};
