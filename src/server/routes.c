/* The /api/v1 routes (docs/api.md). All read-only; every one runs after the
 * gate and under the per-request deadline. */
#define _GNU_SOURCE
#include "server/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "analysis/tenant_select.h"
#include "server/routes_api.h"
#include "server/web_assets.h"
#include "store/losses.h"
#include "store/ro_query.h"
#include "store/read_error.h"
#include "store/store.h"
#include "analysis/summary.h"
#include "util/timeutil.h"
#include "util/utf8.h"

#define CW_API_PREFIX "/api/v1"
#define CW_QUERY_MAX_PARAMS 32
/* The answer's text is at most this; with what SQLite holds while the
 * statement runs it is counted against the statement's 256 MiB bound
 * (ro_rows.c), and this leaves SQLite a quarter of it past a full answer. */
#define CW_QUERY_MAX_RESULT ((size_t)192 << 20)

static const char *arg(struct MHD_Connection *c, const char *k)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, k);
}

static int db_status(int rc)
{
	return rc == -ENOENT || rc == -EBUSY || rc == -ENOTSUP || rc == -EPROTO ||
			       rc == -EACCES || rc == -EIO
		       ? 503
		       : 500;
}

static void route_health(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	uint64_t deadline;
	sqlite3 *db;
	char err[512];
	int rc = cw_server_open_db(s, &db, &deadline, err, sizeof(err));
	json_t *j;

	if (!rc)
		cw_server_close_db(db);
	j = json_pack("{s:s, s:s, s:s, s:I, s:b, s:b, s:b}", "status", rc ? "degraded" : "ok",
		      "node", s->node, "version", CW_VERSION, "uptime_s",
		      (json_int_t)((cw_realtime_ns() - s->started_wall_ns) / NSEC_PER_SEC), "tls",
		      s->tls, "mtls", s->mtls, "token", s->has_token);
	if (j && rc)
		json_object_set_new(j, "error", cw_json_str(err));
	cw_reply_json(r, rc ? 503 : 200, j);
}

static void route_time(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	/* Read as late as possible: the skew estimate assumes the server's
	 * reading sits in the middle of the client's round trip. */
	uint64_t now = cw_realtime_ns();

	cw_reply_json(r, 200, json_pack("{s:s, s:I}", "node", s->node, "realtime_ns",
					(json_int_t)now));
}

/* "losses" and "warnings": the sessions of the store that lost records,
 * so that an answer from an incomplete trace says so (store/losses.h). */
static void add_losses(struct cw_server *s, json_t *out)
{
	struct cw_session_loss *l = NULL;
	json_t *warns = json_array();
	uint64_t deadline;
	sqlite3 *db;
	char err[512], line[768];
	int n;

	if (cw_server_open_db(s, &db, &deadline, err, sizeof(err))) {
		json_decref(warns);
		return;
	}
	n = cw_store_losses(db, NULL, 0, 0, &l);
	for (int i = 0; i < n; i++) {
		cw_session_loss_text(&l[i], line, sizeof(line));
		json_array_append_new(warns, cw_json_str(line));
	}
	json_object_set_new(out, "losses", cw_losses_to_json(l, n > 0 ? n : 0));
	json_object_set_new(out, "warnings", warns);
	free(l);
	cw_server_close_db(db);
}

static void route_query(struct cw_server *s, struct MHD_Connection *c, const char *method,
			const char *body, size_t len, struct cw_reply *r)
{
	struct cw_ro_value params[CW_QUERY_MAX_PARAMS];
	struct cw_ro_query_limits lim = { 0 };
	struct cw_ro_json res = { 0 };
	const char *sql = NULL, *mr = NULL;
	json_t *req = NULL, *jp, *meta, *cols;
	char err[1024];
	int np = 0, rc;
	int64_t i;

	if (!strcmp(method, "POST")) {
		json_error_t je;

		req = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
		if (!req || !json_is_object(req)) {
			cw_reply_error(r, 400, "body must be a JSON object {\"sql\": ...}: %s",
				       req ? "not an object" : je.text);
			goto out;
		}
		sql = json_string_value(json_object_get(req, "sql"));
		jp = json_object_get(req, "params");
		if (jp && !json_is_array(jp)) {
			cw_reply_error(r, 400, "\"params\" must be an array");
			goto out;
		}
		if (json_array_size(jp) > CW_QUERY_MAX_PARAMS) {
			cw_reply_error(r, 400, "at most %d params", CW_QUERY_MAX_PARAMS);
			goto out;
		}
		for (size_t k = 0; k < json_array_size(jp); k++, np++) {
			if (cw_ro_value_from_json(json_array_get(jp, k), &params[k])) {
				cw_reply_error(r, 400, "param %zu must be null, a number or a string",
					       k + 1);
				goto out;
			}
		}
		if (json_is_integer(json_object_get(req, "max_rows")))
			lim.max_rows = json_integer_value(json_object_get(req, "max_rows"));
	} else {
		sql = arg(c, "sql");
		if ((mr = arg(c, "max_rows")))
			lim.max_rows = strtoll(mr, NULL, 10);
	}
	if (!sql || !*sql) {
		cw_reply_error(r, 400, "missing \"sql\"");
		goto out;
	}
	/* A client may ask for fewer rows than the server's cap, never more. */
	if (lim.max_rows <= 0 || lim.max_rows > s->max_rows)
		lim.max_rows = s->max_rows;
	lim.timeout_ns = s->timeout_ns;
	rc = cw_ro_query_json(s->db_path, sql, np ? params : NULL, np, &lim, CW_QUERY_MAX_RESULT, &res, err,
			      sizeof(err));
	if (rc) {
		int st = rc == -EINVAL || rc == -EPERM || rc == -E2BIG ? 400
			 : rc == -ETIMEDOUT	       ? 504
			 : cw_ro_is_db_error(rc)      ? 503
						       : 500;

		cw_reply_error(r, st, "%s", err);
		goto out;
	}
	/* The rows are already text (ro_rows.c); the other members follow
	 * them. */
	cols = json_array();
	for (i = 0; i < res.ncols; i++)
		json_array_append_new(cols, cw_json_str(res.names[i]));
	meta = json_pack("{s:s, s:o, s:I, s:b, s:I, s:I}", "node", s->node, "columns", cols, "row_count",
			 (json_int_t)res.info.rows, "truncated", res.info.truncated, "max_rows",
			 (json_int_t)res.info.max_rows, "elapsed_ns", (json_int_t)res.info.elapsed_ns);
	if (meta)
		add_losses(s, meta);
	if (cw_ro_json_finish(&res, meta)) {
		json_decref(meta);
		cw_reply_error(r, 500, "out of memory");
		goto out;
	}
	json_decref(meta);
	r->status = 200;
	r->ctype = "application/json";
	r->body = res.text;
	r->len = res.len;
	res.text = NULL;
out:
	cw_ro_json_free(&res);
	json_decref(req);
}

static void route_ops(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	struct cw_summary_opts o = { 0 };
	struct cw_summary *sum = NULL;
	const char *since = arg(c, "since"), *by = arg(c, "by");
	struct cw_api_tenant_args ta;
	int64_t *pids = NULL;
	uint64_t deadline;
	sqlite3 *db;
	char err[512];
	json_t *ops, *j;
	int rc;

	if (cw_api_tenant_args(c, &ta, r))
		return;
	o.per_tenant = cw_api_flag(c, "per_tenant");
	o.per_node = cw_api_flag(c, "per_node");

	/* since only: the summary anchors it on its newest aggregate second
	 * (analysis/summary.c). */
	ta.s.since = since;
	if (cw_scope_parse(&ta.s, err, sizeof(err))) {
		cw_reply_error(r, 400, "%s", err);
		return;
	}
	o.since_ns = ta.s.since_ns;
	if (by && strcmp(by, "line") && strcmp(by, "op")) {
		cw_reply_error(r, 400, "\"by\" must be \"op\" or \"line\"");
		return;
	}
	o.by_line = by && !strcmp(by, "line");
	if (o.per_node && (o.by_line || o.per_tenant || ta.s.ntf)) {
		cw_reply_error(r, 400, "per_node goes with the per-op summary only (no by=line or tenant filter)");
		return;
	}
	if ((rc = cw_server_open_db(s, &db, &deadline, err, sizeof(err)))) {
		cw_reply_error(r, db_status(rc), "%s", err);
		return;
	}
	rc = cw_api_tenant_pids(db, &ta, &pids, &o.npids);
	o.pids = pids;
	if (!rc)
		rc = cw_summary_build(db, &o, &sum);
	free(pids);
	cw_server_close_db(db);
	if (rc) {
		cw_reply_error(r, cw_monotonic_ns() > deadline ? 504 : 500, "ops summary failed: %s",
			       cw_monotonic_ns() > deadline ? "request time limit"
							    : cw_store_read_strerror(NULL, rc, err, sizeof(err)));
		return;
	}
	ops = json_array();
	for (size_t i = 0; i < sum->n; i++) {
		struct cw_summary_row *w = &sum->rows[i];
		json_t *o1 = json_pack("{s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "source",
				       cw_json_str(w->source), "op", cw_json_str(w->op), "count", (json_int_t)w->count,
				       "p50_ns", (json_int_t)w->p50_ns, "p95_ns",
				       (json_int_t)w->p95_ns, "p99_ns", (json_int_t)w->p99_ns,
				       "max_ns", (json_int_t)w->max_ns, "total_ns",
				       (json_int_t)w->total_ns, "wall_share", w->wall_share);

		if (o1 && o.per_node)
			json_object_set_new(o1, "node", w->node ? cw_json_str(w->node) : json_null());
		if (o1 && o.by_line) {
			json_object_set_new(o1, "file", w->file ? cw_json_str(w->file) : json_null());
			json_object_set_new(o1, "line", json_integer(w->line));
			json_object_set_new(o1, "function",
					    w->function ? cw_json_str(w->function) : json_null());
		}
		if (o1 && w->tenant) {
			json_object_set_new(o1, "tenant", cw_json_str(w->tenant));
			json_object_set_new(o1, "container", w->container ? json_incref(w->container) : json_null());
		}
		json_array_append_new(ops, o1);
	}
	j = json_pack("{s:s, s:I, s:I, s:I, s:o}", "node", s->node, "from_second",
		      (json_int_t)sum->from_second, "to_second", (json_int_t)sum->to_second,
		      "window_ns", (json_int_t)sum->window_ns, "ops", ops);
	cw_summary_free(sum);
	cw_reply_json(r, 200, j);
}

static int64_t scalar_i64(sqlite3 *db, const char *sql, int *rcp)
{
	sqlite3_stmt *st;
	int64_t v = 0;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			v = sqlite3_column_int64(st, 0);
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_OK && rc != SQLITE_DONE && !*rcp)
		*rcp = cw_sqlite_errno(rc);
	return v;
}

static json_t *text_or_null(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? cw_json_str((const char *)t) : json_null();
}

static json_t *int_or_null(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL
		       ? json_null()
		       : json_integer(sqlite3_column_int64(st, i));
}

static void route_overview(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	static const char *const tables[] = { "events", "offcpu", "snapshots", "processes",
					      "chains", "sessions" };
	json_t *counts, *sessions, *nodes, *tenants, *j;
	sqlite3_stmt *st;
	struct cw_api_tenant_args ta;
	uint64_t *ids = NULL;
	uint64_t deadline;
	sqlite3 *db;
	char err[512], sql[128];
	const char *count_sql = NULL;
	int rc = 0, step, nids = 0, narrow;

	if (cw_api_tenant_args(c, &ta, r))
		return;
	if ((rc = cw_server_open_db(s, &db, &deadline, err, sizeof(err)))) {
		cw_reply_error(r, db_status(rc), "%s", err);
		return;
	}
	counts = json_object();
	narrow = cw_store_read_sql(db, CW_READ_EVENTS_COUNT, &count_sql);
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		/* Events are counted in the tables under the view. */
		if (i == 0 && count_sql)
			snprintf(sql, sizeof(sql), "%s", count_sql);
		else
			snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", tables[i]);
		json_object_set_new(counts, tables[i], json_integer(scalar_i64(db, sql, &rc)));
	}
	if (narrow < 0 && !rc)
		rc = narrow;
	nodes = json_array();
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT node FROM sessions ORDER BY node", -1, &st,
			       NULL) == SQLITE_OK) {
		while ((step = sqlite3_step(st)) == SQLITE_ROW)
			json_array_append_new(nodes, text_or_null(st, 0));
		if (step != SQLITE_DONE && !rc)
			rc = cw_sqlite_errno(step);
	}
	sqlite3_finalize(st);
	sessions = json_array();
	if (sqlite3_prepare_v2(db,
			       "SELECT id, node, kind, started_wall_ns, ended_wall_ns, host, rank, "
			       "local_rank, world_size, command FROM sessions ORDER BY id DESC "
			       "LIMIT 100",
			       -1, &st, NULL) == SQLITE_OK) {
		while ((step = sqlite3_step(st)) == SQLITE_ROW)
			json_array_append_new(
				sessions,
				json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
					  "id", (json_int_t)sqlite3_column_int64(st, 0), "node",
					  text_or_null(st, 1), "kind", text_or_null(st, 2),
					  "started_wall_ns", int_or_null(st, 3), "ended_wall_ns",
					  int_or_null(st, 4), "host", text_or_null(st, 5), "rank",
					  int_or_null(st, 6), "local_rank", int_or_null(st, 7),
					  "world_size", int_or_null(st, 8), "command",
					  text_or_null(st, 9)));
		if (step != SQLITE_DONE && !rc)
			rc = cw_sqlite_errno(step);
	}
	sqlite3_finalize(st);
	/* The tenants the store named (at most 100 workloads: containers,
	 * pods, Slurm jobs), or with filters the cgroups they select. */
	tenants = json_array();
	if (ta.s.ntf && (nids = cw_tenant_select_cgroups(db, ta.s.tf, ta.s.ntf, &ids)) < 0 && !rc)
		rc = nids;
	if (!rc && sqlite3_prepare_v2(db,
				      "SELECT node, cgroup_id, runtime, container_id, pod, namespace, pod_uid, path,"
				      " tenant FROM containers WHERE (?1 = 0 AND (runtime NOT IN ('systemd', '')"
				      " OR pod_uid IS NOT NULL)) OR (?1 = 1 AND cgroup_id IN (SELECT value FROM"
				      " json_each(?2))) ORDER BY node, cgroup_id LIMIT 100",
				      -1, &st, NULL) == SQLITE_OK) {
		json_t *idl = json_array();
		char *ids_json;

		for (int i = 0; i < nids; i++)
			json_array_append_new(idl, json_integer((json_int_t)ids[i]));
		ids_json = json_dumps(idl, JSON_COMPACT);
		json_decref(idl);
		sqlite3_bind_int(st, 1, ta.s.ntf ? 1 : 0);
		sqlite3_bind_text(st, 2, ids_json ? ids_json : "[]", -1, SQLITE_TRANSIENT);
		free(ids_json);
		while ((step = sqlite3_step(st)) == SQLITE_ROW)
			json_array_append_new(
				tenants, json_pack("{s:o, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "node",
						   text_or_null(st, 0), "cgroup_id", (json_int_t)sqlite3_column_int64(st, 1),
						   "runtime", text_or_null(st, 2), "id", text_or_null(st, 3), "pod",
						   text_or_null(st, 4), "namespace", text_or_null(st, 5), "pod_uid",
						   text_or_null(st, 6), "cgroup", text_or_null(st, 7), "tenant",
						   text_or_null(st, 8)));
		if (step != SQLITE_DONE && !rc)
			rc = cw_sqlite_errno(step);
		sqlite3_finalize(st);
	}
	free(ids);
	/* The time range from the per-second aggregates: a few thousand rows
	 * rather than a scan of every event. */
	j = json_pack("{s:s, s:o, s:o, s:o, s:{s:I, s:I}, s:I}", "node", s->node, "nodes", nodes,
		      "sessions", sessions, "counts", counts, "time_range", "from_wall_ns",
		      (json_int_t)(cw_clamp_second(scalar_i64(db, "SELECT min(second) FROM aggregates", &rc)) *
				   (int64_t)NSEC_PER_SEC),
		      "to_wall_ns",
		      (json_int_t)((cw_clamp_second(scalar_i64(db, "SELECT max(second) FROM aggregates", &rc)) + 1) *
				   (int64_t)NSEC_PER_SEC),
		      "calls", (json_int_t)scalar_i64(db, "SELECT total(count) FROM aggregates", &rc));
	json_object_set_new(j, "tenants", tenants);
	/* -EINVAL with a reply set: a bad window, answered 400; without one it
	 * is the file's content, answered below. */
	if (!rc && j && (rc = cw_overview_extend(s, c, db, j, r)) == -EINVAL && r->status) {
		json_decref(j);
		cw_server_close_db(db);
		return;
	}
	cw_server_close_db(db);
	if (rc) {
		json_decref(j);
		cw_reply_error(r, cw_monotonic_ns() > deadline ? 504 : 500,
			       "cannot read the overview: %s",
			       cw_monotonic_ns() > deadline ? "request time limit"
							    : cw_store_read_strerror(NULL, rc, err, sizeof(err)));
		return;
	}
	cw_reply_json(r, 200, j);
}

static int static_asset(const char *url, struct cw_reply *r)
{
	const struct cw_web_asset *a;

	if (!strcmp(url, "/"))
		url = "/index.html";
	/* The page names no icon (index.html links "data:,"), yet a browser
	 * may still ask for the conventional one before it has read the page:
	 * an empty answer, not a 404 in its console. */
	if (!strcmp(url, "/favicon.ico")) {
		r->status = 204;
		return 1;
	}
	for (a = cw_web_assets; a->path; a++) {
		if (strcmp(a->path, url))
			continue;
		r->status = 200;
		r->body = malloc(a->len ? a->len : 1);
		if (!r->body) {
			cw_reply_error(r, 500, "out of memory");
			return 1;
		}
		memcpy(r->body, a->data, a->len);
		r->len = a->len;
		r->ctype = a->content_type;
		return 1;
	}
	return 0;
}

/* What a route answers: GET (and HEAD), POST, or any method (the route
 * checks it itself). */
enum {
	ROUTE_GET = 1 << 0,
	ROUTE_POST = 1 << 1,
	ROUTE_ANY_METHOD = 1 << 2,
};

/* A route that reads the method and the request body. */
typedef void (*route_body_fn)(struct cw_server *s, struct MHD_Connection *c, const char *method,
			      const char *body, size_t body_len, struct cw_reply *r);
typedef void (*route_fn)(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);

struct route {
	const char *path;
	unsigned flags;
	route_fn fn;           /* or */
	route_body_fn body_fn;
};

#define API(p) CW_API_PREFIX p

static void route_metrics(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	(void)c;
	cw_metrics_render(s, r);
}

static const struct route routes[] = {
	{ "/mcp", ROUTE_ANY_METHOD, NULL, cw_mcp_route },
	{ "/metrics", ROUTE_GET, route_metrics, NULL },
	{ API("/query"), ROUTE_GET | ROUTE_POST, NULL, route_query },
	{ API("/health"), ROUTE_GET, route_health, NULL },
	{ API("/time"), ROUTE_GET, route_time, NULL },
	{ API("/chains"), ROUTE_GET, cw_route_chains, NULL },
	{ API("/ops"), ROUTE_GET, route_ops, NULL },
	{ API("/overview"), ROUTE_GET, route_overview, NULL },
	{ API("/timeline"), ROUTE_GET, cw_route_timeline, NULL },
	{ API("/ops/detail"), ROUTE_GET, cw_route_ops_detail, NULL },
	{ API("/ops/series"), ROUTE_GET, cw_route_ops_series, NULL },
	{ API("/export/perfetto"), ROUTE_GET, cw_route_export_perfetto, NULL },
	{ API("/fleet"), ROUTE_GET, cw_route_fleet, NULL },
	{ API("/gpu"), ROUTE_GET, cw_route_gpu, NULL },
	{ API("/nccl/ranks"), ROUTE_GET, cw_route_nccl_ranks, NULL },
	{ API("/tenants"), ROUTE_GET, cw_route_tenants, NULL },
	{ API("/requests"), ROUTE_GET, cw_route_requests, NULL },
	{ API("/stream"), ROUTE_GET, cw_route_stream, NULL },
};

void cw_route_dispatch(struct cw_server *s, struct MHD_Connection *c, const char *method,
		       const char *url, const char *body, size_t body_len, struct cw_reply *r)
{
	unsigned m = 0, allowed = ROUTE_GET;

	if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
		m = ROUTE_GET;
	else if (!strcmp(method, "POST"))
		m = ROUTE_POST;

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct route *rt = &routes[i];

		if (strcmp(url, rt->path))
			continue;
		if (!(rt->flags & (m | ROUTE_ANY_METHOD))) {
			allowed = rt->flags;
			goto not_allowed;
		}
		if (rt->body_fn)
			rt->body_fn(s, c, method, body, body_len, r);
		else
			rt->fn(s, c, r);
		return;
	}
	if (strncmp(url, CW_API_PREFIX "/", sizeof(CW_API_PREFIX))) {
		if (m == ROUTE_GET && static_asset(url, r))
			return;
		cw_reply_error(r, 404, "no such route \"%s\"", url);
		return;
	}
	/* Under the API, anything but GET to an unknown path is refused as a
	 * method, as it is on a known one. */
	if (m != ROUTE_GET)
		goto not_allowed;
	cw_reply_error(r, 404, "no such route \"%s\"", url);
	return;
not_allowed:
	/* RFC 9110 15.5.6: a 405 names the methods the route takes. */
	cw_reply_header(r, "Allow", allowed & ROUTE_POST ? "GET, HEAD, POST" : "GET, HEAD");
	cw_reply_error(r, 405, "method \"%s\" not allowed on \"%s\"", method, url);
}
