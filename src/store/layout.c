/* Event-id and index lookups, and the light events source, for either
 * layout (layout.h). */
#include "store/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/layout_int.h"
#include "store/sqlite_util.h"

/* 1 when sql, with ?1 bound to arg (when not NULL), returns a row, 0 when
 * not, or -errno. */
static int has_row(sqlite3 *db, const char *sql, const char *arg)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	if (arg)
		sqlite3_bind_text(st, 1, arg, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW)
		return 1;
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_store_is_narrow(sqlite3 *db)
{
	return has_row(db, "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'calls'", NULL);
}

int cw_events_id_bounds(sqlite3 *db, int64_t *min_id, int64_t *max_id)
{
	static const char narrow_sql[] =
		"SELECT coalesce(min(a), 0), coalesce(max(b), 0) FROM ("
		" SELECT (SELECT min(id) FROM calls) AS a, (SELECT max(id) FROM calls) AS b"
		" UNION ALL SELECT (SELECT min(id) FROM kevents), (SELECT max(id) FROM kevents))";
	static const char wide_sql[] = "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM events";
	sqlite3_stmt *st;
	int rc, narrow = cw_store_is_narrow(db);

	*min_id = *max_id = 0;
	if (narrow < 0)
		return narrow;
	rc = sqlite3_prepare_v2(db, narrow ? narrow_sql : wide_sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*min_id = sqlite3_column_int64(st, 0);
		*max_id = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW ? 0 : cw_sqlite_errno(rc);
}

int cw_store_call_op(sqlite3 *db, const char *op)
{
	int narrow = cw_store_is_narrow(db);

	if (narrow <= 0)
		return narrow;
	return has_row(db, "SELECT 1 FROM call_ops WHERE op = ?1", op);
}

/* For scans of many events that need only these columns: the view
 * without its detail, argument and flag columns (each a lookup per call),
 * in a third less time. Schema v7 files only. */
#define CW_EVENTS_LIGHT                                                                                       \
	"(SELECT c.id AS id, t.node AS node, t.pid AS pid, t.tid AS tid, t.comm AS comm, o.source AS source,"  \
	" o.op AS op, c.dur AS duration_ns, t.mono_base + c.t AS mono_ns, t.mono_base + c.t + t.wall_off AS wall_ns" \
	" FROM calls c CROSS JOIN call_threads t ON t.id = c.th CROSS JOIN call_ops o ON o.id = c.op"           \
	" UNION ALL SELECT id, node, pid, tid, comm, source, op, duration_ns, mono_ns, wall_ns FROM kevents)"

/* sql with its first "FROM events " read from CW_EVENTS_LIGHT when db
 * is a v7 file: a malloc'd string, or NULL without memory. */
static char *light_sql(sqlite3 *db, const char *sql)
{
	const char *at = strstr(sql, "FROM events ");
	size_t pre, n;
	char *out;

	if (!at || cw_store_is_narrow(db) <= 0)
		return strdup(sql);
	pre = (size_t)(at - sql) + 5;
	n = strlen(sql) + strlen(CW_EVENTS_LIGHT) + 1;
	out = malloc(n);
	if (out)
		snprintf(out, n, "%.*s%s%s", (int)pre, sql, CW_EVENTS_LIGHT, at + 11);
	return out;
}

int cw_events_prepare_light(sqlite3 *db, const char *sql, sqlite3_stmt **st)
{
	char *q = light_sql(db, sql);
	int rc;

	if (!q)
		return SQLITE_NOMEM;
	rc = sqlite3_prepare_v2(db, q, -1, st, NULL);
	free(q);
	return rc;
}

int cw_events_id_at(sqlite3 *db, uint64_t wall, int64_t *id)
{
	sqlite3_stmt *mm = NULL, *at = NULL;
	int64_t lo, hi;
	int rc;

	/* Schema v7: the two tables under the view, each read by its key (the
	 * view's compound would be scanned whole for min(), max() and an
	 * ORDER BY id). */
	static const char *const sql[2][2] = {
		{ "SELECT (SELECT min(id) FROM events), (SELECT max(id) FROM events)",
		  "SELECT wall_ns FROM events WHERE id >= ?1 ORDER BY id LIMIT 1" },
		{ "SELECT min(a), max(b) FROM (SELECT (SELECT min(id) FROM calls) AS a, (SELECT max(id) FROM calls) AS b"
		  " UNION ALL SELECT (SELECT min(id) FROM kevents), (SELECT max(id) FROM kevents))",
		  "SELECT w FROM (SELECT i, w FROM (SELECT c.id AS i, t.mono_base + c.t + t.wall_off AS w FROM calls c"
		  " CROSS JOIN call_threads t ON t.id = c.th WHERE c.id >= ?1 ORDER BY c.id LIMIT 1)"
		  " UNION ALL SELECT i, w FROM (SELECT id AS i, wall_ns AS w FROM kevents WHERE id >= ?1 ORDER BY id LIMIT 1)"
		  " ORDER BY 1 LIMIT 1)" },
	};
	int narrow = cw_store_is_narrow(db);

	if (narrow < 0)
		return narrow;
	rc = sqlite3_prepare_v2(db, sql[narrow][0], -1, &mm, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, sql[narrow][1], -1, &at, NULL);
	if (rc != SQLITE_OK)
		goto out;
	rc = sqlite3_step(mm);
	if (rc != SQLITE_ROW || sqlite3_column_type(mm, 0) == SQLITE_NULL) {
		*id = 1;
		rc = SQLITE_OK;
		goto out;
	}
	lo = sqlite3_column_int64(mm, 0);
	hi = sqlite3_column_int64(mm, 1) + 1;
	/* First id in [lo, hi) whose row starts at or after wall; ids may have
	 * gaps (pruning), so probe the next existing row. */
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;
		sqlite3_reset(at);
		sqlite3_bind_int64(at, 1, mid);
		rc = sqlite3_step(at);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			goto out;
		if (rc == SQLITE_ROW && (uint64_t)sqlite3_column_int64(at, 0) < wall)
			lo = mid + 1;
		else
			hi = mid;
	}
	*id = lo;
	rc = SQLITE_OK;
out:
	sqlite3_finalize(mm);
	sqlite3_finalize(at);
	return rc == SQLITE_OK ? 0 : cw_sqlite_errno(rc);
}

int cw_events_has_index(sqlite3 *db, const char *name)
{
	return has_row(db, "SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?1", name);
}
