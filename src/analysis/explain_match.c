/* Filters and windows that match nothing (explain_match.h). */
#include "analysis/explain_match.h"

#include <stdio.h>

#include "store/sqlite_util.h"
#include "util/timeutil.h"

/* 1 when pid ran on some node of the store (trace and demo record every
 * traced process in processes). */
static int pid_known(sqlite3 *db, int64_t pid)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT 1 FROM processes WHERE pid = ?1 LIMIT 1", -1, &st, NULL);

	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, pid);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_explain_unmatched(sqlite3 *db, const struct cw_explain_opts *o, const struct cw_explain_result *r, char *why,
			 size_t len)
{
	int known;

	if (o->npids < 0) {
		snprintf(why, len, "no process of the store ran in the tenant named by the filter");
		return 1;
	}
	if (o->pid) {
		if ((known = pid_known(db, o->pid)) < 0)
			return known;
		if (!known) {
			snprintf(why, len, "no process %lld in the store", (long long)o->pid);
			return 1;
		}
	}
	/* Chains about events (an OOM kill, an Xid fault) need no calls, a
	 * served window's requests are data too (inference_latency). An
	 * empty store explained whole is not a filter that missed. */
	if ((o->from_wall_ns || o->to_wall_ns) && r->calls_analysed == 0 && r->requests_analysed == 0 && r->count == 0) {
		char from[40], to[40];

		cw_format_time(r->from_wall_ns, from, (int)sizeof(from));
		cw_format_time(r->to_wall_ns, to, (int)sizeof(to));
		snprintf(why, len, "no GPU calls or requests in the window %s .. %s", from, to);
		return 1;
	}
	return 0;
}
