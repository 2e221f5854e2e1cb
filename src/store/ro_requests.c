/* The requests of a window and their per-route summary (ro_requests.h).
 *
 * Two statements: the summary reads the window's rows once (method, path,
 * status, duration, TTFT: no sort) into one log-linear histogram per
 * route, and counts the rows the list's filters select on the way; the
 * list is the window's rows ordered by duration or start, LIMIT n (a
 * bounded sort: SQLite keeps only the n best). requests has no wall_ns
 * index (only (mono_ns)): a window is a scan of the table, which the
 * tiers of retention keep bounded, under the caller's time limit. */
#define _GNU_SOURCE
#include "store/ro_requests.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/requests.h"
#include "store/sqlite_util.h"
#include "util/hist.h"
#include "util/timeutil.h"
#include "util/utf8.h"

/* Both statements bind: ?1 from, ?2 to (0: open), ?3 path (exact, or a
 * prefix when it ends in '*'), ?4 method, ?5 node, ?6 pid (0: any). */
#define REQ_WHERE                                                                                           \
	" WHERE (?1 = 0 OR r.wall_ns >= ?1) AND (?2 = 0 OR r.wall_ns <= ?2)"                                \
	" AND (?3 IS NULL OR r.path = ?3 OR (substr(?3, -1) = '*'"                                          \
	" AND substr(r.path, 1, length(?3) - 1) = substr(?3, 1, length(?3) - 1)))"                          \
	" AND (?4 IS NULL OR r.method = ?4) AND (?5 IS NULL OR r.node = ?5) AND (?6 = 0 OR r.pid = ?6)"
/* The list's own filters: ?7 status class (0 any, -1 none, 1..5), ?8
 * minimum duration; ?9 the limit. */
#define REQ_LIST_WHERE                                                                                      \
	" AND (?7 = 0 OR (?7 = -1 AND r.status IS NULL) OR (?7 > 0 AND r.status / 100 = ?7))"            \
	" AND r.duration_ns >= ?8"

static const char summary_sql[] =
	"SELECT r.method, r.path, r.status, r.duration_ns, r.ttft_ns, r.end_reason FROM requests r" REQ_WHERE;

static const char *const list_sql[2] = {
	[CW_REQ_ORDER_SLOWEST] = "SELECT r.id, r.node, r.wall_ns, r.mono_ns, r.method, r.path, r.status, r.ttft_ns,"
				 " r.duration_ns, r.streamed, r.bytes_in, r.bytes_out, r.body_events, r.itl_max_ns,"
				 " r.itl_mean_ns, r.end_reason, r.pid, r.tid, r.resp_tid, r.comm, r.conn_id, r.port,"
				 " r.cgroup_id, coalesce(cg.container_id, cg.container, cg.path)"
				 " FROM requests r LEFT JOIN cgroups cg ON cg.node = r.node AND cg.cgroup_id = r.cgroup_id"
				 REQ_WHERE REQ_LIST_WHERE " ORDER BY r.duration_ns DESC, r.id DESC LIMIT ?9",
	[CW_REQ_ORDER_RECENT] = "SELECT r.id, r.node, r.wall_ns, r.mono_ns, r.method, r.path, r.status, r.ttft_ns,"
				" r.duration_ns, r.streamed, r.bytes_in, r.bytes_out, r.body_events, r.itl_max_ns,"
				" r.itl_mean_ns, r.end_reason, r.pid, r.tid, r.resp_tid, r.comm, r.conn_id, r.port,"
				" r.cgroup_id, coalesce(cg.container_id, cg.container, cg.path)"
				" FROM requests r LEFT JOIN cgroups cg ON cg.node = r.node AND cg.cgroup_id = r.cgroup_id"
				REQ_WHERE REQ_LIST_WHERE " ORDER BY r.wall_ns DESC, r.id DESC LIMIT ?9",
};

int cw_req_order_parse(const char *s, enum cw_req_order *out)
{
	if (!s || !strcmp(s, "slowest"))
		*out = CW_REQ_ORDER_SLOWEST;
	else if (!strcmp(s, "recent"))
		*out = CW_REQ_ORDER_RECENT;
	else
		return -EINVAL;
	return 0;
}

int cw_req_status_class_parse(const char *s, int *out)
{
	if (!strcmp(s, "none")) {
		*out = -1;
		return 0;
	}
	if (s[0] >= '1' && s[0] <= '5' && (!s[1] || (!strcmp(s + 1, "xx") || !strcmp(s + 1, "XX")))) {
		*out = s[0] - '0';
		return 0;
	}
	return -EINVAL;
}

static int no_table(sqlite3 *db, int rc)
{
	return rc == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such table");
}

int cw_req_newest_wall(sqlite3 *db, uint64_t *out)
{
	sqlite3_stmt *st;
	int rc;

	*out = 0;
	/* max() over the rowid's end: rows are appended as requests end,
	 * nearly in start order; the last thousand hold the newest start. */
	rc = sqlite3_prepare_v2(db,
				"SELECT max(wall_ns) FROM (SELECT wall_ns FROM requests ORDER BY id DESC LIMIT 1000)",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return no_table(db, rc) ? 0 : cw_sqlite_db_errno(db, rc);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER &&
	    sqlite3_column_int64(st, 0) > 0)
		*out = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static void bind_common(sqlite3_stmt *st, const struct cw_req_filter *f)
{
	sqlite3_bind_int64(st, 1, (int64_t)f->from_ns);
	sqlite3_bind_int64(st, 2, (int64_t)f->to_ns);
	if (f->path)
		sqlite3_bind_text(st, 3, f->path, -1, SQLITE_STATIC);
	if (f->method)
		sqlite3_bind_text(st, 4, f->method, -1, SQLITE_STATIC);
	if (f->node)
		sqlite3_bind_text(st, 5, f->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, f->pid);
}

/* One route of the summary: text as stored (bounded by the writer,
 * CW_REQ_METHOD_MAX and CW_REQ_PATH_MAX, and cut here again). */
struct route_acc {
	char method[CW_REQ_METHOD_MAX + 1];
	char path[CW_REQ_PATH_MAX + 1];
	int other; /* the routes past CW_REQ_SUMMARY_ROUTES */
	uint64_t errors, client_errors;
	struct cw_hist dur, ttft;
};

static void copy_text(char *dst, size_t cap, const unsigned char *s)
{
	size_t n = s ? strnlen((const char *)s, cap - 1) : 0;

	memcpy(dst, s ? (const char *)s : "", n);
	dst[n] = '\0';
}

static struct route_acc *route_of(struct route_acc *v, size_t *n, const unsigned char *m, const unsigned char *p)
{
	char method[CW_REQ_METHOD_MAX + 1], path[CW_REQ_PATH_MAX + 1];
	struct route_acc *a;

	copy_text(method, sizeof(method), m);
	copy_text(path, sizeof(path), p);
	for (size_t i = 0; i < *n; i++)
		if (!v[i].other && !strcmp(v[i].method, method) && !strcmp(v[i].path, path))
			return &v[i];
	if (*n == CW_REQ_SUMMARY_ROUTES) {
		/* The last slot holds everything past the cap. */
		a = &v[CW_REQ_SUMMARY_ROUTES];
		if (!a->other) {
			a->other = 1;
			cw_hist_reset(&a->dur);
			cw_hist_reset(&a->ttft);
		}
		return a;
	}
	a = &v[(*n)++];
	memcpy(a->method, method, sizeof(method));
	memcpy(a->path, path, sizeof(path));
	cw_hist_reset(&a->dur);
	cw_hist_reset(&a->ttft);
	return a;
}

/* Milliseconds to the microsecond: a histogram percentile carries no
 * more than that, and a row's own nanoseconds are in its _ns fields. */
static json_t *ms(uint64_t ns)
{
	return json_real((double)((ns + 500) / 1000) / 1e3);
}

static json_t *ms_col(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null() : ms((uint64_t)sqlite3_column_int64(st, i));
}

static json_t *int_col(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null() : json_integer(sqlite3_column_int64(st, i));
}

static json_t *text_col(sqlite3_stmt *st, int i)
{
	return cw_json_str((const char *)sqlite3_column_text(st, i));
}

static json_t *route_json(const struct route_acc *a)
{
	const struct cw_hist *d = &a->dur, *t = &a->ttft;

	return json_pack("{s:o, s:o, s:b, s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:o}", "method",
			 a->other ? json_null() : cw_json_str(a->method), "path",
			 cw_json_str(a->other ? CW_REQ_OTHER_ROUTE : a->path), "other", a->other, "count",
			 (json_int_t)d->count, "errors", (json_int_t)a->errors, "client_errors",
			 (json_int_t)a->client_errors, "p50_ms", ms(cw_hist_quantile(d, 0.5)), "p95_ms",
			 ms(cw_hist_quantile(d, 0.95)), "p99_ms", ms(cw_hist_quantile(d, 0.99)), "max_ms",
			 ms(d->max_ns), "ttft_count", (json_int_t)t->count, "ttft_p50_ms",
			 t->count ? ms(cw_hist_quantile(t, 0.5)) : json_null(), "ttft_p95_ms",
			 t->count ? ms(cw_hist_quantile(t, 0.95)) : json_null(), "ttft_p99_ms",
			 t->count ? ms(cw_hist_quantile(t, 0.99)) : json_null());
}

static int cmp_route(const void *x, const void *y)
{
	const struct route_acc *a = x, *b = y;
	int c;

	if (a->other != b->other)
		return a->other - b->other;
	if (a->dur.count != b->dur.count)
		return a->dur.count > b->dur.count ? -1 : 1;
	if ((c = strcmp(a->path, b->path)))
		return c;
	return strcmp(a->method, b->method);
}

static int list_match(const struct cw_req_filter *f, sqlite3_stmt *st)
{
	int has_status = sqlite3_column_type(st, 2) != SQLITE_NULL;
	int64_t status = sqlite3_column_int64(st, 2);

	if ((uint64_t)sqlite3_column_int64(st, 3) < f->min_duration_ns)
		return 0;
	if (f->status_class == -1)
		return !has_status;
	return !f->status_class || (has_status && status / 100 == f->status_class);
}

/* The per-route summary into *routes, and the count of the rows the list
 * selects into *matched. */
static int summarise(sqlite3 *db, const struct cw_req_filter *f, json_t *routes, int64_t *matched, int *cut)
{
	struct route_acc *v = calloc(CW_REQ_SUMMARY_ROUTES + 1, sizeof(*v));
	sqlite3_stmt *st = NULL;
	int64_t rows = 0;
	size_t n = 0;
	int rc, ret = 0;

	*matched = 0;
	*cut = 0;
	if (!v)
		return -ENOMEM;
	if ((rc = sqlite3_prepare_v2(db, summary_sql, -1, &st, NULL)) != SQLITE_OK) {
		ret = cw_sqlite_db_errno(db, rc);
		goto out;
	}
	bind_common(st, f);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct route_acc *a;
		const unsigned char *end = sqlite3_column_text(st, 5);
		int64_t status = sqlite3_column_int64(st, 2);
		int has_status = sqlite3_column_type(st, 2) != SQLITE_NULL;

		if (rows++ == CW_REQ_SUMMARY_SCAN_MAX) {
			*cut = 1;
			break;
		}
		a = route_of(v, &n, sqlite3_column_text(st, 0), sqlite3_column_text(st, 1));
		cw_hist_add(&a->dur, (uint64_t)sqlite3_column_int64(st, 3));
		if (sqlite3_column_type(st, 4) != SQLITE_NULL)
			cw_hist_add(&a->ttft, (uint64_t)sqlite3_column_int64(st, 4));
		/* CW_REQ_FAILED_SQL, the failed requests retention keeps. */
		if ((has_status && status >= 500) || (!has_status && end && !strcmp((const char *)end, "closed")))
			a->errors++;
		else if (has_status && status >= 400)
			a->client_errors++;
		*matched += list_match(f, st);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ret = cw_sqlite_db_errno(db, rc);
		goto out;
	}
	if (v[CW_REQ_SUMMARY_ROUTES].other)
		n++;
	qsort(v, n, sizeof(*v), cmp_route);
	for (size_t i = 0; i < n; i++)
		if (json_array_append_new(routes, route_json(&v[i]))) {
			ret = -ENOMEM;
			break;
		}
out:
	sqlite3_finalize(st);
	free(v);
	return ret;
}

static json_t *row_json(sqlite3_stmt *st)
{
	uint64_t wall = (uint64_t)sqlite3_column_int64(st, 2);
	char iso[40];
	json_t *o;

	cw_format_time(wall, iso, sizeof(iso));
	o = json_pack("{s:I, s:o, s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "id",
		      (json_int_t)sqlite3_column_int64(st, 0), "node", text_col(st, 1), "wall", iso, "wall_ns",
		      (json_int_t)wall, "mono_ns", (json_int_t)sqlite3_column_int64(st, 3), "method", text_col(st, 4),
		      "path", text_col(st, 5), "status", int_col(st, 6), "ttft_ms", ms_col(st, 7), "duration_ms",
		      ms_col(st, 8), "ttft_ns", int_col(st, 7), "duration_ns", int_col(st, 8), "streamed",
		      sqlite3_column_int(st, 9) != 0);
	if (!o)
		return NULL;
	json_object_set_new(o, "bytes_in", int_col(st, 10));
	json_object_set_new(o, "bytes_out", int_col(st, 11));
	json_object_set_new(o, "body_events", int_col(st, 12));
	json_object_set_new(o, "itl_max_ms", ms_col(st, 13));
	json_object_set_new(o, "itl_mean_ms", ms_col(st, 14));
	json_object_set_new(o, "end_reason", text_col(st, 15));
	json_object_set_new(o, "pid", int_col(st, 16));
	json_object_set_new(o, "tid", int_col(st, 17));
	json_object_set_new(o, "resp_tid", int_col(st, 18));
	json_object_set_new(o, "comm", text_col(st, 19));
	json_object_set_new(o, "conn_id", int_col(st, 20));
	json_object_set_new(o, "port", int_col(st, 21));
	json_object_set_new(o, "cgroup_id", int_col(st, 22));
	json_object_set_new(o, "container", cw_json_strcap((const char *)sqlite3_column_text(st, 23), 512));
	return o;
}

static int list(sqlite3 *db, const struct cw_req_filter *f, json_t *rows)
{
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if ((rc = sqlite3_prepare_v2(db, list_sql[f->order == CW_REQ_ORDER_RECENT], -1, &st, NULL)) != SQLITE_OK)
		return cw_sqlite_db_errno(db, rc);
	bind_common(st, f);
	sqlite3_bind_int(st, 7, f->status_class);
	sqlite3_bind_int64(st, 8, f->min_duration_ns > INT64_MAX ? INT64_MAX : (int64_t)f->min_duration_ns);
	sqlite3_bind_int64(st, 9, f->limit);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (json_array_append_new(rows, row_json(st))) {
			ret = -ENOMEM;
			break;
		}
	if (!ret && rc != SQLITE_DONE)
		ret = cw_sqlite_db_errno(db, rc);
	sqlite3_finalize(st);
	return ret;
}

int cw_req_read(sqlite3 *db, const struct cw_req_filter *f, json_t **out)
{
	json_t *rows = json_array(), *routes = json_array();
	int64_t matched = 0;
	int cut = 0, ret, rc;
	sqlite3_stmt *st;

	*out = NULL;
	if (!rows || !routes) {
		ret = -ENOMEM;
		goto fail;
	}
	/* A file older than v11: nothing to read, and it says so. */
	rc = sqlite3_prepare_v2(db, "SELECT 1 FROM requests LIMIT 0", -1, &st, NULL);
	sqlite3_finalize(st);
	if (rc != SQLITE_OK) {
		if (!no_table(db, rc)) {
			ret = cw_sqlite_db_errno(db, rc);
			goto fail;
		}
		*out = json_pack("{s:b, s:o, s:I, s:b, s:o, s:b}", "requests_table", 0, "requests", rows, "matched",
				 (json_int_t)0, "truncated", 0, "routes", routes, "summary_truncated", 0);
		return *out ? 0 : -ENOMEM;
	}
	if ((ret = summarise(db, f, routes, &matched, &cut)) || (f->limit > 0 && (ret = list(db, f, rows))))
		goto fail;
	*out = json_pack("{s:b, s:o, s:I, s:b, s:o, s:b}", "requests_table", 1, "requests", rows, "matched",
			 (json_int_t)matched, "truncated", matched > (int64_t)json_array_size(rows), "routes", routes,
			 "summary_truncated", cut);
	return *out ? 0 : -ENOMEM;
fail:
	json_decref(rows);
	json_decref(routes);
	return ret;
}
