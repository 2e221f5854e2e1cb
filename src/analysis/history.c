/* What an explain window owes to retention (docs/explain.md, "Old
 * windows"): where the size cap pruned ordinary calls (the store's
 * store.pruned_through_wall_ns counters), and the chains trace computed
 * over the window while it ran (chains rows whose JSON says stored_by
 * "trace"), which hold the diagnosis of what is no longer raw. */
#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/explain.h"
#include "store/store.h"

/* Stored chains beyond this are not listed (the newest first), nor one
 * whose JSON is longer than a chain's ever is (a hostile file). */
#define CW_HISTORY_MAX_STORED 50
#define CW_HISTORY_MAX_JSON (256 * 1024)

int cw_explain_history(sqlite3 *db, const struct cw_explain_opts *o, struct cw_explain_result *r)
{
	static const char through_sql[] = "SELECT max(value) FROM counters WHERE name = 'store.pruned_through_wall_ns'"
					  " AND (?1 IS NULL OR node = ?1)";
	static const char stored_sql[] =
		"SELECT json FROM chains WHERE length(json) <= ?5 AND json_valid(json)"
		" AND json_extract(json, '$.stored_by') = 'trace'"
		" AND (?1 IS NULL OR node = ?1) AND from_wall_ns <= ?3 AND to_wall_ns >= ?2"
		" ORDER BY id DESC LIMIT ?4";
	sqlite3_stmt *s = NULL;
	int rc;

	r->pruned_through_ns = 0;
	r->stored = NULL;
	if (sqlite3_prepare_v2(db, through_sql, -1, &s, NULL) != SQLITE_OK)
		return 0; /* a file without counters: nothing pruned */
	if (o->node_filter)
		sqlite3_bind_text(s, 1, o->node_filter, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
		uint64_t through = (uint64_t)sqlite3_column_int64(s, 0);

		/* Only a window that starts before the boundary lost rows. */
		if (through > r->from_wall_ns)
			r->pruned_through_ns = through;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (sqlite3_prepare_v2(db, stored_sql, -1, &s, NULL) != SQLITE_OK)
		return 0; /* no chains table, or no JSON functions */
	if (o->node_filter)
		sqlite3_bind_text(s, 1, o->node_filter, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (int64_t)r->from_wall_ns);
	sqlite3_bind_int64(s, 3, (int64_t)r->to_wall_ns);
	sqlite3_bind_int(s, 4, CW_HISTORY_MAX_STORED);
	sqlite3_bind_int(s, 5, CW_HISTORY_MAX_JSON);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *txt = (const char *)sqlite3_column_text(s, 0);
		json_t *j = txt ? json_loads(txt, 0, NULL) : NULL;

		if (!j)
			continue;
		if (!r->stored && !(r->stored = json_array())) {
			json_decref(j);
			sqlite3_finalize(s);
			return -ENOMEM;
		}
		json_array_append_new(r->stored, j);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}
