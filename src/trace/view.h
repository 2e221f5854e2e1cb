/* trace_view: the live terminal view of `causeway trace`.
 *
 * Fed from the consumer thread (pipeline observer rows and raw records,
 * with the consumer lock held) and rendered once a second by the main
 * thread (holding the same lock): per source and op, count, rate, p50,
 * p95, p99 and flags; host context from the last snapshot; losses; and
 * warnings that join a slow op with the off-CPU history of the thread
 * that made its slowest call. */
#ifndef CW_TRACE_VIEW_H
#define CW_TRACE_VIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "store/writer.h"

struct cw_trace_view;

struct cw_trace_view_status {
	uint64_t elapsed_ns;
	int nprocs, nlibs, nprobes;
	uint64_t ring_drops;      /* failed ring reserves, all rings */
	uint64_t aggregated;      /* calls counted in the kernel instead of emitted */
	uint64_t pipeline_losses; /* rejected + unpaired + unfinished */
	uint64_t store_failed;    /* rows the store refused or lost with a failed batch */
	uint64_t held_dropped;    /* records beyond the memory held while the store was locked */
	const char *store_problem; /* NULL, or what stops the store now ("disk full", ...) */
	uint64_t held_ns;         /* how long the store has been locked (0: it is not) */
	uint64_t held_records;    /* records held in memory meanwhile */
	uint64_t held_limit_ns;   /* --lock-wait */
	const char *db;
};

int cw_trace_view_new(struct cw_trace_view **out);
void cw_trace_view_free(struct cw_trace_view *v);

/* cw_pipeline_observer: one stored event or call. */
void cw_trace_view_observe(void *v, const struct cw_event_row *row);
/* A raw record (off-CPU intervals, snapshots). */
void cw_trace_view_record(struct cw_trace_view *v, const void *data, size_t size);
/* Calls of op folded in the kernel (--capture summary), drained for one
 * second: counted and in the percentiles, shown with flag "fold". */
void cw_trace_view_fold(struct cw_trace_view *v, const char *source, const char *op, const struct cw_hist *h);
/* Calls of op counted in the kernel (cumulative), shown with flag "agg". */
void cw_trace_view_set_aggregated(struct cw_trace_view *v, const char *source, const char *op, uint64_t count);

/* Per-GPU status line i (< CW_TRACE_VIEW_GPUS), replaced each sample;
 * NULL clears it. */
#define CW_TRACE_VIEW_GPUS 8
void cw_trace_view_gpu_line(struct cw_trace_view *v, int i, const char *line);
/* A standing alert (an Xid fault, a training stall): the last few are
 * shown under the warnings until the trace ends. */
void cw_trace_view_alert(struct cw_trace_view *v, const char *text);
/* Floor of the live NCCL hang warning (trace --hang-after; 0: 10 s). */
void cw_trace_view_set_hang_floor(struct cw_trace_view *v, uint64_t ns);

/* Writes up to max warnings into lines (each < 256 chars); returns how many. */
int cw_trace_view_warnings(struct cw_trace_view *v, char (*lines)[256], int max);

/* Draws the view (tty: clears the screen first) and starts a new rate
 * interval. */
void cw_trace_view_render(struct cw_trace_view *v, FILE *f, const struct cw_trace_view_status *st, int tty);

#endif
