/* Inference requests (schema v11): a request's row, its count in the
 * durable request_totals, and engine metric samples. Also the bounds on
 * wire text that store/requests.h declares. */
#include "store/writer_core.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/requests.h"

const uint64_t cw_req_bucket_ns[CW_REQ_BUCKETS] = {
	10000000ull,  25000000ull,   50000000ull,   100000000ull,  250000000ull,
	500000000ull, 1000000000ull, 2500000000ull, 5000000000ull, 10000000000ull,
};
const char *const cw_req_bucket_col[CW_REQ_BUCKETS] = {
	"10ms", "25ms", "50ms", "100ms", "250ms", "500ms", "1s", "2500ms", "5s", "10s",
};
const char *const cw_req_bucket_le[CW_REQ_BUCKETS] = {
	"0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10",
};

size_t cw_req_clean(char *dst, size_t cap, const char *src, int stop_at_query)
{
	size_t n = 0;

	if (!cap)
		return 0;
	for (; src && src[n] && n + 1 < cap; n++) {
		unsigned char c = (unsigned char)src[n];

		if (stop_at_query && (c == '?' || c == '#'))
			break;
		dst[n] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	dst[n] = 0;
	return n;
}

const char *cw_req_method_label(const char *m)
{
	static const char *const known[] = { "GET",  "POST",	"PUT",	   "DELETE", "PATCH",
					     "HEAD", "OPTIONS", "CONNECT", "TRACE" };

	if (!m || !*m)
		return CW_REQ_UNKNOWN;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(m, known[i]))
			return known[i];
	return "OTHER";
}

int cw_req_status_key(int status)
{
	return status >= 100 && status <= 599 ? status : 0;
}

const char *cw_req_code_class(int status_key)
{
	static const char *const cls[] = { "1xx", "2xx", "3xx", "4xx", "5xx" };

	return status_key >= 100 && status_key <= 599 ? cls[status_key / 100 - 1] : "none";
}

/* INSERT ... ON CONFLICT DO UPDATE adding one request: ?1 node, ?2 port,
 * ?3 method, ?4 route, ?5 status, ?6 duration_ns, ?7 ttft_ns (NULL: no
 * body), ?8 wall_ns. Each bucket column gains (value <= bound): 1 or 0. */
int writer_req_total_sql(struct strbuf *sb)
{
	int err, i;

	err = strbuf_adds(sb, "INSERT INTO request_totals (node, port, method, route, status, count, duration_sum_ns,"
			      " ttft_count, ttft_sum_ns, first_wall_ns, last_wall_ns");
	for (i = 0; i < CW_REQ_BUCKETS && !err; i++)
		err = strbuf_addf(sb, ", dur_le_%s, ttft_le_%s", cw_req_bucket_col[i], cw_req_bucket_col[i]);
	if (!err)
		err = strbuf_adds(sb, ") VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7 IS NOT NULL, coalesce(?7, 0), ?8, ?8");
	for (i = 0; i < CW_REQ_BUCKETS && !err; i++)
		err = strbuf_addf(sb, ", ?6 <= %llu, coalesce(?7 <= %llu, 0)", (unsigned long long)cw_req_bucket_ns[i],
				  (unsigned long long)cw_req_bucket_ns[i]);
	if (!err)
		err = strbuf_adds(
			sb,
			") ON CONFLICT (node, port, method, route, status) DO UPDATE SET"
			" count = count + 1, duration_sum_ns = duration_sum_ns + excluded.duration_sum_ns,"
			" ttft_count = ttft_count + excluded.ttft_count,"
			" ttft_sum_ns = ttft_sum_ns + excluded.ttft_sum_ns,"
			" first_wall_ns = min(coalesce(first_wall_ns, excluded.first_wall_ns), excluded.first_wall_ns),"
			" last_wall_ns = max(coalesce(last_wall_ns, 0), excluded.last_wall_ns)");
	for (i = 0; i < CW_REQ_BUCKETS && !err; i++)
		err = strbuf_addf(
			sb,
			", dur_le_%s = dur_le_%s + excluded.dur_le_%s, ttft_le_%s = ttft_le_%s + excluded.ttft_le_%s",
			cw_req_bucket_col[i], cw_req_bucket_col[i], cw_req_bucket_col[i], cw_req_bucket_col[i],
			cw_req_bucket_col[i], cw_req_bucket_col[i]);
	return err;
}

static void forget_routes(struct cw_writer *w)
{
	for (int i = 0; i < w->nroutes; i++)
		free(w->routes[i]);
	w->nroutes = 0;
	w->routes_loaded = 0;
}

void writer_requests_free(struct cw_writer *w)
{
	forget_routes(w);
	free(w->routes);
	w->routes = NULL;
}

static int add_route(struct cw_writer *w, const char *method, const char *path)
{
	size_t lm = strlen(method), lp = strlen(path);
	char *k;

	if (w->nroutes >= CW_REQ_MAX_ROUTES)
		return 0;
	k = malloc(lm + lp + 2);
	if (!k)
		return -ENOMEM;
	memcpy(k, method, lm);
	k[lm] = '\n';
	memcpy(k + lm + 1, path, lp + 1);
	w->routes[w->nroutes++] = k;
	return 0;
}

/* The node's routes as request_totals holds them (a file a previous
 * session wrote keeps its routes; the cap is the file's, not the run's). */
static int load_routes(struct cw_writer *w)
{
	sqlite3_stmt *s;
	int rc, err = 0;

	forget_routes(w);
	if (!w->routes && !(w->routes = calloc(CW_REQ_MAX_ROUTES, sizeof(*w->routes))))
		return -ENOMEM;
	rc = sqlite3_prepare_v2(w->db,
				"SELECT method, route FROM request_totals WHERE node = ?1 AND route != ?2"
				" GROUP BY method, route ORDER BY min(first_wall_ns), method, route LIMIT ?3",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(w->db, rc);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, CW_REQ_OTHER_ROUTE, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 3, CW_REQ_MAX_ROUTES);
	while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW)
		err = add_route(w, (const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 1));
	sqlite3_finalize(s);
	if (err)
		return err;
	if (rc != SQLITE_DONE)
		return cw_sqlite_db_errno(w->db, rc);
	w->routes_loaded = 1;
	return 0;
}

/* The route a request is counted under: its path while the node has
 * fewer than CW_REQ_MAX_ROUTES routes or already has this one, else
 * "other". *other: 1 when it is "other". */
static int route_of(struct cw_writer *w, const char *method, const char *path, const char **route, int *other)
{
	size_t lm = strlen(method);
	int err;

	*route = path;
	*other = 0;
	if (!w->routes_loaded && (err = load_routes(w)))
		return err;
	for (int i = 0; i < w->nroutes; i++) {
		const char *k = w->routes[i];

		if (!strncmp(k, method, lm) && k[lm] == '\n' && !strcmp(k + lm + 1, path))
			return 0;
	}
	if (w->nroutes < CW_REQ_MAX_ROUTES && strcmp(path, CW_REQ_OTHER_ROUTE))
		return add_route(w, method, path);
	*route = CW_REQ_OTHER_ROUTE;
	*other = 1;
	return 0;
}

static void bind_pos(sqlite3_stmt *s, int i, int64_t v)
{
	if (v > 0)
		sqlite3_bind_int64(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

static int insert_request(struct cw_writer *w, const struct cw_request_row *r, const char *method, const char *path,
			  const char *comm, const char *end)
{
	sqlite3_stmt *s = w->st[ST_REQUEST];

	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	if (w->session_id)
		sqlite3_bind_int64(s, 2, w->session_id);
	sqlite3_bind_int64(s, 3, (int64_t)r->wall_ns);
	sqlite3_bind_int64(s, 4, (int64_t)r->start_mono_ns);
	sqlite3_bind_int64(s, 5, r->pid);
	sqlite3_bind_int64(s, 6, r->tid);
	bind_pos(s, 7, r->resp_tid);
	bind_pos(s, 8, (int64_t)r->cgroup_id);
	if (*comm)
		sqlite3_bind_text(s, 9, comm, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 10, (int64_t)r->conn_id);
	bind_pos(s, 11, r->port);
	if (*method)
		sqlite3_bind_text(s, 12, method, -1, SQLITE_STATIC);
	if (r->path)
		sqlite3_bind_text(s, 13, path, -1, SQLITE_STATIC);
	bind_pos(s, 14, r->status);
	sqlite3_bind_int64(s, 15, (int64_t)r->bytes_in);
	sqlite3_bind_int64(s, 16, (int64_t)r->bytes_out);
	if (r->ttft_ns >= 0)
		sqlite3_bind_int64(s, 17, r->ttft_ns);
	sqlite3_bind_int64(s, 18, (int64_t)r->duration_ns);
	sqlite3_bind_int(s, 19, r->streamed ? 1 : 0);
	sqlite3_bind_int64(s, 20, r->body_events);
	if (r->itl_max_ns >= 0)
		sqlite3_bind_int64(s, 21, r->itl_max_ns);
	if (r->itl_mean_ns >= 0)
		sqlite3_bind_int64(s, 22, r->itl_mean_ns);
	sqlite3_bind_text(s, 23, end, -1, SQLITE_STATIC);
	return step_reset(s);
}

static int count_request(struct cw_writer *w, const struct cw_request_row *r, const char *path, int *other)
{
	sqlite3_stmt *s = w->st[ST_REQ_TOTAL];
	const char *method = cw_req_method_label(r->method), *route;
	int err;

	err = route_of(w, method, r->path ? path : CW_REQ_UNKNOWN, &route, other);
	if (err)
		return err;
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, r->port);
	sqlite3_bind_text(s, 3, method, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, route, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 5, cw_req_status_key(r->status));
	sqlite3_bind_int64(s, 6, r->duration_ns > INT64_MAX ? INT64_MAX : (int64_t)r->duration_ns);
	if (r->ttft_ns >= 0)
		sqlite3_bind_int64(s, 7, r->ttft_ns);
	sqlite3_bind_int64(s, 8, (int64_t)r->wall_ns);
	return step_reset(s);
}

int cw_writer_request(struct cw_writer *w, const struct cw_request_row *r)
{
	WLOCK(w);
	char method[CW_REQ_METHOD_MAX], path[CW_REQ_PATH_MAX], comm[CW_REQ_COMM_MAX], end[CW_REQ_END_MAX];
	int err, other = 0;

	cw_req_clean(method, sizeof(method), r->method, 0);
	cw_req_clean(path, sizeof(path), r->path, 1);
	cw_req_clean(comm, sizeof(comm), r->comm, 0);
	cw_req_clean(end, sizeof(end), r->end && *r->end ? r->end : CW_REQ_UNKNOWN, 0);
	/* A path of only a query string is still a path: "/". */
	if (r->path && !*path)
		snprintf(path, sizeof(path), "/");
	if ((err = writer_begin(w)))
		return writer_row_done(w, err);
	/* The row and its count together or not at all: a count without
	 * its row (or the reverse) would make /metrics and query disagree. */
	if ((err = step_reset(w->st[ST_REQ_SAVEPOINT])))
		return writer_row_done(w, err);
	err = insert_request(w, r, method, path, comm, end);
	if (!err)
		err = count_request(w, r, path, &other);
	if (err) {
		/* SQLite may have rolled the whole batch back itself. */
		if (!sqlite3_get_autocommit(w->db)) {
			step_reset(w->st[ST_REQ_ROLLBACK]);
			step_reset(w->st[ST_REQ_RELEASE]);
		}
		/* A route this request added to the cache is not in the file. */
		w->routes_loaded = 0;
		return writer_row_done(w, err);
	}
	err = step_reset(w->st[ST_REQ_RELEASE]);
	if (!err) {
		w->stats.requests++;
		w->tx_requests++;
		if (other) {
			w->stats.requests_other_route++;
			w->tx_req_other++;
		}
	}
	return writer_row_done(w, err);
}

int cw_writer_engine_metric(struct cw_writer *w, const struct cw_engine_metric_row *r)
{
	WLOCK(w);
	char engine[CW_ENGINE_NAME_MAX], name[CW_ENGINE_METRIC_MAX];
	sqlite3_stmt *s = w->st[ST_ENGINE_METRIC];
	int err;

	if (isnan(r->value))
		return -EINVAL;
	cw_req_clean(engine, sizeof(engine), r->engine && *r->engine ? r->engine : CW_REQ_UNKNOWN, 0);
	cw_req_clean(name, sizeof(name), r->name && *r->name ? r->name : CW_REQ_UNKNOWN, 0);
	if ((err = writer_begin(w)))
		return writer_row_done(w, err);
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	if (w->session_id)
		sqlite3_bind_int64(s, 2, w->session_id);
	sqlite3_bind_int64(s, 3, (int64_t)r->wall_ns);
	bind_pos(s, 4, r->pid);
	bind_pos(s, 5, r->port);
	sqlite3_bind_text(s, 6, engine, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, name, -1, SQLITE_STATIC);
	sqlite3_bind_double(s, 8, r->value);
	err = step_reset(s);
	if (!err) {
		w->stats.engine_metrics++;
		w->tx_engine++;
	}
	return writer_row_done(w, err);
}
