/* The causal engine behind `causeway explain`.
 *
 * For every op with a latency tail it takes the op's slow calls (through the
 * events(op, duration_ns) index, never a full scan), measures for each call
 * how much of its [start, start+duration] interval the calling thread spent
 * off-CPU preempted or blocked, overlapped with block I/O or under memory
 * pressure, and who held the CPU; the rules in rules/ turn those measures
 * into chains. Percentiles come from the per-second aggregates.
 * The rules and thresholds are documented in docs/rules.md, the JSON
 * contract in docs/explain.md. */
#ifndef CW_ANALYSIS_EXPLAIN_H
#define CW_ANALYSIS_EXPLAIN_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/stack_render.h"
#include "store/losses.h"

struct cw_explain_opts {
	const char *node_filter;            /* NULL = every node */
	uint64_t from_wall_ns, to_wall_ns;  /* 0 = open */
	int64_t pid;                        /* 0 = all */
	int per_process;                    /* split chains per pid */
	/* Tenant filter (--cgroup/--container/--pod/--slurm-job), resolved to
	 * the processes that ran in the tenant's cgroups: only their calls
	 * are explained, each against its own distribution. npids 0 = off;
	 * pids NULL with npids < 0: a filter matched nothing. */
	const int64_t *pids;
	int npids;
	int per_tenant;                     /* split chains per tenant */
	int store_chains;                   /* informational for callers; run never writes */
	uint64_t hang_min_ns;               /* nccl_hang floor; 0 = CW_NCCL_HANG_MIN_NS */
};

enum cw_severity {
	CW_SEV_HIGH = 0,
	CW_SEV_MEDIUM = 1,
	CW_SEV_LOW = 2,
};

/* root_cause.kind; names by cw_kind_name(). */
enum cw_kind {
	CW_KIND_CPU_PREEMPTION = 0,
	CW_KIND_IO_CONTENTION,
	CW_KIND_MEMORY_PRESSURE,
	CW_KIND_COLD_START,
	CW_KIND_PERIODIC_ALLOCATOR,
	CW_KIND_MEMCPY_BOUND,
	CW_KIND_GPU_TIME_SLICING,
	CW_KIND_THROUGHPUT_DROP,
	CW_KIND_DATALOADER_STARVATION,
	CW_KIND_STRAGGLER,
	CW_KIND_NOISY_NEIGHBOUR,
	CW_KIND_CFS_THROTTLING,
	CW_KIND_OOM_KILL,
	CW_KIND_NETWORK,
	CW_KIND_GRAPH_CHURN,
	CW_KIND_GRAPH_LAUNCH_TAIL,
	CW_KIND_HOST_MEMORY,
	CW_KIND_XID_FAULT,
	CW_KIND_THERMAL_THROTTLING,
	CW_KIND_POWER_CAPPING,
	CW_KIND_GPU_MEMORY_PRESSURE,
	CW_KIND_TRAINING_STALL,
	CW_KIND_NCCL_STRAGGLER, /* rules/nccl_chains.c */
	CW_KIND_NCCL_HANG,
	CW_KIND_COMM_BOUND,
	CW_KIND_NCCL_WAIT,      /* a rank waiting for an nccl_straggler */
	CW_KIND_MAX
};

enum cw_layer {
	CW_LAYER_SYSTEM = 0,
	CW_LAYER_HOST,
	CW_LAYER_IO,
	CW_LAYER_NET,
	CW_LAYER_CUDA,
	CW_LAYER_DRIVER,
	CW_LAYER_NCCL,
	CW_LAYER_PYTHON,
	CW_LAYER_MAX
};

#define CW_CHAIN_MAX_TIMELINE 12
#define CW_CHAIN_MAX_FIX 6
#define CW_CHAIN_MAX_EVIDENCE 16
#define CW_CHAIN_MAX_MISSING 4

struct cw_timeline_entry {
	enum cw_layer layer;
	uint64_t t_ns; /* wall-clock ns */
	char text[200];
};

struct cw_evidence {
	char key[40];
	double value;
	int is_int; /* printed as an integer in JSON */
};

/* The tenant a thread ran in (docs/tenants.md): the chain's "container"
 * object. known 0: no cgroup row for it. */
struct cw_tenant_ref {
	int known;
	uint64_t cgroup_id;
	char cgroup[256]; /* the cgroup v2 path */
	char runtime[16];
	char id[72];      /* container id, or "slurm-job-N" */
	char pod[128];
	char pod_uid[40];
	char ns[64];
	char qos[12];
	char key[128];    /* tenant key: different keys are different tenants */
};

struct cw_culprit {
	int known;
	char comm[32];
	int64_t pid;
	uint64_t cgroup_id;
	int cpu; /* -1 unknown */
	uint64_t overlap_ns; /* preempted time attributed to it */
	struct cw_tenant_ref container;
};

struct cw_chain {
	enum cw_severity severity;
	enum cw_kind kind;
	char op[48];
	char source[16];
	uint64_t count, slow_count;
	uint64_t p50_ns, p95_ns, p99_ns, max_ns;
	double tail_ratio;      /* p99 / p50 */
	double explained_share; /* 0..1 of slow-call time explained by kind */
	uint64_t slow_time_ns;  /* total duration of the slow calls */
	uint64_t explained_ns;  /* slow_time_ns * explained_share */
	char summary[512];      /* the root cause in one sentence */
	struct cw_timeline_entry timeline[CW_CHAIN_MAX_TIMELINE];
	int ntimeline;
	char fix[CW_CHAIN_MAX_FIX][400]; /* room for a pod cgroup path (~200 chars) in a command */
	int nfix;
	int64_t pid, tid; /* 0 unknown */
	char comm[32];
	char node[64];
	int rank; /* -1 unknown */
	int has_python;
	char py_file[256];
	int py_line;
	char py_function[128];
	/* The representative slow call's stack, native and Python spliced
	 * (stack_render.h), innermost first; 0 frames when none was recorded. */
	struct cw_stack_frame stack[CW_STACK_MAX_FRAMES];
	int nstack;
	struct cw_culprit culprit;
	struct cw_tenant_ref container; /* the affected thread's tenant */
	struct cw_evidence evidence[CW_CHAIN_MAX_EVIDENCE];
	int nevidence;
	/* NCCL chains: root_cause.because (the cause found on the late rank,
	 * a kind name or "compute"/"blocked"), the sequence number and
	 * communicator concerned, and the ranks that never arrived (nccl_hang). */
	char because[32];
	int64_t seq;     /* 0 none */
	int64_t comm_id; /* 0 none */
	int missing_ranks[16];
	int nmissing;
	char missing_state[CW_CHAIN_MAX_MISSING][400]; /* what the first missing ranks are doing */
	/* The chain this one is explained by (a waiting rank's sync points at
	 * the straggler): its kind, node, pid and rank; kind "" when none. */
	struct {
		char kind[32];
		char node[64];
		int64_t pid;
		int rank;
	} caused_by;
};

struct cw_explain_result {
	struct cw_chain *chains;
	int count;
	uint64_t from_wall_ns, to_wall_ns; /* the window actually analysed */
	uint64_t ops_analysed;             /* distinct (node, op) pairs */
	uint64_t calls_analysed;           /* calls counted in the aggregates */
	char **warnings;
	int nwarnings;
	/* Sessions in the window that lost records (store/losses.h); each
	 * is also a warning. */
	struct cw_session_loss *losses;
	int nlosses;
};

const char *cw_kind_name(enum cw_kind k);
const char *cw_severity_name(enum cw_severity s);
const char *cw_layer_name(enum cw_layer l);

/* Analyses db (opened by cw_store_open) over the window in o. Returns 0
 * (out filled, possibly with zero chains) or -errno. Never writes. */
int cw_explain_run(sqlite3 *db, const struct cw_explain_opts *o, struct cw_explain_result *out);
void cw_explain_result_free(struct cw_explain_result *r);
/* End of the newest second with data (wall ns; 0 for an empty store), the
 * anchor of --since so that old files can be explained. */
int cw_explain_newest_wall(sqlite3 *db, uint64_t *out);

/* Human-readable report. */
int cw_explain_print_text(FILE *f, const struct cw_explain_result *r, int color);
/* The same, with each chain's stack when stacks is set (explain --stacks). */
int cw_explain_print_text_stacks(FILE *f, const struct cw_explain_result *r, int color, int stacks);
/* One chain as the JSON contract of docs/explain.md. */
json_t *cw_chain_to_json(const struct cw_chain *c);
/* {"window":..., "chains":[...], "warnings":[...]}. */
json_t *cw_explain_to_json(const struct cw_explain_result *r);

/* explain --ranks: one object per rank that called NCCL collectives in
 * the window (rules/nccl_chains.c): node, pid, rank, collectives, late,
 * lag_ns, mean_lag_ns, last_seq, comm_wait_share, waited_for_straggler_ns,
 * straggler, missing. NULL on error; an empty array without NCCL data. */
json_t *cw_nccl_ranks_json(sqlite3 *db, const struct cw_explain_opts *o, uint64_t from_wall, uint64_t to_wall);
/* The window cw_explain_run analyses for o (open ends: the first and last
 * second with data), for callers that need it without a run (the MCP
 * nccl_ranks tool gives it to cw_nccl_ranks_json as explain --ranks does).
 * Returns 0 or -errno. */
int cw_explain_window(sqlite3 *db, const struct cw_explain_opts *o, uint64_t *from_wall_ns, uint64_t *to_wall_ns);

/* Appends one chains row per chain, stamped now_wall_ns; never updates or
 * deletes. Returns the number of rows written or -errno. */
int cw_explain_store_chains(sqlite3 *db, const struct cw_explain_result *r, uint64_t now_wall_ns);

#endif
