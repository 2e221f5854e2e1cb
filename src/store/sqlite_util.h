/* SQLite calls every store file makes: one statement run, and SQLite's
 * result codes as -errno. A leaf: it includes nothing of causeway's. */
#ifndef CW_STORE_SQLITE_UTIL_H
#define CW_STORE_SQLITE_UTIL_H

#include <sqlite3.h>

/* Translates a SQLite result code to -errno. */
int cw_sqlite_errno(int rc);
/* The same for a failure on db, looking at the OS error behind it: a full
 * disk is -ENOSPC and a read-only filesystem -EROFS whichever SQLite code
 * (I/O error, cannot open) carried them. */
int cw_sqlite_db_errno(sqlite3 *db, int rc);

/* Runs one statement with no results; returns 0 or -errno. */
int cw_exec(sqlite3 *db, const char *sql);

/* A temporary database's page cache (a fleet reader's scratch store, the
 * export's list of written slices): $CW_SCRATCH_CACHE_KIB (64 to
 * 1048576) when set, else left as it is. What bounds the memory of work
 * that grows with the data; tests set it low to show the bound. */
void cw_scratch_cache(sqlite3 *db);

#endif
