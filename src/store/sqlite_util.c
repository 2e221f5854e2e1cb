#include "store/sqlite_util.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

int cw_sqlite_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EACCES;
	case SQLITE_CANTOPEN:
		return -ENOENT;
	case SQLITE_NOTADB:
	case SQLITE_CORRUPT:
		return -ENOTSUP;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_INTERRUPT:
		return -ETIMEDOUT;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	case SQLITE_ERROR:
	case SQLITE_RANGE:
	case SQLITE_MISMATCH:
		return -EINVAL;
	default:
		return -EIO;
	}
}

int cw_sqlite_db_errno(sqlite3 *db, int rc)
{
	int code = cw_sqlite_errno(rc), sys;

	if (!code || !db)
		return code;
	if ((rc & 0xff) == SQLITE_FULL)
		return -ENOSPC;
	/* SQLite reports a failed write of its -shm or -wal file as an I/O
	 * or open error; the OS error behind it names the real cause. */
	sys = sqlite3_system_errno(db);
	if (code == -EIO || code == -ENOENT || code == -EACCES || code == -EINVAL) {
		if (sys == ENOSPC || sys == EDQUOT)
			return -ENOSPC;
		if (sys == EROFS)
			return -EROFS;
	}
	return code;
}

int cw_exec(sqlite3 *db, const char *sql)
{
	return cw_sqlite_db_errno(db, sqlite3_exec(db, sql, NULL, NULL, NULL));
}

void cw_scratch_cache(sqlite3 *db)
{
	const char *env = getenv("CW_SCRATCH_CACHE_KIB");
	char sql[64], *end;
	unsigned long kib;

	if (!env || !*env)
		return;
	kib = strtoul(env, &end, 10);
	if (*end || kib < 64 || kib > 1048576)
		return;
	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%lu", kib);
	cw_exec(db, sql);
}
