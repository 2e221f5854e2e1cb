/* The NCCL collectives of a window as the arrival analysis reads them
 * (analysis/nccl_arrival.h), shared by the NCCL rules (nccl_chains.c) and
 * explain --ranks (nccl_ranks.c). */
#ifndef CW_ANALYSIS_RULES_NCCL_LOAD_H
#define CW_ANALYSIS_RULES_NCCL_LOAD_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/nccl_arrival.h"

struct cw_nccl_loaded {
	struct cw_nccl_call *calls;
	size_t n, cap;
	struct cw_nccl_rank *ranks;
	int nranks;
	int64_t observed_until;
	/* Communicators where ranks of different nodes claimed the same rank
	 * (two jobs whose ids hashed alike, met in a merged file): split by
	 * node, and the first one said in note. */
	int split;
	char note[320];
};

/* The clock offset (ns) of node in a merged file's "merge.skew" nodes
 * object; 0 for a node it does not name. */
int64_t cw_merge_offset_of(json_t *nodes, const char *node);
/* Collectives of the window [from, to] (wall ns; node_filter NULL = every
 * node) into l. Returns 0 or -errno; l is empty without nccl_calls. */
int cw_nccl_load(sqlite3 *db, const char *node_filter, uint64_t from, uint64_t to, struct cw_nccl_loaded *l);
void cw_nccl_loaded_free(struct cw_nccl_loaded *l);
/* The newest time any node's store saw (offset removed): the hang clock;
 * and each rank's node_end: where its node's trace ended (its sessions'
 * end, when every one ended) when that is earlier, else the same. */
int cw_nccl_observed_until(sqlite3 *db, struct cw_nccl_loaded *l, int64_t *out);

#endif
