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

#define CW_SCHEMA_VERSION 7
/* The oldest version a read-only open accepts: later versions add indexes,
 * which speed reads but hold no data, the tenant columns and views, and the
 * GPU and NCCL tables, which readers of an older file treat as empty. */
#define CW_SCHEMA_MIN_READ_VERSION 1
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
void cw_store_close(struct cw_store *st);

/* Takes the exclusive flock(2) of a database file a command is about to
 * replace. Returns an fd to close after the replacement, -EBUSY when a
 * causeway writer has the file open, or -errno. */
int cw_store_lock_for_replace(const char *path);
/* Removes a database file and its side files (-wal, -shm, -journal). */
void cw_store_remove_files(const char *path);

/* Process-wide SQLite settings; cw_store_open calls it, other modules that
 * open connections of their own call it first too. */
void cw_sqlite_global_init(void);

/* A -errno from the store in words, "disk full (...)" for -ENOSPC. */
const char *cw_store_strerror(int code);

/* Translates a SQLite result code to -errno. */
int cw_sqlite_errno(int rc);
/* The same for a failure on db, looking at the OS error behind it: a full
 * disk is -ENOSPC and a read-only filesystem -EROFS whichever SQLite code
 * (I/O error, cannot open) carried them. */
int cw_sqlite_db_errno(sqlite3 *db, int rc);

/* Size of the database file plus its WAL, in bytes. */
int64_t cw_store_size_bytes(struct cw_store *st);

/* Reads/writes the meta table. get returns a malloc'd string or NULL. */
char *cw_meta_get(sqlite3 *db, const char *key);
int cw_meta_set(sqlite3 *db, const char *key, const char *value);

/* 1 when db keeps events in schema v7's tables (calls, kevents) under the
 * events view, 0 for an older file read as it is, or -errno. Readers that
 * must not scan the view read those tables directly. */
int cw_store_is_narrow(sqlite3 *db);
/* The smallest and largest event ids (0 when there is none), read by key
 * from calls and kevents in a schema v7 file (min() and max() over the
 * events view scan it whole), from events otherwise. 0 or -errno. */
int cw_events_id_bounds(sqlite3 *db, int64_t *min_id, int64_t *max_id);
/* 1 when op is a traced call's op stored in calls (schema v7), 0 when its
 * rows are in kevents (or the file is older), or -errno. */
int cw_store_call_op(sqlite3 *db, const char *op);

/* The columns of the events view computed from calls c and its thread row
 * t, for readers that query the base tables. */
#define CW_CALL_MONO "(t.mono_base + c.t)"
#define CW_CALL_WALL "(t.mono_base + c.t + t.wall_off)"
#define CW_CALLS_FROM "calls c CROSS JOIN call_threads t ON t.id = c.th"
#define CW_CALL_OP_IS(param) "c.op = (SELECT min(id) FROM call_ops WHERE op = " param ")"
/* For scans of many events that need only these columns: the view
 * without its detail, argument and flag columns (each a lookup per call),
 * in a third less time. Schema v7 files only. */
#define CW_EVENTS_LIGHT                                                                                       \
	"(SELECT c.id AS id, t.node AS node, t.pid AS pid, t.tid AS tid, t.comm AS comm, o.source AS source,"  \
	" o.op AS op, c.dur AS duration_ns, t.mono_base + c.t AS mono_ns, t.mono_base + c.t + t.wall_off AS wall_ns" \
	" FROM calls c CROSS JOIN call_threads t ON t.id = c.th CROSS JOIN call_ops o ON o.id = c.op"           \
	" UNION ALL SELECT id, node, pid, tid, comm, source, op, duration_ns, mono_ns, wall_ns FROM kevents)"
/* sql with its first "FROM events " read from CW_EVENTS_LIGHT when db
 * is a v7 file: a malloc'd string, or NULL without memory. */
char *cw_events_light_sql(sqlite3 *db, const char *sql);

/* Runs one statement with no results; returns 0 or -errno. */
int cw_exec(sqlite3 *db, const char *sql);

#endif
