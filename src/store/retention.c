#include "store/retention.h"

#include <errno.h>
#include <stdio.h>

static int64_t pragma_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

int64_t cw_store_used_bytes(struct cw_store *st)
{
	int64_t pages = pragma_int(st->db, "PRAGMA page_count");
	int64_t free_pages = pragma_int(st->db, "PRAGMA freelist_count");
	int64_t size = pragma_int(st->db, "PRAGMA page_size");

	if (pages < 0 || free_pages < 0 || size < 0)
		return -EIO;
	return (pages - free_pages) * size;
}

/* Deletes up to n of the oldest rows of table (calls or kevents, schema
 * v7) with the given anomalous flag. Returns the number deleted or -errno. */
static int64_t delete_oldest(sqlite3 *db, const char *table, int64_t n, int anomalous)
{
	char sql[160];
	sqlite3_stmt *s;
	int rc;

	if (n <= 0)
		return 0;
	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE id IN (SELECT id FROM %s WHERE anomalous = ?1 ORDER BY id LIMIT ?2)",
		 table, table);
	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int(s, 1, anomalous);
	sqlite3_bind_int64(s, 2, n);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	return sqlite3_changes64(db);
}

/* The oldest n events of one flag over both tables, shared between them
 * by their row counts (both are in id order, calls are nearly all rows). */
static int64_t delete_both(sqlite3 *db, int64_t n, int anomalous, int64_t ncalls, int64_t nk)
{
	int64_t k = ncalls + nk > 0 ? (int64_t)((double)n * (double)nk / (double)(ncalls + nk) + 0.5) : 0;
	int64_t a, b;

	a = delete_oldest(db, "kevents", k, anomalous);
	if (a < 0)
		return a;
	b = delete_oldest(db, "calls", n - a, anomalous);
	if (b < 0)
		return b;
	if (a + b < n) {
		int64_t c = delete_oldest(db, "kevents", n - a - b, anomalous);

		if (c < 0)
			return c;
		b += c;
	}
	return a + b;
}

int cw_retention_enforce(struct cw_store *st, int64_t cap, int64_t *pruned_events)
{
	int64_t used, total, want, n, done = 0, ncalls, nk;
	int err;

	*pruned_events = 0;
	used = cw_store_used_bytes(st);
	if (used < 0)
		return (int)used;
	if (used <= cap)
		return 0;
	ncalls = pragma_int(st->db, "SELECT count(*) FROM calls");
	nk = pragma_int(st->db, "SELECT count(*) FROM kevents");
	if (ncalls < 0 || nk < 0)
		return -EIO;
	total = ncalls + nk;
	if (total <= 0)
		return 0;
	/* Rows are roughly uniform in size, so the share of bytes to free is
	 * the share of events to delete; aim at 90 % of the cap to avoid
	 * pruning on every flush. The schema's own pages do not shrink with
	 * the events, so the estimate falls short by a little: a second pass
	 * (rarely a third) deletes the rest. */
	err = cw_exec(st->db, "BEGIN IMMEDIATE");
	if (err)
		return err;
	for (int pass = 0; pass < 8 && used > cap && total > 0; pass++) {
		int64_t got = 0;

		want = (int64_t)((double)total * (double)(used - cap * 9 / 10) / (double)used) + 1;
		n = delete_both(st->db, want, 0, ncalls, nk);
		if (n < 0)
			goto fail;
		got += n;
		if (got < want) {
			n = delete_both(st->db, want - got, 1, ncalls, nk);
			if (n < 0)
				goto fail;
			got += n;
		}
		done += got;
		total -= got;
		if (!got)
			break;
		used = cw_store_used_bytes(st);
		if (used < 0) {
			err = (int)used;
			goto fail_err;
		}
	}
	/* Intervals and snapshots older than the oldest kept event explain
	 * nothing any more; so do thread rows whose 2^31 ns stretch ended
	 * before it (a call row lies within its thread row's stretch). The
	 * oldest kept event is the oldest call's or kernel event's start
	 * (rows are in time order by id), read without a scan. */
	err = cw_exec(st->db, "CREATE TEMP TABLE IF NOT EXISTS retention_floor (mono INTEGER);"
			      "DELETE FROM temp.retention_floor;"
			      "INSERT INTO temp.retention_floor SELECT min(m) FROM ("
			      " SELECT (SELECT t.mono_base + c.t FROM calls c JOIN call_threads t ON t.id = c.th"
			      " ORDER BY c.id LIMIT 1) AS m"
			      " UNION ALL SELECT (SELECT mono_ns FROM kevents ORDER BY id LIMIT 1)) WHERE m IS NOT NULL;"
			      "DELETE FROM offcpu WHERE end_mono_ns < (SELECT mono FROM temp.retention_floor);"
			      "DELETE FROM snapshots WHERE mono_ns < (SELECT mono FROM temp.retention_floor);"
			      "DELETE FROM gpu_samples WHERE mono_ns < (SELECT mono FROM temp.retention_floor);"
			      "DELETE FROM gpu_processes WHERE mono_ns < (SELECT mono FROM temp.retention_floor);"
			      "DELETE FROM call_threads WHERE mono_base + 2 * 2147483648 <"
			      " (SELECT mono FROM temp.retention_floor);");
	if (err)
		goto fail_err;
	err = cw_exec(st->db, "COMMIT");
	if (err)
		goto fail_err;
	*pruned_events = done;
	return 0;
fail:
	err = (int)n;
fail_err:
	if (!sqlite3_get_autocommit(st->db))
		cw_exec(st->db, "ROLLBACK");
	return err;
}
