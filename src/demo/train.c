#include "demo/train.h"
#include "tenant/cgroup_row.h"

#include <string.h>

#include "util/timeutil.h"

/* cgroup v2 ids are the cgroup directory's inode numbers. */
#define TRAIN_CGROUP 0x2f41ULL
#define SYSTEM_CGROUP 0x1ULL

const struct cw_demo_task cw_demo_main_task = { 4821, 4821, TRAIN_CGROUP, "python", 3 };
/* PyTorch DataLoader workers are processes forked by the trainer, so
 * their wake-ups come from another pid. */
const struct cw_demo_task cw_demo_worker_task = { 4870, 4870, TRAIN_CGROUP, "pt_data_worker", 7 };
const struct cw_demo_task cw_demo_kworker = { 142, 142, SYSTEM_CGROUP, "kworker/3:1", 3 };
/* Wake-ups from hard interrupts (GPU, NVMe completion) run in whatever
 * task was current, usually the idle task: pid 0. */
const struct cw_demo_task cw_demo_irq = { 0, 0, 0, "swapper/3", 3 };

#define DEV_PTR 0x7f2a40000000ULL
#define HOST_PTR 0x7f3a00200000ULL
#define STREAM 0x55d0c3f4a0e0ULL
#define STUB_BASE 0x55d0c2a01000ULL

/* Kernel names of the launch sequence, in launch order: forward,
 * backward, optimizer. Registered once from __cudaRegisterFunction. */
static const char *const kernel_names[] = {
	"implicit_convolve_sgemm",
	"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
	"flash_fwd_kernel",
	"vectorized_elementwise_kernel<4, GeluCUDAKernelImpl>",
	"cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8",
	"vectorized_layer_norm_kernel",
	"flash_bwd_dq_dk_dv_loop_kernel",
	"sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64",
	"GeluBackwardCUDAKernelImpl",
	"layer_norm_grad_input_kernel",
	"wgrad_alg0_engine",
	"reduce_kernel<512, 1, ReduceOp<float, NormTwoOps>>",
	"multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor>",
	"multi_tensor_apply_kernel<TensorListMetadata<1>, ScaleFunctor>",
};
#define NKERNELS (sizeof(kernel_names) / sizeof(kernel_names[0]))

void cw_demo_train_defaults(struct cw_demo_train_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->duration_ns = 90 * NSEC_PER_SEC;
	c->launches_fwd = 6;
	c->launches_bwd = 6;
	c->launches_opt = 2;
	c->launch_ns = 5 * NSEC_PER_USEC;
	c->gap_ns = 450 * NSEC_PER_USEC;
	c->kernel_ns = 1800 * NSEC_PER_USEC;
	c->copy_op = CW_OP_cudaMemcpyAsync;
	c->copy_bytes = 8ULL << 20;
	c->copy_ns = 12 * NSEC_PER_USEC;
	c->malloc_every = 5;
	c->malloc_ns = 22 * NSEC_PER_USEC;
	c->free_ns = 9 * NSEC_PER_USEC;
	c->hostalloc_every = 0;
	c->hostalloc_ns = 1200 * NSEC_PER_USEC;
	c->batch_ns = 300 * NSEC_PER_USEC;
	c->init_allocs = 24;
}

void cw_demo_plan_off(struct cw_demo_plan *p, uint64_t len, int reason, const struct cw_demo_task *by,
		      const struct cw_demo_task *waker)
{
	if (!len || p->noff == CW_DEMO_MAX_OFF)
		return;
	p->off[p->noff++] = (struct cw_demo_off){ len, reason, by, waker };
	p->dur += len;
}

void cw_demo_plan_stretch(struct cw_demo_plan *p, uint64_t extra)
{
	p->dur += extra;
}

/* Total off-CPU time already planned. */
static uint64_t cw_demo_plan_offtime(const struct cw_demo_plan *p)
{
	uint64_t s = 0;

	for (int i = 0; i < p->noff; i++)
		s += p->off[i].len;
	return s;
}

int cw_demo_in_window(const struct cw_demo_train *tr, uint64_t t, uint64_t first, uint64_t period, uint64_t len)
{
	uint64_t open = tr->t0 + first, k;

	if (t < open)
		return 0;
	k = period ? (t - open) / period : 0;
	return t - open - k * period < len;
}

uint64_t cw_demo_window_overlap(const struct cw_demo_train *tr, uint64_t a, uint64_t b, uint64_t first,
				uint64_t period, uint64_t len)
{
	uint64_t open = tr->t0 + first, sum = 0, k;

	if (b <= open)
		return 0;
	k = period && a > open ? (a - open) / period : 0;
	for (;; k++) {
		uint64_t ws = open + k * (period ? period : 0), we = ws + len;

		if (ws >= b)
			break;
		if (we > a)
			sum += (we < b ? we : b) - (ws > a ? ws : a);
		if (!period)
			break;
	}
	return sum;
}

/* Queues a plan: the off-CPU pieces spread evenly over the on-CPU time,
 * then the call itself. */
static void emit(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	const struct cw_demo_task *me = &cw_demo_main_task;
	uint64_t off = cw_demo_plan_offtime(p), on, seg, cur;

	/* The thread is on CPU when it enters and when it returns. */
	if (p->dur < off + 2 * NSEC_PER_USEC)
		p->dur = off + 2 * NSEC_PER_USEC;
	on = p->dur - off;
	seg = on / (uint64_t)(p->noff + 1);
	cur = p->start + seg;
	for (int i = 0; i < p->noff; i++) {
		cw_demo_offcpu(tr->g, me, cur, cur + p->off[i].len, p->off[i].reason, p->off[i].by, p->off[i].waker);
		cur += p->off[i].len + seg;
	}
	if (p->op) {
		uint64_t a6[6] = {p->args[0], p->args[1], p->args[2], p->args[3], 0, 0};

		cw_demo_call_ret(tr->g, me, p->start, p->dur, p->op, a6, 0, p->site, p->ret);
		tr->nth[p->op]++;
	}
}

/* Plans, lets the scenario adjust, queues; returns the end time. */
static uint64_t run_plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	p->step = tr->step;
	if (p->op)
		p->nth = tr->nth[p->op];
	if (tr->hooks && tr->hooks->plan)
		tr->hooks->plan(tr, p);
	emit(tr, p);
	return p->start + p->dur;
}

static uint64_t gap(struct cw_demo_train *tr, uint64_t t, int kind, uint64_t ns)
{
	struct cw_demo_plan p = { .gap = kind, .start = t };
	struct cw_demo_rng *r = &tr->g->rng;

	p.dur = cw_demo_jitter(r, ns, 0.08, 1.5);
	/* About once a second a kworker (writeback, vmstat) takes the CPU for
	 * a few tens of microseconds while Python runs. */
	if (cw_demo_rng_unit(r) < 1.0 / 600)
		cw_demo_plan_off(&p, cw_demo_rng_range(r, 15, 45) * NSEC_PER_USEC, CW_OFFCPU_PREEMPTED,
				 &cw_demo_kworker, NULL);
	return run_plan(tr, &p);
}

static uint64_t call(struct cw_demo_train *tr, uint64_t t, unsigned op, int site, uint64_t ns, uint64_t a0,
		     uint64_t a1, uint64_t a2, uint64_t a3)
{
	struct cw_demo_plan p = { .op = op, .site = site, .start = t, .args = { a0, a1, a2, a3 } };

	p.dur = cw_demo_jitter(&tr->g->rng, ns, 0.12, 1.8);
	return run_plan(tr, &p);
}

static uint64_t launch(struct cw_demo_train *tr, uint64_t t, int k, int site)
{
	struct cw_demo_rng *r = &tr->g->rng;
	uint64_t end = call(tr, t, CW_OP_cudaLaunchKernel, site, tr->cfg.launch_ns, STUB_BASE + (uint64_t)k * 0x40,
			    0x0000000100000108ULL + (uint64_t)k, 0x0000000100000100ULL, 0x7ffd3a2c1e40ULL);

	/* The kernel runs once the GPU is free and it has been launched. */
	tr->gpu_free = (tr->gpu_free > end ? tr->gpu_free : end) + cw_demo_jitter(r, tr->cfg.kernel_ns, 0.05, 1.3);
	return end;
}

static uint64_t sync(struct cw_demo_train *tr, uint64_t t)
{
	struct cw_demo_rng *r = &tr->g->rng;
	struct cw_demo_plan p = { .op = CW_OP_cudaStreamSynchronize, .site = CW_SITE_SYNC, .start = t,
				  .args = { STREAM } };
	uint64_t wait = tr->gpu_free > t ? tr->gpu_free - t : 0, end;

	p.dur = wait + cw_demo_jitter(r, 8 * NSEC_PER_USEC, 0.1, 1.5);
	/* With the default schedule (cudaDeviceScheduleAuto, fewer active
	 * contexts than cores) the driver spins, then yields: most syncs stay
	 * on CPU, some sleep briefly until the completion interrupt. The wait
	 * is the GPU's, so sleeping does not lengthen it. */
	if (p.dur > 200 * NSEC_PER_USEC && cw_demo_rng_unit(r) < 0.3) {
		uint64_t len = cw_demo_rng_range(r, 30, 80) * NSEC_PER_USEC;

		cw_demo_plan_off(&p, len, CW_OFFCPU_BLOCKED, NULL, &cw_demo_irq);
		p.dur -= len;
	}
	end = run_plan(tr, &p);
	if (tr->gpu_free < end)
		tr->gpu_free = end;
	return end;
}

static void second(struct cw_demo_train *tr, uint64_t s)
{
	struct cw_demo_rng *r = &tr->g->rng;
	struct cw_demo_snap snap = {
		.cpu_pct = 36 + 4 * cw_demo_rng_unit(r),
		.mem_pct = 61.5 + cw_demo_rng_unit(r),
		.load1 = 3.8 + 0.6 * cw_demo_rng_unit(r),
		.io_busy_pct = 1.5 + cw_demo_rng_unit(r),
		.swap_used_bytes = 0,
		.page_alloc_per_s = cw_demo_rng_range(r, 2500, 3500),
		.io_bytes_per_s = cw_demo_rng_range(r, 4, 6) << 20,
		.ncpu = 16,
	};
	uint64_t at = s + cw_demo_rng_range(r, 100, 900) * NSEC_PER_MSEC;

	/* The worker reads a dataset shard: one readahead request, and the
	 * worker sleeps until it completes. */
	cw_demo_block_io(tr->g, &cw_demo_worker_task, at, at + 350 * NSEC_PER_USEC, 512 << 10,
			 0x1a2b000 + (s / NSEC_PER_SEC) * 1024, 0);
	cw_demo_offcpu(tr->g, &cw_demo_worker_task, at + 5 * NSEC_PER_USEC, at + 360 * NSEC_PER_USEC,
		       CW_OFFCPU_BLOCKED, NULL, &cw_demo_irq);
	if (tr->hooks && tr->hooks->second)
		tr->hooks->second(tr, s, &snap);
	/* mem.bpf.c aggregates page allocations per thread and interval; the
	 * trainer does about a tenth of the host's. */
	cw_demo_page_alloc(tr->g, &cw_demo_main_task, s + NSEC_PER_SEC, snap.page_alloc_per_s / 10, NSEC_PER_SEC);
	cw_demo_snapshot(tr->g, s + NSEC_PER_SEC, &snap);
}

static void prologue(struct cw_demo_train *tr, uint64_t t)
{
	cw_demo_proc(tr->g, &cw_demo_main_task, t, CW_OP_exec, 0, 0, "/opt/conda/bin/python3.12");
	for (size_t k = 0; k < NKERNELS; k++)
		cw_demo_kernel_name(tr->g, &cw_demo_main_task, t + 200 * NSEC_PER_MSEC, STUB_BASE + k * 0x40,
				    kernel_names[k]);
	cw_demo_proc(tr->g, &cw_demo_main_task, t + 600 * NSEC_PER_MSEC, CW_OP_fork, cw_demo_worker_task.pid, 0,
		     NULL);
}

void cw_demo_train_run(struct cw_demo_train *tr)
{
	const struct cw_demo_train_cfg *c = &tr->cfg;
	uint64_t base = CW_DEMO_MONO_BASE, t, next_sec;

	tr->t0 = base + NSEC_PER_SEC;
	tr->end = tr->t0 + c->duration_ns;
	tr->gpu_free = 0;
	tr->step = -1;
	prologue(tr, base);
	/* Set-up: model.to(device) allocates the parameters. */
	t = base + 700 * NSEC_PER_MSEC;
	for (int i = 0; i < c->init_allocs; i++) {
		t = call(tr, t, CW_OP_cudaMalloc, CW_SITE_INIT_ALLOC, c->malloc_ns, 0x7ffd3a2c1d18ULL,
			 (uint64_t)(4 + i % 5) << 20, 0, 0);
		t = gap(tr, t, CW_GAP_PY, 2 * c->gap_ns);
	}
	if (t < tr->t0)
		t = tr->t0;
	next_sec = base + NSEC_PER_SEC;
	second(tr, base);
	for (tr->step = 0; t < tr->end; tr->step++) {
		int s = tr->step, k = 0;
		int alloc = c->malloc_every > 0 && s % c->malloc_every == 0;

		while (next_sec + NSEC_PER_SEC <= t) {
			second(tr, next_sec);
			next_sec += NSEC_PER_SEC;
		}
		t = gap(tr, t, CW_GAP_BATCH, c->batch_ns);
		if (c->hostalloc_every > 0 && s % c->hostalloc_every == 0) {
			t = call(tr, t, CW_OP_cudaHostAlloc, CW_SITE_PIN, c->hostalloc_ns, 0x7ffd3a2c1d20ULL,
				 c->copy_bytes, 0, 0);
			t = gap(tr, t, CW_GAP_PY, c->gap_ns / 4);
		}
		t = call(tr, t, c->copy_op, CW_SITE_COPY, c->copy_ns, DEV_PTR, HOST_PTR, c->copy_bytes, 1);
		for (int i = 0; i < c->launches_fwd; i++, k++) {
			t = gap(tr, t, CW_GAP_PY, c->gap_ns);
			t = launch(tr, t, k, i % 3 == 0 ? CW_SITE_FWD_CONV : i % 3 == 1 ? CW_SITE_FWD_ATTN : CW_SITE_FWD_MLP);
			if (alloc && i == 2)
				t = call(tr, t, CW_OP_cudaMalloc, CW_SITE_ALLOC, c->malloc_ns, 0x7ffd3a2c1d18ULL,
					 32ULL << 20, 0, 0);
		}
		t = gap(tr, t, CW_GAP_PY, c->gap_ns);
		for (int i = 0; i < c->launches_bwd; i++, k++) {
			t = gap(tr, t, CW_GAP_PY, c->gap_ns);
			t = launch(tr, t, k % (int)NKERNELS, CW_SITE_BWD);
		}
		for (int i = 0; i < c->launches_opt; i++, k++) {
			t = gap(tr, t, CW_GAP_PY, c->gap_ns);
			t = launch(tr, t, k % (int)NKERNELS, CW_SITE_OPT);
		}
		if (alloc)
			t = call(tr, t, CW_OP_cudaFree, CW_SITE_FREE, c->free_ns, DEV_PTR + (32ULL << 20), 0, 0, 0);
		t = gap(tr, t, CW_GAP_PY, c->gap_ns);
		t = sync(tr, t);
	}
	tr->steps = (uint64_t)tr->step;
	while (next_sec < t) {
		second(tr, next_sec);
		next_sec += NSEC_PER_SEC;
	}
	cw_demo_proc(tr->g, &cw_demo_worker_task, t + 20 * NSEC_PER_MSEC, CW_OP_exit, 0, 0, NULL);
	cw_demo_proc(tr->g, &cw_demo_main_task, t + 40 * NSEC_PER_MSEC, CW_OP_exit, 0, 0, NULL);
}

int cw_demo_train_meta(struct cw_demo_train *tr, struct cw_writer *w, uint64_t wall_start)
{
	struct cw_process_row pr = {
		.pid = cw_demo_main_task.pid, .ppid = 4790, .comm = "python",
		.cmdline = "python train.py --config configs/vit_b16.yaml --batch-size 64",
		.cgroup_id = TRAIN_CGROUP, .rank = 0, .local_rank = 0, .world_size = 1,
		.start_wall_ns = wall_start,
	};
	int err;

	if (tr->no_trainer)
		return tr->hooks && tr->hooks->meta ? tr->hooks->meta(tr, w) : 0;
	if ((err = cw_writer_process(w, &pr)))
		return err;
	pr = (struct cw_process_row){
		.pid = cw_demo_worker_task.pid, .ppid = cw_demo_main_task.pid, .comm = "pt_data_worker",
		.cmdline = "python train.py --config configs/vit_b16.yaml --batch-size 64",
		.cgroup_id = TRAIN_CGROUP, .rank = 0, .local_rank = 0, .world_size = 1,
		.start_wall_ns = wall_start + 600 * NSEC_PER_MSEC,
	};
	if ((err = cw_writer_process(w, &pr)) ||
	    (err = cw_tenant_write_cgroup_path(w, TRAIN_CGROUP,
				    tr->cgroup_path ? tr->cgroup_path
						    : "/kubepods.slice/kubepods-pod7c1e.slice/cri-containerd-trainer.scope",
				    tr->cgroup_path ? NULL : "trainer")) ||
	    (err = cw_tenant_write_cgroup_path(w, SYSTEM_CGROUP, "/", NULL)))
		return err;
	if (tr->hooks && tr->hooks->meta)
		return tr->hooks->meta(tr, w);
	return 0;
}
