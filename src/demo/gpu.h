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
/* Whether t (mono) falls in one of the episodes of a slowed device: 8 s
 * from t = 20 s of training, every 30 s (three in the default run). */
int cw_demo_gpu_in_episode(struct cw_demo_train *tr, uint64_t t);
/* A plan hook: the syncs of an episode spin 2.5-3x longer. */
void cw_demo_gpu_slow_syncs(struct cw_demo_train *tr, struct cw_demo_plan *p);
/* One Xid event at t (mono) on device 0, affecting pid (0: none named). */
int cw_demo_gpu_xid(struct cw_demo_train *tr, struct cw_writer *w, uint64_t t, uint32_t code, uint32_t pid,
		    const char *comm, const char *text);

#endif
