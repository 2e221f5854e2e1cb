/* NCCL jobs: data-parallel ranks (one process each, pids 4821 + 10 x
 * rank, comm "python") stepping through forward/backward compute, an
 * asynchronous ncclAllReduce of 64 MiB (returns at once, as NCCL's
 * does) and the cudaStreamSynchronize that waits for it, which lasts
 * until the last rank has entered plus the transfer. Communicators are
 * created by ncclCommInitRank with the same unique-id hash on every rank.
 *
 *   nccl-straggler           4 ranks; rank 2 is preempted for ~25 ms before
 *                            each collective by stress-ng on its CPU
 *   nccl-straggler-io        4 ranks; rank 1 blocks ~25 ms on its own read
 *   nccl-straggler-input     8 ranks; rank 5 waits ~25 ms for its loader
 *                            thread (pt_loader, same process)
 *   nccl-straggler-compute   8 ranks; rank 7 computes ~25 ms longer
 *   nccl-hang                4 ranks; rank 3 stops before collective #40
 *                            (sleeping); the others wait in their sync
 *                            for 15 s until the trace ends
 *   nccl-hang-start          the same hang at collective #1, right after
 *                            ncclCommInitRank: rank 3 never enters any
 *                            collective; the others' syncs after twenty
 *                            short ones at start-up are the hung ones
 *                            (never start-up cost)
 *   comm-bound               4 ranks, no straggler; the transfer takes
 *                            ~60 % of each step
 * -> nccl_straggler (because cpu_preemption, io_contention,
 *    dataloader_starvation, compute), nccl_hang, comm_bound. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

enum mode { M_HOG, M_IO, M_INPUT, M_COMPUTE, M_HANG, M_COMM };

struct job {
	enum mode mode;
	int nranks, late; /* the straggler / missing rank */
	int hang_seq;     /* M_HANG: the collective the missing rank never enters */
};

#define STEPS 60
#define WARMUP_SYNCS 20
#define UID_HASH 0x6e63636c2d6a6f62LL /* the ncclUniqueId hash every rank shares */
#define STREAM 0x5a5a0000ULL
#define BYTES (64ULL << 20)

static const struct cw_demo_task hog = { 7777, 7777, 1, "stress-ng", 0 };

static struct cw_demo_task rank_task(int r)
{
	return (struct cw_demo_task){ (uint32_t)(4821 + 10 * r), (uint32_t)(4821 + 10 * r), 0x4000 + (uint64_t)r,
				      "python", r };
}

static struct cw_demo_task loader_task(int r)
{
	return (struct cw_demo_task){ (uint32_t)(4821 + 10 * r), (uint32_t)(4821 + 10 * r + 1), 0x4000 + (uint64_t)r,
				      "pt_loader", r };
}

/* The straggler's extra time before its entry at t, by cause. */
static void plant(struct cw_demo_gen *g, const struct job *j, const struct cw_demo_task *t, uint64_t start,
		  uint64_t len)
{
	struct cw_demo_task ld = loader_task(j->late);

	switch (j->mode) {
	case M_HOG:
		cw_demo_offcpu(g, t, start, start + len, CW_OFFCPU_PREEMPTED, &hog, NULL);
		break;
	case M_IO:
		cw_demo_offcpu(g, t, start, start + len, CW_OFFCPU_BLOCKED, NULL, &cw_demo_irq);
		cw_demo_block_io(g, t, start + 100 * NSEC_PER_USEC, start + len - 50 * NSEC_PER_USEC, 1 << 20,
				 123456, 0);
		break;
	case M_INPUT:
		cw_demo_offcpu(g, t, start, start + len, CW_OFFCPU_BLOCKED, NULL, &ld);
		break;
	default: /* compute: on CPU, nothing to record */
		break;
	}
}

static void job_run(struct cw_demo_train *tr)
{
	const struct job *j = tr->ctx;
	struct cw_demo_gen *g = tr->g;
	uint64_t base = CW_DEMO_MONO_BASE, t = base + NSEC_PER_SEC, entry[16], end = 0;
	uint64_t transfer = j->mode == M_COMM ? 60 * NSEC_PER_MSEC : 2 * NSEC_PER_MSEC;
	int n = j->nranks;

	tr->t0 = t;
	for (int r = 0; r < n; r++) {
		struct cw_demo_task rt = rank_task(r);
		uint64_t a[6] = { (uint64_t)n, (uint64_t)UID_HASH, (uint64_t)r, 0x7ffc0000ULL + (uint64_t)r, 0,
				  0x5000ULL + (uint64_t)r };

		cw_demo_call6(g, &rt, base + 500 * NSEC_PER_MSEC + (uint64_t)r * NSEC_PER_MSEC, 80 * NSEC_PER_MSEC,
			      CW_OP_ncclCommInitRank, a, r, CW_SITE_INIT_ALLOC);
	}
	/* nccl-hang-start: each rank moves its model to the device (a short
	 * sync, twenty times) before its first collective, so the sync that
	 * hangs at #1 falls in the op's first second, among its first calls. */
	for (int r = 0; j->mode == M_HANG && j->hang_seq == 1 && r < n; r++) {
		struct cw_demo_task rt = rank_task(r);
		uint64_t sa[6] = { STREAM + (uint64_t)r, 0, 0, 0, 0, 0 };

		for (int k = 0; k < WARMUP_SYNCS; k++)
			cw_demo_call6(g, &rt, t + (uint64_t)k * 15 * NSEC_PER_MSEC,
				      cw_demo_rng_range(&g->rng, 800, 1200) * NSEC_PER_USEC, CW_OP_cudaStreamSynchronize,
				      sa, r, CW_SITE_INIT_ALLOC);
		if (r == n - 1)
			t += WARMUP_SYNCS * 15 * NSEC_PER_MSEC;
	}
	for (int s = 0; s < STEPS; s++) {
		uint64_t last = 0;
		int hung = j->mode == M_HANG && s + 1 == j->hang_seq;

		for (int r = 0; r < n; r++) {
			struct cw_demo_task rt = rank_task(r);
			uint64_t compute = cw_demo_rng_range(&g->rng, 30000, 30400) * NSEC_PER_USEC, la[4] = { 0xdead, 1, 1, 1 };
			uint64_t extra = j->mode != M_COMM && j->mode != M_HANG && r == j->late
						 ? cw_demo_rng_range(&g->rng, 22000, 28000) * NSEC_PER_USEC
						 : 0;

			cw_demo_call(g, &rt, t, 20 * NSEC_PER_USEC, CW_OP_cudaLaunchKernel, la, r, CW_SITE_BWD);
			entry[r] = t + compute + extra;
			if (extra)
				plant(g, j, &rt, entry[r] - extra, extra - 200 * NSEC_PER_USEC);
			if (hung && r == j->late) {
				/* Stops before the collective: asleep until the end. */
				entry[r] = 0;
				continue;
			}
			if (entry[r] > last)
				last = entry[r];
		}
		end = last + transfer;
		for (int r = 0; r < n; r++) {
			struct cw_demo_task rt = rank_task(r);
			uint64_t a[6] = { BYTES / 4, 7 /* ncclFloat32 */, 0 /* ncclSum */, 0x5000ULL + (uint64_t)r,
					  STREAM + (uint64_t)r, (uint64_t)-1 };
			uint64_t sa[6] = { STREAM + (uint64_t)r, 0, 0, 0, 0, 0 };

			if (!entry[r])
				continue;
			cw_demo_call6(g, &rt, entry[r], 30 * NSEC_PER_USEC, CW_OP_ncclAllReduce, a, r, CW_SITE_BWD);
			if (hung) {
				cw_demo_call_open(g, &rt, entry[r] + 40 * NSEC_PER_USEC, CW_OP_cudaStreamSynchronize, sa,
						  r, CW_SITE_SYNC);
				continue;
			}
			cw_demo_call6(g, &rt, entry[r] + 40 * NSEC_PER_USEC, end - entry[r] - 40 * NSEC_PER_USEC,
				      CW_OP_cudaStreamSynchronize, sa, r, CW_SITE_SYNC);
		}
		if (hung) {
			struct cw_demo_task rt = rank_task(j->late);
			uint64_t stop = t + 30 * NSEC_PER_MSEC, until = stop + 15 * NSEC_PER_SEC;

			cw_demo_offcpu(g, &rt, stop, until, CW_OFFCPU_BLOCKED, NULL, NULL);
			for (uint64_t sec = base + NSEC_PER_SEC; sec <= until; sec += NSEC_PER_SEC) {
				struct cw_demo_snap sn = { .cpu_pct = 12, .mem_pct = 40, .load1 = 1.0, .ncpu = 16 };
				cw_demo_snapshot(g, sec, &sn);
			}
			tr->steps = (uint64_t)s;
			tr->end = until;
			return;
		}
		t = end + 200 * NSEC_PER_USEC;
	}
	for (uint64_t sec = base + NSEC_PER_SEC; sec <= t; sec += NSEC_PER_SEC) {
		struct cw_demo_snap sn = { .cpu_pct = j->mode == M_HOG ? 40 : 25, .mem_pct = 40, .load1 = 2.0, .ncpu = 16 };
		cw_demo_snapshot(g, sec, &sn);
	}
	tr->steps = STEPS;
	tr->end = t;
}

static int job_meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	const struct job *j = tr->ctx;
	int err = 0;

	for (int r = 0; r < j->nranks && !err; r++) {
		struct cw_process_row pr = {
			.pid = rank_task(r).pid, .ppid = 4790, .comm = "python",
			.cmdline = "torchrun --nproc-per-node 8 train_ddp.py", .cgroup_id = rank_task(r).cgroup_id,
			.rank = r, .local_rank = r, .world_size = j->nranks,
		};
		err = cw_writer_process(w, &pr);
	}
	if (!err && j->mode == M_HOG) {
		struct cw_process_row pr = { .pid = hog.pid, .ppid = 1, .comm = "stress-ng",
					     .cmdline = "stress-ng --cpu 1 --taskset 2", .rank = -1, .local_rank = -1,
					     .world_size = -1 };
		err = cw_writer_process(w, &pr);
	}
	return err;
}

static const struct cw_demo_hooks hooks = { NULL, NULL, job_meta, NULL };

/* One scenario per job: its parameters, set-up and table row. */
#define JOB(id, var, m, n, late, hseq, name, expect, title)                   \
	static const struct job id##_job = { m, n, late, hseq };              \
	static void id##_setup(struct cw_demo_train *tr)                      \
	{                                                                     \
		tr->ctx = (void *)&id##_job;                                  \
		tr->hooks = &hooks;                                           \
		tr->run = job_run;                                            \
	}                                                                     \
	const struct cw_demo_scenario cw_demo_scenario_##var = { name, title, expect, id##_setup }

JOB(hog, nccl_straggler, M_HOG, 4, 2, 0, "nccl-straggler", "nccl_straggler",
    "4 ranks; rank 2 is preempted by stress-ng before every ncclAllReduce");
JOB(io, nccl_straggler_io, M_IO, 4, 1, 0, "nccl-straggler-io", "nccl_straggler",
    "4 ranks; rank 1 blocks on its own reads before every ncclAllReduce");
JOB(input, nccl_straggler_input, M_INPUT, 8, 5, 0, "nccl-straggler-input", "nccl_straggler",
    "8 ranks; rank 5 waits for its loader thread before every ncclAllReduce");
JOB(compute, nccl_straggler_compute, M_COMPUTE, 8, 7, 0, "nccl-straggler-compute", "nccl_straggler",
    "8 ranks; rank 7 computes 25 ms longer before every ncclAllReduce");
JOB(hang, nccl_hang, M_HANG, 4, 3, 40, "nccl-hang", "nccl_hang",
    "4 ranks; rank 3 stops before collective #40 and the others wait for it");
JOB(comm, comm_bound, M_COMM, 4, -1, 0, "comm-bound", "comm_bound",
    "4 ranks; the 64 MiB ncclAllReduce takes 60% of every step");
JOB(hang_start, nccl_hang_start, M_HANG, 4, 3, 1, "nccl-hang-start", "nccl_hang",
    "4 ranks; rank 3 never enters collective #1 and the others' first syncs wait for it");
