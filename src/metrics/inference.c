/* /metrics, inference serving (docs/metrics.md "Inference serving"): the
 * request duration and TTFT histograms and the requests by status, from
 * request_totals (one row per node, port, method, route and status, never
 * pruned: the counters never go back while the file lives), and the
 * engines' own gauges from the newest engine_metrics samples.
 *
 * Cost: request_totals is bounded by the route cap (store/requests.h),
 * whatever the traffic; engine_metrics is read through its (name, wall_ns)
 * index, the last ENGINE_FRESH_NS of each name only. */
#define _GNU_SOURCE
#include "metrics/families.h"

#include <stdio.h>
#include <string.h>

#include "store/requests.h"
#include "store/store.h"

/* An engine series whose newest sample is this much older than the
 * newest sample of its name is gone (the engine stopped, or its scrape). */
#define ENGINE_FRESH_NS 60000000000LL

static const char *text(sqlite3_stmt *st, int col)
{
	const char *s = (const char *)sqlite3_column_text(st, col);

	return s ? s : "";
}

/* name{node="..",port="..",method="..",route="..": open for more labels. */
static void route_labels(struct strbuf *sb, const char *name, sqlite3_stmt *st)
{
	strbuf_adds(sb, name);
	strbuf_adds(sb, "{node=\"");
	cw_prom_escape_label(sb, text(st, 0));
	strbuf_addf(sb, "\",port=\"%lld\",method=\"", (long long)sqlite3_column_int64(st, 1));
	cw_prom_escape_label(sb, text(st, 2));
	strbuf_adds(sb, "\",route=\"");
	cw_prom_escape_label(sb, text(st, 3));
	strbuf_addch(sb, '"');
}

/* Prepares sql; *st NULL without error when the file predates v11 (no
 * such table: the families are there, without series). */
static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(db, sql, -1, st, NULL);

	if (rc == SQLITE_ERROR) {
		*st = NULL;
		return 0;
	}
	return rc == SQLITE_OK ? 0 : cw_sqlite_errno(rc);
}

/* One histogram family: prefix "dur" or "ttft". */
static int histogram(sqlite3 *db, struct strbuf *sb, const char *family, const char *help, const char *prefix)
{
	struct strbuf sql = STRBUF_INIT;
	sqlite3_stmt *st = NULL;
	char name[128];
	int rc, err, i;

	strbuf_addf(sb, "# HELP %s %s\n# TYPE %s histogram\n", family, help, family);
	err = strbuf_addf(&sql, "SELECT node, port, method, route, sum(%s), sum(%s)",
			  !strcmp(prefix, "dur") ? "count" : "ttft_count",
			  !strcmp(prefix, "dur") ? "duration_sum_ns" : "ttft_sum_ns");
	for (i = 0; i < CW_REQ_BUCKETS && !err; i++)
		err = strbuf_addf(&sql, ", sum(%s_le_%s)", prefix, cw_req_bucket_col[i]);
	if (!err)
		err = strbuf_addf(&sql,
				  " FROM request_totals GROUP BY node, port, method, route HAVING sum(%s) > 0"
				  " ORDER BY node, port, method, route",
				  !strcmp(prefix, "dur") ? "count" : "ttft_count");
	if (!err)
		err = prepare(db, strbuf_str(&sql), &st);
	strbuf_release(&sql);
	if (err || !st)
		return err;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		snprintf(name, sizeof(name), "%s_bucket", family);
		for (i = 0; i < CW_REQ_BUCKETS; i++) {
			route_labels(sb, name, st);
			strbuf_addf(sb, ",le=\"%s\"} %lld\n", cw_req_bucket_le[i],
				    (long long)sqlite3_column_int64(st, 6 + i));
		}
		route_labels(sb, name, st);
		strbuf_addf(sb, ",le=\"+Inf\"} %lld\n", (long long)sqlite3_column_int64(st, 4));
		snprintf(name, sizeof(name), "%s_sum", family);
		route_labels(sb, name, st);
		strbuf_addf(sb, "} %.9g\n", (double)sqlite3_column_int64(st, 5) / 1e9);
		snprintf(name, sizeof(name), "%s_count", family);
		route_labels(sb, name, st);
		strbuf_addf(sb, "} %lld\n", (long long)sqlite3_column_int64(st, 4));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static int by_status(sqlite3 *db, struct strbuf *sb)
{
	sqlite3_stmt *st = NULL;
	int rc, err;

	strbuf_adds(sb, "# HELP causeway_inference_requests_total HTTP requests the traced servers answered, by "
			"status (none: the connection ended before a status line) and its class.\n"
			"# TYPE causeway_inference_requests_total counter\n");
	err = prepare(db,
		      "SELECT node, port, method, route, status, sum(count) FROM request_totals"
		      " GROUP BY node, port, method, route, status ORDER BY node, port, method, route, status",
		      &st);
	if (err || !st)
		return err;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int status = cw_req_status_key(sqlite3_column_int(st, 4));

		route_labels(sb, "causeway_inference_requests_total", st);
		if (status)
			strbuf_addf(sb, ",status=\"%d\"", status);
		else
			strbuf_adds(sb, ",status=\"none\"");
		strbuf_addf(sb, ",code_class=\"%s\"} %lld\n", cw_req_code_class(status),
			    (long long)sqlite3_column_int64(st, 5));
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static const struct {
	const char *name, *family, *type, *help;
} engine_families[] = {
	{ "queue_depth", "causeway_inference_engine_queue_depth", "gauge",
	  "Requests waiting in the inference engine's queue (its own /metrics, newest sample)." },
	{ "running", "causeway_inference_engine_running", "gauge",
	  "Requests the inference engine is running (its own /metrics, newest sample)." },
	{ "kv_cache_usage_ratio", "causeway_inference_engine_kv_cache_usage_ratio", "gauge",
	  "Share of the inference engine's KV cache in use, 0..1 (its own /metrics, newest sample)." },
	{ "preemptions_total", "causeway_inference_engine_preemptions_total", "counter",
	  "Requests the inference engine preempted since it started (its own /metrics, newest sample)." },
};

static int engine(sqlite3 *db, struct strbuf *sb)
{
	sqlite3_stmt *st = NULL;
	int rc = SQLITE_DONE, err;

	err = prepare(db,
		      "SELECT node, engine, pid, port, value, max(wall_ns) FROM engine_metrics WHERE name = ?1"
		      " AND wall_ns >= (SELECT max(wall_ns) FROM engine_metrics WHERE name = ?1) - ?2"
		      " GROUP BY node, engine, pid, port ORDER BY node, engine, pid, port",
		      &st);
	for (size_t f = 0; !err && f < sizeof(engine_families) / sizeof(engine_families[0]); f++) {
		strbuf_addf(sb, "# HELP %s %s\n# TYPE %s %s\n", engine_families[f].family, engine_families[f].help,
			    engine_families[f].family, engine_families[f].type);
		if (!st)
			continue;
		sqlite3_bind_text(st, 1, engine_families[f].name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, ENGINE_FRESH_NS);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			strbuf_adds(sb, engine_families[f].family);
			strbuf_adds(sb, "{node=\"");
			cw_prom_escape_label(sb, text(st, 0));
			strbuf_adds(sb, "\",engine=\"");
			cw_prom_escape_label(sb, text(st, 1));
			strbuf_adds(sb, "\",pid=\"");
			cw_prom_escape_label(sb, text(st, 2));
			strbuf_adds(sb, "\",port=\"");
			cw_prom_escape_label(sb, text(st, 3));
			strbuf_addf(sb, "\"} %.9g\n", sqlite3_column_double(st, 4));
		}
		sqlite3_reset(st);
		if (rc != SQLITE_DONE)
			err = cw_sqlite_errno(rc);
	}
	sqlite3_finalize(st);
	return err;
}

int cw_metrics_render_inference(sqlite3 *db, struct strbuf *sb)
{
	int err;

	err = histogram(db, sb, "causeway_inference_request_duration_seconds",
			"Duration of the HTTP requests the traced servers answered, first request byte read to "
			"last response byte written, per route.",
			"dur");
	if (!err)
		err = histogram(db, sb, "causeway_inference_ttft_seconds",
				"Time to first token: first request byte read to the first response body bytes "
				"written, per route, for requests whose response had a body.",
				"ttft");
	if (!err)
		err = by_status(db, sb);
	if (!err)
		err = engine(db, sb);
	return err;
}
