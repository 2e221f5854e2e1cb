/* The two CUDA-graph scenarios. The trainer replays one captured graph
 * per step (cudaGraphLaunch in the batch gap, train.py:88) next to its
 * eager launches.
 *
 * graph-churn: the input shape changes every step, so the graph is
 * re-captured (cudaStreamBeginCapture, global mode, and
 * cudaStreamEndCapture) and re-instantiated (cudaGraphInstantiate,
 * ~2.5 ms) before every launch. -> graph_churn.
 *
 * graph-launch-tail: the graph is captured once; every 25th launch
 * (after the driver trimmed the exec's memory) takes 3-5 ms on CPU
 * re-uploading it instead of ~60 us. -> graph_launch_tail. */
#include "demo/demo.h"
#include "demo/gen.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define STREAM 0x5581d0a3c000ULL
#define GRAPH 0x5581d1f04000ULL
#define EXEC 0x5581d2a88000ULL

static uint64_t emit(struct cw_demo_train *tr, uint64_t t, unsigned op, uint64_t ns, uint64_t a0, uint64_t a1,
		     uint64_t a2)
{
	const uint64_t args[4] = { a0, a1, a2, 0 };
	uint64_t d = cw_demo_jitter(&tr->g->rng, ns, 0.1, 1.5);

	cw_demo_call(tr->g, &cw_demo_main_task, t, d, op, args, 0, CW_SITE_LOSS);
	return t + d + 4 * NSEC_PER_USEC;
}

static uint64_t build(struct cw_demo_train *tr, uint64_t t, int step)
{
	uint64_t exec = EXEC + (uint64_t)(step % 64) * 0x1000;

	t = emit(tr, t, CW_OP_cudaStreamBeginCapture, 6 * NSEC_PER_USEC, STREAM, 0 /* global */, 0);
	t = emit(tr, t, CW_OP_cudaStreamEndCapture, 400 * NSEC_PER_USEC, STREAM, 0x7ffd3a2c1e80ULL, 0);
	return emit(tr, t, CW_OP_cudaGraphInstantiate, 2500 * NSEC_PER_USEC, exec, GRAPH, 0);
}

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p, int churn)
{
	struct cw_demo_rng *r = &tr->g->rng;
	uint64_t t, launch = 60 * NSEC_PER_USEC;

	if (p->op || p->gap != CW_GAP_BATCH || p->step < 0)
		return;
	t = p->start + p->dur;
	if (churn || p->step == 0)
		t = build(tr, t, p->step);
	if (!churn && p->step > 0 && p->step % 25 == 0)
		launch = cw_demo_rng_range(r, 3000, 5000) * NSEC_PER_USEC;
	t = emit(tr, t, CW_OP_cudaGraphLaunch, launch, EXEC + (churn ? (uint64_t)(p->step % 64) * 0x1000 : 0), STREAM,
		 0);
	cw_demo_plan_stretch(p, t - (p->start + p->dur));
	/* The graph's kernels run after the launch. */
	tr->gpu_free = (tr->gpu_free > t ? tr->gpu_free : t) + 900 * NSEC_PER_USEC;
}

static void plan_churn(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	plan(tr, p, 1);
}

static void plan_tail(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	plan(tr, p, 0);
}

static const struct cw_demo_hooks churn_hooks = { plan_churn, NULL, NULL, NULL };
static const struct cw_demo_hooks tail_hooks = { plan_tail, NULL, NULL, NULL };

static void setup_churn(struct cw_demo_train *tr)
{
	tr->hooks = &churn_hooks;
}

static void setup_tail(struct cw_demo_train *tr)
{
	tr->hooks = &tail_hooks;
}

const struct cw_demo_scenario cw_demo_scenario_graph_churn = {
	"graph-churn",
	"a CUDA graph is re-captured and re-instantiated before every launch (dynamic input shapes)",
	"graph_churn",
	setup_churn,
};

const struct cw_demo_scenario cw_demo_scenario_graph_launch_tail = {
	"graph-launch-tail",
	"every 25th cudaGraphLaunch re-uploads the graph and takes 3-5 ms instead of 60 us",
	"graph_launch_tail",
	setup_tail,
};
