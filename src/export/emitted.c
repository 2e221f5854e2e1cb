/* Written slices in a private temporary database (emitted.h). */
#include "export/emitted.h"

#include <errno.h>
#include <string.h>

#include "store/store.h"

int pf_emitted_open(struct pf_emitted *e)
{
	static const char setup[] = "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
				    /* 4 MiB of page cache; the rest waits in the temporary file,
				     * which SQLite removes when the connection closes. */
				    " PRAGMA cache_size = -4096;"
				    " CREATE TABLE m (k INTEGER PRIMARY KEY, v INTEGER NOT NULL); BEGIN";
	int rc;

	memset(e, 0, sizeof(*e));
	/* "": a private on-disk database, deleted on close. */
	rc = sqlite3_open_v2("", &e->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_PRIVATECACHE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(e->db, setup, NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		cw_scratch_cache(e->db);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(e->db, "INSERT OR REPLACE INTO m (k, v) VALUES (?1, ?2)", -1, &e->put, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(e->db, "SELECT v FROM m WHERE k = ?1", -1, &e->get, NULL);
	if (rc != SQLITE_OK) {
		pf_emitted_close(e);
		return rc == SQLITE_NOMEM ? -ENOMEM : -EIO;
	}
	return 0;
}

int pf_emitted_put(struct pf_emitted *e, uint64_t key, int64_t val)
{
	int rc;

	if (!key)
		return -EINVAL;
	sqlite3_bind_int64(e->put, 1, (int64_t)key);
	sqlite3_bind_int64(e->put, 2, val);
	rc = sqlite3_step(e->put);
	sqlite3_reset(e->put);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int pf_emitted_get(struct pf_emitted *e, uint64_t key, int64_t *val)
{
	int rc;

	sqlite3_bind_int64(e->get, 1, (int64_t)key);
	rc = sqlite3_step(e->get);
	if (rc == SQLITE_ROW)
		*val = sqlite3_column_int64(e->get, 0);
	sqlite3_reset(e->get);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

void pf_emitted_close(struct pf_emitted *e)
{
	sqlite3_finalize(e->put);
	sqlite3_finalize(e->get);
	sqlite3_close(e->db);
	memset(e, 0, sizeof(*e));
}
