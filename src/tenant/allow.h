/* The cgroups one or more tenant filters allow on the live host,
 * descendants included, kept current by rescanning the cgroup v2 tree
 * (trace does it every second, so a container started after trace is
 * traced from its first second). */
#ifndef CW_TENANT_ALLOW_H
#define CW_TENANT_ALLOW_H

#include <stdint.h>

#include "tenant/tenant.h"
#include "util/u64map.h"

struct cw_tenant_allow {
	struct cw_tenant_filter f[CW_TENANT_FILTERS_MAX];
	int nf;
	struct u64map ids;      /* allowed cgroup ids */
	struct u64map pods;     /* hashes of pod UIDs matched by name (--pod NAME) */
	uint64_t scans, walked; /* for the bench and the counters */
};

int cw_tenant_allow_init(struct cw_tenant_allow *a);
void cw_tenant_allow_free(struct cw_tenant_allow *a);
/* Walks the tree under root; on_new gets every newly allowed id. Returns
 * the number of ids allowed in all or -errno. */
int cw_tenant_allow_scan(struct cw_tenant_allow *a, const char *root, int (*on_new)(void *ctx, uint64_t id),
			 void *ctx);
int cw_tenant_allow_has(const struct cw_tenant_allow *a, uint64_t id);

#endif
