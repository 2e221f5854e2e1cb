/* Live metrics of a running trace session, for /metrics on `trace --serve`.
 *
 * The consumer thread adds every stored call and off-CPU interval; the
 * server renders on scrape. Rates therefore come from the live session,
 * never from scanning the store, so a scrape costs a copy of a few hundred
 * small entries whatever the database holds.
 *
 * Cardinality is capped twice: at most CW_LIVE_MAX_SERIES (pid, source, op)
 * entries are kept (later ones fold into one "other" process), and a render
 * names only the top max_processes processes by calls, folding the rest into
 * process="other".
 *
 * A named process whose cgroup trace identified (cw_live_metrics_tenant)
 * also carries container (the id's first 12 characters, or slurm-job-N),
 * pod and namespace labels, those that are known: one process has one
 * tenant, so the labels add no series beyond the top-N cap; at most
 * CW_LIVE_MAX_TENANTS cgroups are remembered (later ones go unlabelled). */
#ifndef CW_METRICS_LIVE_METRICS_H
#define CW_METRICS_LIVE_METRICS_H

#include <stdint.h>

#include "store/writer.h"
#include "metrics/prom_text.h"
#include "util/hist.h"
#include "util/strbuf.h"

#define CW_LIVE_MAX_SERIES 4096
#define CW_LIVE_DEFAULT_PROCESSES 20
#define CW_LIVE_MAX_TENANTS 1024
struct cw_live_metrics;

/* max_processes: processes named in a render (0: the default). */
int cw_live_metrics_new(struct cw_live_metrics **out, unsigned max_processes);
void cw_live_metrics_free(struct cw_live_metrics *m);

/* Consumer thread: one stored call or instant event. */
void cw_live_metrics_event(struct cw_live_metrics *m, const struct cw_event_row *r);
/* Consumer thread: h.count calls of (pid, source, op) that trace
 * --capture summary counted in the kernel instead of storing rows (all
 * successful). Each log-linear bucket lands in the Prometheus bucket of
 * its values (the power-of-two bounds split no log-linear bucket). */
void cw_live_metrics_folded(struct cw_live_metrics *m, uint32_t pid, const char *source, const char *op,
			    const struct cw_hist *h);
/* Consumer thread: one stored off-CPU interval of a traced thread. */
void cw_live_metrics_offcpu(struct cw_live_metrics *m, const struct cw_offcpu_row *r);

/* Any thread: the tenant of a cgroup, once trace has named it (NULL or ""
 * for what is unknown). Label values are copied and capped. */
void cw_live_metrics_tenant(struct cw_live_metrics *m, uint64_t cgroup_id, const char *container,
			    const char *pod, const char *ns);

/* Appends the live families for node to sb. now_mono_ns is CLOCK_MONOTONIC
 * now (the stall gauge's reference); a process whose /proc entry is gone is
 * not reported as stalled. Returns 0 or -ENOMEM. */
int cw_live_metrics_render(struct cw_live_metrics *m, const char *node, uint64_t now_mono_ns,
			   struct strbuf *sb);

/* The series a render would show (top-N folding and merging applied), for
 * other exporters (OTLP). *out is malloc'd; the caller frees it. Returns 0
 * or -ENOMEM. */
int cw_live_metrics_series(struct cw_live_metrics *m, struct cw_prom_series **out, unsigned *n);


#endif
