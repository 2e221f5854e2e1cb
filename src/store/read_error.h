/* The sentence for a reader's failure on a database it could open. */
#ifndef CW_STORE_READ_ERROR_H
#define CW_STORE_READ_ERROR_H

#include <sqlite3.h>
#include <stddef.h>

/* -EINVAL from a reader (SQLITE_ERROR, a mismatch, or a row the decoder
 * refuses) is the file's content, never the caller's argument: it is worded
 * as malformed content, with SQLite's own message when it has one ("no
 * such table: calls"). Any other code: as cw_store_strerror. Returns buf
 * or a static string. */
const char *cw_store_read_strerror(sqlite3 *db, int code, char *buf, size_t len);

#endif
