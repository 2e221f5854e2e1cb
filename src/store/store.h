/* The SQLite store: opening, schema migrations and connection settings.
 *
 * A database is opened in one of three modes. Writers (trace, demo, merge)
 * create and migrate; analysis commands (explain) open read-write on an
 * existing file so that chains can be appended; user SQL always runs on a
 * separate read-only connection (see ro_query.h). */
#ifndef CW_STORE_STORE_H
#define CW_STORE_STORE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "store/migrate.h"
#include "store/sqlite_util.h"

#define CW_DEFAULT_DB "causeway.db"

enum cw_store_mode {
	CW_STORE_CREATE = 1,    /* create if missing, migrate, read-write */
	CW_STORE_READWRITE = 2, /* must exist; migrate older files */
	CW_STORE_READONLY = 3,  /* must exist; never written */
};

struct cw_store {
	sqlite3 *db;
	char *path;
	enum cw_store_mode mode;
	/* Writers hold a shared flock(2) on the file while open, so that a
	 * command about to replace it (demo) can tell that a causeway
	 * process is writing it; -1 for readers. */
	int writer_fd;
};

/* Opens path. On failure returns -errno and writes one lower-case sentence
 * into err (path quoted), suitable for the command to print as is:
 *   -ENOENT  file missing          -ENOTSUP  not a causeway/SQLite database
 *   -EBUSY   locked by another     -EPROTO   written by a newer causeway
 *   -EACCES  permission denied     -EIO      other SQLite failure
 *   -ENOSPC  disk full             -EROFS    read-only filesystem (writers)
 *   -EUCLEAN read-only filesystem with an unmerged -wal file (readers)
 * A reader on a read-only filesystem, where SQLite cannot create the
 * -shm file, opens the file as immutable. */
int cw_store_open(struct cw_store **out, const char *path, enum cw_store_mode mode,
		  char *err, size_t errlen);
/* cw_store_open(CREATE) whose file, when it is new, has page_size-byte
 * pages (a power of two, 512 to 65536; 0: CW_STORE_PAGE_SIZE). A small
 * size cap wants small pages (cw_footprint_page_size): every transaction
 * touches a page of each table it writes, in the WAL and in the file. An
 * existing file keeps its own. */
#define CW_STORE_PAGE_SIZE 16384
int cw_store_create(struct cw_store **out, const char *path, int page_size, char *err, size_t errlen);
void cw_store_close(struct cw_store *st);
/* cw_store_open read-only, keeping only the connection (*db, closed with
 * sqlite3_close_v2): for readers that own one per request (the API's
 * routes, MCP tools). Same returns and err. */
int cw_store_open_reader(sqlite3 **db, const char *path, char *err, size_t errlen);

/* Takes the exclusive flock(2) of a database file a command is about to
 * replace. Returns an fd to close after the replacement, -EBUSY when a
 * causeway writer has the file open, or -errno. */
int cw_store_lock_for_replace(const char *path);
/* Removes a database file and its side files (-wal, -shm, -journal). */
void cw_store_remove_files(const char *path);

/* A -errno from the store in words, "disk full (...)" for -ENOSPC. */
const char *cw_store_strerror(int code);

/* Size of the database file plus its WAL, in bytes. */
int64_t cw_store_size_bytes(struct cw_store *st);

/* Reads/writes the meta table. get returns a malloc'd string or NULL. */
char *cw_meta_get(sqlite3 *db, const char *key);
int cw_meta_set(sqlite3 *db, const char *key, const char *value);

#include "store/layout.h"

#endif
