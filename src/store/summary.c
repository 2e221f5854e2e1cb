#include "store/summary.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/hist.h"
#include "store/store.h"

#define NS_PER_S 1000000000LL

static void row_free(struct cw_summary_row *r)
{
	free(r->source);
	free(r->op);
	free(r->file);
	free(r->function);
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

/* Does the current row of st start a new group? cols: source, op
 * [, file, line, function]. */
static int same_group(const struct cw_summary_row *r, sqlite3_stmt *st, int by_line)
{
	if (!str_eq(r->source, (const char *)sqlite3_column_text(st, 0)) ||
	    !str_eq(r->op, (const char *)sqlite3_column_text(st, 1)))
		return 0;
	if (!by_line)
		return 1;
	return str_eq(r->file, (const char *)sqlite3_column_text(st, 2)) &&
	       r->line == sqlite3_column_int64(st, 3) &&
	       str_eq(r->function, (const char *)sqlite3_column_text(st, 4));
}

static int push_row(struct cw_summary *s, size_t *alloc, sqlite3_stmt *st, int by_line)
{
	struct cw_summary_row *r;

	if (s->n == *alloc) {
		size_t n = *alloc ? *alloc * 2 : 32;
		struct cw_summary_row *p = realloc(s->rows, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		s->rows = p;
		*alloc = n;
	}
	r = &s->rows[s->n++];
	memset(r, 0, sizeof(*r));
	r->source = dup_col(st, 0);
	r->op = dup_col(st, 1);
	if (!r->source || !r->op)
		return -ENOMEM;
	if (by_line) {
		r->file = dup_col(st, 2);
		r->line = sqlite3_column_int64(st, 3);
		r->function = dup_col(st, 4);
	}
	return 0;
}

static void finish_row(struct cw_summary *s, const struct cw_hist *h)
{
	struct cw_summary_row *r = &s->rows[s->n - 1];

	r->count = h->count;
	r->total_ns = h->sum_ns;
	r->max_ns = h->max_ns;
	r->p50_ns = cw_hist_quantile(h, 0.50);
	r->p95_ns = cw_hist_quantile(h, 0.95);
	r->p99_ns = cw_hist_quantile(h, 0.99);
	r->wall_share = s->window_ns ? (double)r->total_ns / (double)s->window_ns : 0.0;
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
		int64_t lo = sqlite3_column_int64(st, 0), hi = sqlite3_column_int64(st, 1);

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
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static const char SQL_AGG_WINDOW[] = "SELECT min(second), max(second) FROM aggregates";
static const char SQL_AGG[] = "SELECT source, op, count, sum_ns, max_ns, hist FROM aggregates"
			      " WHERE second >= ?1 ORDER BY source, op";
static const char SQL_EV_WINDOW[] = "SELECT min(wall_ns) / 1000000000, max(wall_ns) / 1000000000 FROM events";
/* Sorted so each (op, location) group is contiguous and one histogram at a
 * time is enough. */
static const char SQL_EV_LINES[] =
	"SELECT e.source, e.op, p.user_file, coalesce(p.user_line, 0), p.user_function, e.duration_ns"
	" FROM events e LEFT JOIN py_stacks p ON p.id = e.py_stack_id"
	" WHERE e.wall_ns >= ?1 ORDER BY 1, 2, 3, 4, 5";

int cw_summary_build(sqlite3 *db, const struct cw_summary_opts *opts, struct cw_summary **out)
{
	struct cw_summary_opts o = { 0, 0 };
	struct cw_summary *s;
	struct cw_hist *h = NULL;
	sqlite3_stmt *st = NULL;
	size_t alloc = 0;
	int rc, err = 0, open = 0;

	*out = NULL;
	if (opts)
		o = *opts;
	s = calloc(1, sizeof(*s));
	h = malloc(sizeof(*h));
	if (!s || !h) {
		err = -ENOMEM;
		goto out;
	}
	err = find_window(db, o.by_line ? SQL_EV_WINDOW : SQL_AGG_WINDOW, &o, s);
	if (err || !s->window_ns)
		goto out;
	rc = sqlite3_prepare_v2(db, o.by_line ? SQL_EV_LINES : SQL_AGG, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		err = cw_sqlite_errno(rc);
		goto out;
	}
	sqlite3_bind_int64(st, 1, o.by_line ? s->from_second * NS_PER_S : s->from_second);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!open || !same_group(&s->rows[s->n - 1], st, o.by_line)) {
			if (open)
				finish_row(s, h);
			err = push_row(s, &alloc, st, o.by_line);
			if (err)
				goto out;
			cw_hist_reset(h);
			open = 1;
		}
		if (o.by_line) {
			cw_hist_add(h, (uint64_t)sqlite3_column_int64(st, 5));
		} else {
			const void *blob = sqlite3_column_blob(st, 5);
			int len = sqlite3_column_bytes(st, 5);

			err = cw_hist_decode_merge(h, blob, (size_t)len, (uint64_t)sqlite3_column_int64(st, 2),
						   (uint64_t)sqlite3_column_int64(st, 3),
						   (uint64_t)sqlite3_column_int64(st, 4));
			if (err)
				goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		err = cw_sqlite_errno(rc);
		goto out;
	}
	if (open)
		finish_row(s, h);
	qsort(s->rows, s->n, sizeof(*s->rows), cmp_rows);
out:
	sqlite3_finalize(st);
	free(h);
	if (err) {
		cw_summary_free(s);
		return err;
	}
	*out = s;
	return 0;
}
