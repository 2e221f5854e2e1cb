/* Prometheus families read from the store (/metrics without a live
 * session, and the store's part with one): per-op histograms, losses and
 * session counters, chains, the host, NCCL ranks, GPU health, pressure,
 * inference requests and engines.
 * Each renderer appends to sb and returns 0 or -errno. */
#ifndef CW_METRICS_FAMILIES_H
#define CW_METRICS_FAMILIES_H

#include <sqlite3.h>

#include "metrics/prom_text.h"
#include "util/strbuf.h"

/* Tenants (container, pod, namespace) labelled on the store families; the
 * rest are counted without those labels (docs/metrics.md). */
#define CW_METRICS_MAX_TENANTS 50

/* store.c */
int cw_metrics_store_ops(sqlite3 *db, struct strbuf *sb);      /* per-op histograms */
/* 1 when a session counter counts lost records, calls or rows. */
int cw_metrics_counter_is_loss(const char *name);
/* The store's per-op histograms (node, source, op; no process) one at a
 * time; a non-zero return of cb stops the walk and is returned. */
int cw_metrics_store_op_series(sqlite3 *db, int (*cb)(void *ctx, const struct cw_prom_series *s),
			       void *ctx);
/* Failing calls per node, source and op (no process or code: the
 * aggregates keep neither). */
int cw_metrics_store_failures(sqlite3 *db, struct strbuf *sb);
int cw_metrics_store_counters(sqlite3 *db, struct strbuf *sb); /* losses, session stats */
int cw_metrics_store_chains(sqlite3 *db, struct strbuf *sb);   /* chains by kind, severity, tenant */
int cw_metrics_store_host(sqlite3 *db, struct strbuf *sb);     /* latest host snapshot */
/* The NCCL per-rank series (nccl.c). */
int cw_metrics_render_nccl(sqlite3 *db, struct strbuf *sb);
/* GPU health from the GPU tables and Xid events (gpu.c). */
int cw_metrics_render_gpu(sqlite3 *db, struct strbuf *sb);
/* PSI and CFS throttling of the traced cgroups (pressure.c). */
int cw_metrics_render_pressure(sqlite3 *db, struct strbuf *sb);
/* Inference serving: request duration and TTFT histograms, requests by
 * status (request_totals), the engines' newest gauges (inference.c). */
int cw_metrics_render_inference(sqlite3 *db, struct strbuf *sb);

#endif
