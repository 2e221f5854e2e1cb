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

/* The NCCL per-rank series (metrics_nccl.c). Returns 0 or -errno. */
int cw_metrics_render_nccl(sqlite3 *db, struct strbuf *sb);

#endif
