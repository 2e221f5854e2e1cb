/* Inside store/ only: which layout a file has (see layout.h). */
#ifndef CW_STORE_LAYOUT_INT_H
#define CW_STORE_LAYOUT_INT_H

#include <sqlite3.h>

/* 1 when db keeps events in schema v7's tables (calls, kevents) under the
 * events view, 0 for an older file read as it is, or -errno. */
int cw_store_is_narrow(sqlite3 *db);

#endif
