/* Helpers shared by the dashboard routes (routes_*.c) and their entry
 * points, called from cw_route_dispatch in routes.c. Not an API. */
#ifndef CW_SERVER_ROUTES_API_H
#define CW_SERVER_ROUTES_API_H

#include "server/internal.h"

/* The query-string value of k, NULL when absent. */
const char *cw_api_arg(struct MHD_Connection *c, const char *k);
/* Opens the read-only connection with the request's deadline; on failure
 * fills r and returns -errno. */
int cw_api_open(struct cw_server *s, sqlite3 **db, uint64_t *deadline, struct cw_reply *r);
/* 504 when the deadline passed, else 500 with what failed and why. */
void cw_api_fail(struct cw_server *s, uint64_t deadline, int rc, const char *what, struct cw_reply *r);

/* ?since=DURATION (back from the newest data) or ?from=&to=, as every
 * reader takes them (analysis/scope.h). 0 = open on that side. 400 in r
 * and -EINVAL on bad input; 500/504 in r and -errno when the newest data
 * cannot be read. */
int cw_api_window(sqlite3 *db, struct MHD_Connection *c, uint64_t *from, uint64_t *to, struct cw_reply *r);
/* The same with cw_scope_window's flags (CW_SCOPE_NEWEST_REQUESTS). */
int cw_api_window_flags(sqlite3 *db, struct MHD_Connection *c, unsigned flags, uint64_t *from, uint64_t *to,
			struct cw_reply *r);
/* Optional integer k in [lo, hi]; def when absent. 400 in r and -EINVAL
 * when present and not a number in range. */
int cw_api_int(struct MHD_Connection *c, const char *k, int64_t lo, int64_t hi, int64_t def, int64_t *out,
	       struct cw_reply *r);

/* Tenant filters from the query string (routes_tenant.c). */
#include "analysis/scope.h"
struct cw_api_tenant_args {
	struct cw_scope s; /* the filters in s.tf[0..s.ntf) (analysis/scope.h) */
	int rc;
	char err[256];
};
/* Returns 0 (t->n filters), or -EINVAL after a 400 reply. */
int cw_api_tenant_args(struct MHD_Connection *c, struct cw_api_tenant_args *t, struct cw_reply *r);
/* The pids the filters select: *npids as explain and the summary take it
 * (0: no filter, -1: nothing matched). Returns 0 or -errno. */
int cw_api_tenant_pids(sqlite3 *db, struct cw_api_tenant_args *t, int64_t **pids, int *npids);
/* A text key of the filters, for caches; truncated to len. */
void cw_api_tenant_key(const struct cw_api_tenant_args *t, char *out, size_t len);
/* k=1 or k=true. */
int cw_api_flag(struct MHD_Connection *c, const char *k);

/* sqlite3_prepare_v2 of sql into *st. Returns 0 or -errno. */
int cw_api_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st);
/* {"node", "from_ns", "to_ns", k: v}: the answer of a windowed route
 * (steals v). */
json_t *cw_api_window_answer(const struct cw_server *s, uint64_t from, uint64_t to, const char *k, json_t *v);

/* Column helpers. */
json_t *cw_api_text(sqlite3_stmt *st, int i);
json_t *cw_api_int_or_null(sqlite3_stmt *st, int i);
/* {"file","line","function"} from three columns, null when file is NULL. */
json_t *cw_api_python(sqlite3_stmt *st, int i);

/* The newest and oldest data, from the per-second aggregates (wall ns;
 * 0 when empty). */
int cw_api_data_range(sqlite3 *db, uint64_t *from, uint64_t *to);

struct cw_explain_result;
/* Adds "timeline_window" {from_ns, to_ns, pid, tid} to each chain of the
 * /chains answer j, so a page asks /timeline without a second explain. */
void cw_chains_add_windows(const struct cw_explain_result *res, json_t *j);

/* The /chains answer for this request's window, pid and node (cached,
 * routes_chains.c), parsed; 0, or -errno with r filled. */
int cw_chains_answer(struct cw_server *s, struct MHD_Connection *c, sqlite3 *db, uint64_t deadline, json_t **out,
		     struct cw_reply *r);

/* The chain count of the newest cached default-window /chains answer
 * (any file version), -1 when there is none. */
int cw_chains_cached_count(struct cw_server *s);

/* The routes. */
void cw_route_stream(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_chains(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_timeline(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_ops_detail(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_ops_series(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
/* Adds "capture", "host", "live" and "window" to the overview answer j.
 * Returns 0, -EINVAL with a 400 in r (a bad window), or another -errno. */
int cw_overview_extend(struct cw_server *s, struct MHD_Connection *c, sqlite3 *db, json_t *j, struct cw_reply *r);
void cw_route_export_perfetto(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_fleet(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_gpu(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_nccl_ranks(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_tenants(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);
void cw_route_requests(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r);

#endif
