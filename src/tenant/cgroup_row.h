/* A cgroup's identity written through the store's writer: the rows of
 * the cgroups table come from here (parsed from a path or resolved). */
#ifndef CW_TENANT_CGROUP_ROW_H
#define CW_TENANT_CGROUP_ROW_H

#include <stdint.h>

#include "store/writer.h"
#include "tenant/tenant.h"

struct cw_cgroup_row {
	uint64_t cgroup_id;
	const char *path;
	const char *container; /* the legacy container column; NULL: the parsed id */
	const struct cw_tenant *t;
	uint64_t seen_wall_ns; /* 0 unknown */
};

/* A resolved cgroup (src/tenant/); seen_wall_ns sets first seen for a new
 * row and moves last seen. */
int cw_tenant_write_cgroup(struct cw_writer *w, const struct cw_cgroup_row *r);
/* A cgroup by path alone; the identity is parsed from it. */
int cw_tenant_write_cgroup_path(struct cw_writer *w, uint64_t cgroup_id, const char *path, const char *container);

#endif
