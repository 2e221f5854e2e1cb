/* The engines' own numbers (docs/inference.md, "The engine's own
 * numbers"): while trace --inference follows a server that is a known
 * engine (inference/engines.h), a thread of this module asks the
 * engine's /metrics on 127.0.0.1 once a second and stores the figures
 * causeway keeps (queue depth, running requests, KV-cache usage,
 * preemptions) in engine_metrics.
 *
 * Threads: add and forget run in the main thread (trace/inference.c,
 * where listeners are found and forgotten); the scraper does the HTTP
 * without any lock and takes the consumer lock only to write rows;
 * counters runs with the consumer lock held. */
#ifndef CW_TRACE_ENGINE_SCRAPE_H
#define CW_TRACE_ENGINE_SCRAPE_H

#include <stddef.h>
#include <stdint.h>

#include "inference/engines.h"

struct cw_consumer;
struct cw_writer;
struct trace_engine_scrape;

#define CW_SCRAPE_MAX_TARGETS 16
#define CW_SCRAPE_MAX_BODY ((size_t)4 << 20)
#define CW_SCRAPE_CONNECT_MS 200L
#define CW_SCRAPE_TOTAL_MS 800L
/* Answers that are not the engine's metrics (a status other than 200,
 * a body without any of its series, not HTTP) before it is no longer
 * asked. */
#define CW_SCRAPE_GIVE_UP 3

struct trace_engine_scrape_stats {
	uint64_t targets;     /* servers added */
	uint64_t ok;	      /* scrapes that gave at least one figure */
	uint64_t failed;      /* scrapes that did not */
	uint64_t figures;     /* rows stored */
	uint64_t given_up;    /* servers no longer asked */
	uint64_t other_netns; /* servers in another network namespace: not asked */
	uint64_t lost;	      /* servers beyond CW_SCRAPE_MAX_TARGETS */
	uint64_t store_busy;  /* figures not stored: the store was held elsewhere */
};

/* Starts the scraper thread; it writes through w under cons's lock. */
int trace_engine_scrape_start(struct trace_engine_scrape **out, struct cw_consumer *cons, struct cw_writer *w);
/* A server found listening on port: asked from now on when e has a
 * metrics path and it shares this process's network namespace (its
 * 127.0.0.1 is not ours otherwise). One target per port. */
void trace_engine_scrape_add(struct trace_engine_scrape *s, uint32_t pid, uint16_t port, const struct cw_engine *e);
/* pid exited: its targets go. */
void trace_engine_scrape_forget(struct trace_engine_scrape *s, uint32_t pid);
/* Stops the thread (before the writer goes); then free. */
void trace_engine_scrape_stop(struct trace_engine_scrape *s);
void trace_engine_scrape_free(struct trace_engine_scrape *s);
void trace_engine_scrape_get_stats(struct trace_engine_scrape *s, struct trace_engine_scrape_stats *out);
/* Lock held: the counters, trace.engine_scrape.* */
void trace_engine_scrape_counters(struct trace_engine_scrape *s, struct cw_writer *w);

/* The figures of engine e in an exposition buf[0..len): have[f] is 1
 * where one of the figure's series names (the newest first) had samples;
 * v[f] is their sum, or their mean for the KV-cache usage (a ratio per
 * engine core: vLLM's data-parallel engines each expose one), times the
 * engine's scale. Returns how many figures it has. */
int trace_engine_figures(const struct cw_engine *e, const char *buf, size_t len, double v[CW_EF_N], int have[CW_EF_N]);

#endif
