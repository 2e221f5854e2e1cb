/* Reader error wording (read_error.h). */
#include <errno.h>
#include <stdio.h>

#include "store/read_error.h"
#include "store/store.h"

const char *cw_store_read_strerror(sqlite3 *db, int code, char *buf, size_t len)
{
	int ec = db ? sqlite3_errcode(db) & 0xff : SQLITE_OK;

	if (code != -EINVAL)
		return cw_store_strerror(code);
	if (ec != SQLITE_OK && ec != SQLITE_ROW && ec != SQLITE_DONE)
		snprintf(buf, len, "malformed database content (%s)", sqlite3_errmsg(db));
	else
		snprintf(buf, len, "malformed database content (a value out of range or of the wrong type)");
	return buf;
}
