/* Inside store/ only: which layout a file has (see layout.h). */
#ifndef CW_STORE_LAYOUT_INT_H
#define CW_STORE_LAYOUT_INT_H

#include <sqlite3.h>

/* 1 when db keeps events in schema v7's tables (calls, kevents) under the
 * events view, 0 for an older file read as it is, or -errno. */
int cw_store_is_narrow(sqlite3 *db);
/* 1 when op is a traced call's op stored in calls (schema v7), 0 when its
 * rows are in kevents (or the file is older), or -errno. */
int cw_store_call_op(sqlite3 *db, const char *op);

/* The columns of the events view computed from calls c and its thread row
 * t, for readers that query the base tables. */
#define CW_CALL_MONO "(t.mono_base + c.t)"
#define CW_CALL_WALL "(t.mono_base + c.t + t.wall_off)"
#define CW_CALLS_FROM "calls c CROSS JOIN call_threads t ON t.id = c.th"
#define CW_CALL_OP_IS(param) "c.op = (SELECT min(id) FROM call_ops WHERE op = " param ")"

#endif
