#include "analysis/stats.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/call_errors.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/vec.h"

uint64_t cw_overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
	uint64_t s = a0 > b0 ? a0 : b0;
	uint64_t e = a1 < b1 ? a1 : b1;
	return e > s ? e - s : 0;
}

static int interval_cmp(const void *a, const void *b)
{
	const struct cw_interval *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

size_t cw_intervals_union(struct cw_interval *v, size_t n)
{
	size_t out = 0;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), interval_cmp);
	for (size_t i = 0; i < n; i++) {
		if (v[i].end <= v[i].start)
			continue;
		if (out > 0 && v[i].start <= v[out - 1].end) {
			if (v[i].end > v[out - 1].end)
				v[out - 1].end = v[i].end;
		} else {
			v[out++] = v[i];
		}
	}
	return out;
}

uint64_t cw_intervals_cover(const struct cw_interval *v, size_t n, uint64_t s, uint64_t e)
{
	size_t lo = 0, hi = n;
	uint64_t total = 0;

	if (e <= s)
		return 0;
	/* First interval whose end is after s: the set is sorted and disjoint,
	 * so ends ascend as well. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].end <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < n && v[i].start < e; i++)
		total += cw_overlap(v[i].start, v[i].end, s, e);
	return total;
}

double cw_cv(const double *x, size_t n)
{
	double mean = 0, var = 0;

	if (n < 2)
		return -1;
	for (size_t i = 0; i < n; i++)
		mean += x[i];
	mean /= (double)n;
	if (mean <= 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		var += (x[i] - mean) * (x[i] - mean);
	var /= (double)n;
	return sqrt(var) / mean;
}

static int double_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double cw_median(double *x, size_t n)
{
	if (n == 0)
		return 0;
	qsort(x, n, sizeof(*x), double_cmp);
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

uint64_t cw_opstat_calls_through(const struct cw_opstat *s, int64_t sec)
{
	uint64_t n = 0;
	for (size_t i = 0; i < s->nsecs && s->secs[i].second <= sec; i++)
		n += s->secs[i].count;
	return n;
}

static void copy_text(char *dst, size_t cap, const unsigned char *src)
{
	snprintf(dst, cap, "%s", src ? (const char *)src : "");
}

int cw_opstats_load(sqlite3 *db, const char *node, int64_t from_sec, int64_t to_sec,
		    struct cw_opstat **out)
{
	/* Ordered by the primary key's prefix so each op's seconds arrive
	 * together and ascending. */
	static const char sql[] =
		"SELECT node, source, op, second, count, sum_ns, max_ns, hist, errors FROM aggregates"
		" WHERE second BETWEEN ?1 AND ?2 AND (?3 IS NULL OR node = ?3)"
		" ORDER BY node, source, op, second";
	/* A file before schema v10 (read-only, never migrated): no errors. */
	static const char sql_v7[] =
		"SELECT node, source, op, second, count, sum_ns, max_ns, hist, 0 FROM aggregates"
		" WHERE second BETWEEN ?1 AND ?2 AND (?3 IS NULL OR node = ?3)"
		" ORDER BY node, source, op, second";
	sqlite3_stmt *st = NULL;
	struct cw_opstat *v = NULL, *cur = NULL;
	size_t n = 0, cap = 0, scap = 0;
	int rc, ret = 0;

	*out = NULL;
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc == SQLITE_ERROR)
		rc = sqlite3_prepare_v2(db, sql_v7, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, from_sec);
	sqlite3_bind_int64(st, 2, to_sec);
	if (node)
		sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 3);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *nd = (const char *)sqlite3_column_text(st, 0);
		const char *src = (const char *)sqlite3_column_text(st, 1);
		const char *op = (const char *)sqlite3_column_text(st, 2);
		uint64_t cnt = (uint64_t)sqlite3_column_int64(st, 4);
		uint64_t sum = (uint64_t)sqlite3_column_int64(st, 5);
		uint64_t mx = (uint64_t)sqlite3_column_int64(st, 6);

		if (!nd || !src || !op)
			continue;
		if (!cur || strcmp(cur->node, nd) || strcmp(cur->source, src) || strcmp(cur->op, op)) {
			if (cw_vec_reserve(&v, &cap, n + 1, sizeof(*v), 32) < 0) {
				ret = -ENOMEM;
				goto out;
			}
			cur = &v[n++];
			memset(cur, 0, sizeof(*cur));
			cw_hist_reset(&cur->hist);
			copy_text(cur->node, sizeof(cur->node), (const unsigned char *)nd);
			copy_text(cur->source, sizeof(cur->source), (const unsigned char *)src);
			copy_text(cur->op, sizeof(cur->op), (const unsigned char *)op);
			scap = 0;
		}
		if (cw_vec_reserve(&cur->secs, &scap, cur->nsecs + 1, sizeof(*cur->secs), 64) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		cur->secs[cur->nsecs++] = (struct cw_opsec){
			.second = sqlite3_column_int64(st, 3), .count = cnt, .sum_ns = sum, .max_ns = mx};
		if (cw_hist_decode_merge(&cur->hist, sqlite3_column_blob(st, 7),
					 (size_t)sqlite3_column_bytes(st, 7), cnt, sum, mx) < 0) {
			ret = -EINVAL;
			goto out;
		}
		cur->count += cnt;
		cur->errors += (uint64_t)sqlite3_column_int64(st, 8);
		cur->sum_ns += sum;
		if (mx > cur->max_ns)
			cur->max_ns = mx;
	}
	if (rc != SQLITE_DONE) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		v[i].p50_ns = cw_hist_quantile(&v[i].hist, 0.50);
		v[i].p95_ns = cw_hist_quantile(&v[i].hist, 0.95);
		v[i].p99_ns = cw_hist_quantile(&v[i].hist, 0.99);
	}
	*out = v;
	v = NULL;
	ret = (int)n;
out:
	sqlite3_finalize(st);
	if (v)
		cw_opstats_free(v, n);
	return ret;
}

static struct cw_opsec *find_sec(struct cw_opsec *v, size_t n, int64_t second)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].second < second)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo].second == second ? &v[lo] : NULL;
}

/* pid's calls of op folded in the kernel (trace --capture summary, the
 * folded table of schema v9) in the window's seconds, merged into out. A
 * file without the table (older, read as it is) has none. */
static int add_folded(sqlite3 *db, const struct cw_opstat *op, int64_t pid, uint64_t from_wall, uint64_t to_wall,
		      struct cw_opstat *out)
{
	static const char sql[] = "SELECT second, count, sum_ns, max_ns, hist FROM folded WHERE node = ?2 AND op = ?1"
				  " AND pid = ?3 AND second BETWEEN ?4 AND ?5";
	sqlite3_stmt *st = NULL;
	int rc;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(st);
		return sqlite3_errcode(db) == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such table") ? 0
												 : cw_sqlite_errno(rc);
	}
	sqlite3_bind_text(st, 1, op->op, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, op->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, pid);
	sqlite3_bind_int64(st, 4, (int64_t)(from_wall / NSEC_PER_SEC));
	sqlite3_bind_int64(st, 5, (int64_t)(to_wall / NSEC_PER_SEC));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t n = (uint64_t)sqlite3_column_int64(st, 1), sum = (uint64_t)sqlite3_column_int64(st, 2),
			 max = (uint64_t)sqlite3_column_int64(st, 3);
		struct cw_opsec *s = find_sec(out->secs, out->nsecs, sqlite3_column_int64(st, 0));

		if (cw_hist_decode_merge(&out->hist, sqlite3_column_blob(st, 4), (size_t)sqlite3_column_bytes(st, 4), n,
					 sum, max)) {
			rc = SQLITE_CORRUPT;
			break;
		}
		out->count += n;
		out->sum_ns += sum;
		if (max > out->max_ns)
			out->max_ns = max;
		if (s) {
			s->count += n;
			s->sum_ns += sum;
			if (max > s->max_ns)
				s->max_ns = max;
		}
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_opstat_for_pid(sqlite3 *db, const struct cw_opstat *op, int64_t pid, uint64_t from_wall,
		      uint64_t to_wall, struct cw_opstat *out)
{
	static const char sql[] =
		"SELECT wall_ns, duration_ns, ret FROM events WHERE op = ?1 AND node = ?2 AND pid = ?3"
		" AND wall_ns BETWEEN ?4 AND ?5 AND duration_ns IS NOT NULL";
	sqlite3_stmt *st = NULL;
	size_t k = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	memcpy(out->node, op->node, sizeof(out->node));
	memcpy(out->source, op->source, sizeof(out->source));
	memcpy(out->op, op->op, sizeof(out->op));
	cw_hist_reset(&out->hist);
	/* The process's seconds are a subset of the op's: start from the op's
	 * list with zero counts so each row is placed by binary search. */
	if (op->nsecs) {
		out->secs = calloc(op->nsecs, sizeof(*out->secs));
		if (!out->secs)
			return -ENOMEM;
		for (size_t i = 0; i < op->nsecs; i++)
			out->secs[i].second = op->secs[i].second;
		out->nsecs = op->nsecs;
	}
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto fail;
	sqlite3_bind_text(st, 1, op->op, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, op->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, pid);
	sqlite3_bind_int64(st, 4, (int64_t)from_wall);
	sqlite3_bind_int64(st, 5, (int64_t)to_wall);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t d = (uint64_t)sqlite3_column_int64(st, 1);
		struct cw_opsec *s;

		/* As in the aggregates: a failing call is counted apart. */
		if (sqlite3_column_type(st, 2) != SQLITE_NULL &&
		    cw_call_failed(op->source, op->op, sqlite3_column_int64(st, 2))) {
			out->errors++;
			continue;
		}
		s = find_sec(out->secs, out->nsecs, sqlite3_column_int64(st, 0) / (int64_t)NSEC_PER_SEC);
		cw_hist_add(&out->hist, d);
		out->count++;
		out->sum_ns += d;
		if (d > out->max_ns)
			out->max_ns = d;
		if (s) {
			s->count++;
			s->sum_ns += d;
			if (d > s->max_ns)
				s->max_ns = d;
		}
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		goto fail;
	if ((rc = add_folded(db, op, pid, from_wall, to_wall, out)))
		goto fail_errno;
	/* Keep only the seconds the process was active in, so secs[0] is its
	 * own first second (cold-start detection reads it). */
	for (size_t i = 0; i < out->nsecs; i++)
		if (out->secs[i].count)
			out->secs[k++] = out->secs[i];
	out->nsecs = k;
	out->p50_ns = cw_hist_quantile(&out->hist, 0.50);
	out->p95_ns = cw_hist_quantile(&out->hist, 0.95);
	out->p99_ns = cw_hist_quantile(&out->hist, 0.99);
	return 0;
fail:
	rc = cw_sqlite_errno(rc);
fail_errno:
	free(out->secs);
	out->secs = NULL;
	out->nsecs = 0;
	return rc;
}

void cw_opstats_free(struct cw_opstat *v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i].secs);
	free(v);
}
