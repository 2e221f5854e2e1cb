/* Prometheus text exposition (format 0.0.4) helpers shared by /metrics
 * (server/metrics.c), the families in metrics/ and the OTLP exporter. */
#ifndef CW_METRICS_PROM_TEXT_H
#define CW_METRICS_PROM_TEXT_H

#include <stdint.h>

#include "util/strbuf.h"

/* Latency buckets: 1024 ns * 2^k for k = 0..CW_PROM_BUCKETS-1 (1.024 us ..
 * 34.4 s), then +Inf. Fixed, so histograms from every node add up; powers of
 * two of nanoseconds, so they fall on boundaries of the stored log-linear
 * histograms (util/hist.h) and the store's figures convert exactly. A
 * call lasting exactly a bound is counted in the next bucket. */
#define CW_PROM_BUCKETS 26

/* Appends v as a label value, escaping backslash, double quote and newline
 * as the exposition format requires. Returns 0 or strbuf's -errno. */
int cw_prom_escape_label(struct strbuf *sb, const char *v);

/* Appends a metric name built from s, with every character outside
 * [a-zA-Z0-9_] replaced by '_' (and a leading digit prefixed with '_'). */
int cw_prom_sanitize_name(struct strbuf *sb, const char *s);

/* Appends ,container="..",pod="..",namespace=".." for the values that are
 * set (NULL or "": left out); a container id is cut to its first 12
 * characters as `docker ps` shows it ("slurm-job-N" is kept whole). */
void cw_prom_tenant_labels(struct strbuf *sb, const char *container, const char *pod, const char *ns);

/* One histogram series: non-cumulative bucket counts on the buckets above
 * (the last one +Inf). node is empty for the live session's own series. */
struct cw_prom_series {
	char node[64];
	char process[16];
	char container[24], pod[128], ns[64]; /* "" unknown */
	char source[32];
	char op[64];
	uint64_t buckets[CW_PROM_BUCKETS + 1];
	uint64_t count, sum_ns, errors;
};

/* Bucket index (0..CW_PROM_BUCKETS, the last one being +Inf) of a duration. */
unsigned cw_prom_bucket(uint64_t ns);
/* Upper bound of bucket i in seconds (i < CW_PROM_BUCKETS). */
double cw_prom_bucket_le(unsigned i);

#endif
