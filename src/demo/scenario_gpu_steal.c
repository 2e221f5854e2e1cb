/* gpu-steal: an inference server (pid 5100, comm "python", its own
 * container) shares GPU 0 and serves bursts of requests: 4 s of work
 * every 12 s. Without MPS the GPU time-slices between the two contexts,
 * so the trainer's cudaStreamSynchronize waits ~5x longer during bursts
 * while its thread stays on CPU (the driver spins). -> gpu_time_slicing. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define BURST_AT (6 * NSEC_PER_SEC)
#define BURST_EVERY (12 * NSEC_PER_SEC)
#define BURST_LEN (4 * NSEC_PER_SEC)
#define SERVE_CGROUP 0x5e02ULL

static const struct cw_demo_task server = { 5100, 5100, SERVE_CGROUP, "python", 9 };

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (p->op == CW_OP_cudaStreamSynchronize && cw_demo_in_window(tr, p->start, BURST_AT, BURST_EVERY, BURST_LEN))
		cw_demo_plan_stretch(p, (uint64_t)((double)p->dur * (4.0 + cw_demo_rng_unit(r))));
}

/* The server's request loop during the burst part of [t, t + 1 s): four
 * launches, then a sync for the batch. */
static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	struct cw_demo_rng *r = &tr->g->rng;
	uint64_t u = t, end = t + NSEC_PER_SEC;

	if (!cw_demo_window_overlap(tr, t, end, BURST_AT, BURST_EVERY, BURST_LEN))
		return;
	s->cpu_pct += 6;
	while (u < end) {
		if (!cw_demo_in_window(tr, u, BURST_AT, BURST_EVERY, BURST_LEN)) {
			u += NSEC_PER_MSEC;
			continue;
		}
		for (int k = 0; k < 4; k++) {
			uint64_t d = cw_demo_jitter(r, 6 * NSEC_PER_USEC, 0.1, 1.5);
			uint64_t a[4] = { 0x5581e0a02000ULL + (uint64_t)k * 0x40, 0x100000040ULL, 0x100000080ULL,
					  0x7ffc9e2a0c10ULL };

			cw_demo_call(tr->g, &server, u, d, CW_OP_cudaLaunchKernel, a, 0, CW_SITE_SERVE_LAUNCH);
			u += d + 120 * NSEC_PER_USEC;
		}
		{
			uint64_t d = cw_demo_jitter(r, 11 * NSEC_PER_MSEC, 0.1, 1.5);
			uint64_t a[4] = { 0x5581e14c0a80ULL, 0, 0, 0 };

			cw_demo_call(tr->g, &server, u, d, CW_OP_cudaStreamSynchronize, a, 0, CW_SITE_SERVE_SYNC);
			u += d + 300 * NSEC_PER_USEC;
		}
	}
}

static int meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	struct cw_process_row pr = {
		.pid = server.pid, .ppid = 1, .comm = "python",
		.cmdline = "python serve.py --model llama-3-8b-instruct --port 8000", .cgroup_id = SERVE_CGROUP,
		.rank = -1, .local_rank = -1, .world_size = -1,
	};
	int err;

	(void)tr;
	if ((err = cw_writer_process(w, &pr)))
		return err;
	return cw_writer_cgroup(w, SERVE_CGROUP, "/kubepods.slice/kubepods-burstable.slice/cri-containerd-llm-serve.scope",
				"llm-serve");
}

static const struct cw_demo_hooks hooks = { plan, second, meta, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_gpu_steal = {
	"gpu-steal",
	"an inference server (pid 5100) time-slices GPU 0 with the trainer in 4 s bursts every 12 s",
	"gpu_time_slicing",
	setup,
};
