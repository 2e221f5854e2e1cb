/* cuda-oom: an inference server (pid 5100) shares GPU 0 and holds 34 GiB;
 * the trainer's activations grow with its batch until, from t = 50 s,
 * every cudaMalloc of the forward pass fails with
 * cudaErrorMemoryAllocation (2): 78.9 of 80 GiB are in use. The training
 * loop catches the error and retries the step. NVML's per-process
 * readings name both holders. -> device_oom, naming the failing line, the
 * device's memory state and pid 5100 as the other holder. */
#include "demo/demo.h"
#include "demo/gpu.h"
#include "demo/train.h"
#include "store/gpu_store.h"
#include "util/timeutil.h"

#define FULL_AT (50 * NSEC_PER_SEC)
#define GIB (1LL << 30)
#define CUDA_ERROR_MEMORY_ALLOCATION 2 /* cudaErrorMemoryAllocation */
#define SERVER_PID 5100

static int64_t trainer_bytes(struct cw_demo_train *tr, uint64_t t)
{
	if (t < tr->t0)
		return 8 * GIB;
	if (t >= tr->t0 + FULL_AT)
		return (int64_t)(44.9 * GIB);
	return 8 * GIB + (int64_t)((36.9 * GIB) * (double)(t - tr->t0) / (double)FULL_AT);
}

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	if (p->op == CW_OP_cudaMalloc && p->step >= 0 && p->start >= tr->t0 + FULL_AT) {
		p->ret = CUDA_ERROR_MEMORY_ALLOCATION;
		/* The allocator frees its cache and retries before giving up. */
		p->dur = cw_demo_rng_range(&tr->g->rng, 300, 600) * NSEC_PER_USEC;
		p->args[1] = 2 * GIB;
	}
}

static void adjust(struct cw_demo_train *tr, uint64_t t, struct cw_gpu_sample *s)
{
	s->mem_used = trainer_bytes(tr, t) + 34 * GIB;
	if (s->mem_used > s->mem_total - s->mem_reserved)
		s->mem_used = s->mem_total - s->mem_reserved;
}

/* The device's samples, and NVML's per-process memory once a second. */
static int meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	struct cw_gpu_store *gs;
	int err = cw_demo_gpu_meta(tr, w);

	if (err || (err = cw_gpu_store_new(&gs, tr->store->db, tr->node, tr->session_id)))
		return err;
	for (uint64_t t = tr->t0; !err && t < tr->g->last_ns; t += NSEC_PER_SEC) {
		uint64_t wall = (uint64_t)((int64_t)t + tr->mono_to_wall);
		struct cw_gpu_proc trainer = {cw_demo_main_task.pid, trainer_bytes(tr, t), 91, 40};
		struct cw_gpu_proc server = {SERVER_PID, 34 * GIB, 6, 3};

		err = cw_gpu_store_process(gs, 0, t, wall, &trainer);
		if (!err)
			err = cw_gpu_store_process(gs, 0, t, wall, &server);
	}
	cw_gpu_store_free(gs);
	return err;
}

static const struct cw_demo_hooks hooks = {plan, NULL, meta, adjust};

static void setup(struct cw_demo_train *tr)
{
	tr->cfg.malloc_every = 1;
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_cuda_oom = {
	"cuda-oom",
	"device memory runs out at t = 50 s (another process holds 34 GiB): cudaMalloc fails with out of memory",
	"device_oom",
	setup,
};
