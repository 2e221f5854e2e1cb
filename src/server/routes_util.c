/* Helpers shared by the dashboard routes (routes_api.h). */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/read_error.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/utf8.h"

const char *cw_api_arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

/* HTTP status for an error opening the database (503 unreadable, else 500). */
static int cw_api_db_status(int rc)
{
	return rc == -ENOENT || rc == -EBUSY || rc == -ENOTSUP || rc == -EPROTO || rc == -EACCES ||
			       rc == -EIO
		       ? 503
		       : 500;
}

int cw_api_open(struct cw_server *s, sqlite3 **db, uint64_t *deadline, struct cw_reply *r)
{
	char err[512];
	int rc = cw_server_open_db(s, db, deadline, err, sizeof(err));

	if (rc)
		cw_reply_error(r, cw_api_db_status(rc), "%s", err);
	return rc;
}

void cw_api_fail(struct cw_server *s, uint64_t deadline, int rc, const char *what, struct cw_reply *r)
{
	char why[256];

	if (cw_monotonic_ns() > deadline || rc == -ETIMEDOUT || rc == -EINTR)
		cw_reply_error(r, 504, "%s exceeded the %llu ms request limit", what,
			       (unsigned long long)(s->timeout_ns / NSEC_PER_MSEC));
	else
		cw_reply_error(r, 500, "%s failed: %s", what,
			       cw_store_read_strerror(NULL, rc < 0 ? rc : -rc, why, sizeof(why)));
}

int cw_api_window_flags(sqlite3 *db, struct MHD_Connection *c, unsigned flags, uint64_t *from, uint64_t *to,
			struct cw_reply *r)
{
	struct cw_scope sc = { .names = CW_SCOPE_PARAMS };
	char err[512];
	int rc;

	*from = *to = 0;
	sc.since = cw_api_arg(c, "since");
	sc.from = cw_api_arg(c, "from");
	sc.to = cw_api_arg(c, "to");
	if (cw_scope_parse(&sc, err, sizeof(err))) {
		cw_reply_error(r, 400, "%s", err);
		return -EINVAL;
	}
	if ((rc = cw_scope_window(db, &sc, flags)) < 0) {
		cw_reply_error(r, rc == -ETIMEDOUT || rc == -EINTR ? 504 : 500, "reading the window failed: %s",
			       cw_store_read_strerror(NULL, rc, err, sizeof(err)));
		return rc;
	}
	*from = sc.from_ns;
	*to = sc.to_ns;
	return 0;
}

int cw_api_window(sqlite3 *db, struct MHD_Connection *c, uint64_t *from, uint64_t *to, struct cw_reply *r)
{
	return cw_api_window_flags(db, c, 0, from, to, r);
}

int cw_api_int(struct MHD_Connection *c, const char *k, int64_t lo, int64_t hi, int64_t def, int64_t *out,
	       struct cw_reply *r)
{
	const char *v = cw_api_arg(c, k);
	char *end;
	long long x;

	*out = def;
	if (!v)
		return 0;
	errno = 0;
	x = strtoll(v, &end, 10);
	if (!*v || *end || errno || x < lo || x > hi) {
		cw_reply_error(r, 400, "invalid %s \"%s\" (an integer from %lld to %lld)", k, v, (long long)lo,
			       (long long)hi);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

int cw_api_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);

	return rc == SQLITE_OK ? 0 : cw_sqlite_errno(rc);
}

json_t *cw_api_window_answer(const struct cw_server *s, uint64_t from, uint64_t to, const char *k, json_t *v)
{
	return json_pack("{s:s, s:I, s:I, s:o}", "node", s->node, "from_ns", (json_int_t)from, "to_ns",
			 (json_int_t)to, k, v);
}

json_t *cw_api_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? cw_json_str((const char *)t) : json_null();
}

json_t *cw_api_int_or_null(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null() : json_integer(sqlite3_column_int64(st, i));
}

json_t *cw_api_python(sqlite3_stmt *st, int i)
{
	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return json_null();
	return json_pack("{s:o, s:o, s:o}", "file", cw_api_text(st, i), "line", cw_api_int_or_null(st, i + 1),
			 "function", cw_api_text(st, i + 2));
}

int cw_api_data_range(sqlite3 *db, uint64_t *from, uint64_t *to)
{
	sqlite3_stmt *st;
	int rc;

	*from = *to = 0;
	rc = sqlite3_prepare_v2(db, "SELECT min(second), max(second) FROM aggregates", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*from = (uint64_t)cw_clamp_second(sqlite3_column_int64(st, 0)) * NSEC_PER_SEC;
		*to = ((uint64_t)cw_clamp_second(sqlite3_column_int64(st, 1)) + 1) * NSEC_PER_SEC;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}
