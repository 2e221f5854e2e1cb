/* What each recorded session lost on its way into the store, from its
 * counters: rows the store refused (a full disk), records dropped while
 * the store was locked, ring drops, pipeline rejections, and calls only
 * counted in the kernel (aggregated). Every reading command warns with
 * these so a report over an incomplete trace never reads as complete. */
#ifndef CW_STORE_LOSSES_H
#define CW_STORE_LOSSES_H

#include <jansson.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct cw_session_loss {
	int64_t session_id;
	char node[64];
	char kind[64];
	uint64_t stored;      /* events stored (store.events, else counted) */
	uint64_t store_failed; /* store.failed_rows */
	uint64_t lock_dropped; /* trace.store_wait.dropped */
	uint64_t ring_drops;  /* trace.ring_drops.* + trace.cuda.state_map_full */
	uint64_t pipeline;    /* records the pipeline rejected or gave up */
	uint64_t aggregated;  /* trace.cuda.aggregated: counted, not stored per call */
	uint64_t folded;      /* trace.cuda.folded: summary capture, exact in the aggregates */
	uint64_t lost;        /* store_failed + lock_dropped + ring_drops + pipeline */
	double lost_share;    /* lost / (stored + folded + lost + aggregated) */
	double aggregated_share;
};

/* The sessions with a loss or aggregation that overlap [from, to] (wall
 * ns; 0 = unbounded) on node (NULL = any). *out is malloc'd. Returns how
 * many or -errno. A database without counters has none. */
int cw_store_losses(sqlite3 *db, const char *node, uint64_t from_wall_ns, uint64_t to_wall_ns,
		    struct cw_session_loss **out);

/* One line: "session 3 (trace, node \"gpu-1\") lost 130729 of 222000
 * records (58.9%): 130729 refused by the store (...), ...". */
void cw_session_loss_text(const struct cw_session_loss *l, char *buf, size_t len);

/* [{"session_id", "node", "kind", "stored", "lost", "lost_share",
 *   "store_failed", "lock_dropped", "ring_drops", "pipeline",
 *   "aggregated", "aggregated_share"}, ...] */
json_t *cw_losses_to_json(const struct cw_session_loss *l, int n);

#endif
