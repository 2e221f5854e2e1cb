/* Reading the inference requests of a store (schema v11, docs/schema.md):
 * the slowest or most recent requests of a window and a per-route summary
 * (count, p50/p95/p99 of duration and TTFT, errors). One reader for
 * /api/v1/requests (server/routes_requests.c) and the MCP tool
 * slow_requests (mcp/tools_requests.c), so both answer the same rows.
 *
 * db is a read-only connection (cw_store_open_reader); its progress
 * handler bounds the time. A file older than v11 has no requests table:
 * the answer is empty, with "requests_table": false. */
#ifndef CW_STORE_RO_REQUESTS_H
#define CW_STORE_RO_REQUESTS_H

#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

#define CW_REQ_LIST_DEFAULT 50
#define CW_REQ_LIST_MAX 1000
/* Routes summarised one by one; past them, "other" (the wire decides how
 * many paths exist). */
#define CW_REQ_SUMMARY_ROUTES 64
/* Rows the summary reads at most; past them it says so (summary_truncated). */
#define CW_REQ_SUMMARY_SCAN_MAX 2000000
#define CW_REQ_FILTER_PATH_MAX 256

enum cw_req_order {
	CW_REQ_ORDER_SLOWEST = 0,
	CW_REQ_ORDER_RECENT,
};

struct cw_req_filter {
	uint64_t from_ns, to_ns;  /* request start (wall ns) in [from, to]; 0: open */
	const char *path;         /* exact path, or a prefix ending in '*'; NULL: any */
	const char *method;       /* exact method; NULL: any */
	const char *node;         /* NULL: any */
	int64_t pid;              /* 0: any */
	/* The list only (the summary counts every request of the route):
	 * status class 1..5 (Nxx), 0 any, -1 no status seen. */
	int status_class;
	uint64_t min_duration_ns;
	int64_t limit;            /* rows of the list, 0..CW_REQ_LIST_MAX */
	enum cw_req_order order;
};

/* "slowest" / "recent" -> order; -EINVAL for anything else (NULL: slowest). */
int cw_req_order_parse(const char *s, enum cw_req_order *out);
/* "2xx" .. "5xx", "2" .. "5", "none" -> class; -EINVAL otherwise. */
int cw_req_status_class_parse(const char *s, int *out);

/* The newest request start (wall ns) into *out, 0 when none or no table.
 * Returns 0 or -errno. */
int cw_req_newest_wall(sqlite3 *db, uint64_t *out);

/* The answer object: {"requests_table", "requests": [row...],
 * "matched" (rows the list's filters select), "truncated" (matched >
 * rows), "routes": [summary...], "summary_truncated"}. A row: {"id",
 * "node", "wall", "wall_ns", "mono_ns", "method", "path", "status",
 * "ttft_ms", "duration_ms", "ttft_ns", "duration_ns", "streamed",
 * "bytes_in", "bytes_out", "body_events", "itl_max_ms", "itl_mean_ms",
 * "end_reason", "pid", "tid", "resp_tid", "comm", "conn_id", "port",
 * "cgroup_id", "container"}. A route: {"method", "path", "count",
 * "errors", "client_errors", "p50_ms", "p95_ms", "p99_ms", "max_ms",
 * "ttft_count", "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms"}. Returns 0
 * or -errno (-EINTR when the progress handler stopped it). */
int cw_req_read(sqlite3 *db, const struct cw_req_filter *f, json_t **out);

#endif
