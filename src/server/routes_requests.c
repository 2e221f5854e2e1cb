/* /api/v1/requests: the inference requests of a window, slowest or most
 * recent first, and a per-route summary (docs/api.md). The rows come from
 * the store's reader (store/ro_requests.h), the one the MCP tool
 * slow_requests calls, under the request's deadline like every route. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <string.h>

#include "store/requests.h"
#include "store/ro_requests.h"
#include "util/timeutil.h"

void cw_route_requests(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	const char *path = cw_api_arg(c, "path"), *route = cw_api_arg(c, "route"), *method = cw_api_arg(c, "method");
	const char *node = cw_api_arg(c, "node"), *status = cw_api_arg(c, "status"), *min = cw_api_arg(c, "min_duration");
	struct cw_req_filter f = { 0 };
	uint64_t deadline;
	json_t *j = NULL;
	sqlite3 *db;
	int rc;

	if (path && route && strcmp(path, route)) {
		cw_reply_error(r, 400, "\"path\" and \"route\" name the same filter: give one");
		return;
	}
	f.path = path ? path : route;
	if ((f.path && (!*f.path || strlen(f.path) > CW_REQ_FILTER_PATH_MAX)) ||
	    (method && (!*method || strlen(method) > CW_REQ_METHOD_MAX)) || (node && strlen(node) > 255)) {
		cw_reply_error(r, 400, "\"path\", \"method\" or \"node\" empty or too long");
		return;
	}
	f.method = method;
	f.node = node && *node ? node : NULL;
	if (status && cw_req_status_class_parse(status, &f.status_class)) {
		cw_reply_error(r, 400, "invalid status \"%s\" (1xx .. 5xx, or none)", status);
		return;
	}
	if (min && cw_parse_duration(min, &f.min_duration_ns)) {
		cw_reply_error(r, 400, "invalid min_duration \"%s\" (e.g. 250ms, 2s)", min);
		return;
	}
	if (cw_req_order_parse(cw_api_arg(c, "order"), &f.order)) {
		cw_reply_error(r, 400, "invalid order \"%s\" (slowest or recent)", cw_api_arg(c, "order"));
		return;
	}
	if (cw_api_int(c, "limit", 0, CW_REQ_LIST_MAX, CW_REQ_LIST_DEFAULT, &f.limit, r) ||
	    cw_api_int(c, "pid", 0, 4194304, 0, &f.pid, r))
		return;
	if (cw_api_open(s, &db, &deadline, r))
		return;
	/* since counts back from the newest data, a request's start included
	 * (a server traced with --inference alone has no calls to count
	 * from). */
	if (cw_api_window_flags(db, c, CW_SCOPE_NEWEST_REQUESTS, &f.from_ns, &f.to_ns, r))
		goto out;
	if ((rc = cw_req_read(db, &f, &j))) {
		cw_api_fail(s, deadline, rc, "requests", r);
		goto out;
	}
	json_object_set_new(j, "node", json_string(s->node));
	json_object_set_new(j, "from_ns", json_integer((json_int_t)f.from_ns));
	json_object_set_new(j, "to_ns", json_integer((json_int_t)f.to_ns));
	json_object_set_new(j, "order", json_string(f.order == CW_REQ_ORDER_RECENT ? "recent" : "slowest"));
	json_object_set_new(j, "limit", json_integer((json_int_t)f.limit));
	cw_reply_json(r, 200, j);
out:
	cw_server_close_db(db);
}
