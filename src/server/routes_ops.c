/* /api/v1/ops/series and /api/v1/ops/detail: per-op latency over time and
 * one op's distribution and slowest calls (docs/api.md).
 *
 * Both read the per-second aggregates (their log-linear histograms merge
 * exactly, util/hist.h), like `query`'s summary, so counts and
 * percentiles are the ones `ops` and `query --json` print for the same
 * seconds, and a 10-million-event store costs a pass over a few thousand
 * aggregate rows. Windows are therefore whole wall-clock seconds: every
 * second that overlaps [from, to]. Only the slowest calls come from the
 * events table, through the partial index events_slow. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "util/hist.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/utf8.h"

#define SERIES_DEFAULT_POINTS 60
#define SERIES_MAX_POINTS 300
#define SERIES_MAX_OPS 100
#define DETAIL_DEFAULT_LIMIT 20
#define DETAIL_MAX_LIMIT 1000

/* The window as inclusive wall seconds, defaulting to all the data. */
static int window_seconds(struct cw_server *s, struct MHD_Connection *c, sqlite3 *db, uint64_t deadline,
			  int64_t *from_s, int64_t *to_s, struct cw_reply *r)
{
	uint64_t from, to, lo, hi;
	int rc;

	if (cw_api_window(db, c, &from, &to, r))
		return -EINVAL;
	if ((rc = cw_api_data_range(db, &lo, &hi))) {
		cw_api_fail(s, deadline, rc, "reading the aggregates", r);
		return rc;
	}
	from = from ? from : lo;
	to = to ? to : hi;
	*from_s = (int64_t)(from / NSEC_PER_SEC);
	*to_s = to ? (int64_t)((to - 1) / NSEC_PER_SEC) : -1;
	return 0;
}

struct series_op {
	char *source, *op;
	uint64_t count, total_ns;
	json_t *p50, *p99, *calls;
};

static int cmp_series(const void *a, const void *b)
{
	const struct series_op *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(x->op, y->op);
}

/* Closes bucket b of op o: its percentiles, or null when it had no call. */
static void close_bucket(struct series_op *o, const struct cw_hist *h)
{
	json_array_append_new(o->p50, h->count ? json_integer((json_int_t)cw_hist_quantile(h, 0.5)) : json_null());
	json_array_append_new(o->p99, h->count ? json_integer((json_int_t)cw_hist_quantile(h, 0.99)) : json_null());
	json_array_append_new(o->calls, json_integer((json_int_t)h->count));
}

static void pad_to(struct series_op *o, size_t n)
{
	struct cw_hist empty = { 0 };

	while (json_array_size(o->calls) < n)
		close_bucket(o, &empty);
}

void cw_route_ops_series(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	struct series_op *ops = NULL, *cur = NULL;
	struct cw_hist *h = NULL;
	sqlite3_stmt *st = NULL;
	size_t nops = 0, npoints = 0;
	int64_t points, from_s, to_s, step = 1, bucket = -1;
	uint64_t deadline;
	json_t *arr = NULL;
	sqlite3 *db;
	int rc;

	if (cw_api_int(c, "points", 1, SERIES_MAX_POINTS, SERIES_DEFAULT_POINTS, &points, r))
		return;
	if (cw_api_open(s, &db, &deadline, r))
		return;
	if (window_seconds(s, c, db, deadline, &from_s, &to_s, r))
		goto out;
	if (to_s >= from_s) {
		step = (to_s - from_s + 1 + points - 1) / points;
		npoints = (size_t)((to_s - from_s + 1 + step - 1) / step);
	}
	if (!(h = calloc(1, sizeof(*h))) ||
	    !(ops = calloc(SERIES_MAX_OPS + 1, sizeof(*ops)))) {
		cw_reply_error(r, 500, "out of memory");
		goto out;
	}
	rc = sqlite3_prepare_v2(db,
				"SELECT source, op, second, count, sum_ns, max_ns, hist FROM aggregates"
				" WHERE second >= ?1 AND second <= ?2 ORDER BY source, op, second",
				-1, &st, NULL);
	if (rc != SQLITE_OK) {
		cw_api_fail(s, deadline, cw_sqlite_errno(rc), "ops series", r);
		goto out;
	}
	sqlite3_bind_int64(st, 1, from_s);
	sqlite3_bind_int64(st, 2, to_s);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *src = (const char *)sqlite3_column_text(st, 0), *op = (const char *)sqlite3_column_text(st, 1);
		int64_t b = (sqlite3_column_int64(st, 2) - from_s) / step;

		if (!src || !op)
			continue;
		if (!cur || strcmp(cur->source, src) || strcmp(cur->op, op)) {
			if (cur) {
				close_bucket(cur, h);
				pad_to(cur, npoints);
			}
			if (nops == SERIES_MAX_OPS) {
				/* Past the cap: fold nothing more in; the
				 * answer says it was cut. */
				cur = NULL;
				break;
			}
			cur = &ops[nops++];
			cur->source = strdup(src);
			cur->op = strdup(op);
			cur->p50 = json_array();
			cur->p99 = json_array();
			cur->calls = json_array();
			if (!cur->source || !cur->op || !cur->p50 || !cur->p99 || !cur->calls) {
				cw_reply_error(r, 500, "out of memory");
				goto out;
			}
			cw_hist_reset(h);
			bucket = 0;
		}
		if (b != bucket) {
			close_bucket(cur, h);
			pad_to(cur, (size_t)b);
			cw_hist_reset(h);
			bucket = b;
		}
		if (cw_hist_decode_merge(h, sqlite3_column_blob(st, 6), (size_t)sqlite3_column_bytes(st, 6),
					 (uint64_t)sqlite3_column_int64(st, 3), (uint64_t)sqlite3_column_int64(st, 4),
					 (uint64_t)sqlite3_column_int64(st, 5))) {
			cw_reply_error(r, 500, "malformed histogram in the aggregates of \"%s\"", op);
			goto out;
		}
		cur->count += (uint64_t)sqlite3_column_int64(st, 3);
		cur->total_ns += (uint64_t)sqlite3_column_int64(st, 4);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		cw_api_fail(s, deadline, cw_sqlite_errno(rc), "ops series", r);
		goto out;
	}
	if (cur) {
		close_bucket(cur, h);
		pad_to(cur, npoints);
	}
	qsort(ops, nops, sizeof(*ops), cmp_series);
	arr = json_array();
	for (size_t i = 0; i < nops; i++) {
		json_array_append_new(arr, json_pack("{s:o, s:o, s:I, s:I, s:O, s:O, s:O}", "source", cw_json_str(ops[i].source),
						     "op", cw_json_str(ops[i].op), "count", (json_int_t)ops[i].count, "total_ns",
						     (json_int_t)ops[i].total_ns, "p50_ns", ops[i].p50, "p99_ns",
						     ops[i].p99, "calls", ops[i].calls));
	}
	cw_reply_json(r, 200,
		      json_pack("{s:s, s:I, s:I, s:I, s:I, s:b, s:o}", "node", s->node, "from_ns",
				(json_int_t)(to_s >= from_s ? from_s * (int64_t)NSEC_PER_SEC : 0), "to_ns",
				(json_int_t)(to_s >= from_s ? (to_s + 1) * (int64_t)NSEC_PER_SEC : 0), "step_ns",
				(json_int_t)(step * (int64_t)NSEC_PER_SEC), "points", (json_int_t)npoints,
				"truncated", rc == SQLITE_ROW, "ops", arr));
out:
	sqlite3_finalize(st);
	for (size_t i = 0; ops && i < nops; i++) {
		free(ops[i].source);
		free(ops[i].op);
		json_decref(ops[i].p50);
		json_decref(ops[i].p99);
		json_decref(ops[i].calls);
	}
	free(ops);
	free(h);
	cw_server_close_db(db);
}

/* The op's aggregates over [from_s, to_s] merged into h. */
static int merge_op(sqlite3 *db, const char *source, const char *op, int64_t from_s, int64_t to_s, struct cw_hist *h)
{
	sqlite3_stmt *st;
	int rc, ret = 0;

	if ((rc = cw_api_prepare(db,
				 "SELECT count, sum_ns, max_ns, hist FROM aggregates WHERE source = ?1 AND op = ?2"
				 " AND second >= ?3 AND second <= ?4",
				 &st)))
		return rc;
	sqlite3_bind_text(st, 1, source, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, from_s);
	sqlite3_bind_int64(st, 4, to_s);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if ((ret = cw_hist_decode_merge(h, sqlite3_column_blob(st, 3), (size_t)sqlite3_column_bytes(st, 3),
						(uint64_t)sqlite3_column_int64(st, 0),
						(uint64_t)sqlite3_column_int64(st, 1),
						(uint64_t)sqlite3_column_int64(st, 2))))
			break;
	if (!ret && rc != SQLITE_DONE)
		ret = cw_sqlite_errno(rc);
	sqlite3_finalize(st);
	return ret;
}

/* The slowest calls of the op in the window: the anomalous ones through
 * events_slow first (the slowest calls are nearly always among them);
 * only when those are fewer than limit, the rest of the window's calls by
 * their rowid range. */
static int slowest(sqlite3 *db, const char *source, const char *op, int64_t from_s, int64_t to_s, int64_t limit,
		   json_t *out)
{
	static const enum cw_read rd[2] = { CW_READ_OP_SLOWEST, CW_READ_OP_SLOWEST_RANGE };
	int64_t lo = 0, hi = 0;
	int rc, ret = 0;

	for (int pass = 0; pass < 2 && (int64_t)json_array_size(out) < limit; pass++) {
		sqlite3_stmt *st;
		const char *sql;

		if (pass == 1 && ((ret = cw_events_id_at(db, (uint64_t)(from_s - 2) * NSEC_PER_SEC, &lo)) < 0 ||
				  (ret = cw_events_id_at(db, (uint64_t)(to_s + 3) * NSEC_PER_SEC, &hi)) < 0))
			return ret;
		if ((ret = cw_store_read_sql(db, rd[pass], &sql)) < 0)
			return ret;
		rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK)
			return cw_sqlite_errno(rc);
		sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, source, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, from_s * (int64_t)NSEC_PER_SEC);
		sqlite3_bind_int64(st, 4, (to_s + 1) * (int64_t)NSEC_PER_SEC);
		sqlite3_bind_int64(st, 5, limit - (int64_t)json_array_size(out));
		if (pass == 1) {
			sqlite3_bind_int64(st, 6, lo);
			sqlite3_bind_int64(st, 7, hi);
		}
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t err = sqlite3_column_int64(st, 9);
			json_t *py = cw_api_python(st, 6);

			/* an attributed stack: thread python_via's, waiting on this call */
			if (json_is_object(py) && sqlite3_column_type(st, 11) == SQLITE_INTEGER)
				json_object_set_new(py, "python_via", json_integer(sqlite3_column_int64(st, 11)));
			json_array_append_new(
				out, json_pack("{s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I}", "start_ns",
					       (json_int_t)sqlite3_column_int64(st, 0), "duration_ns",
					       (json_int_t)sqlite3_column_int64(st, 1), "pid",
					       (json_int_t)sqlite3_column_int64(st, 2), "tid",
					       (json_int_t)sqlite3_column_int64(st, 3), "comm", cw_api_text(st, 4),
					       "rank", cw_api_int_or_null(st, 5), "python", py,
					       "error", (json_int_t)err, "id", (json_int_t)sqlite3_column_int64(st, 10)));
		}
		if (rc != SQLITE_DONE)
			ret = cw_sqlite_errno(rc);
		sqlite3_finalize(st);
		if (ret)
			return ret;
	}
	return 0;
}

void cw_route_ops_detail(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	const char *op = cw_api_arg(c, "op"), *source = cw_api_arg(c, "source");
	struct cw_hist *h = NULL;
	json_t *hist = NULL, *slow = NULL;
	int64_t limit, from_s, to_s;
	uint64_t deadline;
	sqlite3 *db;
	int rc;

	if (!op || !*op) {
		cw_reply_error(r, 400, "missing \"op\"");
		return;
	}
	if (strlen(op) > 128 || (source && strlen(source) > 32)) {
		cw_reply_error(r, 400, "\"op\" or \"source\" too long");
		return;
	}
	source = source && *source ? source : "cuda";
	if (cw_api_int(c, "limit", 0, DETAIL_MAX_LIMIT, DETAIL_DEFAULT_LIMIT, &limit, r))
		return;
	if (cw_api_open(s, &db, &deadline, r))
		return;
	if (window_seconds(s, c, db, deadline, &from_s, &to_s, r))
		goto out;
	if (!(h = calloc(1, sizeof(*h)))) {
		cw_reply_error(r, 500, "out of memory");
		goto out;
	}
	cw_hist_reset(h);
	hist = json_array();
	slow = json_array();
	if ((rc = merge_op(db, source, op, from_s, to_s, h)) ||
	    (limit && h->count && (rc = slowest(db, source, op, from_s, to_s, limit, slow)))) {
		cw_api_fail(s, deadline, rc, "ops detail", r);
		goto out;
	}
	for (unsigned b = 0; b < CW_HIST_BUCKETS; b++)
		if (h->buckets[b])
			json_array_append_new(hist, json_pack("{s:I, s:I, s:I}", "lo_ns",
							      (json_int_t)cw_hist_bucket_low(b), "hi_ns",
							      (json_int_t)(b + 1 < CW_HIST_BUCKETS
										   ? cw_hist_bucket_low(b + 1)
										   : UINT64_MAX >> 1),
							      "count", (json_int_t)h->buckets[b]));
	cw_reply_json(r, 200,
		      json_pack("{s:s, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:O, s:O}", "node", s->node,
				"op", cw_json_str(op), "source", cw_json_str(source), "from_ns",
				(json_int_t)(to_s >= from_s ? from_s * (int64_t)NSEC_PER_SEC : 0), "to_ns",
				(json_int_t)(to_s >= from_s ? (to_s + 1) * (int64_t)NSEC_PER_SEC : 0), "count",
				(json_int_t)h->count, "p50_ns", (json_int_t)cw_hist_quantile(h, 0.5), "p95_ns",
				(json_int_t)cw_hist_quantile(h, 0.95), "p99_ns", (json_int_t)cw_hist_quantile(h, 0.99),
				"max_ns", (json_int_t)h->max_ns, "total_ns", (json_int_t)h->sum_ns, "histogram", hist,
				"slowest", slow));
out:
	json_decref(hist);
	json_decref(slow);
	free(h);
	cw_server_close_db(db);
}
