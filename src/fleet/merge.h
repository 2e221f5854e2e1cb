/* Merging node databases into one (causeway merge).
 *
 * Every input is validated read-only with cw_store_open() first, so a
 * missing, corrupt or newer input fails before anything is written. The
 * output is built in "<out>.tmp-XXXXXX" (schema by cw_store_open(CREATE)),
 * filled on a private connection with ATTACH + prepared INSERT ... SELECT
 * per input, and renamed over <out> only when complete; on any error the
 * temporary file is removed.
 *
 * Row ids of offcpu, snapshots, chains and sessions are shifted past the
 * rows already merged; events are renumbered in wall-clock order across
 * all inputs (ids grow with time, as in a store written live); stacks and py_stacks are deduplicated by
 * hash and events re-pointed through the hash; py_code is deduplicated
 * by its unique key. Every row keeps its node (relabelled on request).
 *
 * Clock skew between nodes is estimated from NCCL collectives: the k-th
 * blocking collective of a communicator completes at the same instant on
 * every rank (for asynchronous ones, the synchronize after it), so the
 * differences between the nodes' completion times are their clock offsets
 * (see merge_skew.c and docs/merge.md). The estimate is
 * stored in meta 'merge.skew' and never applied to the stored times. */
#ifndef CW_FLEET_MERGE_H
#define CW_FLEET_MERGE_H

#include <stddef.h>
#include <stdint.h>

#define CW_MERGE_MAX_INPUTS 256
#define CW_MERGE_MAX_NODES 1024

enum cw_merge_table {
	CW_MT_SESSIONS,
	CW_MT_EVENTS,
	CW_MT_STACKS,
	CW_MT_PY_CODE,
	CW_MT_PY_STACKS,
	CW_MT_OFFCPU,
	CW_MT_SNAPSHOTS,
	CW_MT_PROCESSES,
	CW_MT_THREADS,
	CW_MT_CGROUPS,
	CW_MT_KERNEL_NAMES,
	CW_MT_CHAINS,
	CW_MT_AGGREGATES,
	CW_MT_COUNTERS,
	CW_MT_NCCL_COMMS,
	CW_MT_NCCL_CALLS,
	CW_MT_CGROUP_PRESSURE,
	CW_MT_GPU_DEVICES,
	CW_MT_GPU_SAMPLES,
	CW_MT_GPU_PROCESSES,
	CW_MT_FOLDED,
	CW_MT_REQUESTS,
	CW_MT_REQUEST_TOTALS,
	CW_MT_ENGINE_METRICS,
	CW_MT_MAX
};

const char *cw_merge_table_name(enum cw_merge_table t);
/* Tables whose rows carry a node column (all but stacks and py_stacks). */
int cw_merge_table_has_node(enum cw_merge_table t);

struct cw_merge_input {
	const char *path;
	const char *relabel; /* new node name for a single-node input, or NULL */
};

struct cw_merge_opts {
	const struct cw_merge_input *inputs;
	int ninputs;
	const char *out_path;
	int overwrite; /* replace an existing output file */
	/* Optional: called with one line of progress (no newline). */
	void (*progress)(void *arg, const char *msg);
	void *progress_arg;
	/* Optional: polled while SQLite works; non-zero aborts the merge
	 * (-EINTR) and removes the temporary file. */
	int (*cancelled)(void *arg);
	void *cancel_arg;
};

struct cw_merge_skew {
	char node[64];
	int known;          /* an offset was measured (or this is the reference) */
	int64_t offset_ns;  /* node clock minus reference clock */
	int64_t spread_ns;  /* 90th percentile of |sample - offset| */
	int samples;        /* matched collectives */
	int after_sync;     /* 1: aligned on the synchronize after each collective;
	                     * 2: on nccl_calls completions matched by communicator
	                     * and sequence number (no ambiguity modulo a step) */
};

struct cw_merge_node {
	char name[64];
	int input;                 /* index into opts.inputs */
	char orig[64];             /* the name in the input (differs when relabelled) */
	int64_t rows[CW_MT_MAX];   /* rows of this node in the output */
};

struct cw_merge_result {
	int64_t rows[CW_MT_MAX];    /* rows in the output */
	int64_t in_rows[CW_MT_MAX]; /* rows read from the inputs */
	struct cw_merge_node *nodes;
	int nnodes;
	struct cw_merge_skew *skew; /* one per node, same order as nodes */
	char reference[64];         /* skew reference node, "" when none */
	char err[512];              /* one lower-case sentence on failure */
};

/* Returns 0, or -errno with r->err set:
 *   -ENOENT/-ENOTSUP/-EPROTO/-EBUSY/-EACCES  an input cannot be read
 *   -EEXIST  two inputs claim the same node, or the output exists
 *   -EINVAL  bad relabel (multi-node input, empty name)
 *   -EINTR   cancelled */
int cw_merge_run(const struct cw_merge_opts *o, struct cw_merge_result *r);
void cw_merge_result_free(struct cw_merge_result *r);

/* merge_skew.c ---------------------------------------------------------- */

/* "collective", "synchronize after collective" or "nccl sequence". */
const char *cw_merge_skew_signal(const struct cw_merge_skew *k);

struct cw_skew_align {
	int64_t offset_ns; /* median of other - ref over matched pairs */
	int64_t spread_ns; /* 90th percentile of the absolute deviations */
	int shift;         /* index shift: other[k + shift] matches ref[k] */
	int samples;
	int candidates;    /* shifts that fit as well; > 1: ambiguous (periodic) */
};

/* Aligns two ascending sequences of completion times (ns) of the same
 * collectives seen by two clocks. Index shifts up to max_shift are tried
 * (tracing may start at different collectives); the shifts whose spread is
 * within 2x (+1 ms) of the best are kept and, of those, the one with the
 * smallest |offset| wins: an offset larger than half a step period cannot
 * be told apart from a shifted step. Returns 0, or -ENODATA when fewer
 * than 3 pairs overlap. */
int cw_merge_align(const int64_t *ref, size_t nref, const int64_t *other, size_t nother, int max_shift,
		   struct cw_skew_align *out);

/* Measures every node of the merged database db against the first node
 * (by name) that has collectives; fills r->skew and r->reference. */
struct sqlite3;
int cw_merge_estimate_skew(struct sqlite3 *db, struct cw_merge_result *r);

#endif
