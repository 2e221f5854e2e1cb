/* Retention: keeps a database under its size cap by pruning the oldest
 * observations first. Ordinary events go before anomalous ones; causal
 * chains are never pruned (they are the history users come back for). */
#ifndef CW_STORE_RETENTION_H
#define CW_STORE_RETENTION_H

#include <stdint.h>

#include "store/store.h"

/* Bytes of the database in use (pages not on the freelist). */
int64_t cw_store_used_bytes(struct cw_store *st);

/* When used bytes exceed cap, deletes the oldest rows until about 90 % of
 * cap is in use. *pruned_events receives the events deleted. Must be called
 * outside a transaction. */
int cw_retention_enforce(struct cw_store *st, int64_t cap, int64_t *pruned_events);

#endif
