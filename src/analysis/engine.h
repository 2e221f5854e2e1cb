/* Internals shared by the causal engine (explain.c), the per-call probe
 * (probe.c) and the detection rules (rules/<rule>.c). Not a public API. */
#ifndef CW_ANALYSIS_ENGINE_H
#define CW_ANALYSIS_ENGINE_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/chain.h"
#include "analysis/stats.h"
#include "store/rare_events.h"

/* An op has a latency tail when it has at least this many calls and
 * p99 >= CW_TAIL_RATIO x p50. */
#define CW_TAIL_MIN_COUNT 10
#define CW_TAIL_RATIO 3.0
/* A call is slow when duration >= CW_SLOW_FACTOR x p50 (and > p50 by at
 * least one histogram bucket); at most CW_SLOW_MAX of the slowest are read. */
#define CW_SLOW_FACTOR 3.0
#define CW_SLOW_MAX 4096
/* A per-call cause must explain at least this share of slow time to name
 * a chain. */
#define CW_MIN_EXPLAINED 0.25

/* One slow call and what its thread was doing meanwhile. */
struct cw_slowcall {
	int64_t id;
	uint64_t mono_ns, dur_ns, wall_ns;
	int64_t pid, tid;
	char comm[32];
	int device;          /* -1 unknown */
	int64_t py_stack_id; /* 0 none */
	int64_t stack_id;    /* native stack, 0 none */
	uint64_t preempted_ns; /* off-CPU while runnable */
	uint64_t blocked_ns;   /* off-CPU while sleeping */
	uint64_t blocked_io_ns;  /* blocked while block I/O was in flight */
	uint64_t blocked_mem_ns; /* blocked under memory pressure */
	uint64_t io_same_pid_ns; /* call time with this pid's own I/O in flight */
	uint64_t foreign_gpu_ns; /* on-CPU time with another pid active on the device */
	int early;               /* among the op's first calls (cold start) */
	int unfinished;          /* never returned (stored open at the end of the trace) */
};

struct cw_culprit_acc {
	char comm[32];
	int64_t pid;
	uint64_t cgroup_id;
	int cpu;
	uint64_t ns;
	/* The slow call this culprit preempted longest (its wall time and
	 * that call's preempted time by it): a chain's timeline places the
	 * culprit at one of its own calls, not at the slowest call of the
	 * window, which another culprit may have held. */
	uint64_t worst_ns, worst_wall_ns;
	/* Its preempted time in the call being measured (probe.c). */
	uint64_t call_ns;
	const struct cw_slowcall *call;
};

/* A memory-pressure second: [start, end) in mono ns and what marked it. */
struct cw_pressure {
	uint64_t start, end, wall;
	double mem_pct;
	int64_t swap_growth, page_alloc_per_s;
};

struct cw_snap {
	uint64_t mono_ns, wall_ns;
	double cpu_pct, mem_pct, load1, io_busy_pct;
	int64_t swap_used, page_alloc_per_s, io_bytes_per_s;
	int ncpu;
};

/* One TCP retransmit, compact: a lossy link leaves hundreds of thousands. */
#define CW_RETX_TUPLES 64
struct cw_retx {
	uint64_t mono_ns, wall_ns;
	int64_t pid;  /* the socket's last traced user, 0 unknown */
	int tuple;    /* index into cw_sysctx.retx_tuples; -1: beyond the first CW_RETX_TUPLES */
};

/* Window-wide context for one node. */
struct cw_sysctx {
	char node[64];
	struct cw_snap *snaps;
	size_t nsnaps;
	struct cw_interval *pressure; /* merged */
	size_t npressure;
	struct cw_interval *io;       /* block I/O in flight, merged */
	size_t nio;
	struct cw_interval *io_raw;   /* per request, with pid in io_pid */
	int64_t *io_pid;
	size_t nio_raw;
	uint64_t io_requests;
	int64_t mono_to_wall; /* wall = mono + this, from the node's session */
	int io_loaded, has_io;
	struct cw_retx *retx; /* TCP retransmits by mono time; loaded by cw_sysctx_need_retx */
	size_t nretx;
	char (*retx_tuples)[160]; /* "src -> dst" of each distinct socket */
	int nretx_tuples;
	int retx_loaded;
	uint64_t from_wall, to_wall;
	sqlite3 *db;
	struct cw_gpuctx *gpu; /* GPU samples of the node (gpuctx.h); explain.c loads it */
};

struct cw_nccl_peers;

/* Everything a rule sees (rules/rules.h): the window and options always;
 * a per-op rule one op (optionally one pid) and its probed slow calls; a
 * node-wide rule the node and its ops; a cross-rank rule the chains
 * found so far. */
struct cw_rule_ctx {
	sqlite3 *db;
	const struct cw_explain_opts *opts;
	const struct cw_opstat *st;
	struct cw_sysctx *sys; /* block I/O is loaded lazily by the probe */
	uint64_t window_from_ns, window_to_ns; /* wall */
	int incident;                  /* probed on an incident's seconds (explain_op.c) */
	int max_out;                   /* chains the rule may fill at its out */
	const struct cw_opstat *ops;   /* node-wide: the node's ops */
	size_t nops;
	const struct cw_chain *chains; /* cross-rank: the chains so far */
	int nchains;
	struct cw_nccl_peers *peers;   /* CW_RULE_PEERS: filled by the rule */
	uint64_t *requests_seen;       /* inference requests read (NULL: not counted) */
	uint64_t threshold_ns;
	struct cw_slowcall *calls;
	size_t ncalls;
	uint64_t slow_time_ns;
	struct cw_culprit_acc *culprits; /* sorted by ns, descending */
	size_t nculprits;
	int offcpu_seen; /* any off-CPU interval of these threads in the window */
	uint64_t preempted_ns, blocked_ns, blocked_io_ns, blocked_mem_ns, foreign_gpu_ns,
		io_same_pid_ns;
};

/* probe.c */
int cw_sysctx_load(sqlite3 *db, const char *node, uint64_t from_wall, uint64_t to_wall,
		   struct cw_sysctx *sys);
void cw_sysctx_free(struct cw_sysctx *sys);
/* Reads the slow calls of ctx->st (pid 0 = all) and measures each one;
 * fills ctx->calls, culprits and totals. Returns the slow-call count or -errno. */
int cw_probe_op(struct cw_rule_ctx *ctx, int64_t pid);
void cw_probe_free(struct cw_rule_ctx *ctx);
/* Loads the node's block I/O of the window once (io, io_raw, io_pid). */
int cw_sysctx_need_io(struct cw_sysctx *sys);
/* How much of mono [s, e) pid's own block I/O was in flight (requests that
 * began at most 10 s before s; after cw_sysctx_need_io). */
uint64_t cw_sysctx_io_of_pid(const struct cw_sysctx *sys, int64_t pid, uint64_t s, uint64_t e);
/* Loads the node's TCP retransmits of the window once (network rule). */
int cw_sysctx_need_retx(struct cw_sysctx *sys);
/* Whether the per-second aggregates count any call of source in wall
 * seconds [from_sec, to_sec] (of node, or of any node when NULL): lets a
 * rule skip an unindexed scan of events for rows that are not there.
 * Returns 0 or -errno. */
int cw_aggregates_have(sqlite3 *db, const char *node, const char *source, int64_t from_sec, int64_t to_sec,
		       int *out);

/* The snapshot nearest to mono (NULL when none). */
const struct cw_snap *cw_sysctx_snap_at(const struct cw_sysctx *sys, uint64_t mono);

/* "0-2,4-7": every CPU of ncpu except skip (rules/cpu_preemption.c). */
void cw_cpus_except(char *buf, size_t len, int ncpu, int skip);

/* Op families. */
int cw_op_is_sync(const char *op);
int cw_op_is_memcpy(const char *op);
int cw_op_is_alloc(const char *op);
int cw_op_is_launch(const char *op);
int cw_op_is_host_alloc(const char *op);
int cw_op_is_graph_launch(const char *op);
int cw_op_is_graph_build(const char *op);

/* Sets c's Python location (has_python, file, line, function) from the
 * py_stacks row stack_id; c is unchanged when the row has none. */
int cw_chain_load_python(sqlite3 *db, struct cw_chain *c, int64_t stack_id);
/* cw_chain_identity of a node-wide rule's chain: ctx's node, window and
 * --pid. */
int cw_chain_identity_of_node(const struct cw_rule_ctx *ctx, struct cw_chain *c);
/* cw_chain_identity from calls already read (the probe's slow calls). */
int cw_chain_identity_calls(sqlite3 *db, struct cw_chain *c, const struct cw_slowcall *calls, size_t ncalls);
/* Wall ns of a mono timestamp on the node. */
uint64_t cw_sys_wall(const struct cw_sysctx *sys, uint64_t mono);

/* Tenants (tenant_ref.c). */
int cw_tenant_ref_load(sqlite3 *db, const char *node, uint64_t cgroup_id, struct cw_tenant_ref *out);
/* Fills c->container (from c->pid) and c->culprit.container. */
void cw_chain_fill_tenants(sqlite3 *db, struct cw_chain *c);
/* A container, pod or Slurm job: a tenant of a shared host, not a host
 * service or session. */
int cw_tenant_is_workload(const struct cw_tenant_ref *r);
json_t *cw_tenant_ref_json(const struct cw_tenant_ref *r);
/* "pod ml/trainer-0", "docker container 3f2b9c0d1e4a", "Slurm job 42". */
void cw_tenant_ref_name(const struct cw_tenant_ref *r, char *buf, size_t len);

/* The engine's steps (explain_op.c, explain_report.c). */
struct cw_explain_result;
/* Probes op st of sys's node when it has a tail and appends its chains
 * (one per process where o asks) to cs, or warnings to r. 0 or -errno. */
int cw_explain_op(sqlite3 *db, const struct cw_explain_opts *o, struct cw_sysctx *sys,
		  const struct cw_opstat *st, uint64_t from, uint64_t to, struct cw_chain_list *cs, struct cw_explain_result *r);
/* Appends a warning to r. 0 or -ENOMEM. */
/* Fills r's pruned_through_ns and stored (analysis/history.c). */
int cw_explain_history(sqlite3 *db, const struct cw_explain_opts *o, struct cw_explain_result *r);
int cw_explain_warn(struct cw_explain_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Shared by thermal_throttling and power_capping (gpu_throttle.c). */
int cw_gpu_throttle_chain(const struct cw_rule_ctx *ctx, struct cw_chain *c, int thermal);

/* NCCL arrival rules (rules/nccl_chains.c): nccl_hang, nccl_straggler
 * with one nccl_wait chain per waiting rank, or comm_bound. Fills up to
 * max_out chains and returns how many, or -errno; peers names the
 * straggler and its waiting ranks (n 0 when there is no straggler). */
#define CW_NCCL_MAX_PEERS 64
struct cw_nccl_peers {
	char kind[32]; /* the chain the peers' chains point at */
	char node[64];
	int64_t pid;
	int rank;
	int n;
	struct {
		char node[64];
		int64_t pid;
	} v[CW_NCCL_MAX_PEERS];
	char note[320]; /* a warning about the communicators read (nccl_load.h) */
};
int cw_rule_nccl(sqlite3 *db, const struct cw_explain_opts *o, uint64_t from_wall, uint64_t to_wall,
		 struct cw_chain *out, int max_out, struct cw_nccl_peers *peers);

#endif
