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

#include "analysis/chain.h"
#include "store/losses.h"

struct cw_explain_result {
	struct cw_chain *chains;
	int count;
	uint64_t from_wall_ns, to_wall_ns; /* the window actually analysed */
	uint64_t ops_analysed;             /* distinct (node, op) pairs */
	uint64_t calls_analysed;           /* calls counted in the aggregates */
	uint64_t calls_failed;             /* of those, failed: outside every latency figure */
	uint64_t requests_analysed;        /* inference requests read (rules/inference_latency.c) */
	char **warnings;
	int nwarnings;
	/* Sessions in the window that lost records (store/losses.h); each
	 * is also a warning. */
	struct cw_session_loss *losses;
	int nlosses;
	/* Old windows (docs/explain.md): ordinary calls before
	 * pruned_through_ns were pruned by a size cap, so the window is
	 * explained from the kept rows (0: nothing of it pruned); stored: the
	 * chains trace computed over the window while it ran, their JSON,
	 * newest first (NULL: none). */
	uint64_t pruned_through_ns;
	json_t *stored;
};

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
/* The same inside the caller's transaction (no BEGIN/COMMIT of its own). */
int cw_explain_insert_chains(sqlite3 *db, const struct cw_explain_result *r, uint64_t now_wall_ns);

#endif
