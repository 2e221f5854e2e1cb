/* cw_events_scan_back: a window's events newest first, by rowid. On a
 * schema v7 file calls and kernel-side events are read backwards each by
 * its key and merged by id here (the view's compound would be sorted whole
 * first); on an older file, events alone. */
#include "store/layout.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/layout_int.h"
#include "store/sqlite_util.h"
#include "util/u64map.h"
#include "util/vec.h"

/* Schema v7: the thread and op rows of calls, read once each instead of
 * joined for every call (the join is most of the scan's cost). */
struct tcache {
	sqlite3_stmt *th;
	struct u64map idx; /* call_threads.id -> index in v */
	struct trow {
		int64_t pid, tid, mono_base, wall_off;
		int node_ok;
		char comm[32];
	} *v;
	size_t n, alloc;
	struct opname {
		char source[16], op[48];
	} *ops; /* by call_ops.id */
	size_t nops;
};

static const struct trow *tcache_get(struct tcache *c, const char *node, int64_t th)
{
	int64_t i;
	struct trow *t;

	if (u64map_get(&c->idx, (uint64_t)th, &i))
		return &c->v[i];
	if (cw_vec_reserve(&c->v, &c->alloc, c->n + 1, sizeof(*c->v), 64) < 0)
		return NULL;
	t = &c->v[c->n];
	memset(t, 0, sizeof(*t));
	sqlite3_bind_int64(c->th, 1, th);
	if (sqlite3_step(c->th) == SQLITE_ROW) {
		const char *nd = (const char *)sqlite3_column_text(c->th, 0);
		const char *cm = (const char *)sqlite3_column_text(c->th, 3);

		t->node_ok = nd && !strcmp(nd, node);
		t->pid = sqlite3_column_int64(c->th, 1);
		t->tid = sqlite3_column_int64(c->th, 2);
		snprintf(t->comm, sizeof(t->comm), "%s", cm ? cm : "");
		t->mono_base = sqlite3_column_int64(c->th, 4);
		t->wall_off = sqlite3_column_int64(c->th, 5);
	}
	sqlite3_reset(c->th);
	if (u64map_put(&c->idx, (uint64_t)th, (int64_t)c->n))
		return NULL;
	return &c->v[c->n++];
}

static int tcache_init(struct tcache *c, sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int rc;

	memset(c, 0, sizeof(*c));
	if (u64map_init(&c->idx, 0))
		return -ENOMEM;
	rc = sqlite3_prepare_v2(db, "SELECT node, pid, tid, comm, mono_base, wall_off FROM call_threads WHERE id = ?1",
				-1, &c->th, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, "SELECT id, source, op FROM call_ops ORDER BY id", -1, &st, NULL);
	/* rc is SQLITE_ROW from the second row on: the loop tests the step. */
	while (rc == SQLITE_OK || rc == SQLITE_ROW) {
		if ((rc = sqlite3_step(st)) != SQLITE_ROW)
			break;
		int64_t id = sqlite3_column_int64(st, 0);
		const char *src = (const char *)sqlite3_column_text(st, 1), *op = (const char *)sqlite3_column_text(st, 2);

		if (id <= 0 || id > 65536)
			continue;
		if ((size_t)id >= c->nops) {
			void *nv = realloc(c->ops, (size_t)(id + 1) * sizeof(*c->ops));

			if (!nv) {
				rc = SQLITE_NOMEM;
				break;
			}
			c->ops = nv;
			memset(c->ops + c->nops, 0, (size_t)(id + 1 - (int64_t)c->nops) * sizeof(*c->ops));
			c->nops = (size_t)id + 1;
		}
		snprintf(c->ops[id].source, sizeof(c->ops[id].source), "%s", src ? src : "");
		snprintf(c->ops[id].op, sizeof(c->ops[id].op), "%s", op ? op : "");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc == SQLITE_OK ? SQLITE_ERROR : rc);
}

static void tcache_free(struct tcache *c)
{
	sqlite3_finalize(c->th);
	u64map_free(&c->idx);
	free(c->v);
	free(c->ops);
}

/* The current row of q as an event; 0 when it is not one of node's. */
static int read_row(sqlite3_stmt *q, int narrow_calls, struct tcache *c, const char *node, struct cw_scan_row *r)
{
	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(q, 0);
	if (narrow_calls) {
		const struct trow *t = tcache_get(c, node, sqlite3_column_int64(q, 1));
		int64_t op = sqlite3_column_int64(q, 2);

		if (!t || !t->node_ok || op <= 0 || (size_t)op >= c->nops)
			return 0;
		r->pid = t->pid;
		r->tid = t->tid;
		r->comm = t->comm;
		r->source = c->ops[op].source;
		r->op = c->ops[op].op;
		r->mono = (uint64_t)(t->mono_base + sqlite3_column_int64(q, 3));
		r->dur = (uint64_t)sqlite3_column_int64(q, 4);
		r->wall = r->mono + (uint64_t)t->wall_off;
		return 1;
	}
	r->pid = sqlite3_column_int64(q, 1);
	r->tid = sqlite3_column_int64(q, 2);
	r->comm = (const char *)sqlite3_column_text(q, 3);
	r->source = (const char *)sqlite3_column_text(q, 4);
	r->op = (const char *)sqlite3_column_text(q, 5);
	r->mono = (uint64_t)sqlite3_column_int64(q, 6);
	r->dur = (uint64_t)sqlite3_column_int64(q, 7);
	r->wall = (uint64_t)sqlite3_column_int64(q, 8);
	return 1;
}

int cw_events_scan_back(sqlite3 *db, const char *node, int64_t lo, int64_t hi, int max_rows,
			void (*fn)(const struct cw_scan_row *row, void *arg), void *arg)
{
	/* Schema v7: calls and kernel-side events read backwards each by its
	 * key and merged by id here (the view's compound would be sorted
	 * whole first); an older file: events alone. */
	static const char *const sql[2] = {
		"SELECT id, pid, tid, comm, source, op, mono_ns, duration_ns, wall_ns FROM kevents"
		" WHERE id BETWEEN ?1 AND ?2 AND node = ?3 ORDER BY id DESC",
		"SELECT id, th, op, t, dur FROM calls WHERE id BETWEEN ?1 AND ?2 AND ?3 IS NOT NULL ORDER BY id DESC",
	};
	sqlite3_stmt *q[2] = { NULL, NULL };
	struct tcache tc;
	struct cw_scan_row row;
	int rc = SQLITE_OK, rq[2] = { SQLITE_DONE, SQLITE_DONE }, rows = 0, narrow = cw_store_is_narrow(db);

	if (narrow < 0)
		return narrow;
	if (narrow && (rc = tcache_init(&tc, db)) < 0) {
		tcache_free(&tc);
		return rc;
	}
	for (int i = 0; i <= narrow && rc == SQLITE_OK; i++) {
		rc = sqlite3_prepare_v2(db, sql[i], -1, &q[i], NULL);
		if (rc != SQLITE_OK)
			break;
		sqlite3_bind_int64(q[i], 1, lo);
		sqlite3_bind_int64(q[i], 2, hi);
		sqlite3_bind_text(q[i], 3, node, -1, SQLITE_STATIC);
		rq[i] = sqlite3_step(q[i]);
	}
	if (rc != SQLITE_OK) {
		sqlite3_finalize(q[0]);
		sqlite3_finalize(q[1]);
		if (narrow)
			tcache_free(&tc);
		return cw_sqlite_errno(rc);
	}
	for (;;) {
		int k = rq[0] == SQLITE_ROW &&
				(rq[1] != SQLITE_ROW || sqlite3_column_int64(q[0], 0) > sqlite3_column_int64(q[1], 0))
				? 0 : 1;

		if (rq[k] != SQLITE_ROW || rows++ >= max_rows) {
			rc = rq[k] == SQLITE_ROW ? SQLITE_DONE : rq[k];
			if (rc == SQLITE_DONE && rq[!k] != SQLITE_ROW && rq[!k] != SQLITE_DONE)
				rc = rq[!k];
			break;
		}
		if (read_row(q[k], k == 1, &tc, node, &row))
			fn(&row, arg);
		rq[k] = sqlite3_step(q[k]);
	}
	sqlite3_finalize(q[0]);
	sqlite3_finalize(q[1]);
	if (narrow)
		tcache_free(&tc);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}
