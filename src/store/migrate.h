/* Schema migrations keyed by PRAGMA user_version. */
#ifndef CW_STORE_MIGRATE_H
#define CW_STORE_MIGRATE_H

#include <sqlite3.h>

#define CW_SCHEMA_VERSION 11

/* The TID a Python stack was attributed through (docs/python.md, "Threads
 * without Python frames"), read from a py_stacks row's frames JSON, whose
 * last element is {"python_via": TID} for such a stack: how files before
 * v8 hold it, and how rows from a peer or an input that lack the column
 * get it. An SQL expression over the JSON text expression `frames`. */
#define CW_PYVIA_FROM_FRAMES(frames)                                                                       \
	"(SELECT json_extract(j.value, '$.python_via') FROM json_each(" frames ") j"                         \
	" WHERE json_type(j.value, '$.python_via') = 'integer')"
/* The oldest version a read-only open accepts: later versions add indexes,
 * which speed reads but hold no data, the tenant columns and views, and the
 * GPU and NCCL tables, which readers of an older file treat as empty. */
#define CW_SCHEMA_MIN_READ_VERSION 1

/* Brings db to CW_SCHEMA_VERSION in one transaction. Returns 0, -EPROTO
 * when the file is newer than this build, or -errno. */
int cw_migrate(sqlite3 *db, int *found_version);
int cw_schema_version(sqlite3 *db, int *version);
/* The same, up to version target only (tests build older files with it). */
int cw_migrate_to(sqlite3 *db, int target, int *found_version);

#endif
