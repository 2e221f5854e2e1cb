/* Retention: keeps a database under its size cap by tiers (docs/schema.md,
 * "Retention"). The recent window keeps every row; older than it, ordinary
 * calls go first, then the off-CPU / I/O / memory / network evidence that
 * overlaps no kept call, then ordinary calls of the recent window (the
 * window shrinks), and only then the kept calls themselves, oldest first.
 * Kept calls: anomalous (slower than 3x their op's running median),
 * failing, NCCL collectives, a process's first call of each op.
 * Inference requests that are neither slow nor failed go with the
 * evidence once older than the window; what is left of them goes after
 * every event (ordinary ones first, slow and failed ones last). Chains go
 * last, oldest first, once nothing else is left; per-second aggregates,
 * request_totals, stacks and process metadata are never pruned. */
#ifndef CW_STORE_RETENTION_H
#define CW_STORE_RETENTION_H

#include <stdint.h>

#include "store/store.h"

/* The recent window that keeps every call while the cap allows. */
#define CW_RETENTION_WINDOW_NS (60ULL * 1000000000ULL)

/* Rows pruned, per tier. events: calls and kernel events of every tier
 * (store.pruned_events); the others are stored as store.pruned.<tier>. */
struct cw_retention_counts {
	int64_t ordinary; /* ordinary calls older than the recent window */
	int64_t evidence; /* off-CPU intervals and kernel events older than it, overlapping no kept call */
	int64_t recent;   /* ordinary calls inside the window (the window shrank) */
	int64_t kept;     /* kept calls and remaining kernel events, oldest first */
	int64_t context;  /* intervals, snapshots, GPU samples older than the oldest kept row */
	int64_t chains;   /* chains rows, oldest first, once no event is left to prune */
	/* Inference requests (store/requests.h): every request row pruned,
	 * and of those the slow or failed ones (pruned last); engine metric
	 * samples pruned with them. */
	int64_t requests, requests_kept, engine_metrics;
	int64_t events;
	/* Ordinary calls before this wall time (ns) are pruned: the wall start
	 * of the oldest ordinary call left (of the newest call when none is);
	 * 0 when no ordinary call was pruned. */
	int64_t through_wall_ns;
};

/* Bytes of the database in use (pages not on the freelist). */
int64_t cw_store_used_bytes(struct cw_store *st);

/* When used bytes exceed cap, prunes by tiers until about 90 % of cap is in
 * use; window_ns is the recent window. Adds what it pruned to *c. Must be
 * called outside a transaction. */
int cw_retention_enforce_tiers(struct cw_store *st, int64_t cap, int64_t window_ns, struct cw_retention_counts *c);

/* The same with CW_RETENTION_WINDOW_NS; *pruned_events: events pruned. */
int cw_retention_enforce(struct cw_store *st, int64_t cap, int64_t *pruned_events);

#endif
