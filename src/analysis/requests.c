/* Slow inference requests (requests.h). */
#include "analysis/requests.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stats.h"
#include "store/store.h"
#include "util/vec.h"

#define SLACK_NS 60000000000ll /* a session's offset drifts less than this */

/* The mono range that holds node's requests of wall [from, to]: through
 * the offsets of its sessions, so that the read seeks the (mono_ns) index
 * instead of scanning the table. The whole range when none is known. */
static void mono_range(sqlite3 *db, const char *node, uint64_t from, uint64_t to, int64_t *lo, int64_t *hi)
{
	sqlite3_stmt *st = NULL;

	*lo = INT64_MIN;
	*hi = INT64_MAX;
	if (sqlite3_prepare_v2(db, "SELECT min(mono_to_wall_ns), max(mono_to_wall_ns) FROM sessions WHERE node = ?1",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		int64_t min_off = sqlite3_column_int64(st, 0), max_off = sqlite3_column_int64(st, 1);

		/* wall = mono + off: mono = wall - off, widened by the slack. */
		if (max_off > INT64_MIN / 4 && min_off < INT64_MAX / 4 && from < (uint64_t)INT64_MAX / 2 &&
		    to < (uint64_t)INT64_MAX / 2) {
			*lo = (int64_t)from - max_off - SLACK_NS;
			*hi = (int64_t)to - min_off + SLACK_NS;
		}
	}
	sqlite3_finalize(st);
}

static void col_text(sqlite3_stmt *st, int i, char *dst, size_t len)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	snprintf(dst, len, "%s", t ? (const char *)t : "");
}

static int pid_in(int64_t pid, const int64_t *pids, int npids)
{
	for (int i = 0; i < npids; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

int cw_req_load(sqlite3 *db, const char *node, uint64_t from, uint64_t to, int64_t pid, const int64_t *pids,
		int npids, struct cw_req_set *out)
{
	static const char sql[] =
		"SELECT id, wall_ns, mono_ns, pid, tid, resp_tid, cgroup_id, comm, method, path, status, bytes_in,"
		" ttft_ns, duration_ns, streamed, body_events, itl_max_ns FROM requests"
		" WHERE mono_ns BETWEEN ?4 AND ?5 AND node = ?1 AND wall_ns BETWEEN ?2 AND ?3"
		" AND (?6 = 0 OR pid = ?6) ORDER BY mono_ns LIMIT ?7";
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int64_t lo, hi;
	int rc, ret = 0;

	memset(out, 0, sizeof(*out));
	if (npids < 0)
		return 0; /* a tenant filter that matched nothing */
	mono_range(db, node, from, to, &lo, &hi);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)from);
	sqlite3_bind_int64(st, 3, (int64_t)to);
	sqlite3_bind_int64(st, 4, lo);
	sqlite3_bind_int64(st, 5, hi);
	sqlite3_bind_int64(st, 6, pid);
	sqlite3_bind_int64(st, 7, CW_REQ_MAX + 1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct cw_req *r;

		if (out->n == CW_REQ_MAX) {
			out->capped = 1;
			break;
		}
		if (npids > 0 && !pid_in(sqlite3_column_int64(st, 3), pids, npids))
			continue;
		if (cw_vec_reserve(&out->reqs, &cap, out->n + 1, sizeof(*out->reqs), 256) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		r = &out->reqs[out->n++];
		memset(r, 0, sizeof(*r));
		r->id = sqlite3_column_int64(st, 0);
		r->wall_ns = (uint64_t)sqlite3_column_int64(st, 1);
		r->mono_ns = (uint64_t)sqlite3_column_int64(st, 2);
		r->pid = sqlite3_column_int64(st, 3);
		r->tid = sqlite3_column_int64(st, 4);
		r->resp_tid = sqlite3_column_int64(st, 5);
		r->cgroup_id = (uint64_t)sqlite3_column_int64(st, 6);
		col_text(st, 7, r->comm, sizeof(r->comm));
		col_text(st, 8, r->method, sizeof(r->method));
		col_text(st, 9, r->path, sizeof(r->path));
		r->status = sqlite3_column_int(st, 10);
		r->bytes_in = (uint64_t)sqlite3_column_int64(st, 11);
		r->ttft_ns = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 12);
		/* Hostile rows: negative or absurd times count as none. */
		if (r->ttft_ns < 0)
			r->ttft_ns = -1;
		int64_t d = sqlite3_column_int64(st, 13);
		r->dur_ns = d > 0 ? (uint64_t)d : 0;
		r->streamed = sqlite3_column_int(st, 14) != 0;
		r->body_events = (uint32_t)sqlite3_column_int64(st, 15);
		r->itl_max_ns = sqlite3_column_type(st, 16) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 16);
		if (r->itl_max_ns < 0)
			r->itl_max_ns = -1;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	ret = cw_req_judge(out);
out:
	sqlite3_finalize(st);
	if (ret < 0)
		cw_req_free(out);
	return ret;
}

void cw_req_free(struct cw_req_set *s)
{
	free(s->reqs);
	free(s->routes);
	memset(s, 0, sizeof(*s));
}

static int by_route(const void *a, const void *b)
{
	const struct cw_req *x = a, *y = b;
	int k = strcmp(x->method, y->method);

	if (!k)
		k = strcmp(x->path, y->path);
	if (k)
		return k;
	if (x->mono_ns != y->mono_ns)
		return x->mono_ns < y->mono_ns ? -1 : 1;
	return (x->id > y->id) - (x->id < y->id);
}

/* The median (and the p99 when p99 is not NULL) of measure m of the
 * route's requests that have it; 0 when none does. */
enum measure { M_DUR, M_TTFT, M_ITL };

static int64_t measure_of(const struct cw_req *r, enum measure m)
{
	switch (m) {
	case M_DUR:
		return r->streamed ? -1 : (int64_t)r->dur_ns;
	case M_TTFT:
		return r->ttft_ns;
	default:
		return r->streamed ? r->itl_max_ns : -1;
	}
}

static int quantiles(const struct cw_req *v, size_t n, enum measure m, double *buf, uint64_t *p50, uint64_t *p99)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t x = measure_of(&v[i], m);

		if (x >= 0)
			buf[k++] = (double)x;
	}
	*p50 = k ? (uint64_t)cw_median(buf, k) : 0; /* sorts buf */
	if (p99)
		*p99 = k ? (uint64_t)buf[(size_t)((double)(k - 1) * 0.99 + 0.5)] : 0;
	return (int)k;
}

/* Whether x is slow against the normal med: factor x and the floor. */
static int slow_vs(int64_t x, uint64_t med)
{
	return x >= 0 && med && (double)x >= CW_REQ_SLOW_FACTOR * (double)med && (uint64_t)x >= CW_REQ_FLOOR_NS;
}

static void judge(struct cw_req *r, const struct cw_req_route *rt)
{
	uint64_t ex;

	r->slow = 0;
	r->excess_ns = 0;
	if (rt->slo) {
		if (r->ttft_ns >= 0 && (uint64_t)r->ttft_ns > CW_REQ_SLO_TTFT_NS) {
			r->slow |= CW_REQ_SLOW_TTFT;
			r->excess_ns = (uint64_t)r->ttft_ns - CW_REQ_SLO_TTFT_NS;
		}
		if (!r->streamed && r->dur_ns > CW_REQ_SLO_DURATION_NS) {
			r->slow |= CW_REQ_SLOW_DURATION;
			ex = r->dur_ns - CW_REQ_SLO_DURATION_NS;
			if (ex > r->excess_ns)
				r->excess_ns = ex;
		}
		return;
	}
	if (slow_vs(r->ttft_ns, rt->ttft_p50_ns)) {
		r->slow |= CW_REQ_SLOW_TTFT;
		r->excess_ns = (uint64_t)r->ttft_ns - rt->ttft_p50_ns;
	}
	if (!r->streamed && slow_vs((int64_t)r->dur_ns, rt->dur_p50_ns)) {
		r->slow |= CW_REQ_SLOW_DURATION;
		ex = r->dur_ns - rt->dur_p50_ns;
		if (ex > r->excess_ns)
			r->excess_ns = ex;
	}
	if (r->streamed && slow_vs(r->itl_max_ns, rt->itl_max_p50_ns)) {
		r->slow |= CW_REQ_SLOW_ITL;
		ex = (uint64_t)r->itl_max_ns - rt->itl_max_p50_ns;
		if (ex > r->excess_ns)
			r->excess_ns = ex;
	}
}

int cw_req_judge(struct cw_req_set *s)
{
	double *buf;
	size_t cap = 0;

	free(s->routes);
	s->routes = NULL;
	s->nroutes = 0;
	if (!s->n)
		return 0;
	qsort(s->reqs, s->n, sizeof(*s->reqs), by_route);
	if (!(buf = malloc(s->n * sizeof(*buf))))
		return -ENOMEM;
	for (size_t i = 0; i < s->n;) {
		struct cw_req_route *rt;
		size_t j = i;

		while (j < s->n && !strcmp(s->reqs[j].method, s->reqs[i].method) &&
		       !strcmp(s->reqs[j].path, s->reqs[i].path))
			j++;
		if (cw_vec_reserve(&s->routes, &cap, s->nroutes + 1, sizeof(*s->routes), 8) < 0) {
			free(buf);
			return -ENOMEM;
		}
		rt = &s->routes[s->nroutes];
		memset(rt, 0, sizeof(*rt));
		snprintf(rt->method, sizeof(rt->method), "%s", s->reqs[i].method);
		snprintf(rt->path, sizeof(rt->path), "%s", s->reqs[i].path);
		rt->first = i;
		rt->n = j - i;
		quantiles(s->reqs + i, rt->n, M_DUR, buf, &rt->dur_p50_ns, &rt->dur_p99_ns);
		if (!rt->dur_p50_ns) /* every answer streamed: the route's durations as they are */
			for (size_t k = 0; k < rt->n; k++)
				buf[k] = (double)s->reqs[i + k].dur_ns;
		if (!rt->dur_p50_ns) {
			rt->dur_p50_ns = (uint64_t)cw_median(buf, rt->n);
			rt->dur_p99_ns = (uint64_t)buf[(size_t)((double)(rt->n - 1) * 0.99 + 0.5)];
		}
		quantiles(s->reqs + i, rt->n, M_TTFT, buf, &rt->ttft_p50_ns, NULL);
		quantiles(s->reqs + i, rt->n, M_ITL, buf, &rt->itl_max_p50_ns, NULL);
		rt->slo = rt->n < CW_REQ_MIN_BASELINE;
		for (size_t k = i; k < j; k++) {
			s->reqs[k].route = (int)s->nroutes;
			judge(&s->reqs[k], rt);
			rt->nslow += s->reqs[k].slow != 0;
		}
		s->nroutes++;
		i = j;
	}
	free(buf);
	return 0;
}

uint64_t cw_req_slow_end(const struct cw_req *r)
{
	if (r->slow == CW_REQ_SLOW_TTFT && r->ttft_ns >= 0)
		return r->mono_ns + (uint64_t)r->ttft_ns;
	return r->mono_ns + r->dur_ns;
}

int cw_req_incidents(const struct cw_req_set *s, int r, struct cw_req_incident **out)
{
	const struct cw_req_route *rt = &s->routes[r];
	struct cw_req_incident *v = NULL;
	size_t cap = 0;
	int n = 0;
	uint64_t end = 0;

	*out = NULL;
	for (size_t k = rt->first; k < rt->first + rt->n; k++) {
		const struct cw_req *q = &s->reqs[k];
		struct cw_req_incident *in;

		if (!q->slow)
			continue;
		if (!n || q->mono_ns > end + CW_REQ_INCIDENT_GAP_NS) {
			if (cw_vec_reserve(&v, &cap, (size_t)n + 1, sizeof(*v), 4) < 0)
				goto nomem;
			memset(&v[n], 0, sizeof(v[n]));
			v[n].route = r;
			if (!(v[n].idx = malloc(rt->n * sizeof(*v[n].idx))))
				goto nomem;
			n++;
			end = 0;
		}
		in = &v[n - 1];
		in->idx[in->n++] = k;
		in->excess_ns += q->excess_ns;
		if (q->mono_ns + q->dur_ns > end)
			end = q->mono_ns + q->dur_ns;
	}
	*out = v;
	return n;
nomem:
	cw_req_incidents_free(v, n);
	return -ENOMEM;
}

void cw_req_incidents_free(struct cw_req_incident *v, int n)
{
	for (int i = 0; v && i < n; i++)
		free(v[i].idx);
	free(v);
}
