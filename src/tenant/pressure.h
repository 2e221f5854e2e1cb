/* Per-cgroup pressure and CFS throttling samples (pressure.c). */
#ifndef CW_TENANT_PRESSURE_H
#define CW_TENANT_PRESSURE_H

#include <stdint.h>

#include "store/writer.h"

/* One sample of the v2 cgroup at path (pid, when not 0, finds the v1 cpu
 * hierarchy on hybrid hosts). Fills every field of r but cgroup_id and the
 * times (-1 where not offered). Returns 0 or -ENOENT when nothing could
 * be read. */
int cw_cgroup_pressure_read(const char *path, uint32_t pid, struct cw_pressure_row *r);

#endif
