/* noisy-neighbour: two pods share a GPU node. The trainer (pod ml/vit-train-0,
 * Guaranteed, containerd) is preempted again and again by ffmpeg in a
 * BestEffort pod of another namespace (batch/video-transcode-7d9f) that
 * transcodes on the same CPUs from t = 20 s to t = 70 s.
 * -> noisy_neighbour naming both pods, with Kubernetes and cgroup fixes. */
#include <stdio.h>

#include "demo/demo.h"
#include "demo/train.h"
#include "tenant/tenant.h"
#include "util/timeutil.h"

#define HOG_CGROUP 0x5a17ULL
#define TRAIN_CGROUP_ID 0x2f41ULL /* train.c's */

#define TRAIN_POD "4b0c7a52-1f6e-4d3a-9c2b-8e7f6a5d4c3b"
#define TRAIN_CT "9d2f4c1a7b3e5f60812a4b6c8d0e2f4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e"
#define HOG_POD "e1d2c3b4-a5f6-4789-8abc-def012345678"
#define HOG_CT "51c0ffee2b7d4e8f9a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3f"

static const struct cw_demo_task ffmpeg[2] = {
	{ 9120, 9120, HOG_CGROUP, "ffmpeg", 3 },
	{ 9120, 9137, HOG_CGROUP, "ffmpeg", 3 },
};

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;
	const struct cw_demo_task *by = &ffmpeg[cw_demo_rng_next(r) & 1];
	double u = cw_demo_rng_unit(r);

	if (!cw_demo_in_window(tr, p->start, 20 * NSEC_PER_SEC, 0, 50 * NSEC_PER_SEC))
		return;
	switch (p->op) {
	case CW_OP_cudaStreamSynchronize:
		if (u < 0.15)
			for (int i = 0; i < 3; i++)
				cw_demo_plan_off(p, cw_demo_rng_range(r, 10, 25) * NSEC_PER_MSEC, CW_OFFCPU_PREEMPTED,
						 by, NULL);
		break;
	case CW_OP_cudaLaunchKernel:
		if (u < 0.06)
			cw_demo_plan_off(p, cw_demo_rng_range(r, 500, 4000) * NSEC_PER_USEC, CW_OFFCPU_PREEMPTED, by,
					 NULL);
		break;
	default:
		break;
	}
}

static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (!cw_demo_in_window(tr, t, 20 * NSEC_PER_SEC, 0, 50 * NSEC_PER_SEC))
		return;
	s->cpu_pct = 94 + 5 * cw_demo_rng_unit(r);
	s->load1 = 14 + 3 * cw_demo_rng_unit(r);
}

/* The pods' names and namespaces come from the downward-API environment
 * on a live node; here they are written with the rows. */
static int meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	struct cw_tenant t;
	struct cw_cgroup_row row = { .t = &t };
	int err;

	row.cgroup_id = TRAIN_CGROUP_ID;
	row.path = tr->cgroup_path;
	cw_tenant_parse(row.path, &t);
	snprintf(t.pod, sizeof(t.pod), "vit-train-0");
	snprintf(t.ns, sizeof(t.ns), "ml");
	if ((err = cw_writer_cgroup_row(w, &row)))
		return err;
	row.cgroup_id = HOG_CGROUP;
	row.path = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
		   "e1d2c3b4_a5f6_4789_8abc_def012345678.slice/cri-containerd-" HOG_CT ".scope";
	cw_tenant_parse(row.path, &t);
	snprintf(t.pod, sizeof(t.pod), "video-transcode-7d9f");
	snprintf(t.ns, sizeof(t.ns), "batch");
	return cw_writer_cgroup_row(w, &row);
}

static const struct cw_demo_hooks hooks = { plan, second, meta, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
	tr->cgroup_path = "/kubepods.slice/kubepods-pod4b0c7a52_1f6e_4d3a_9c2b_8e7f6a5d4c3b.slice/cri-containerd-" TRAIN_CT
			  ".scope";
}

const struct cw_demo_scenario cw_demo_scenario_noisy_neighbour = {
	"noisy-neighbour",
	"ffmpeg in another namespace's BestEffort pod preempts the trainer's pod from t=20s to t=70s",
	"noisy_neighbour",
	setup,
};
