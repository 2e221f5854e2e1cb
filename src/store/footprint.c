/* Shares of a size cap (footprint.h). The WAL's share is SQLite's
 * checkpoint threshold, a sixteenth of the cap within 16 to 1000 pages
 * (SQLite's default, 1000 pages of 16 KiB, is more than a small cap);
 * the reserve a sixteenth within 128 KiB (the last batch of counters
 * touches a few pages) and 1 MiB; a transaction a thirty-second, at
 * least 64 pages: a batch of calls touches a page of every table and
 * index it writes, 60-70 in all, and a step of a pruning pass up to ~100
 * (measured by tests/integration/test_trace_size_cap_flood.sh). What is left is the
 * database's: at 2 MiB (4 KiB pages), 1.25 MiB. */
#include "store/footprint.h"

#include <errno.h>
#include <stddef.h>
#include <sqlite3.h>

#include "store/store.h"

int cw_footprint_page_size(int64_t cap)
{
	return cap > 0 && cap < (64LL << 20) ? 4096 : CW_STORE_PAGE_SIZE;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void cw_footprint_plan(int64_t cap, int64_t page, struct cw_footprint *f)
{
	if (page <= 0)
		page = 16384;
	f->cap = cap;
	f->reserve = clamp(cap / 16, 128 << 10, 1 << 20);
	f->wal = clamp(cap / 16 / page, 16, 1000) * page;
	f->tx = cap / 32 > 64 * page ? cap / 32 : 64 * page;
	/* A file of large pages under a small cap (made before the cap, or
	 * by another writer) keeps a share for its rows. */
	if (f->tx > cap / 8)
		f->tx = cap / 8;
	/* The database may pass its share by one transaction before it is
	 * pruned, and the WAL its own by one. */
	f->db = cap - f->reserve - f->wal - 2 * f->tx;
}

int64_t cw_footprint_min_cap(int64_t empty_bytes, int64_t page)
{
	struct cw_footprint f;
	int64_t lo = 0, hi = 1LL << 40;

	if (page <= 0)
		page = 16384;
	/* db grows with cap: the least cap that fits, to 64 KiB. */
	while (hi - lo > (64 << 10)) {
		int64_t mid = lo + (hi - lo) / 2;

		cw_footprint_plan(mid, page, &f);
		if (f.db >= empty_bytes + 16 * page)
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

int64_t cw_footprint_page_of(sqlite3 *db)
{
	sqlite3_stmt *s = NULL;
	int64_t page = -EIO;

	if (sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		page = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return page > 0 ? page : -EIO;
}

int64_t cw_footprint_empty_bytes(sqlite3 *db)
{
	sqlite3_stmt *s = NULL;
	int64_t n = -EIO, page = cw_footprint_page_of(db);

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE rootpage > 0", -1, &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (n < 0 || page <= 0)
		return -EIO;
	/* sqlite_master itself: a page per ~50 entries of this schema's SQL. */
	return (n + 1 + n / 50 + 1) * page;
}
