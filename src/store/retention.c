#include "store/retention.h"

#include <errno.h>

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

/* Deletes up to n of the oldest events with the given anomalous flag.
 * Returns the number deleted or -errno. */
static int64_t delete_oldest(sqlite3 *db, int64_t n, int anomalous)
{
	sqlite3_stmt *s;
	int rc;

	rc = sqlite3_prepare_v2(db,
				"DELETE FROM events WHERE id IN (SELECT id FROM events WHERE anomalous = ?1"
				" ORDER BY id LIMIT ?2)",
				-1, &s, NULL);
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

int cw_retention_enforce(struct cw_store *st, int64_t cap, int64_t *pruned_events)
{
	int64_t used, total, want, n, done = 0;
	int err;

	*pruned_events = 0;
	used = cw_store_used_bytes(st);
	if (used < 0)
		return (int)used;
	if (used <= cap)
		return 0;
	total = pragma_int(st->db, "SELECT count(*) FROM events");
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
	for (int pass = 0; pass < 4 && used > cap && total > 0; pass++) {
		int64_t got = 0;

		want = (int64_t)((double)total * (double)(used - cap * 9 / 10) / (double)used) + 1;
		n = delete_oldest(st->db, want, 0);
		if (n < 0)
			goto fail;
		got += n;
		if (got < want) {
			n = delete_oldest(st->db, want - got, 1);
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
	 * nothing any more. */
	err = cw_exec(st->db, "DELETE FROM offcpu WHERE end_mono_ns < (SELECT min(mono_ns) FROM events);"
			      "DELETE FROM snapshots WHERE mono_ns < (SELECT min(mono_ns) FROM events);"
			      "DELETE FROM gpu_samples WHERE mono_ns < (SELECT min(mono_ns) FROM events);"
			      "DELETE FROM gpu_processes WHERE mono_ns < (SELECT min(mono_ns) FROM events);");
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
