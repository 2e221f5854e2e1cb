/* OTLP/HTTP export (OpenTelemetry protocol, JSON encoding) for `trace` and
 * `serve` (docs/otlp.md).
 *
 * Every interval a collector thread builds two payloads: cumulative metrics
 * (per-op latency histograms on the /metrics buckets, call and loss
 * counters) to ENDPOINT/v1/metrics, and the chains stored since the last
 * round as log records to ENDPOINT/v1/logs. A sender thread posts them in
 * order; a failed post (no connection, 429, 5xx) is retried with
 * exponential backoff while the payload stays queued, so nothing is lost
 * while the receiver is down as long as the queue holds it. Past the queue
 * bound the oldest payload is dropped and counted. A receiver answering
 * another 4xx refuses the payload for good: it is dropped and counted. */
#ifndef CW_EXPORT_OTLP_H
#define CW_EXPORT_OTLP_H

#include <stddef.h>
#include <stdint.h>

#define CW_OTLP_DEFAULT_INTERVAL_NS (10ULL * 1000000000ULL)
#define CW_OTLP_DEFAULT_QUEUE 64 /* payloads */
#define CW_OTLP_MAX_PAYLOAD (16u << 20) /* larger ones are dropped, counted */

struct cw_live_metrics;

struct cw_otlp_opts {
	const char *endpoint;  /* "http(s)://host:port[/prefix]" */
	const char *db_path;   /* the store: chains, loss counters, aggregates */
	const char *node;      /* host.name and the node attribute */
	struct cw_live_metrics *live; /* trace: per-process histograms; NULL: the store's */
	const char *ca_file;   /* https: CA bundle for the receiver; NULL: system */
	uint64_t interval_ns;  /* 0: default */
	unsigned max_queue;    /* 0: default */
};

struct cw_otlp_stats {
	uint64_t sent;          /* payloads accepted by the receiver */
	uint64_t retries;       /* failed attempts that were retried */
	uint64_t dropped_queue; /* payloads dropped because the queue was full */
	uint64_t rejected;      /* payloads the receiver refused (4xx but 429) */
	uint64_t chains;        /* chains delivered as log records */
	uint64_t queued;        /* payloads waiting now */
};

struct cw_otlp;

/* Validates the endpoint and starts the threads. Returns 0 or -errno with
 * one sentence in err. */
int cw_otlp_start(struct cw_otlp **out, const struct cw_otlp_opts *o, char *err, size_t errlen);
/* Collects once more, tries to deliver what is queued for up to
 * flush_ns, then stops; final (may be NULL) gets the last figures, with
 * what was still queued counted in dropped_queue. NULL x is fine. */
void cw_otlp_stop(struct cw_otlp *x, uint64_t flush_ns, struct cw_otlp_stats *final);
void cw_otlp_get_stats(struct cw_otlp *x, struct cw_otlp_stats *s);

/* Payload builders, exposed for the unit tests. Each returns a malloc'd
 * JSON text or NULL. now_wall_ns stamps the data points. */
char *cw_otlp_metrics_payload(const char *db_path, const char *node, struct cw_live_metrics *live,
			      uint64_t start_wall_ns, uint64_t now_wall_ns);
/* Chains with id > *after_id; advances *after_id; *n gets how many. */
char *cw_otlp_logs_payload(const char *db_path, const char *node, int64_t *after_id, int *n);

#endif
