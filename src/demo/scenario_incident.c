/* incident: a CPU storm (stress-ng, in another cgroup) runs from t = 30 s
 * to t = 45 s on the training thread's CPU. The thread is runnable but
 * preempted for most of each cudaStreamSynchronize it enters meanwhile,
 * so those syncs take ~8.5x their usual time; snapshots show the host at
 * ~98 % CPU with the load climbing. -> cpu_preemption naming stress-ng. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define STORM_AT (30 * NSEC_PER_SEC)
#define STORM_LEN (15 * NSEC_PER_SEC)
#define STORM_CGROUP 0x3a07ULL

/* stress-ng --cpu 16: one worker per CPU; the one on CPU 3 is the one the
 * trainer meets most. */
static const struct cw_demo_task storm[3] = {
	{ 9001, 9001, STORM_CGROUP, "stress-ng", 3 },
	{ 9002, 9002, STORM_CGROUP, "stress-ng", 3 },
	{ 9003, 9003, STORM_CGROUP, "stress-ng", 3 },
};

static const struct cw_demo_task *pick(struct cw_demo_rng *r)
{
	double u = cw_demo_rng_unit(r);

	return u < 0.8 ? &storm[0] : u < 0.9 ? &storm[1] : &storm[2];
}

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (!cw_demo_in_window(tr, p->start, STORM_AT, 0, STORM_LEN))
		return;
	if (p->op == CW_OP_cudaStreamSynchronize) {
		/* The GPU finished on time; the thread could not get back on
		 * its CPU to see it: 7.5x the wait again, in CFS slices. */
		uint64_t extra = (uint64_t)((double)p->dur * (7.2 + 0.6 * cw_demo_rng_unit(r)));
		int pieces = 10;

		for (int i = 0; i < pieces; i++)
			cw_demo_plan_off(p, extra / (uint64_t)pieces, CW_OFFCPU_PREEMPTED, pick(r), NULL);
	} else if (p->op == 0 && cw_demo_rng_unit(r) < 0.05) {
		/* Python between calls loses the CPU too, now and then; more
		 * would let the GPU drain before the sync and hide the tail. */
		cw_demo_plan_off(p, cw_demo_rng_range(r, 200, 1000) * NSEC_PER_USEC, CW_OFFCPU_PREEMPTED, pick(r), NULL);
	} else if (p->op == CW_OP_cudaLaunchKernel && cw_demo_rng_unit(r) < 0.05) {
		cw_demo_plan_off(p, cw_demo_rng_range(r, 200, 1500) * NSEC_PER_USEC, CW_OFFCPU_PREEMPTED, pick(r), NULL);
	}
}

static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	uint64_t in = cw_demo_window_overlap(tr, t, t + NSEC_PER_SEC, STORM_AT, 0, STORM_LEN);
	uint64_t open = tr->t0 + STORM_AT, close = open + STORM_LEN;

	if (in) {
		double secs = (double)(t + NSEC_PER_SEC - open) / 1e9;

		s->cpu_pct = 97.5 + cw_demo_rng_unit(&tr->g->rng);
		/* load1 is a one-minute average: it climbs toward the ~20
		 * runnable tasks of 16 stressors plus the trainer. */
		s->load1 = 4 + 16 * (1 - 1 / (1 + secs / 6));
	} else if (t >= close) {
		double after = (double)(t - close) / 1e9;

		s->load1 += 11.0 / (1 + after / 10);
	}
}

static int meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	(void)tr;
	return cw_writer_cgroup(w, STORM_CGROUP, "/user.slice/user-1000.slice/session-7.scope", NULL);
}

static const struct cw_demo_hooks hooks = { plan, second, meta, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_incident = {
	"incident",
	"a CPU storm (stress-ng, another cgroup) preempts the training thread from t=30s to t=45s",
	"cpu_preemption",
	setup,
};
