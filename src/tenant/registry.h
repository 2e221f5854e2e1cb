/* The cgroups a trace has seen, named off the event path.
 *
 * The consumer thread notes the cgroup id of every record (a map probe,
 * and only when the id differs from the previous record's); a resolver
 * thread takes the new ids within 50 ms (while the process that showed
 * them most likely still runs), resolves them with no lock held (/proc/PID/cgroup,
 * the v2 tree, the container's environment: file reads the event path must
 * never wait on), and writes the rows under the lock. A cgroup is resolved
 * once, when first seen, so a short-lived container keeps its name after
 * it is gone; last seen moves every second it is seen again. */
#ifndef CW_TENANT_REGISTRY_H
#define CW_TENANT_REGISTRY_H

#include <stdint.h>

#include "store/writer.h"
#include "tenant/resolve.h"

/* New cgroups resolved per second at most; more wait for the next second
 * (counted in pending). */
#define CW_TENANT_BATCH 256
/* Cgroups remembered; past this, new ones are counted and not named. */
#define CW_TENANT_MAX 65536
/* Cgroups of traced processes whose pressure is sampled. */
#define CW_TENANT_SAMPLED_MAX 64

struct cw_tenant_registry;

struct cw_tenant_stats {
	uint64_t resolved, unresolved, overflow, sampled;
};

struct cw_tenant_batch {
	int n;
	uint64_t ids[CW_TENANT_BATCH];
	uint32_t pids[CW_TENANT_BATCH];
	int ok[CW_TENANT_BATCH];
	struct cw_cgroup_info *info; /* n of them */
	/* Pressure targets: own cgroups seen lately. */
	int nsample;
	uint64_t sample_ids[CW_TENANT_SAMPLED_MAX];
	uint32_t sample_pids[CW_TENANT_SAMPLED_MAX];
	struct cw_pressure_row samples[CW_TENANT_SAMPLED_MAX];
	int sample_ok[CW_TENANT_SAMPLED_MAX];
};

int cw_tenant_registry_new(struct cw_tenant_registry **out);
void cw_tenant_registry_free(struct cw_tenant_registry *r);

/* Consumer thread, lock held: a record of pid in cgroup id. own: about a
 * traced thread itself (its cgroup's pressure is sampled), not a neighbour
 * named in it (the preemptor of an off-CPU interval). */
void cw_tenant_registry_note(struct cw_tenant_registry *r, uint64_t id, uint32_t pid, int own);

/* Lock held: whether new ids wait to be resolved. */
int cw_tenant_registry_pending(const struct cw_tenant_registry *r);
/* Lock held: moves the new ids (and, with pressure, the sampled cgroups)
 * into b. */
int cw_tenant_registry_take(struct cw_tenant_registry *r, struct cw_tenant_batch *b, int pressure);
/* No lock: resolves b's ids and reads the samples. */
void cw_tenant_batch_resolve(struct cw_tenant_batch *b, uint64_t mono_ns, uint64_t wall_ns);
/* Lock held: writes b's rows, and with seen the last-seen times of the
 * cgroups seen since the previous such commit; frees b's buffers. */
void cw_tenant_registry_commit(struct cw_tenant_registry *r, struct cw_tenant_batch *b, struct cw_writer *w,
			       uint64_t wall_ns, int seen);
void cw_tenant_registry_stats(const struct cw_tenant_registry *r, struct cw_tenant_stats *s);

#endif
