#include "analysis/summary.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpu/call_errors.h"
#include "analysis/engine.h"
#include "util/hist.h"
#include "util/timeutil.h"
#include "store/store.h"
#include "util/u64map.h"
#include "util/utf8.h"

#define NS_PER_S 1000000000LL

static void row_free(struct cw_summary_row *r)
{
	free(r->source);
	free(r->op);
	free(r->node);
	free(r->file);
	free(r->function);
	free(r->tenant);
	json_decref(r->container);
}

void cw_summary_free(struct cw_summary *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		row_free(&s->rows[i]);
	free(s->rows);
	free(s);
}

static char *dup_col(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? strdup((const char *)t) : NULL;
}

static int str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return !strcmp(a, b);
}

/* Does the current row of st (source, op, ...) continue row r? */
static int same_op(const struct cw_summary_row *r, sqlite3_stmt *st)
{
	return str_eq(r->source, (const char *)sqlite3_column_text(st, 0)) &&
	       str_eq(r->op, (const char *)sqlite3_column_text(st, 1));
}

static struct cw_summary_row *new_row(struct cw_summary *s, size_t *alloc)
{
	struct cw_summary_row *r;

	if (s->n == *alloc) {
		size_t n = *alloc ? *alloc * 2 : 32;
		struct cw_summary_row *p = realloc(s->rows, n * sizeof(*p));

		if (!p)
			return NULL;
		s->rows = p;
		*alloc = n;
	}
	r = &s->rows[s->n++];
	memset(r, 0, sizeof(*r));
	return r;
}

static int push_row(struct cw_summary *s, size_t *alloc, sqlite3_stmt *st)
{
	struct cw_summary_row *r = new_row(s, alloc);

	if (!r)
		return -ENOMEM;
	r->source = dup_col(st, 0);
	r->op = dup_col(st, 1);
	return r->source && r->op ? 0 : -ENOMEM;
}

static void finish_row(const struct cw_summary *s, struct cw_summary_row *r, const struct cw_hist *h)
{
	r->count = h->count;
	r->total_ns = h->sum_ns;
	r->max_ns = h->max_ns;
	r->p50_ns = cw_hist_quantile(h, 0.50);
	r->p95_ns = cw_hist_quantile(h, 0.95);
	r->p99_ns = cw_hist_quantile(h, 0.99);
	/* Per node: a merged file's 22 nodes each spend their own wall time,
	 * so their calls' total is shared out over 22 windows, not one. */
	r->wall_share = s->window_ns ? (double)r->total_ns /
					       ((double)s->window_ns * (s->nodes > 1 && !r->node ? s->nodes : 1))
				     : 0.0;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct cw_summary_row *x = a, *y = b;
	int c;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	c = strcmp(x->source, y->source);
	if (!c)
		c = strcmp(x->op, y->op);
	if (!c && x->line != y->line)
		c = x->line < y->line ? -1 : 1;
	if (!c && x->tenant && y->tenant)
		c = strcmp(x->tenant, y->tenant);
	return c;
}

/* The window: [newest - since + 1 s, newest], clamped to the oldest data;
 * second-granular because aggregates are. */
static int find_window(sqlite3 *db, const char *sql, const struct cw_summary_opts *o, struct cw_summary *s)
{
	sqlite3_stmt *st;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		int64_t lo = cw_clamp_second(sqlite3_column_int64(st, 0));
		int64_t hi = cw_clamp_second(sqlite3_column_int64(st, 1));

		if (o->since_ns) {
			int64_t span = (int64_t)((o->since_ns + NS_PER_S - 1) / NS_PER_S);

			if (hi - span + 1 > lo)
				lo = hi - span + 1;
		}
		s->from_second = lo;
		s->to_second = hi;
		s->window_ns = (uint64_t)(hi - lo + 1) * (uint64_t)NS_PER_S;
	}
	sqlite3_finalize(st);
	if ((rc == SQLITE_ROW || rc == SQLITE_DONE) && s->window_ns &&
	    sqlite3_prepare_v2(db, "SELECT count(DISTINCT node) FROM aggregates WHERE second BETWEEN ?1 AND ?2", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, s->from_second);
		sqlite3_bind_int64(st, 2, s->to_second);
		if (sqlite3_step(st) == SQLITE_ROW)
			s->nodes = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static const char SQL_AGG_WINDOW[] = "SELECT min(second), max(second) FROM aggregates";
/* Column 6 the calls that failed (schema v10), 7 the node (per_node). */
static const char SQL_AGG[] = "SELECT source, op, count, sum_ns, max_ns, hist, errors, NULL FROM aggregates"
			      " WHERE second >= ?1 ORDER BY source, op";
static const char SQL_AGG_NODE[] = "SELECT source, op, count, sum_ns, max_ns, hist, errors, node FROM aggregates"
				   " WHERE second >= ?1 ORDER BY node, source, op";
/* A file before schema v10 (read as it is): no errors column. */
static const char SQL_AGG_OLD[] = "SELECT source, op, count, sum_ns, max_ns, hist, 0, NULL FROM aggregates"
				  " WHERE second >= ?1 ORDER BY source, op";
static const char SQL_AGG_NODE_OLD[] = "SELECT source, op, count, sum_ns, max_ns, hist, 0, node FROM aggregates"
				       " WHERE second >= ?1 ORDER BY node, source, op";
static const char SQL_PYSTACK[] = "SELECT user_file, user_line, user_function FROM py_stacks WHERE id = ?1";

/* Per-line: there is no aggregate per Python location, so the events of
 * the window are scanned once, unsorted, into one histogram per (op,
 * py_stack_id) found through a hash map; stacks are then resolved to their
 * user location and groups with the same location merged. Sorting 10
 * million rows by location in SQLite costs several times the scan. */
#define MAX_LINE_GROUPS 20000
/* Tenants told apart per tenant (index 0: calls of no identity row). */
#define MAX_TENANTS 4096

struct line_group {
	int op;            /* index into ops */
	int tenant;        /* index into tenants; 0 without per_tenant */
	int64_t py_stack;  /* 0: no Python stack */
	char *file, *function;
	int64_t line;
	uint64_t failed;
	struct cw_hist h; /* last: group_for() clears what is above it */
};

struct line_scan {
	struct line_group *g;
	size_t n, alloc;
	struct { char *source, *op; } ops[256];
	int nops;
	struct u64map index;
	struct u64map pids;    /* the tenant filter's pids */
	struct u64map pid_tenant; /* per_tenant: pid -> tenant index of its latest row */
	struct u64map cgroups; /* cgroups rowid -> tenant index */
	struct { char *key; struct cw_tenant_ref ref; } *tenants;
	int ntenants;
};

/* The tenant index of a cgroups row (its rowid), added when first met;
 * containers of one pod share the pod's key and so one index. */
static int tenant_index(sqlite3 *db, struct line_scan *ls, sqlite3_stmt *st)
{
	int64_t rowid = sqlite3_column_int64(st, 5), idx;
	const char *key = (const char *)sqlite3_column_text(st, 8);
	int i;

	if (sqlite3_column_type(st, 5) == SQLITE_NULL)
		return 0;
	if (u64map_get(&ls->cgroups, (uint64_t)rowid, &idx))
		return (int)idx;
	char own[48];

	if (!key || !*key) {
		/* A row without a tenant key (path only): its own tenant. */
		snprintf(own, sizeof(own), "cgroup-id:%lld", (long long)sqlite3_column_int64(st, 7));
		key = own;
	}
	for (i = 1; i < ls->ntenants; i++)
		if (!strcmp(ls->tenants[i].key, key))
			break;
	if (i == ls->ntenants) {
		if (ls->ntenants == MAX_TENANTS)
			return -E2BIG;
		if (!(ls->tenants[i].key = strdup(key)))
			return -ENOMEM;
		cw_tenant_ref_load(db, (const char *)sqlite3_column_text(st, 6),
				   (uint64_t)sqlite3_column_int64(st, 7), &ls->tenants[i].ref);
		ls->ntenants++;
	}
	if (u64map_put(&ls->cgroups, (uint64_t)rowid, i))
		return -ENOMEM;
	return i;
}

static int op_index(struct line_scan *ls, const char *source, const char *op)
{
	int i;

	for (i = 0; i < ls->nops; i++)
		if (!strcmp(ls->ops[i].op, op) && !strcmp(ls->ops[i].source, source))
			return i;
	if (ls->nops == (int)(sizeof(ls->ops) / sizeof(ls->ops[0])))
		return -E2BIG;
	ls->ops[i].source = strdup(source);
	ls->ops[i].op = strdup(op);
	if (!ls->ops[i].source || !ls->ops[i].op)
		return -ENOMEM;
	ls->nops++;
	return i;
}

static struct line_group *group_for(struct line_scan *ls, int op, int tenant, int64_t py_stack)
{
	/* op < 256, tenant < 4096, stack ids below 2^40; + 1: never key 0. */
	uint64_t key = (((uint64_t)op << 56) | ((uint64_t)tenant << 40) | ((uint64_t)py_stack & ((1ULL << 40) - 1))) + 1;
	struct line_group *g;
	int64_t idx;

	if (u64map_get(&ls->index, key, &idx))
		return &ls->g[idx];
	if (ls->n == MAX_LINE_GROUPS)
		return NULL;
	if (ls->n == ls->alloc) {
		size_t a = ls->alloc ? ls->alloc * 2 : 64;
		struct line_group *p = realloc(ls->g, a * sizeof(*p));

		if (!p)
			return NULL;
		ls->g = p;
		ls->alloc = a;
	}
	if (u64map_put(&ls->index, key, (int64_t)ls->n))
		return NULL;
	g = &ls->g[ls->n++];
	memset(g, 0, sizeof(*g) - sizeof(g->h));
	g->op = op;
	g->tenant = tenant;
	g->py_stack = py_stack;
	cw_hist_reset(&g->h);
	return g;
}

static int cmp_loc(const char *a, const char *b)
{
	if (!a || !b)
		return a ? 1 : b ? -1 : 0;
	return strcmp(a, b);
}

static int cmp_groups(const void *a, const void *b)
{
	const struct line_group *x = a, *y = b;
	int c;

	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	if (x->tenant != y->tenant)
		return x->tenant < y->tenant ? -1 : 1;
	c = cmp_loc(x->file, y->file);
	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return cmp_loc(x->function, y->function);
}

/* Calls trace --capture summary counted in the kernel (the folded table,
 * per pid, op and second; all successful) into the groups of their op
 * (and tenant: the one of the process's rows, which its first and sampled
 * calls always have), so the pid and tenant views count every call.
 * Per-line views cannot: a folded call has no line. A file without the
 * table (before schema v9) folded nothing. */
static int scan_folded(sqlite3 *db, const struct cw_summary_opts *o, struct cw_summary *s, struct line_scan *ls)
{
	static const char sql[] = "SELECT source, op, pid, count, sum_ns, max_ns, hist FROM folded WHERE second >= ?1";
	struct cw_hist *h = malloc(sizeof(*h));
	sqlite3_stmt *st = NULL;
	int rc, err = 0;

	if (!h)
		return -ENOMEM;
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		free(h);
		return rc == SQLITE_ERROR ? 0 : cw_sqlite_errno(rc);
	}
	sqlite3_bind_int64(st, 1, s->from_second);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *src = (const char *)sqlite3_column_text(st, 0);
		const char *op = (const char *)sqlite3_column_text(st, 1);
		uint64_t pid = (uint64_t)sqlite3_column_int64(st, 2);
		struct line_group *g;
		int64_t v = 0;
		int opi;

		if (!src || !op || (o->npids > 0 && !u64map_get(&ls->pids, pid, &v)))
			continue;
		v = 0;
		if (o->per_tenant && pid)
			u64map_get(&ls->pid_tenant, pid, &v);
		if ((opi = op_index(ls, src, op)) < 0) {
			err = opi;
			break;
		}
		if (!(g = group_for(ls, opi, (int)v, 0))) {
			err = ls->n == MAX_LINE_GROUPS ? -E2BIG : -ENOMEM;
			break;
		}
		cw_hist_reset(h);
		err = cw_hist_decode_merge(h, sqlite3_column_blob(st, 6), (size_t)sqlite3_column_bytes(st, 6),
					   (uint64_t)sqlite3_column_int64(st, 3), (uint64_t)sqlite3_column_int64(st, 4),
					   (uint64_t)sqlite3_column_int64(st, 5));
		if (err)
			break;
		cw_hist_merge(&g->h, h);
	}
	if (!err && rc != SQLITE_DONE)
		err = cw_sqlite_errno(rc);
	sqlite3_finalize(st);
	free(h);
	return err;
}

static int scan_events(sqlite3 *db, const struct cw_summary_opts *o, struct cw_summary *s, size_t *alloc)
{
	struct line_scan ls;
	sqlite3_stmt *st = NULL, *ps = NULL;
	const char *ev_sql;
	struct cw_hist *acc = NULL;
	const char *last_src = NULL, *last_op = NULL;
	int rc, err = 0, opi = -1;
	size_t i, j;

	memset(&ls, 0, sizeof(ls));
	if (u64map_init(&ls.index, MAX_LINE_GROUPS) || u64map_init(&ls.pids, 1 << 20) ||
	    (o->per_tenant && u64map_init(&ls.pid_tenant, 1 << 20)) ||
	    u64map_init(&ls.cgroups, 1 << 20) || !(ls.tenants = calloc(MAX_TENANTS, sizeof(*ls.tenants)))) {
		err = -ENOMEM;
		goto out;
	}
	ls.ntenants = 1;
	for (int k = 0; k < o->npids; k++)
		if (o->pids[k] > 0 && u64map_put(&ls.pids, (uint64_t)o->pids[k], 1)) {
			err = -ENOMEM;
			goto out;
		}
	if ((err = cw_store_read_sql(db, o->per_tenant ? CW_READ_SUMMARY_EVENTS_TENANT : CW_READ_SUMMARY_EVENTS,
				     &ev_sql)) < 0)
		goto out;
	rc = sqlite3_prepare_v2(db, ev_sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db, SQL_PYSTACK, -1, &ps, NULL);
	if (rc != SQLITE_OK) {
		err = cw_sqlite_errno(rc);
		goto out;
	}
	sqlite3_bind_int64(st, 1, s->from_second * NS_PER_S);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *src = (const char *)sqlite3_column_text(st, 0);
		const char *op = (const char *)sqlite3_column_text(st, 1);
		struct line_group *g;
		int64_t one;
		int ti = 0;

		if (!src || !op)
			continue;
		if (o->npids > 0 && !u64map_get(&ls.pids, (uint64_t)sqlite3_column_int64(st, 4), &one))
			continue;
		if (o->per_tenant && (ti = tenant_index(db, &ls, st)) < 0) {
			err = ti;
			goto out;
		}
		if (o->per_tenant && sqlite3_column_int64(st, 4) > 0 &&
		    (err = u64map_put(&ls.pid_tenant, (uint64_t)sqlite3_column_int64(st, 4), ti)))
			goto out;
		/* Consecutive events are often the same op: skip the lookup. */
		if (opi < 0 || strcmp(op, last_op) || strcmp(src, last_src)) {
			opi = op_index(&ls, src, op);
			if (opi < 0) {
				err = opi;
				goto out;
			}
			last_src = ls.ops[opi].source;
			last_op = ls.ops[opi].op;
		}
		g = group_for(&ls, opi, ti, o->by_line ? sqlite3_column_int64(st, 2) : 0);
		if (!g) {
			err = ls.n == MAX_LINE_GROUPS ? -E2BIG : -ENOMEM;
			goto out;
		}
		/* A failing call's latency is the failure path's: counted apart. */
		if (sqlite3_column_type(st, o->per_tenant ? 9 : 5) == SQLITE_INTEGER &&
		    cw_call_failed(src, op, sqlite3_column_int64(st, o->per_tenant ? 9 : 5)))
			g->failed++;
		else
			cw_hist_add(&g->h, (uint64_t)sqlite3_column_int64(st, 3));
	}
	if (rc != SQLITE_DONE) {
		err = cw_sqlite_errno(rc);
		goto out;
	}
	if (!o->by_line && (err = scan_folded(db, o, s, &ls)))
		goto out;
	for (i = 0; i < ls.n; i++) {
		struct line_group *g = &ls.g[i];

		if (!g->py_stack)
			continue;
		sqlite3_reset(ps);
		sqlite3_bind_int64(ps, 1, g->py_stack);
		if (sqlite3_step(ps) == SQLITE_ROW && sqlite3_column_type(ps, 0) != SQLITE_NULL) {
			g->file = dup_col(ps, 0);
			g->line = sqlite3_column_int64(ps, 1);
			g->function = dup_col(ps, 2);
		}
	}
	/* Many stacks share one user location: merge them. */
	if (ls.n)
		qsort(ls.g, ls.n, sizeof(*ls.g), cmp_groups);
	acc = malloc(sizeof(*acc));
	if (!acc) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < ls.n; i = j) {
		struct cw_summary_row *r = new_row(s, alloc);

		if (!r) {
			err = -ENOMEM;
			goto out;
		}
		*acc = ls.g[i].h;
		r->failed = ls.g[i].failed;
		for (j = i + 1; j < ls.n && !cmp_groups(&ls.g[i], &ls.g[j]); j++) {
			cw_hist_merge(acc, &ls.g[j].h);
			r->failed += ls.g[j].failed;
		}
		r->source = strdup(ls.ops[ls.g[i].op].source);
		r->op = strdup(ls.ops[ls.g[i].op].op);
		r->file = ls.g[i].file ? strdup(ls.g[i].file) : NULL;
		r->function = ls.g[i].function ? strdup(ls.g[i].function) : NULL;
		r->line = ls.g[i].line;
		if (o->per_tenant) {
			char name[300];

			if (ls.g[i].tenant)
				cw_tenant_ref_name(&ls.tenants[ls.g[i].tenant].ref, name, sizeof(name));
			else
				snprintf(name, sizeof(name), "-");
			r->tenant = strdup(name);
			r->container = ls.g[i].tenant ? cw_tenant_ref_json(&ls.tenants[ls.g[i].tenant].ref)
						      : json_null();
			if (!r->tenant) {
				err = -ENOMEM;
				goto out;
			}
		}
		if (!r->source || !r->op) {
			err = -ENOMEM;
			goto out;
		}
		finish_row(s, r, acc);
	}
out:
	sqlite3_finalize(st);
	sqlite3_finalize(ps);
	for (i = 0; i < ls.n; i++) {
		free(ls.g[i].file);
		free(ls.g[i].function);
	}
	for (i = 0; i < (size_t)ls.nops; i++) {
		free(ls.ops[i].source);
		free(ls.ops[i].op);
	}
	free(ls.g);
	free(acc);
	u64map_free(&ls.index);
	u64map_free(&ls.pids);
	u64map_free(&ls.pid_tenant);
	u64map_free(&ls.cgroups);
	for (i = 1; ls.tenants && i < (size_t)ls.ntenants; i++)
		free(ls.tenants[i].key);
	free(ls.tenants);
	return err;
}

/* Per op (per_node: per node and op): merge the per-second histograms
 * of the window. */
static int scan_aggregates(sqlite3 *db, struct cw_summary *s, size_t *alloc, int per_node)
{
	sqlite3_stmt *st = NULL;
	struct cw_hist *h = malloc(sizeof(*h));
	int rc, err = 0, open = 0;

	if (!h)
		return -ENOMEM;
	rc = sqlite3_prepare_v2(db, per_node ? SQL_AGG_NODE : SQL_AGG, -1, &st, NULL);
	if (rc == SQLITE_ERROR)
		rc = sqlite3_prepare_v2(db, per_node ? SQL_AGG_NODE_OLD : SQL_AGG_OLD, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		err = cw_sqlite_errno(rc);
		goto out;
	}
	sqlite3_bind_int64(st, 1, s->from_second);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const void *blob = sqlite3_column_blob(st, 5);
		int len = sqlite3_column_bytes(st, 5);

		if (!open || !same_op(&s->rows[s->n - 1], st) ||
		    (per_node && !str_eq(s->rows[s->n - 1].node, (const char *)sqlite3_column_text(st, 7)))) {
			if (open)
				finish_row(s, &s->rows[s->n - 1], h);
			err = push_row(s, alloc, st);
			if (!err && per_node && sqlite3_column_type(st, 7) != SQLITE_NULL &&
			    !(s->rows[s->n - 1].node = dup_col(st, 7)))
				err = -ENOMEM;
			if (err)
				goto out;
			cw_hist_reset(h);
			open = 1;
		}
		err = cw_hist_decode_merge(h, blob, (size_t)len, (uint64_t)sqlite3_column_int64(st, 2),
					   (uint64_t)sqlite3_column_int64(st, 3), (uint64_t)sqlite3_column_int64(st, 4));
		s->rows[s->n - 1].failed += (uint64_t)sqlite3_column_int64(st, 6);
		if (err)
			goto out;
	}
	if (rc != SQLITE_DONE) {
		err = cw_sqlite_errno(rc);
		goto out;
	}
	if (open)
		finish_row(s, &s->rows[s->n - 1], h);
out:
	sqlite3_finalize(st);
	free(h);
	return err;
}

int cw_summary_build(sqlite3 *db, const struct cw_summary_opts *opts, struct cw_summary **out)
{
	struct cw_summary_opts o = { 0 };
	struct cw_summary *s;
	const char *window_sql = NULL;
	size_t alloc = 0;
	int err, events;

	*out = NULL;
	if (opts)
		o = *opts;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	/* The aggregates keep no Python line, pid or cgroup. */
	events = o.by_line || o.npids || o.per_tenant;
	err = events ? cw_store_read_sql(db, CW_READ_SUMMARY_WINDOW, &window_sql) : 0;
	if (err >= 0)
		err = find_window(db, events ? window_sql : SQL_AGG_WINDOW, &o, s);
	if (!err && s->window_ns && o.npids >= 0)
		err = events ? scan_events(db, &o, s, &alloc) : scan_aggregates(db, s, &alloc, o.per_node);
	if (err) {
		cw_summary_free(s);
		return err;
	}
	if (s->n)
		qsort(s->rows, s->n, sizeof(*s->rows), cmp_rows);
	*out = s;
	return 0;
}

/* One row as `query --json` prints it (and the MCP trace_summary tool). */
json_t *cw_summary_row_json(const struct cw_summary_row *r, int by_line)
{
	json_t *o = json_pack("{s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "source", cw_json_str(r->source), "op", cw_json_str(r->op),
			      "count", (json_int_t)r->count, "p50_ns", (json_int_t)r->p50_ns, "p95_ns",
			      (json_int_t)r->p95_ns, "p99_ns", (json_int_t)r->p99_ns, "max_ns",
			      (json_int_t)r->max_ns, "total_ns", (json_int_t)r->total_ns, "wall_share",
			      r->wall_share);

	if (o)
		json_object_set_new(o, "failed", json_integer((json_int_t)r->failed));
	if (o && by_line) {
		json_object_set_new(o, "file", r->file ? cw_json_str(r->file) : json_null());
		json_object_set_new(o, "line", r->line ? json_integer(r->line) : json_null());
		json_object_set_new(o, "function", r->function ? cw_json_str(r->function) : json_null());
	}
	if (o && r->tenant) {
		json_object_set_new(o, "tenant", cw_json_str(r->tenant));
		json_object_set_new(o, "container", r->container ? json_incref(r->container) : json_null());
	}
	return o;
}
