/* The tenant side of `causeway trace` (docs/tenants.md): naming every
 * cgroup the trace sees, sampling the traced processes' cgroup pressure,
 * and the --cgroup/--container/--pod/--slurm-job filter.
 *
 * Threads: tap runs on the consumer thread with the consumer lock held and
 * does no I/O; a resolver thread of this module does the I/O without the
 * lock and takes it only to hand work over and to write rows;
 * pid_allowed runs in the main thread. */
#ifndef CW_TRACE_TENANT_H
#define CW_TRACE_TENANT_H

#include <stddef.h>
#include <stdint.h>

#include "loader/ringbuf.h"
#include "loader/uprobe_attach.h"
#include "store/writer.h"
#include "tenant/allow.h"

struct trace_tenant;

/* Parses a tenant flag into filters (at most CW_TENANT_FILTERS_MAX).
 * Returns 0, -ENOENT when flag is not one, -EINVAL (err filled). */
int trace_tenant_flag(struct cw_tenant_filter *filters, int *n, const char *flag, const char *value, char *err,
		      size_t errlen);
/* Whether flag takes a value and is a tenant filter. */
int trace_tenant_is_flag(const char *flag);

/* nf 0: identity only. With filters, the cgroup v2 tree is walked once
 * now and cp lets the allowed cgroups through; err says why not. */
int trace_tenant_new(struct trace_tenant **out, const struct cw_tenant_filter *f, int nf, struct cw_cuda_probes *cp,
		     char *err, size_t errlen);
void trace_tenant_free(struct trace_tenant *tt);
/* Cgroups allowed by the filters at the first walk (0 without filters). */
int trace_tenant_allowed_now(const struct trace_tenant *tt);

/* Consumer thread, lock held: one raw record. */
void trace_tenant_tap(struct trace_tenant *tt, const void *data, size_t size);
/* Without filters, 1; with them, whether pid's cgroup is allowed (read
 * from /proc: processes found by discovery are enrolled only then). */
int trace_tenant_pid_allowed(struct trace_tenant *tt, uint32_t pid);
/* Starts the resolver thread (names new cgroups within 50 ms; once a
 * second rescans the allowed set, samples pressure, moves last seen);
 * kubelet_url (NULL: none) names pods from the kubelet's pod list. */
int trace_tenant_start(struct trace_tenant *tt, struct cw_consumer *cons, struct cw_writer *w,
		       const char *kubelet_url);
/* Before start: the live /metrics registry that gets each named cgroup's
 * container, pod and namespace labels. */
struct cw_live_metrics;
void trace_tenant_set_metrics(struct trace_tenant *tt, struct cw_live_metrics *m);
/* Stops the resolver and runs a last round (the lock must not be held). */
void trace_tenant_finish(struct trace_tenant *tt);
/* Lock held: the counters of this session. */
void trace_tenant_counters(struct trace_tenant *tt, struct cw_writer *w);

#endif
