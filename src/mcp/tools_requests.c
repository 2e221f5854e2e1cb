/* slow_requests: the inference requests of a window, slowest (or most
 * recent) first, with the per-route summary: the answer of
 * /api/v1/requests, from the same reader (store/ro_requests.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/scope.h"
#include "mcp/tools_int.h"
#include "store/requests.h"
#include "store/ro_requests.h"
#include "util/timeutil.h"

static double num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static void text_route(struct strbuf *text, json_t *r)
{
	json_t *m = json_object_get(r, "method");

	strbuf_addf(text, "%.16s %.256s: %lld requests, p50 %.1f ms, p95 %.1f ms, p99 %.1f ms",
		    json_is_string(m) ? json_string_value(m) : "*", json_string_value(json_object_get(r, "path")),
		    (long long)json_integer_value(json_object_get(r, "count")), num(r, "p50_ms"), num(r, "p95_ms"),
		    num(r, "p99_ms"));
	if (json_integer_value(json_object_get(r, "ttft_count")))
		strbuf_addf(text, ", TTFT p50 %.1f ms p99 %.1f ms", num(r, "ttft_p50_ms"), num(r, "ttft_p99_ms"));
	strbuf_addf(text, ", %lld errors\n", (long long)json_integer_value(json_object_get(r, "errors")));
}

static void text_row(struct strbuf *text, json_t *q)
{
	json_t *st = json_object_get(q, "status"), *ttft = json_object_get(q, "ttft_ms");

	strbuf_addf(text, "%s %.16s %.256s", json_string_value(json_object_get(q, "wall")),
		    json_string_value(json_object_get(q, "method")) ? json_string_value(json_object_get(q, "method"))
								    : "?",
		    json_string_value(json_object_get(q, "path")) ? json_string_value(json_object_get(q, "path")) : "?");
	if (json_is_integer(st))
		strbuf_addf(text, " %lld", (long long)json_integer_value(st));
	else
		strbuf_adds(text, " (no status)");
	strbuf_addf(text, ": %.1f ms", num(q, "duration_ms"));
	if (json_is_number(ttft))
		strbuf_addf(text, " (TTFT %.1f ms)", json_number_value(ttft));
	strbuf_addf(text, ", pid %lld tid %lld\n", (long long)json_integer_value(json_object_get(q, "pid")),
		    (long long)json_integer_value(json_object_get(q, "tid")));
}

TOOL_FN(cw_tool_slow_requests)
{
	struct cw_req_filter f = { 0 };
	const char *status = tool_str(args, "status");
	json_t *j = NULL, *v;
	sqlite3 *db;
	size_t i;
	int rc;

	f.path = tool_str(args, "path");
	f.method = tool_str(args, "method");
	f.node = tool_str(args, "node");
	f.pid = tool_int(args, "pid", 0);
	f.limit = tool_int(args, "limit", 20);
	if (status && cw_req_status_class_parse(status, &f.status_class)) {
		snprintf(err, errlen, "invalid \"status\" \"%s\": 1xx .. 5xx, or none", status);
		return -EINVAL;
	}
	if (cw_req_order_parse(tool_str(args, "order"), &f.order)) {
		snprintf(err, errlen, "invalid \"order\": slowest or recent");
		return -EINVAL;
	}
	if ((rc = tool_duration(args, "min_duration", &f.min_duration_ns, err, errlen)))
		return rc;
	if ((rc = tool_open_db(c, &db, err, errlen)))
		return rc;
	/* since counts back from the newest data, a request's start included
	 * (as /api/v1/requests reads it). */
	if ((rc = tool_window_flags(db, args, CW_SCOPE_NEWEST_REQUESTS, &f.from_ns, &f.to_ns, err, errlen))) {
		tool_close_db(db);
		return rc;
	}
	rc = cw_req_read(db, &f, &j);
	tool_close_db(db);
	if (rc)
		return tool_stop_reason(c, rc, "slow_requests", err, errlen);
	json_object_set_new(j, "node", json_string(c->cfg->node));
	json_object_set_new(j, "window", json_pack("{s:I, s:I}", "from_wall_ns", (json_int_t)f.from_ns, "to_wall_ns",
						   (json_int_t)f.to_ns));
	json_object_set_new(j, "order", json_string(f.order == CW_REQ_ORDER_RECENT ? "recent" : "slowest"));
	if (!json_is_true(json_object_get(j, "requests_table")))
		strbuf_adds(text, "this database has no requests table (recorded before schema v11, or not by "
				  "`causeway trace --inference`)\n");
	else if (!json_array_size(json_object_get(j, "routes")))
		strbuf_adds(text, "no inference request recorded in the window\n");
	json_array_foreach(json_object_get(j, "routes"), i, v) text_route(text, v);
	if (json_array_size(json_object_get(j, "requests")))
		strbuf_addf(text, "%s requests:\n", f.order == CW_REQ_ORDER_RECENT ? "most recent" : "slowest");
	json_array_foreach(json_object_get(j, "requests"), i, v) text_row(text, v);
	if (json_is_true(json_object_get(j, "truncated")))
		strbuf_addf(text, "(%zu of %lld matching requests; raise limit for more)\n",
			    json_array_size(json_object_get(j, "requests")),
			    (long long)json_integer_value(json_object_get(j, "matched")));
	*out = j;
	return 0;
}
