/* GPU telemetry of a demo run, written the way trace's telemetry thread
 * writes it (directly, not through the ring-buffer pipeline): device 0
 * (an H100) and one sample per second of the run, which a scenario
 * adjusts; and Xid events as the kernel log would report them. Called
 * from a scenario's meta hook, after the feed. */
#ifndef CW_DEMO_GPU_H
#define CW_DEMO_GPU_H

#include <stdint.h>

#include "demo/train.h"
#include "gpu/gpu.h"
#include "store/writer.h"

/* Changes the sample of second [t, t + 1 s) (mono); s holds a healthy
 * busy H100 on entry. */
typedef void (*cw_demo_gpu_adjust)(struct cw_demo_train *tr, uint64_t t, struct cw_gpu_sample *s);

/* Device row and samples from the start of the run to its last record. */
int cw_demo_gpu_write(struct cw_demo_train *tr, cw_demo_gpu_adjust adjust);
/* A meta hook (train.h) whose rows are the device's: cw_demo_gpu_write
 * with tr->hooks->gpu_adjust. */
int cw_demo_gpu_meta(struct cw_demo_train *tr, struct cw_writer *w);
/* The syncs that fall in the windows of len every `every` from at (after
 * the training start) spin 2.5-3x longer: a slowed device. */
void cw_demo_gpu_slow_syncs(struct cw_demo_train *tr, struct cw_demo_plan *p, uint64_t at, uint64_t every,
			    uint64_t len);
/* One Xid event at t (mono) on device 0, affecting pid (0: none named). */
int cw_demo_gpu_xid(struct cw_demo_train *tr, struct cw_writer *w, uint64_t t, uint32_t code, uint32_t pid,
		    const char *comm, const char *text);

#endif
