/* The GPU side of `causeway trace`: the telemetry thread (NVML samples,
 * Xid faults from the kernel log and NVML) written into the store, the
 * live view's per-GPU lines and alerts, and live training-stall
 * detection with every thread's state at the moment the stall is named.
 *
 * Threads: observe/exited/tick/counters run with the consumer lock held
 * (the writer is used under it); the sampler thread takes that lock for
 * each write; stop is called without it. */
#ifndef CW_TRACE_GPU_H
#define CW_TRACE_GPU_H

#include <stdint.h>

#include "trace/view.h"
#include "loader/ringbuf.h"
#include "store/store.h"
#include "store/writer.h"
#include "trace/trace.h"

struct trace_gpu;

struct trace_gpu_opts {
	uint64_t interval_ns;    /* 0: 1 s */
	const char *nvml_path;   /* NULL: $CW_NVML_LIB or libnvidia-ml.so.1 */
	int no_gpu;              /* no NVML, no kmsg */
	uint64_t stall_floor_ns; /* 0: 30 s */
	int summary;             /* summary capture (cw_stall_opts.summary) */
	int quiet;               /* no alert lines through say */
	const struct cw_trace_sink *say;
	/* The calls of pid open right now (entered, not returned): fills up
	 * to max (tid, op name, entry mono ns); returns the count. NULL: none. */
	int (*open_calls)(void *ctx, uint32_t pid, uint32_t *tids, const char **ops, uint64_t *since, int max);
	void *open_calls_ctx;
};

int trace_gpu_start(struct trace_gpu **out, const struct trace_gpu_opts *o, struct cw_consumer *cons,
		    struct cw_writer *w, struct cw_store *st, const char *node, int64_t session_id,
		    struct cw_trace_view *view);
/* Processes whose threads' states the end of a trace stores at most. */
#define TRACE_GPU_END_PROCS 64
/* At the end of a trace: every thread's state of each process still
 * alive that made GPU calls, one event row per process (source 'threads',
 * op 'end_of_trace', docs/schema.md), so a hang or stall explained later
 * says what each thread was blocked in. Under the consumer lock. */
void trace_gpu_end_snapshot(struct trace_gpu *g, uint64_t now);
void trace_gpu_observe(struct trace_gpu *g, const struct cw_event_row *r);
void trace_gpu_exited(struct trace_gpu *g, uint32_t pid);
/* count calls of (pid, op) in wall second sec of one thread, folded in
 * the kernel (summary capture): the stall detector's rhythm. Consumer
 * lock. */
void trace_gpu_folded(struct trace_gpu *g, uint32_t pid, const char *source, const char *op, int64_t sec,
		      uint64_t count);
/* aggregated: calls counted in the kernel so far (not seen one by one);
 * while it grows, no stall is named: the calls are not visible. */
void trace_gpu_tick(struct trace_gpu *g, uint64_t now_mono, uint64_t aggregated);
void trace_gpu_counters(struct trace_gpu *g);
/* Stops the telemetry thread (its statistics stay for counters). */
void trace_gpu_halt(struct trace_gpu *g);
void trace_gpu_stop(struct trace_gpu *g);

#endif
