/* Prometheus text exposition (format 0.0.4) helpers for /metrics. */
#ifndef CW_SERVER_METRICS_H
#define CW_SERVER_METRICS_H

#include <sqlite3.h>

#include "util/strbuf.h"

/* Appends v as a label value, escaping backslash, double quote and newline
 * as the exposition format requires. Returns 0 or strbuf's -errno. */
int cw_prom_escape_label(struct strbuf *sb, const char *v);

/* Appends a metric name built from s, with every character outside
 * [a-zA-Z0-9_] replaced by '_' (and a leading digit prefixed with '_'). */
int cw_prom_sanitize_name(struct strbuf *sb, const char *s);

/* Families read from the store (metrics_store.c), appended to sb. Each
 * returns 0 or -errno. */
int cw_metrics_store_ops(sqlite3 *db, struct strbuf *sb);      /* per-op histograms */
struct cw_prom_series;
/* 1 when a session counter counts lost records, calls or rows. */
int cw_metrics_counter_is_loss(const char *name);
/* The store's per-op histograms (node, source, op; no process) one at a
 * time; a non-zero return of cb stops the walk and is returned. */
int cw_metrics_store_op_series(sqlite3 *db, int (*cb)(void *ctx, const struct cw_prom_series *s),
			       void *ctx);
int cw_metrics_store_counters(sqlite3 *db, struct strbuf *sb); /* losses, session stats */
/* Tenants (container, pod, namespace) labelled on the store families; the
 * rest are counted without those labels (docs/metrics.md). */
#define CW_METRICS_MAX_TENANTS 50
/* Appends ,container="..",pod="..",namespace=".." for the values that are
 * set (NULL or "": left out); a container id is cut to its first 12
 * characters as `docker ps` shows it ("slurm-job-N" is kept whole). */
void cw_prom_tenant_labels(struct strbuf *sb, const char *container, const char *pod, const char *ns);
int cw_metrics_store_chains(sqlite3 *db, struct strbuf *sb);   /* chains by kind, severity, tenant */
int cw_metrics_store_host(sqlite3 *db, struct strbuf *sb);     /* latest host snapshot */
/* The NCCL per-rank series (metrics_nccl.c). Returns 0 or -errno. */
int cw_metrics_render_nccl(sqlite3 *db, struct strbuf *sb);
/* GPU health from the GPU tables and Xid events (metrics_gpu.c). */
int cw_metrics_render_gpu(sqlite3 *db, struct strbuf *sb);
/* PSI and CFS throttling of the traced cgroups (metrics_pressure.c). */
int cw_metrics_render_pressure(sqlite3 *db, struct strbuf *sb);

#endif
