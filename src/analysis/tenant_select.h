/* Tenant filters (--cgroup, --container, --pod, --slurm-job) over a
 * database: the cgroups rows a trace stored are matched as trace matches
 * the live tree (tenant.h; a cgroup under a matched path matches too), and
 * the processes that ran in them are what the reading commands keep. */
#ifndef CW_ANALYSIS_TENANT_SELECT_H
#define CW_ANALYSIS_TENANT_SELECT_H

#include <sqlite3.h>
#include <stdint.h>

#include "tenant/tenant.h"

/* At most this many processes are kept per filter (the rest are counted
 * out: explain analyses each separately). */
#define CW_TENANT_SELECT_PIDS 4096

/* The cgroup ids matching any of f[0..nf) (malloc'd in *ids). Returns the
 * count (0: nothing matched) or -errno. */
int cw_tenant_select_cgroups(sqlite3 *db, const struct cw_tenant_filter *f, int nf, uint64_t **ids);

/* Both steps: the pids the filters select. Returns the count (0: no
 * process matched, which is an empty answer, not "no filter") or -errno.
 * The one resolver behind explain, query, export, the API routes and the
 * MCP tools. */
int cw_tenant_select(sqlite3 *db, const struct cw_tenant_filter *f, int nf, int64_t **pids);

#endif
