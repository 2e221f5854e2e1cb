/* The footprint of a capped store (docs/trace.md "Size cap"): a size cap
 * bounds the database, its WAL and the reserve file beside it together,
 * so each gets a share of the cap. The database's pages in use are pruned
 * to stay under what is left once the others and one transaction's growth
 * (the database's before it is pruned, the WAL's before it is
 * checkpointed) are set aside. */
#ifndef CW_STORE_FOOTPRINT_H
#define CW_STORE_FOOTPRINT_H

#include <stdint.h>

struct cw_footprint {
	int64_t cap;     /* the whole footprint */
	int64_t reserve; /* the reserve file (store/reserve.h) */
	int64_t wal;     /* the WAL: checkpointed at and cut back to this */
	int64_t tx;      /* what one transaction may add, to the WAL and to the database */
	int64_t db;      /* the database's pages in use; retention prunes above it */
};

/* The page size for a new store under cap (0: none): 4 KiB under 64 MiB,
 * else the store's default. A transaction touches a page of every table
 * and index it writes (~20 for a batch of calls, ~40 for a pruning pass):
 * at 16 KiB that is up to 640 KiB of WAL and of file growth, a third of a
 * 2 MiB cap. */
int cw_footprint_page_size(int64_t cap);
/* The shares of cap for a database of page_size-byte pages; db may come
 * out below the empty schema's size when cap is under cw_footprint_min_cap(). */
void cw_footprint_plan(int64_t cap, int64_t page_size, struct cw_footprint *f);
/* The smallest cap whose database share holds an empty store of
 * empty_bytes and room for rows (16 pages). */
int64_t cw_footprint_min_cap(int64_t empty_bytes, int64_t page_size);
/* The bytes of a store with its schema and no rows: a page per table and
 * index, and the schema's own; -errno. */
struct sqlite3;
int64_t cw_footprint_empty_bytes(struct sqlite3 *db);
/* The database's page size, or -EIO. */
int64_t cw_footprint_page_of(struct sqlite3 *db);

#endif
