/* Rare kernel-side events (OOM kills, TCP retransmits) of one node and
 * op in a window, without a scan of events: through the partial indexes
 * of schema v3 (events_retx, events_oom) where the file has them;
 * otherwise (a v2 file opened read-only) the per-second aggregates name
 * the seconds that hold any (a seek on their primary key), and each run
 * of such seconds becomes a rowid range (cw_events_id_at). A window with
 * none costs one index seek either way. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/layout_int.h"
#include "store/rare_events.h"
#include "store/sqlite_util.h"
#include "util/timeutil.h"

/* Rows written out of order by up to this much still fall in a range. */
#define CW_RARE_SLACK_NS (2 * NSEC_PER_SEC)

static int push(struct cw_rare_event **v, size_t *n, size_t *cap, sqlite3_stmt *st)
{
	struct cw_rare_event *e;
	const char *comm, *detail;

	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 64;
		struct cw_rare_event *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	e = &(*v)[(*n)++];
	memset(e, 0, sizeof(*e));
	e->id = sqlite3_column_int64(st, 0);
	e->wall_ns = (uint64_t)sqlite3_column_int64(st, 1);
	e->mono_ns = (uint64_t)sqlite3_column_int64(st, 2);
	e->dur_ns = (uint64_t)sqlite3_column_int64(st, 3);
	e->pid = sqlite3_column_int64(st, 4);
	e->tid = sqlite3_column_int64(st, 5);
	e->cgroup_id = (uint64_t)sqlite3_column_int64(st, 6);
	comm = (const char *)sqlite3_column_text(st, 7);
	snprintf(e->comm, sizeof(e->comm), "%s", comm ? comm : "");
	for (int i = 0; i < 4; i++)
		e->arg[i] = sqlite3_column_int64(st, 8 + i);
	e->bytes = sqlite3_column_int64(st, 12);
	detail = (const char *)sqlite3_column_text(st, 13);
	snprintf(e->detail, sizeof(e->detail), "%s", detail ? detail : "");
	e->py_stack_id = sqlite3_column_int64(st, 14);
	return 0;
}

#define RARE_SELECT                                                                                              \
	"SELECT id, wall_ns, mono_ns, duration_ns, pid, tid, cgroup_id, comm, arg0, arg1, arg2, arg3, bytes, detail," \
	" py_stack_id FROM "
/* Kernel-side events are in kevents (schema v7); a rare call (a graph
 * capture) is read through the events view, a second's ids at a time. */
#define RARE_COLS RARE_SELECT "kevents"

/* The op's partial index, when schema v3 made one: the literal op in the
 * query is what lets SQLite use it. */
static const char *indexed_sql(const char *op, const char **index)
{
	if (!strcmp(op, "tcp_retransmit")) {
		/* Only the columns events_retx covers: time, owner, 4-tuple. */
		*index = "events_retx";
		return "SELECT id, wall_ns, mono_ns, 0, pid, 0, 0, NULL, 0, 0, 0, 0, 0, detail, 0 FROM kevents"
		       " WHERE op = 'tcp_retransmit' AND node = ?1 AND wall_ns BETWEEN ?2 AND ?3 ORDER BY wall_ns";
	}
	if (!strcmp(op, "oom_kill")) {
		*index = "events_oom";
		return RARE_COLS " WHERE op = 'oom_kill' AND node = ?1 AND wall_ns BETWEEN ?2 AND ?3 ORDER BY wall_ns";
	}
	return NULL;
}

static int load_indexed(sqlite3 *db, const char *sql, const char *node, uint64_t from_wall, uint64_t to_wall,
			size_t max, struct cw_rare_event **out)
{
	struct cw_rare_event *v = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL), ret = 0;

	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)from_wall);
	sqlite3_bind_int64(st, 3, (int64_t)to_wall);
	while (n < max && (rc = sqlite3_step(st)) == SQLITE_ROW)
		if ((ret = push(&v, &n, &cap, st)) < 0)
			break;
	sqlite3_finalize(st);
	if (ret < 0 || (n < max && rc != SQLITE_DONE)) {
		free(v);
		return ret < 0 ? ret : cw_sqlite_errno(rc);
	}
	*out = v;
	return (int)n;
}

int cw_rare_events_load(sqlite3 *db, const char *node, const char *source, const char *op, uint64_t from_wall,
			uint64_t to_wall, size_t max, struct cw_rare_event **out)
{
	static const char secs_sql[] =
		"SELECT second FROM aggregates WHERE node = ?1 AND source = ?2 AND op = ?3"
		" AND second BETWEEN ?4 AND ?5 ORDER BY second";
	static const char *const rows_sql[2] = {
		RARE_COLS " WHERE id BETWEEN ?1 AND ?2 AND op = ?3 AND node = ?4"
			  " AND source = ?5 AND wall_ns BETWEEN ?6 AND ?7 ORDER BY id",
		RARE_SELECT "events WHERE id BETWEEN ?1 AND ?2 AND op = ?3 AND node = ?4"
			    " AND source = ?5 AND wall_ns BETWEEN ?6 AND ?7 ORDER BY id",
	};
	int call_op = cw_store_call_op(db, op);
	sqlite3_stmt *secs = NULL, *rows = NULL;
	struct cw_rare_event *v = NULL;
	size_t n = 0, cap = 0;
	int64_t run_lo = -1, run_hi = -1;
	int rc, ret = 0, done = 0;

	*out = NULL;
	{
		const char *index = NULL, *isql = indexed_sql(op, &index);
		if (isql) {
			int has = cw_events_has_index(db, index);
			if (has < 0)
				return has;
			if (has)
				return load_indexed(db, isql, node, from_wall, to_wall, max, out);
		}
	}
	if (call_op < 0)
		return call_op;
	rc = sqlite3_prepare_v2(db, secs_sql, -1, &secs, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, rows_sql[call_op], -1, &rows, NULL);
	if (rc != SQLITE_OK) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	sqlite3_bind_text(secs, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_text(secs, 2, source, -1, SQLITE_STATIC);
	sqlite3_bind_text(secs, 3, op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(secs, 4, (int64_t)(from_wall / NSEC_PER_SEC));
	sqlite3_bind_int64(secs, 5, (int64_t)(to_wall / NSEC_PER_SEC));
	while (!done) {
		int64_t sec = -1;
		rc = sqlite3_step(secs);
		if (rc == SQLITE_ROW)
			sec = sqlite3_column_int64(secs, 0);
		else if (rc == SQLITE_DONE)
			done = 1;
		else {
			ret = cw_sqlite_errno(rc);
			goto out;
		}
		if (!done && run_hi >= 0 && sec <= run_hi + 1) {
			run_hi = sec;
			continue;
		}
		if (run_hi >= 0) {
			/* Scan the previous run of seconds by rowid. */
			uint64_t a = (uint64_t)run_lo * NSEC_PER_SEC, b = (uint64_t)(run_hi + 1) * NSEC_PER_SEC;
			int64_t lo, hi;
			if ((ret = cw_events_id_at(db, a > CW_RARE_SLACK_NS ? a - CW_RARE_SLACK_NS : 0, &lo)) < 0 ||
			    (ret = cw_events_id_at(db, b + CW_RARE_SLACK_NS, &hi)) < 0)
				goto out;
			sqlite3_reset(rows);
			sqlite3_bind_int64(rows, 1, lo);
			sqlite3_bind_int64(rows, 2, hi);
			sqlite3_bind_text(rows, 3, op, -1, SQLITE_STATIC);
			sqlite3_bind_text(rows, 4, node, -1, SQLITE_STATIC);
			sqlite3_bind_text(rows, 5, source, -1, SQLITE_STATIC);
			sqlite3_bind_int64(rows, 6, (int64_t)(from_wall > a ? from_wall : a));
			sqlite3_bind_int64(rows, 7, (int64_t)(to_wall < b - 1 ? to_wall : b - 1));
			while (n < max && (rc = sqlite3_step(rows)) == SQLITE_ROW)
				if ((ret = push(&v, &n, &cap, rows)) < 0)
					goto out;
			if (n < max && rc != SQLITE_DONE) {
				ret = cw_sqlite_errno(rc);
				goto out;
			}
			if (n >= max)
				break;
		}
		run_lo = run_hi = sec;
	}
	*out = v;
	v = NULL;
	ret = (int)n;
out:
	free(v);
	sqlite3_finalize(secs);
	sqlite3_finalize(rows);
	return ret;
}
