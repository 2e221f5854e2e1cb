/* Export of a store (one node or merged) as Chrome trace JSON for
 * ui.perfetto.dev. docs/export.md describes the layout:
 *   - one process per node (process_name = node), one track per thread
 *     (thread_name = comm and tid; extra lanes "(overlap N)" when a slice
 *     cannot nest, see trace_json.h);
 *   - CUDA runtime/driver/graph/NCCL calls and block I/O as "X" slices,
 *     off-CPU intervals as "X" slices on the thread that was off CPU;
 *   - causal chains (from the explain engine over the window) as "i"
 *     markers on the slow calls, with "s"/"f" flow arrows from the cause
 *     (the off-CPU interval or I/O that overlapped the call) to the call;
 *   - "C" counters per node from the system snapshots;
 *   - inference requests (schema v11): a track per connection, a slice
 *     per request, an instant at its first body byte (TTFT).
 * Times are wall-clock, minus the node's clock offset when merge measured
 * one (meta 'merge.skew'), relative to the window start. */
#ifndef CW_EXPORT_PERFETTO_H
#define CW_EXPORT_PERFETTO_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#define CW_EXPORT_DEFAULT_MAX_EVENTS 500000ULL

struct cw_export_opts {
	uint64_t from_wall_ns, to_wall_ns; /* both 0: the last since_ns of data */
	uint64_t since_ns;                 /* 0: the whole store, as explain and query read it */
	uint64_t max_events;               /* slices; 0 = CW_EXPORT_DEFAULT_MAX_EVENTS */
	int no_skew;                       /* ignore meta 'merge.skew' */
	int no_chains;                     /* skip the explain engine */
	int64_t pid;                       /* slices of this process only; 0 = all */
	/* A tenant filter (analysis/tenant_select.h): only the slices and
	 * chains of these pids; npids 0: no filter, -1: it matched nothing.
	 * Node-wide tracks (counters, GPU) stay. */
	const int64_t *pids;
	int npids;
};

/* Tracks one thread may have in the trace (its lanes): a slice that would
 * need more is left out and counted in cw_export_stats.unplaced. */
#define CW_EXPORT_MAX_LANES 256

struct cw_export_stats {
	uint64_t from_wall_ns, to_wall_ns; /* the window exported (reference clock) */
	uint64_t slices, offcpu, io, counters, markers, flows;
	int nodes, threads, lanes_extra;
	uint64_t unplaced;                 /* slices past a thread's CW_MAX_LANES, left out */
	int skew_applied;                  /* nodes whose clock offset was applied */
	uint64_t in_window;                /* slices in the window before the cap */
	uint64_t cut_from_wall_ns;         /* != 0: older slices were cut */
	uint64_t requests;                 /* inference requests (their own tracks) */
	uint64_t requests_unplaced;        /* requests overlapping 4 others of their connection, left out */
};

/* Writes the trace of db to out. Returns 0 or -errno with err set (one
 * lower-case sentence). */
int cw_export_perfetto(sqlite3 *db, const struct cw_export_opts *o, FILE *out, struct cw_export_stats *st,
		       char *err, size_t errlen);

#endif
