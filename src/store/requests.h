/* Inference requests in the store (schema v11, docs/schema.md): the
 * buckets of request_totals, the bounds on what the wire may put into a
 * label, and the retention rule for slow and failed requests. Shared by
 * the writer, retention and the /metrics renderer (metrics/inference.c). */
#ifndef CW_STORE_REQUESTS_H
#define CW_STORE_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

/* The monitoring chapter's latency buckets (0.01 .. 10 s), upper bounds
 * inclusive as Prometheus' le: a request of exactly 100 ms is in le=0.1. */
#define CW_REQ_BUCKETS 10
extern const uint64_t cw_req_bucket_ns[CW_REQ_BUCKETS];
/* Column suffixes of request_totals (dur_le_<s>, ttft_le_<s>). */
extern const char *const cw_req_bucket_col[CW_REQ_BUCKETS];
/* The le label values ("0.01" ...). */
extern const char *const cw_req_bucket_le[CW_REQ_BUCKETS];

/* Routes: the first CW_REQ_MAX_ROUTES distinct (method, path) of a node
 * keep their path in request_totals; later ones are counted under route
 * "other" (the wire decides what paths exist: a scanner must not grow
 * the table or the scrape without bound). */
#define CW_REQ_MAX_ROUTES 32
#define CW_REQ_OTHER_ROUTE "other"
#define CW_REQ_UNKNOWN "unknown"
/* Bounds on text from the wire as stored. */
#define CW_REQ_METHOD_MAX 16
#define CW_REQ_PATH_MAX 256
#define CW_REQ_COMM_MAX 16
#define CW_REQ_END_MAX 16
#define CW_ENGINE_NAME_MAX 32
#define CW_ENGINE_METRIC_MAX 128

/* Copies src into dst (cap bytes with the NUL) keeping printable ASCII;
 * any other byte becomes '?'. With stop_at_query, copying stops at the
 * first '?' or '#' of src (a query string can hold secrets). Returns the
 * length copied; dst is "" for NULL src. */
size_t cw_req_clean(char *dst, size_t cap, const char *src, int stop_at_query);

/* The method as a label: one of the RFC 9110 methods (and PATCH), OTHER
 * for any other token, "unknown" for NULL or "". */
const char *cw_req_method_label(const char *method);

/* A status as counted in request_totals: 100..599, else 0 (none seen or
 * not a status). */
int cw_req_status_key(int status);
/* "1xx" .. "5xx", or "none" for 0. */
const char *cw_req_code_class(int status_key);

/* SQL predicates over a requests row r (columns status, end_reason,
 * duration_ns, node, method, path) that retention keeps longest:
 *  failed: status >= 500, or no status and the connection closed;
 *  slow:   longer than CW_REQ_SLOW_NS, or than 3x the mean duration of
 *          its route over everything the node served (request_totals,
 *          in temp.req_route_mean), the cheap stand-in for its median.
 * The mean is what request_totals gives in one row per route: a median
 * would need a sort of every request of the route at each pruning. */
#define CW_REQ_SLOW_NS 2000000000LL
/* Never NULL: a NULL status would make "NOT failed" NULL, and a request
 * without a status that merely went idle would never count as ordinary. */
#define CW_REQ_FAILED_SQL(r) \
	"(coalesce(" r ".status, 0) >= 500 OR (" r ".status IS NULL AND " r ".end_reason = 'closed'))"

#endif
