/* Tools over the configured database: thin wrappers over what check,
 * query and explain compute (analysis/summary.c, analysis/explain.c,
 * store/ro_query.c, analysis/stack_render.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "analysis/explain_match.h"
#include "analysis/stack_render.h"
#include "check/report.h"
#include "mcp/tools_int.h"
#include "store/ro_query.h"
#include "store/store.h"
#include "analysis/summary.h"
#include "util/timeutil.h"
#include "util/utf8.h"

TOOL_FN(cw_tool_check)
{
	json_t *r, *ch;
	size_t i;

	if (cw_check_report(&c->cfg->check, &r)) {
		snprintf(err, errlen, "check: out of memory");
		return -ENOMEM;
	}
	json_array_foreach(json_object_get(r, "checks"), i, ch) {
		const char *fix = json_string_value(json_object_get(ch, "recommendation"));

		strbuf_addf(text, "%-4s %-12s %s%s%s\n", json_string_value(json_object_get(ch, "status")),
			    json_string_value(json_object_get(ch, "name")),
			    json_string_value(json_object_get(ch, "detail")), fix ? " -> " : "", fix ? fix : "");
	}
	strbuf_addf(text, "%s\n", json_is_true(json_object_get(r, "ok")) ? "trace can run here"
									 : "trace cannot run here");
	*out = r;
	return 0;
}

TOOL_FN(cw_tool_trace_summary)
{
	struct cw_summary_opts o = { 0 };
	struct cw_summary *s = NULL;
	int64_t limit = tool_int(args, "limit", CW_MCP_DEFAULT_ROWS);
	int64_t *pids = NULL;
	sqlite3 *db;
	json_t *ops;
	size_t i, n;
	int rc;

	if ((rc = tool_since(args, &o.since_ns, err, errlen)))
		return rc;
	o.by_line = tool_bool(args, "by_line");
	o.per_tenant = tool_bool(args, "per_tenant");
	if ((rc = tool_open_db(c, &db, err, errlen)))
		return rc;
	if ((rc = tool_tenant_pids(db, args, &pids, &o.npids, err, errlen))) {
		tool_close_db(db);
		return rc == -EINVAL ? rc : tool_stop_reason(c, rc, "trace_summary", err, errlen);
	}
	o.pids = pids;
	rc = cw_summary_build(db, &o, &s);
	free(pids);
	tool_close_db(db);
	if (rc)
		return tool_stop_reason(c, rc, "trace_summary", err, errlen);
	n = (size_t)limit < s->n ? (size_t)limit : s->n;
	ops = json_array();
	for (i = 0; i < n; i++) {
		struct cw_summary_row *w = &s->rows[i];
		char p50[32], p99[32], mx[32];

		json_array_append_new(ops, cw_summary_row_json(w, o.by_line));
		cw_format_duration(w->p50_ns, p50, sizeof(p50));
		cw_format_duration(w->p99_ns, p99, sizeof(p99));
		cw_format_duration(w->max_ns, mx, sizeof(mx));
		strbuf_addf(text, "%s/%s", w->source, w->op);
		if (o.by_line && w->file)
			strbuf_addf(text, " at %s:%" PRId64, w->file, w->line);
		if (w->tenant)
			strbuf_addf(text, " in %s", w->tenant);
		strbuf_addf(text, ": %" PRIu64 " calls, p50 %s, p99 %s, max %s, %.1f%% of wall time\n", w->count, p50,
			    p99, mx, w->wall_share * 100.0);
	}
	if (n < s->n)
		strbuf_addf(text, "(%zu of %zu ops; raise limit for more)\n", n, s->n);
	*out = json_pack("{s:s, s:{s:I, s:I, s:I}, s:o, s:I, s:I, s:b}", "node", c->cfg->node, "window",
			 "from_second", (json_int_t)s->from_second, "to_second", (json_int_t)s->to_second,
			 "window_ns", (json_int_t)s->window_ns, "ops", ops, "row_count", (json_int_t)n,
			 "total_rows", (json_int_t)s->n, "truncated", n < s->n);
	cw_summary_free(s);
	return 0;
}

/* The slowest stored call of a chain's op (and process), so the model can
 * drill in with explain_call; through the events_slow index. */
static int64_t slowest_call(sqlite3 *db, const struct cw_chain *ch, uint64_t from, uint64_t to)
{
	sqlite3_stmt *st;
	int64_t id = 0;

	const char *sql;

	if (cw_store_read_sql(db, CW_READ_SLOWEST_EVENT, &sql) < 0 ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, ch->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, ch->pid);
	sqlite3_bind_int64(st, 3, (int64_t)from);
	sqlite3_bind_int64(st, 4, (int64_t)to);
	if (sqlite3_step(st) == SQLITE_ROW)
		id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return id;
}

TOOL_FN(cw_tool_causal_chains)
{
	struct cw_explain_opts o = { 0 };
	struct cw_explain_result r;
	int64_t top = tool_int(args, "top_n", CW_MCP_DEFAULT_CHAINS), rank = tool_int(args, "rank", -1);
	json_t *j, *chains, *kept, *ch;
	int64_t *pids = NULL;
	sqlite3 *db;
	size_t i;
	int rc, total = 0;

	o.pid = tool_int(args, "pid", 0);
	o.node_filter = tool_str(args, "node");
	o.per_process = tool_bool(args, "per_process");
	o.per_tenant = tool_bool(args, "per_tenant");
	if ((rc = tool_open_db(c, &db, err, errlen)))
		return rc;
	if ((rc = tool_window(db, args, &o.from_wall_ns, &o.to_wall_ns, err, errlen)))
		goto out;
	if ((rc = tool_tenant_pids(db, args, &pids, &o.npids, err, errlen)))
		goto out;
	o.pids = pids;
	cw_mcp_progress(c, 0, 2, "analysing slow calls");
	rc = cw_explain_run(db, &o, &r);
	if (rc) {
		rc = tool_stop_reason(c, rc, "causal_chains", err, errlen);
		goto out;
	}
	/* A filter or window without data is not "no causal chains". */
	if ((rc = cw_explain_unmatched(db, &o, &r, err, errlen)) != 0) {
		cw_explain_result_free(&r);
		if (rc < 0)
			snprintf(err, errlen, "causal_chains: cannot read the store: %s", cw_store_strerror(rc));
		else {
			char why[256];

			snprintf(why, sizeof(why), "%s", err);
			snprintf(err, errlen, "nothing matches: %s", why);
		}
		rc = -ENOENT;
		goto out;
	}
	cw_mcp_progress(c, 1, 2, "rendering chains");
	j = cw_explain_to_json(&r);
	chains = json_object_get(j, "chains");
	kept = json_array();
	json_array_foreach(chains, i, ch) {
		const struct cw_chain *cc = &r.chains[i];
		char p99[32];

		if (rank >= 0 && cc->rank != rank)
			continue;
		total++;
		if ((int64_t)json_array_size(kept) >= top)
			continue;
		json_object_set_new(ch, "chain_index", json_integer((json_int_t)i));
		json_object_set_new(ch, "slowest_call_id",
				    json_integer(slowest_call(db, cc, r.from_wall_ns, r.to_wall_ns)));
		json_array_append(kept, ch);
		cw_format_duration(cc->p99_ns, p99, sizeof(p99));
		strbuf_addf(text, "[%s] %s %s: %s (p99 %s, %.1fx p50, %.0f%% of slow time explained; pid %" PRId64
				  ", slowest call id %" JSON_INTEGER_FORMAT ")\n",
			    cw_severity_name(cc->severity), cw_kind_name(cc->kind), cc->op, cc->summary, p99,
			    cc->tail_ratio, cc->explained_share * 100.0, cc->pid,
			    json_integer_value(json_object_get(ch, "slowest_call_id")));
		for (int k = 0; k < cc->nfix && k < 2; k++)
			strbuf_addf(text, "    fix: %s\n", cc->fix[k]);
	}
	if (!total)
		strbuf_addf(text, "no causal chains in the window (%" PRIu64 " calls over %" PRIu64 " ops analysed)\n",
			    r.calls_analysed, r.ops_analysed);
	else if ((int)json_array_size(kept) < total)
		strbuf_addf(text, "(%zu of %d chains; raise top_n for more)\n", json_array_size(kept), total);
	json_object_set_new(j, "chains", kept);
	json_object_set_new(j, "node", cw_json_str(c->cfg->node));
	json_object_set_new(j, "chain_count", json_integer((json_int_t)json_array_size(kept)));
	json_object_set_new(j, "total_chains", json_integer(total));
	json_object_set_new(j, "truncated", json_boolean((int)json_array_size(kept) < total));
	cw_explain_result_free(&r);
	cw_mcp_progress(c, 2, 2, "done");
	*out = j;
out:
	free(pids);
	tool_close_db(db);
	return rc;
}

static json_t *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? cw_json_str((const char *)t) : json_null();
}

static json_t *col_int(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? json_null() : json_integer(sqlite3_column_int64(st, i));
}

static json_t *stack_json(sqlite3 *db, int64_t py_id, int64_t nat_id)
{
	struct cw_stack_frame fr[CW_STACK_MAX_FRAMES];
	json_t *a = json_array();
	char line[512];
	int n = cw_stack_load(db, py_id, nat_id, fr, CW_STACK_MAX_FRAMES);

	for (int i = 0; i < n; i++) {
		cw_stack_frame_text(&fr[i], line, sizeof(line));
		json_array_append_new(a, cw_json_str(line));
	}
	return a;
}

TOOL_FN(cw_tool_explain_call)
{
	int64_t id = tool_int(args, "id", 0), around_ms = tool_int(args, "around_ms", 20), limit;
	int64_t mono, dur, tid, py_id, nat_id, lo, hi;
	json_t *call, *tl, *py = json_null();
	sqlite3_stmt *st = NULL;
	sqlite3 *db;
	char d[32];
	int rc, n = 0;

	limit = tool_int(args, "limit", CW_MCP_DEFAULT_ROWS);
	if ((rc = tool_open_db(c, &db, err, errlen)))
		return rc;
	rc = sqlite3_prepare_v2(db,
				"SELECT e.id, e.node, e.wall_ns, e.mono_ns, e.pid, e.tid, e.comm, e.source, e.op,"
				" e.duration_ns, e.ret, e.bytes, e.detail, e.device, e.anomalous,"
				" e.py_stack_id, e.stack_id, p.user_file, p.user_line, p.user_function, p.python_via"
				" FROM events e LEFT JOIN py_stacks p ON p.id = e.py_stack_id WHERE e.id = ?1",
				-1, &st, NULL);
	if (rc != SQLITE_OK) {
		rc = tool_stop_reason(c, cw_sqlite_errno(rc), "explain_call", err, errlen);
		goto out;
	}
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW) {
		snprintf(err, errlen,
			 "no call with id %" PRId64 "; take ids from causal_chains (slowest_call_id), stacks "
			 "(example_call_id) or run_sql on events.id",
			 id);
		rc = -ENOENT;
		goto out;
	}
	call = json_pack("{s:I, s:o, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:b}", "id",
			 (json_int_t)id, "node", col_text(st, 1), "wall_ns", (json_int_t)sqlite3_column_int64(st, 2),
			 "pid", (json_int_t)sqlite3_column_int64(st, 4), "tid",
			 (json_int_t)sqlite3_column_int64(st, 5), "comm", col_text(st, 6), "source", col_text(st, 7),
			 "op", col_text(st, 8), "duration_ns", (json_int_t)sqlite3_column_int64(st, 9), "ret",
			 col_int(st, 10), "bytes", col_int(st, 11), "detail", col_text(st, 12), "device",
			 col_int(st, 13), "anomalous", sqlite3_column_int(st, 14));
	mono = sqlite3_column_int64(st, 3);
	dur = sqlite3_column_int64(st, 9);
	tid = sqlite3_column_int64(st, 5);
	py_id = sqlite3_column_int64(st, 15);
	nat_id = sqlite3_column_int64(st, 16);
	if (sqlite3_column_type(st, 17) != SQLITE_NULL) {
		py = json_pack("{s:o, s:o, s:o}", "file", col_text(st, 17), "line", col_int(st, 18), "function",
			       col_text(st, 19));
		if (py && sqlite3_column_type(st, 20) == SQLITE_INTEGER)
			json_object_set_new(py, "python_via", json_integer(sqlite3_column_int64(st, 20)));
	}
	cw_format_duration((uint64_t)dur, d, sizeof(d));
	strbuf_addf(text, "call %" PRId64 ": %s/%s took %s on tid %" PRId64 " (%s)", id,
		    json_string_value(json_object_get(call, "source")), json_string_value(json_object_get(call, "op")),
		    d, tid, json_string_value(json_object_get(call, "comm")) ?: "?");
	if (json_is_object(py))
		strbuf_addf(text, " from %s:%" JSON_INTEGER_FORMAT " in %s",
			    json_string_value(json_object_get(py, "file")),
			    json_integer_value(json_object_get(py, "line")),
			    json_string_value(json_object_get(py, "function")));
	if (json_is_integer(json_object_get(py, "python_via")))
		strbuf_addf(text, " (attributed: thread %" JSON_INTEGER_FORMAT " waits on this call's thread)",
			    json_integer_value(json_object_get(py, "python_via")));
	strbuf_addch(text, '\n');
	sqlite3_finalize(st);
	st = NULL;
	/* The thread's timeline around the call, every layer: its own calls
	 * and its off-CPU intervals, ordered by start. */
	lo = mono - around_ms * (int64_t)NSEC_PER_MSEC;
	hi = mono + dur + around_ms * (int64_t)NSEC_PER_MSEC;
	rc = sqlite3_prepare_v2(
		db,
		"SELECT * FROM ("
		" SELECT mono_ns AS t, source AS layer, op AS what, duration_ns, id, NULL AS by_comm, detail"
		"  FROM events WHERE tid = ?1 AND mono_ns >= ?2 AND mono_ns < ?3"
		" UNION ALL"
		" SELECT start_mono_ns, 'sched', reason, duration_ns, NULL, by_comm, NULL"
		"  FROM offcpu WHERE tid = ?1 AND end_mono_ns >= ?2 AND start_mono_ns < ?3"
		") ORDER BY t LIMIT ?4",
		-1, &st, NULL);
	if (rc != SQLITE_OK) {
		json_decref(call);
		json_decref(py);
		rc = tool_stop_reason(c, cw_sqlite_errno(rc), "explain_call", err, errlen);
		goto out;
	}
	sqlite3_bind_int64(st, 1, tid);
	sqlite3_bind_int64(st, 2, lo);
	sqlite3_bind_int64(st, 3, hi);
	sqlite3_bind_int64(st, 4, limit + 1);
	tl = json_array();
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t t = sqlite3_column_int64(st, 0);

		if (n++ == limit)
			break;
		json_array_append_new(tl, json_pack("{s:I, s:o, s:o, s:I, s:o, s:o, s:o}", "offset_ns",
						    (json_int_t)(t - mono), "layer", col_text(st, 1), "what",
						    col_text(st, 2), "duration_ns",
						    (json_int_t)sqlite3_column_int64(st, 3), "call_id", col_int(st, 4),
						    "by_comm", col_text(st, 5), "detail", col_text(st, 6)));
		cw_format_duration((uint64_t)sqlite3_column_int64(st, 3), d, sizeof(d));
		strbuf_addf(text, "  %+.3f ms  %-7s %s %s%s%s\n", (double)(t - mono) / 1e6,
			    (const char *)sqlite3_column_text(st, 1) ?: "?",
			    (const char *)sqlite3_column_text(st, 2) ?: "?", d,
			    sqlite3_column_text(st, 5) ? " by " : "",
			    sqlite3_column_text(st, 5) ? (const char *)sqlite3_column_text(st, 5) : "");
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		json_decref(call);
		json_decref(py);
		json_decref(tl);
		rc = tool_stop_reason(c, cw_sqlite_errno(rc), "explain_call", err, errlen);
		goto out;
	}
	*out = json_pack("{s:o, s:o, s:o, s:o, s:I, s:b}", "call", call, "python", py, "stack",
			 stack_json(db, py_id, nat_id), "timeline", tl, "around_ms", (json_int_t)around_ms,
			 "truncated", n > limit);
	rc = 0;
out:
	sqlite3_finalize(st);
	tool_close_db(db);
	return rc;
}

TOOL_FN(cw_tool_stacks)
{
	const char *op = tool_str(args, "op");
	int64_t pid = tool_int(args, "pid", 0), top = tool_int(args, "top_n", 10);
	json_t *a = json_array();
	sqlite3_stmt *st = NULL;
	const char *sql;
	sqlite3 *db;
	int rc, n = 0;

	if ((rc = tool_open_db(c, &db, err, errlen))) {
		json_decref(a);
		return rc;
	}
	/* Slow calls first (the anomalous index), whole ops when asked. */
	if ((rc = cw_store_read_sql(db, CW_READ_STACKS, &sql)) < 0) {
		rc = tool_stop_reason(c, rc, "stacks", err, errlen);
		goto out;
	}
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		rc = tool_stop_reason(c, cw_sqlite_errno(rc), "stacks", err, errlen);
		goto out;
	}
	if (op)
		sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, top + 1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		char tot[32], mx[32];
		json_t *frames;
		size_t k;

		if (n++ == top)
			break;
		frames = stack_json(db, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 0));
		json_array_append_new(a, json_pack("{s:I, s:I, s:I, s:I, s:o, s:o, s:o}", "calls",
						   (json_int_t)sqlite3_column_int64(st, 2), "total_ns",
						   (json_int_t)sqlite3_column_int64(st, 3), "max_ns",
						   (json_int_t)sqlite3_column_int64(st, 4), "example_call_id",
						   (json_int_t)sqlite3_column_int64(st, 5), "op", col_text(st, 6),
						   "frames", frames, "stack_id", col_int(st, 0)));
		cw_format_duration((uint64_t)sqlite3_column_int64(st, 3), tot, sizeof(tot));
		cw_format_duration((uint64_t)sqlite3_column_int64(st, 4), mx, sizeof(mx));
		strbuf_addf(text, "#%d %s: %lld calls, %s total, max %s (example call id %lld)\n", n,
			    (const char *)sqlite3_column_text(st, 6) ?: "?", (long long)sqlite3_column_int64(st, 2),
			    tot, mx, (long long)sqlite3_column_int64(st, 5));
		for (k = 0; k < json_array_size(frames) && k < 8; k++)
			strbuf_addf(text, "    %s\n", json_string_value(json_array_get(frames, k)));
		if (json_array_size(frames) > 8)
			strbuf_addf(text, "    ... %zu more frames\n", json_array_size(frames) - 8);
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		rc = tool_stop_reason(c, cw_sqlite_errno(rc), "stacks", err, errlen);
		goto out;
	}
	if (!json_array_size(a))
		strbuf_addf(text, "no recorded stacks%s%s\n", op ? " for op " : "", op ? op : "");
	*out = json_pack("{s:O, s:I, s:b}", "stacks", a, "count", (json_int_t)json_array_size(a), "truncated",
			 n > top);
	rc = 0;
out:
	json_decref(a);
	sqlite3_finalize(st);
	tool_close_db(db);
	return rc;
}

#define MAX_SQL_PARAMS 32

TOOL_FN(cw_tool_run_sql)
{
	struct cw_ro_value params[MAX_SQL_PARAMS];
	struct cw_ro_query_limits lim = { 0 };
	struct cw_ro_result *res = NULL;
	json_t *jp = json_object_get(args, "params"), *cols, *rows;
	uint64_t now = cw_monotonic_ns();
	int np = 0, rc;
	int64_t i;

	if (json_array_size(jp) > MAX_SQL_PARAMS) {
		snprintf(err, errlen, "at most %d params", MAX_SQL_PARAMS);
		return -EINVAL;
	}
	for (size_t k = 0; k < json_array_size(jp); k++, np++) {
		if (cw_ro_value_from_json(json_array_get(jp, k), &params[k])) {
			snprintf(err, errlen, "params[%zu] must be null, a number, a boolean or a string", k);
			return -EINVAL;
		}
	}
	lim.max_rows = tool_int(args, "max_rows", CW_MCP_DEFAULT_ROWS);
	lim.timeout_ns = c->deadline_ns > now ? c->deadline_ns - now : 1;
	rc = cw_ro_query_collect_cancel(c->cfg->db_path, tool_str(args, "sql"), np ? params : NULL, np, &lim,
					&c->cancelled, &res, err, errlen);
	if (rc) {
		/* The store's sentences already say what was wrong ("query is
		 * read-only: INSERT not allowed", "sql error: ..."). */
		if (rc == -EPERM || rc == -EINVAL) {
			size_t l = strlen(err);

			snprintf(err + l, errlen - l, "; run_sql takes one read-only SELECT (see causeway://schema)");
		}
		return rc;
	}
	cols = json_array();
	for (i = 0; i < res->ncols; i++)
		json_array_append_new(cols, cw_json_str(res->names[i]));
	rows = cw_ro_result_json(res);
	for (i = 0; i < res->ncols; i++)
		strbuf_addf(text, "%s%s", i ? "\t" : "", res->names[i]);
	strbuf_addch(text, '\n');
	for (i = 0; i < res->nrows && !text->overflow; i++) {
		for (int k = 0; k < res->ncols; k++) {
			json_t *v = cw_ro_value_json(&res->vals[i * res->ncols + k]);
			char *s = json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY);

			strbuf_addf(text, "%s%s", k ? "\t" : "", s ? s : "?");
			free(s);
			json_decref(v);
		}
		strbuf_addch(text, '\n');
	}
	strbuf_addf(text, "(%" PRId64 " row%s%s)\n", res->nrows, res->nrows == 1 ? "" : "s",
		    res->info.truncated ? "; truncated at max_rows, narrow the query or raise max_rows" : "");
	*out = json_pack("{s:o, s:o, s:I, s:b, s:I, s:I}", "columns", cols, "rows", rows, "row_count",
			 (json_int_t)res->nrows, "truncated", res->info.truncated, "max_rows",
			 (json_int_t)res->info.max_rows, "elapsed_ns", (json_int_t)res->info.elapsed_ns);
	cw_ro_result_free(res);
	return 0;
}
