/* cpu-contention: a noisy neighbour container (a JVM, comm "java", its own
 * cgroup) shares the trainer's CPUs for the whole run. The training thread
 * is preempted often: inside cudaLaunchKernel (a 5 us call that now takes
 * milliseconds), inside cudaStreamSynchronize and between calls; the host
 * sits at 92-99 % CPU. -> cpu_preemption naming java. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define JAVA_CGROUP 0x4c19ULL

static const struct cw_demo_task java[2] = {
	{ 7311, 7342, JAVA_CGROUP, "java", 3 },
	{ 7311, 7358, JAVA_CGROUP, "java", 3 },
};

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;
	const struct cw_demo_task *by = &java[cw_demo_rng_next(r) & 1];
	double u = cw_demo_rng_unit(r);

	switch (p->op) {
	case CW_OP_cudaLaunchKernel:
		if (u < 0.08)
			cw_demo_plan_off(p, cw_demo_rng_range(r, 300, 3000) * NSEC_PER_USEC, CW_OFFCPU_PREEMPTED, by,
					 NULL);
		break;
	case CW_OP_cudaStreamSynchronize:
		if (u < 0.12)
			for (int i = 0; i < 4; i++)
				cw_demo_plan_off(p, cw_demo_rng_range(r, 8, 22) * NSEC_PER_MSEC, CW_OFFCPU_PREEMPTED,
						 by, NULL);
		break;
	case CW_OP_cudaMemcpyAsync:
		if (u < 0.05)
			cw_demo_plan_off(p, cw_demo_rng_range(r, 300, 2000) * NSEC_PER_USEC, CW_OFFCPU_PREEMPTED,
					 by, NULL);
		break;
	case 0:
		if (u < 0.05)
			cw_demo_plan_off(p, cw_demo_rng_range(r, 200, 2000) * NSEC_PER_USEC, CW_OFFCPU_PREEMPTED,
					 by, NULL);
		break;
	default:
		break;
	}
}

static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	struct cw_demo_rng *r = &tr->g->rng;

	(void)t;
	s->cpu_pct = 92 + 7 * cw_demo_rng_unit(r);
	s->load1 = 18 + 4 * cw_demo_rng_unit(r);
}

static int meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	(void)tr;
	return cw_writer_cgroup(w, JAVA_CGROUP,
				"/kubepods.slice/kubepods-besteffort.slice/cri-containerd-kafka-indexer.scope",
				"kafka-indexer");
}

static const struct cw_demo_hooks hooks = { plan, second, meta, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_cpu_contention = {
	"cpu-contention",
	"a noisy neighbour container (java, another cgroup) shares the trainer's CPUs the whole run",
	"cpu_preemption",
	setup,
};
