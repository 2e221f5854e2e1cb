/* Who a chain is about: the thread (by slow time), its rank, the Python
 * location and the native stack its slow calls share. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "store/store.h"

/* A python location is named when one user frame issued at least this
 * share of the slow calls that carry a python stack. */
#define CW_PY_MIN_SHARE 0.5

static int load_rank(sqlite3 *db, const char *node, int64_t pid, int *rank)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT rank FROM processes WHERE node = ?1 AND pid = ?2", -1, &st, NULL);

	*rank = -1;
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, pid);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		*rank = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_chain_load_python(sqlite3 *db, struct cw_chain *c, int64_t stack_id)
{
	sqlite3_stmt *st = NULL;
	/* python_via: the TID an attributed stack is that thread's (schema v8;
	 * an older file read as it is gets the column from a view) */
	int rc = sqlite3_prepare_v2(db, "SELECT user_file, user_line, user_function, python_via FROM py_stacks WHERE id = ?1",
				    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, stack_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		const char *fn = (const char *)sqlite3_column_text(st, 2);
		c->has_python = 1;
		snprintf(c->py_file, sizeof(c->py_file), "%s", sqlite3_column_text(st, 0));
		c->py_line = sqlite3_column_int(st, 1);
		snprintf(c->py_function, sizeof(c->py_function), "%s", fn ? fn : "");
		c->py_via = sqlite3_column_int64(st, 3);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* Chooses the thread (by slow time) and the python stack (by count) that
 * the slow calls share. */
struct ident {
	int64_t pid, tid, stack;
	char comm[32];
	uint64_t w;
};

static void ident_add(struct ident *v, size_t *n, size_t cap, int64_t pid, int64_t tid, int64_t stack,
		      const char *comm, uint64_t w)
{
	for (size_t i = 0; i < *n; i++)
		if (v[i].pid == pid && v[i].tid == tid && v[i].stack == stack) {
			v[i].w += w;
			return;
		}
	if (*n == cap)
		return;
	v[*n] = (struct ident){.pid = pid, .tid = tid, .stack = stack, .w = w};
	snprintf(v[*n].comm, sizeof(v[*n].comm), "%s", comm);
	(*n)++;
}

int cw_chain_identity_calls(sqlite3 *db, struct cw_chain *c, const struct cw_slowcall *calls, size_t ncalls)
{
	struct ident th[64], stk[64], nat[64];
	size_t nth = 0, nstk = 0, nnat = 0, best = 0, bests = 0, bestn = 0;
	uint64_t with_stack = 0;
	int64_t py_id = 0;
	int ret, n;

	for (size_t i = 0; i < ncalls; i++) {
		ident_add(th, &nth, 64, calls[i].pid, calls[i].tid, 0, calls[i].comm, calls[i].dur_ns);
		if (calls[i].py_stack_id > 0) {
			ident_add(stk, &nstk, 64, 0, 0, calls[i].py_stack_id, "", 1);
			with_stack++;
		}
	}
	if (!nth)
		return 0;
	for (size_t i = 1; i < nth; i++)
		if (th[i].w > th[best].w)
			best = i;
	c->pid = th[best].pid;
	c->tid = th[best].tid;
	snprintf(c->comm, sizeof(c->comm), "%s", th[best].comm);
	if ((ret = load_rank(db, c->node, c->pid, &c->rank)) < 0)
		return ret;
	/* The native stack the chosen thread's slow calls share most. */
	for (size_t i = 0; i < ncalls; i++)
		if (calls[i].stack_id > 0 && calls[i].tid == c->tid)
			ident_add(nat, &nnat, 64, 0, 0, calls[i].stack_id, "", 1);
	for (size_t i = 1; i < nnat; i++)
		if (nat[i].w > nat[bestn].w)
			bestn = i;
	if (nstk) {
		for (size_t i = 1; i < nstk; i++)
			if (stk[i].w > stk[bests].w)
				bests = i;
		if ((double)stk[bests].w >= CW_PY_MIN_SHARE * (double)with_stack) {
			py_id = stk[bests].stack;
			if ((ret = cw_chain_load_python(db, c, py_id)) < 0)
				return ret;
		}
	}
	if (!py_id && !nnat)
		return 0;
	n = cw_stack_load(db, py_id, nnat ? nat[bestn].stack : 0, c->stack, CW_STACK_MAX_FRAMES);
	if (n < 0)
		return n;
	c->nstack = n;
	return 0;
}

int cw_chain_identity(sqlite3 *db, struct cw_chain *c, const char *node, uint64_t from_wall,
		      uint64_t to_wall, int64_t pid)
{
	/* The op's slowest anomalous calls through the partial index; an op
	 * without anomalies (a steady memcpy, a launch loop) is sampled by
	 * rowid from the window's start instead, stopping after 256 rows. */
	static const enum cw_op_read reads[] = { CW_OP_READ_IDENTITY, CW_OP_READ_IDENTITY_RANGE };
	struct cw_slowcall *calls;
	size_t n = 0;
	int64_t lo, hi;
	int rc, ret;

	if ((ret = cw_events_id_at(db, from_wall, &lo)) < 0 || (ret = cw_events_id_at(db, to_wall, &hi)) < 0)
		return ret;
	calls = calloc(256, sizeof(*calls));
	if (!calls)
		return -ENOMEM;
	for (int pass = 0; pass < 2 && n == 0; pass++) {
		sqlite3_stmt *st = NULL;
		const char *sql;

		if ((ret = cw_store_op_read_sql(db, c->op, reads[pass], &sql)) < 0) {
			free(calls);
			return ret;
		}
		rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
		if (rc != SQLITE_OK) {
			free(calls);
			return cw_sqlite_errno(rc);
		}
		sqlite3_bind_text(st, 1, c->op, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)from_wall);
		sqlite3_bind_int64(st, 4, (int64_t)to_wall);
		sqlite3_bind_int64(st, 5, pid);
		sqlite3_bind_int64(st, 6, lo);
		sqlite3_bind_int64(st, 7, hi);
		while (n < 256 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *comm = (const char *)sqlite3_column_text(st, 3);
			calls[n].dur_ns = (uint64_t)sqlite3_column_int64(st, 0);
			calls[n].pid = sqlite3_column_int64(st, 1);
			calls[n].tid = sqlite3_column_int64(st, 2);
			snprintf(calls[n].comm, sizeof(calls[n].comm), "%s", comm ? comm : "");
			calls[n].py_stack_id = sqlite3_column_int64(st, 4);
			calls[n].stack_id = sqlite3_column_int64(st, 5);
			n++;
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
			free(calls);
			return cw_sqlite_errno(rc);
		}
	}
	ret = cw_chain_identity_calls(db, c, calls, n);
	free(calls);
	return ret;
}

int cw_chain_identity_of_node(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	return cw_chain_identity(ctx->db, c, ctx->sys->node, ctx->window_from_ns, ctx->window_to_ns,
				 ctx->opts->pid);
}
