/* GPU telemetry of one node over an explain window, for the GPU rules
 * (thermal_throttling, power_capping, gpu_memory_pressure): samples per
 * device in time order and the devices' names and limits. A store
 * without the GPU tables (older file, no NVML) loads as empty. */
#ifndef CW_ANALYSIS_GPUCTX_H
#define CW_ANALYSIS_GPUCTX_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

/* A sample stands for the time until the device's next sample, at most
 * this long (a missed interval does not stretch a throttled reading). */
#define CW_GPU_SAMPLE_SPAN_MAX_NS (2ULL * 1000000000ULL)

struct cw_gsample {
	int device;
	uint64_t mono, wall, end; /* end: next sample of the device, capped */
	int64_t sm_mhz, reasons, mem_used, mem_total, temp, power_mw;
};

struct cw_gdev {
	int device;
	char name[96], pci[32], uuid[96];
	int64_t max_sm_mhz, mem_total, power_limit_mw;
};

struct cw_gpuctx {
	struct cw_gsample *v; /* by device, then time */
	size_t n;
	struct cw_gdev dev[CW_GPU_MAX];
	int ndev;
};

int cw_gpuctx_load(sqlite3 *db, const char *node, uint64_t from_wall, uint64_t to_wall, struct cw_gpuctx *g);
void cw_gpuctx_free(struct cw_gpuctx *g);
const struct cw_gdev *cw_gpuctx_dev(const struct cw_gpuctx *g, int device);

typedef int (*cw_gsample_pred)(const struct cw_gsample *s);
/* Time of mono interval [s, e) covered by samples of device (-1: any
 * device) for which pred holds. *hit (may be NULL) gets the first such
 * sample. */
uint64_t cw_gpuctx_overlap(const struct cw_gpuctx *g, int device, uint64_t s, uint64_t e, cw_gsample_pred pred,
			   const struct cw_gsample **hit);
/* Median SM clock of the device's samples for which pred holds (-1 none). */
int64_t cw_gpuctx_median_clock(const struct cw_gpuctx *g, int device, cw_gsample_pred pred);

#endif
