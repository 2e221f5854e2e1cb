/* io-contention: after every checkpoint a sidecar rsync (pid 6120, its own
 * cgroup) copies it to the backup volume on the same NVMe device: 5 s of
 * back-to-back 1 MiB writes, queue depth 4, every 20 s from t = 10 s. The
 * trainer's page faults (memory-mapped dataset, pageable staging buffers)
 * queue behind those writes, so its cudaStreamSynchronize calls in those
 * windows are 4-6x slower with the thread BLOCKED while block I/O is in
 * flight; snapshots show the disk ~98 % busy at ~440 MB/s.
 * -> io_contention. */
#include "demo/demo.h"
#include "demo/train.h"
#include "util/timeutil.h"

#define IO_AT (10 * NSEC_PER_SEC)
#define IO_EVERY (20 * NSEC_PER_SEC)
#define IO_LEN (5 * NSEC_PER_SEC)
#define RSYNC_CGROUP 0x1b3cULL
#define QUEUE_DEPTH 4

static const struct cw_demo_task rsync_task = { 6120, 6120, RSYNC_CGROUP, "rsync", 9 };

static void plan(struct cw_demo_train *tr, struct cw_demo_plan *p)
{
	struct cw_demo_rng *r = &tr->g->rng;

	if (p->op != CW_OP_cudaStreamSynchronize || !cw_demo_in_window(tr, p->start, IO_AT, IO_EVERY, IO_LEN))
		return;
	/* Keep the call inside the window so every blocked piece overlaps
	 * requests in flight. */
	uint64_t extra = (uint64_t)((double)p->dur * (3.0 + 2.0 * cw_demo_rng_unit(r)));
	for (int i = 0; i < 4; i++)
		cw_demo_plan_off(p, extra / 4, CW_OFFCPU_BLOCKED, NULL, &cw_demo_irq);
}

static void second(struct cw_demo_train *tr, uint64_t t, struct cw_demo_snap *s)
{
	struct cw_demo_rng *r = &tr->g->rng;
	uint64_t in = cw_demo_window_overlap(tr, t, t + NSEC_PER_SEC, IO_AT, IO_EVERY, IO_LEN);
	double f = (double)in / 1e9;
	static const uint64_t sector_base = 0x3c000000ULL;

	if (!in)
		return;
	s->io_busy_pct = s->io_busy_pct * (1 - f) + f * (97.5 + 2 * cw_demo_rng_unit(r));
	s->io_bytes_per_s += (uint64_t)(f * (double)cw_demo_rng_range(r, 420, 460) * 1e6);
	s->cpu_pct += 4 * f;
	/* QUEUE_DEPTH streams of back-to-back requests cover the window part
	 * of this second without a gap. */
	for (int q = 0; q < QUEUE_DEPTH; q++) {
		uint64_t u = t + (uint64_t)q * 2 * NSEC_PER_MSEC, end = t + NSEC_PER_SEC;
		uint64_t sector = sector_base + ((t / NSEC_PER_SEC) * QUEUE_DEPTH + (uint64_t)q) * 0x100000ULL;

		while (u < end) {
			uint64_t d = cw_demo_rng_range(r, 7000, 11000) * NSEC_PER_USEC;

			if (cw_demo_in_window(tr, u, IO_AT, IO_EVERY, IO_LEN)) {
				cw_demo_block_io(tr->g, &rsync_task, u, u + d, 1 << 20, sector, 1);
				sector += 2048;
			}
			u += d;
		}
	}
}

static int meta(struct cw_demo_train *tr, struct cw_writer *w)
{
	(void)tr;
	return cw_writer_cgroup(w, RSYNC_CGROUP, "/system.slice/ckpt-backup.service", NULL);
}

static const struct cw_demo_hooks hooks = { plan, second, meta, NULL };

static void setup(struct cw_demo_train *tr)
{
	tr->hooks = &hooks;
}

const struct cw_demo_scenario cw_demo_scenario_io_contention = {
	"io-contention",
	"checkpoint copies (rsync) saturate the NVMe disk for 5 s every 20 s and stall the step",
	"io_contention",
	setup,
};
