/* The pipeline: raw records (from BPF ring buffers or the demo generator)
 * -> decode (size- and version-checked) -> entry/return pairing per thread
 * -> names, Python locations, stacks -> the batched writer.
 *
 * There is one pipeline for live tracing and the demo; only the source of
 * the bytes and the Python resolver differ. Not thread-safe: one consumer
 * thread feeds it. */
#ifndef CW_PIPELINE_PIPELINE_H
#define CW_PIPELINE_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "store/writer.h"
#include "symbol/frames.h"

struct cw_pipeline;

/* Called for every stored call/event, for live views and /metrics. */
typedef void (*cw_pipeline_observer)(void *ctx, const struct cw_event_row *row);

struct cw_pipeline_opts {
	struct cw_writer *writer;          /* required */
	int64_t mono_to_wall_ns;           /* wall = mono + offset */
	const struct cw_py_resolver *py;   /* NULL: Python stacks are counted, not resolved */
	const struct cw_symbolizer *sym;   /* NULL: native stacks are stored as raw addresses */
	cw_pipeline_observer observer;     /* optional */
	void *observer_ctx;
	/* optional: every stored off-CPU interval (same ctx) */
	void (*offcpu_observer)(void *ctx, const struct cw_offcpu_row *row);
};

/* Loss and health counters. Every place a record can be lost has one. */
struct cw_pipeline_counters {
	uint64_t records;            /* records fed */
	uint64_t rejected_size;      /* shorter than their header or than their type needs */
	uint64_t rejected_version;   /* unknown ABI version */
	uint64_t rejected_type;      /* unknown record type or op */
	uint64_t unpaired_returns;   /* return without an open entry */
	uint64_t unfinished_entries; /* entry whose return never came */
	uint64_t open_at_end;        /* still open when the trace ended: stored unfinished, not lost */
	uint64_t overflow_entries;   /* entries beyond the per-thread nesting limit */
	uint64_t orphan_stacks;      /* stack records whose call never arrived */
	uint64_t py_unresolved;      /* frames the resolver could not name */
	uint64_t write_errors;       /* rows the writer refused */
	uint64_t calls;              /* paired calls stored */
	uint64_t offcpu;             /* off-CPU intervals stored */
};

int cw_pipeline_new(struct cw_pipeline **out, const struct cw_pipeline_opts *opts);
/* Frees; entries still open are counted as unfinished and stored with the
 * duration they had so far (flag "unfinished" in detail). */
void cw_pipeline_free(struct cw_pipeline *p);

/* Feeds one record. Returns 0, or -EINVAL when it was rejected (and
 * counted). Never keeps a pointer to data. */
int cw_pipeline_feed(struct cw_pipeline *p, const void *data, size_t size);
/* trace --inference: a loopback client port causeway itself requests a
 * followed server from (pipeline/http_track.h); 0 or -ENOMEM. */
int cw_pipeline_http_own_client(struct cw_pipeline *p, uint16_t port);
/* trace --inference's totals (all 0 before a server's first record). */
struct cw_http_track_totals;
void cw_pipeline_http_totals(const struct cw_pipeline *p, struct cw_http_track_totals *out);

/* Re-measured monotonic -> realtime offset (trace does this periodically). */
void cw_pipeline_set_clock(struct cw_pipeline *p, int64_t mono_to_wall_ns);

/* Closes entries older than max_open_ns (a thread that exited mid-call)
 * and commits the writer's batch, writing counters under the "pipeline."
 * prefix. */
int cw_pipeline_flush(struct cw_pipeline *p, uint64_t now_mono_ns, uint64_t max_open_ns);

/* The end of a recording: every entry still open is stored unfinished
 * with now_mono_ns as its end and counted in open_at_end (the evidence of
 * a hang, not a loss); then flushes as cw_pipeline_flush. */
int cw_pipeline_finish(struct cw_pipeline *p, uint64_t now_mono_ns);

void cw_pipeline_get_counters(const struct cw_pipeline *p, struct cw_pipeline_counters *out);

#endif
