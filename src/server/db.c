/* The read-only connection a route reads through, with the request's
 * deadline: past it, SQLite's progress handler interrupts any statement. */
#include "server/internal.h"

#include "store/store.h"
#include "util/timeutil.h"

static int progress_deadline(void *arg)
{
	return cw_monotonic_ns() > *(uint64_t *)arg;
}

int cw_server_open_db(struct cw_server *s, sqlite3 **out, uint64_t *deadline, char *err,
		      size_t errlen)
{
	int rc;

	/* The route owns the connection. */
	if ((rc = cw_store_open_reader(out, s->db_path, err, errlen)))
		return rc;
	*deadline = cw_monotonic_ns() + s->timeout_ns;
	sqlite3_progress_handler(*out, 1000, progress_deadline, deadline);
	return 0;
}

void cw_server_close_db(sqlite3 *db)
{
	sqlite3_close_v2(db);
}
