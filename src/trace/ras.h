/* NCCL RAS while tracing (docs/nccl.md "NCCL RAS"): trace follows every
 * traced rank's collectives (trace/nccl_live.h); when a collective has
 * been entered by some ranks and not the others for --hang-after, it asks
 * the job's RAS service once (gpu/nccl_ras.h), on a thread of its own so
 * the rings keep draining, and stores the answer as one event row (source
 * 'ras', op 'status', detail the answer's JSON; docs/schema.md), also
 * when nothing answered. explain merges it into the nccl_hang chain.
 *
 * Threads: observe/tick/finish run with the consumer lock held (the
 * writer is used under it); abandon and stop are called without it. The
 * query itself (connect, exchange, the source check of ras_source.h, the
 * ranks' environment) runs on its thread, never under the lock. */
#ifndef CW_TRACE_RAS_H
#define CW_TRACE_RAS_H

#include <stdint.h>

#include "store/writer.h"

struct trace_ras;

struct trace_ras_opts {
	char host[64];          /* "": 127.0.0.1 */
	int port;               /* 0: 28028 */
	int off;                /* --nccl-ras off */
	uint64_t hang_after_ns; /* the hang threshold (0: 10 s, as the live view) */
	unsigned timeout_ms;    /* the whole exchange (0: 6000) */
};

/* Parses "HOST:PORT", "PORT" or "off" (trace --nccl-ras) into o; -EINVAL
 * when it is none of them. */
int trace_ras_parse_addr(const char *s, struct trace_ras_opts *o);
int trace_ras_start(struct trace_ras **out, const struct trace_ras_opts *o, struct cw_writer *w);
void trace_ras_observe(struct trace_ras *r, const struct cw_event_row *row);
/* Asks RAS when a hang is first suspected; stores an answer that came. */
void trace_ras_tick(struct trace_ras *r);
/* At the end of a trace, without the consumer lock: a query still in
 * flight gives up at once (its answer: "stopped before an answer"), so a
 * listener that never answers cannot hold up the stop. */
void trace_ras_abandon(struct trace_ras *r);
/* Then, with the lock: stores the answer (or the giving up). */
void trace_ras_finish(struct trace_ras *r);
/* Queries asked and answers stored, for the session's counters. */
void trace_ras_counters(struct trace_ras *r);
void trace_ras_stop(struct trace_ras *r);

#endif
