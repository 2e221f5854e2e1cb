/* Per-cgroup pressure and CFS throttling samples (pressure.c). */
#ifndef CW_TENANT_PRESSURE_H
#define CW_TENANT_PRESSURE_H

#include <stdint.h>

#include "store/writer.h"

/* PSI text ("some avg10=.. avg60=.. avg300=.. total=N\nfull ..."). */
int cw_psi_parse(const char *text, double *some_avg10, int64_t *some_total, int64_t *full_total);
/* cpu.stat text: v2 throttled_usec, or v1 throttled_time (ns) when v1. */
int cw_cpu_stat_parse(const char *text, int v1, int64_t *periods, int64_t *throttled, int64_t *throttled_us);
/* cpu.max text ("max 100000" or "50000 100000"); quota -1 for max. */
int cw_cpu_max_parse(const char *text, int64_t *quota_us, int64_t *period_us);
/* One sample of the v2 cgroup at path (pid, when not 0, finds the v1 cpu
 * hierarchy on hybrid hosts). Fills every field of r but cgroup_id and the
 * times (-1 where not offered). Returns 0 or -ENOENT when nothing could
 * be read. */
int cw_cgroup_pressure_read(const char *path, uint32_t pid, struct cw_pressure_row *r);

#endif
