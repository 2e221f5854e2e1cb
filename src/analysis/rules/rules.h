/* The detection rules as one table (rules.c): each row names a rule, its
 * function and flags saying when the engine (explain.c) runs it and how it
 * weighs the result. Every rule has one signature: it reads ctx and fills
 * up to ctx->max_out chains at out; it returns how many it filled (0 when
 * it does not apply) or -errno. A new rule is a file here and a row in
 * rules.c (docs/rules.md). */
#ifndef CW_ANALYSIS_RULES_H
#define CW_ANALYSIS_RULES_H

#include <stddef.h>

#include "analysis/engine.h"

typedef int (*cw_rule_fn)(const struct cw_rule_ctx *ctx, struct cw_chain *out);

enum cw_rule_flags {
	/* Per op with a tail: out holds a copy of the op's base chain; the
	 * rule explaining the largest share (at least CW_MIN_EXPLAINED) wins. */
	CW_RULE_OP = 1 << 0,
	/* Per op, only when no CW_RULE_OP rule explains enough. */
	CW_RULE_FALLBACK = 1 << 1,
	/* Rewrites the winning op chain in place; the first that applies
	 * ends the refinements. */
	CW_RULE_REFINE = 1 << 2,
	/* Once per node, over the node's ops. */
	CW_RULE_NODE = 1 << 3,
	/* Once after every node, seeing the chains found so far. */
	CW_RULE_CROSS = 1 << 4,
	/* GPU telemetry: the device's measured state wins within
	 * CW_GPU_RULE_MARGIN of a pattern rule's share. */
	CW_RULE_GPU = 1 << 5,
	/* Also runs on an op probed only for its max (no p99 tail). */
	CW_RULE_NO_TAIL = 1 << 6,
	/* Fills ctx->peers: the chains of the straggler's waiting ranks
	 * point at it and their syncs' warnings are dropped. */
	CW_RULE_PEERS = 1 << 7,
};

struct cw_rule {
	const char *name;
	cw_rule_fn fn;
	unsigned flags;
	int max_out; /* chains one run may fill; 0 = 1 */
};

/* In the order the engine runs them within each phase. */
extern const struct cw_rule cw_rules[];
extern const size_t cw_nrules;

/* Per-op rules: each fills c->kind, explained_share, summary, fix,
 * timeline and evidence. */
int cw_rule_cpu_preemption(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_io_contention(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_memory_pressure(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_cold_start(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_periodic_allocator(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_gpu_time_slicing(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_throughput_drop(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_network(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_graph_launch_tail(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_host_memory(const struct cw_rule_ctx *ctx, struct cw_chain *c);
/* GPU telemetry (docs/gpu.md): slow calls during clock-event reasons or
 * near the device's memory limit. */
int cw_rule_thermal_throttling(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_power_capping(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_gpu_memory_pressure(const struct cw_rule_ctx *ctx, struct cw_chain *c);
/* Refinements of the dominant cause: cfs_throttling when the preempted
 * thread's own cgroup spent that time throttled by its CPU quota;
 * noisy_neighbour when the culprit is another tenant. */
int cw_rule_cfs_throttling(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_noisy_neighbour(const struct cw_rule_ctx *ctx, struct cw_chain *c);
/* Node-wide rules. oom_kill fills one chain per OOM kill of a traced
 * process or of its cgroup; xid_fault an Xid fault on the node;
 * training_stall a process whose CUDA calls stopped. */
int cw_rule_memcpy_bound(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_dataloader_starvation(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_graph_churn(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_oom_kill(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_xid_fault(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_training_stall(const struct cw_rule_ctx *ctx, struct cw_chain *c);
/* Failing CUDA/driver/NCCL calls: cuda_error, device_oom, nccl_error
 * (one chain per process and kind). */
int cw_rule_call_errors(const struct cw_rule_ctx *ctx, struct cw_chain *c);
/* Cross-rank rules, after every node's chains are known (they supply the
 * straggler's reason): straggler; the NCCL arrival rules (cw_rule_nccl). */
int cw_rule_straggler(const struct cw_rule_ctx *ctx, struct cw_chain *c);
int cw_rule_nccl_arrival(const struct cw_rule_ctx *ctx, struct cw_chain *c);
/* Slow requests of traced inference servers (trace --inference), every
 * node's: one chain per incident of a route (rules/inference_latency.c). */
int cw_rule_inference_latency(const struct cw_rule_ctx *ctx, struct cw_chain *c);

#endif
