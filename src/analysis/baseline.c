/* Expected latency from outside the window (baseline.h). */
#include <errno.h>
#include <string.h>

#include "analysis/baseline.h"
#include "store/store.h"
#include "util/hist.h"

int cw_baseline_load(sqlite3 *db, const struct cw_opstat *st, int64_t from_sec, int64_t to_sec,
		     struct cw_baseline *out)
{
	sqlite3_stmt *q = NULL;
	struct cw_hist h;
	int rc;

	memset(out, 0, sizeof(*out));
	cw_hist_reset(&h);
	/* Two ranges of the aggregates' primary key (node, source, op, second). */
	rc = sqlite3_prepare_v2(db,
				"SELECT count, sum_ns, max_ns, hist FROM aggregates WHERE node = ?1 AND source = ?2"
				" AND op = ?3 AND (second BETWEEN ?4 AND ?5 OR second BETWEEN ?6 AND ?7)",
				-1, &q, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(q, 1, st->node, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 2, st->source, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 3, st->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, from_sec - CW_BASELINE_SPAN_SEC);
	sqlite3_bind_int64(q, 5, from_sec - 1);
	sqlite3_bind_int64(q, 6, to_sec + 1);
	sqlite3_bind_int64(q, 7, to_sec + CW_BASELINE_SPAN_SEC);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t cnt = sqlite3_column_int64(q, 0);

		if (cnt <= 0)
			continue;
		if (cw_hist_decode_merge(&h, sqlite3_column_blob(q, 3), (size_t)sqlite3_column_bytes(q, 3),
					 (uint64_t)cnt, (uint64_t)sqlite3_column_int64(q, 1),
					 (uint64_t)sqlite3_column_int64(q, 2)) < 0) {
			sqlite3_finalize(q);
			return -EINVAL;
		}
		out->count += (uint64_t)cnt;
		out->seconds++;
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	if (out->count < CW_BASELINE_MIN_CALLS || out->seconds < CW_BASELINE_MIN_SECONDS)
		return 0;
	out->p50_ns = cw_hist_quantile(&h, 0.50);
	return out->p50_ns > 0;
}
