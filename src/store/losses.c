#include "store/losses.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "util/utf8.h"

/* One row per session with its loss counters summed by kind; sessions of
 * older files that lack store.events get their events counted. total(), cast
 * back: sum() fails the whole statement with "integer overflow" on a hostile
 * INT64_MIN counter, total() saturates. */
static const char losses_sql[] =
	"SELECT s.id, s.node, s.kind,"
	" (SELECT value FROM counters c WHERE c.session_id = s.id AND c.node = s.node AND c.name = 'store.events'),"
	" CAST(total(CASE WHEN k.name = 'store.failed_rows' THEN k.value END) AS INTEGER),"
	" CAST(total(CASE WHEN k.name = 'trace.store_wait.dropped' THEN k.value END) AS INTEGER),"
	" CAST(total(CASE WHEN k.name LIKE 'trace.ring\\_drops.%' ESCAPE '\\'"
	"  OR k.name = 'trace.cuda.state_map_full' THEN k.value END) AS INTEGER),"
	" CAST(total(CASE WHEN k.name IN ('pipeline.rejected_size', 'pipeline.rejected_version',"
	"  'pipeline.rejected_type', 'pipeline.unpaired_returns', 'pipeline.overflow_entries') THEN k.value END) AS INTEGER),"
	" CAST(total(CASE WHEN k.name = 'trace.cuda.aggregated' THEN k.value END) AS INTEGER),"
	" CAST(total(CASE WHEN k.name = 'trace.cuda.folded' THEN k.value END) AS INTEGER)"
	" FROM sessions s JOIN counters k ON k.session_id = s.id AND k.node = s.node"
	" WHERE (?1 IS NULL OR s.node = ?1)"
	"  AND (?3 = 0 OR s.started_wall_ns <= ?3)"
	"  AND (?2 = 0 OR s.ended_wall_ns IS NULL OR s.ended_wall_ns >= ?2)"
	" GROUP BY s.id ORDER BY s.id";

static int64_t count_events(sqlite3 *db, int64_t session_id)
{
	sqlite3_stmt *s;
	int64_t n = 0;

	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM events WHERE session_id = ?", -1, &s, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(s, 1, session_id);
	if (sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return n;
}

static uint64_t col_u64(sqlite3_stmt *s, int i)
{
	int64_t v = sqlite3_column_int64(s, i);

	return v > 0 ? (uint64_t)v : 0;
}

int cw_store_losses(sqlite3 *db, const char *node, uint64_t from_wall_ns, uint64_t to_wall_ns,
		    struct cw_session_loss **out)
{
	struct cw_session_loss *v = NULL, *nv, *l;
	sqlite3_stmt *s;
	int n = 0, rc;

	*out = NULL;
	rc = sqlite3_prepare_v2(db, losses_sql, -1, &s, NULL);
	if (rc != SQLITE_OK) {
		/* A file from before the counters table: nothing recorded. */
		return 0;
	}
	if (node)
		sqlite3_bind_text(s, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (int64_t)from_wall_ns);
	sqlite3_bind_int64(s, 3, (int64_t)to_wall_ns);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct cw_session_loss x;
		double total;

		memset(&x, 0, sizeof(x));
		x.session_id = sqlite3_column_int64(s, 0);
		snprintf(x.node, sizeof(x.node), "%s", sqlite3_column_text(s, 1) ? (const char *)sqlite3_column_text(s, 1) : "");
		snprintf(x.kind, sizeof(x.kind), "%s", sqlite3_column_text(s, 2) ? (const char *)sqlite3_column_text(s, 2) : "");
		x.store_failed = col_u64(s, 4);
		x.lock_dropped = col_u64(s, 5);
		x.ring_drops = col_u64(s, 6);
		x.pipeline = col_u64(s, 7);
		x.aggregated = col_u64(s, 8);
		x.folded = col_u64(s, 9);
		x.lost = x.store_failed + x.lock_dropped + x.ring_drops + x.pipeline;
		if (!x.lost && !x.aggregated)
			continue;
		x.stored = sqlite3_column_type(s, 3) == SQLITE_NULL ? (uint64_t)count_events(db, x.session_id)
								     : col_u64(s, 3);
		total = (double)x.stored + (double)x.folded + (double)x.lost + (double)x.aggregated;
		x.lost_share = total > 0 ? (double)x.lost / total : 0;
		x.aggregated_share = total > 0 ? (double)x.aggregated / total : 0;
		nv = realloc(v, (size_t)(n + 1) * sizeof(*v));
		if (!nv) {
			rc = SQLITE_NOMEM;
			break;
		}
		v = nv;
		l = &v[n++];
		*l = x;
	}
	if (rc != SQLITE_DONE) {
		rc = cw_sqlite_db_errno(db, rc);
		sqlite3_finalize(s);
		free(v);
		return rc ? rc : -EIO;
	}
	sqlite3_finalize(s);
	*out = v;
	return n;
}

void cw_session_loss_text(const struct cw_session_loss *l, char *buf, size_t len)
{
	size_t o;

#define ADD(...)                                                          \
	do {                                                              \
		if (o < len)                                              \
			o += (size_t)snprintf(buf + o, len - o, __VA_ARGS__); \
	} while (0)
	o = 0;
	ADD("session %lld (%s, node \"%s\") ", (long long)l->session_id, l->kind, l->node);
	if (l->lost) {
		const char *sep = ": ";

		ADD("lost %llu of %llu records (%.1f%%)", (unsigned long long)l->lost,
		    (unsigned long long)(l->stored + l->folded + l->lost + l->aggregated), 100.0 * l->lost_share);
		if (l->store_failed) {
			ADD("%s%llu refused by the store (store.failed_rows: a full disk or a write error)", sep,
			    (unsigned long long)l->store_failed);
			sep = ", ";
		}
		if (l->lock_dropped) {
			ADD("%s%llu dropped while the store was locked", sep, (unsigned long long)l->lock_dropped);
			sep = ", ";
		}
		if (l->ring_drops) {
			ADD("%s%llu ring drops", sep, (unsigned long long)l->ring_drops);
			sep = ", ";
		}
		if (l->pipeline)
			ADD("%s%llu rejected by the pipeline", sep, (unsigned long long)l->pipeline);
		if (l->aggregated)
			ADD("; ");
	}
	if (l->aggregated)
		ADD("%llu calls (%.1f%%) only counted in the kernel (aggregated)", (unsigned long long)l->aggregated,
		    100.0 * l->aggregated_share);
	ADD("; figures from it undercount");
#undef ADD
	if (o >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
}

json_t *cw_losses_to_json(const struct cw_session_loss *l, int n)
{
	json_t *a = json_array();

	for (int i = 0; a && i < n; i++)
		json_array_append_new(
			a, json_pack("{s:I,s:o,s:o,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:f}", "session_id",
				     (json_int_t)l[i].session_id, "node", cw_json_str(l[i].node), "kind", cw_json_str(l[i].kind), "stored",
				     (json_int_t)l[i].stored, "lost", (json_int_t)l[i].lost, "lost_share",
				     l[i].lost_share, "store_failed", (json_int_t)l[i].store_failed, "lock_dropped",
				     (json_int_t)l[i].lock_dropped, "ring_drops", (json_int_t)l[i].ring_drops,
				     "pipeline", (json_int_t)l[i].pipeline, "aggregated", (json_int_t)l[i].aggregated,
				     "aggregated_share", l[i].aggregated_share));
	return a;
}
