/* What happened during an incident of slow requests (request_causes.h). */
#include "analysis/request_causes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stats.h"
#include "store/layout.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/vec.h"

/* A thread with this share of the window on CPU was working (an idle
 * HTTP thread blocked in epoll is not: its blocked time says nothing). */
#define WORKING_SHARE 0.05
#define MAX_HOGS 8
/* The server's own threads must take this share of its preempted time to
 * be named over another process (they compete with each other). */
#define OWN_SHARE 0.75

struct thr {
	int64_t pid, tid;
	char comm[16];
	int seen;
	uint64_t pre, blocked, mem, io;
};

/* An off-CPU piece of a server thread in the window, and who took its
 * CPU at the switch-out. */
struct pre_iv {
	uint64_t a, b, wall;
	int preempted; /* else blocked: only its taker is of use */
	int cpu;
	int64_t by_pid;
	uint64_t cg;
	char comm[16];
};

/* The window's preempted pieces of every server thread (bounded). */
#define MAX_PRE_IVS 65536
struct pre_ivs {
	struct pre_iv *v;
	size_t n, cap;
};

static void push_iv(struct pre_ivs *p, const struct pre_iv *iv)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		struct pre_iv *m;

		if (cap > MAX_PRE_IVS || !(m = realloc(p->v, cap * sizeof(*m))))
			return;
		p->v = m;
		p->cap = cap;
	}
	p->v[p->n++] = *iv;
}

static int iv_cmp(const void *x, const void *y)
{
	const struct pre_iv *a = x, *b = y;

	return a->a < b->a ? -1 : a->a > b->a;
}

static int has_pid(const struct cw_req_causes *c, int64_t pid)
{
	for (int i = 0; i < c->npids; i++)
		if (c->pids[i] == pid)
			return 1;
	return 0;
}

static void add_pid(struct cw_req_causes *c, int64_t pid)
{
	if (pid > 0 && c->npids < CW_REQ_MAX_PIDS && !has_pid(c, pid))
		c->pids[c->npids++] = pid;
}

/* Adds the pids sql (binding ?1 node, ?2 key) returns. */
static void add_pids_of(sqlite3 *db, struct cw_req_causes *c, const char *sql, const char *node, int64_t key)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, key);
	while (sqlite3_step(st) == SQLITE_ROW)
		add_pid(c, sqlite3_column_int64(st, 0));
	sqlite3_finalize(st);
}

/* The server's processes: those that answered, their children, and the
 * processes of their container (a workload's cgroup, never a host-wide
 * one: a login session's cgroup holds unrelated processes). */
static void find_pids(sqlite3 *db, const char *node, const struct cw_req_set *s, const struct cw_req_incident *in,
		      struct cw_req_causes *c)
{
	int n;

	for (size_t i = 0; i < in->n; i++)
		add_pid(c, s->reqs[in->idx[i]].pid);
	n = c->npids;
	for (int i = 0; i < n; i++)
		add_pids_of(db, c, "SELECT pid FROM processes WHERE node = ?1 AND ppid = ?2 ORDER BY pid", node,
			    c->pids[i]);
	for (size_t i = 0; i < in->n; i++) {
		const struct cw_req *r = &s->reqs[in->idx[i]];
		struct cw_tenant_ref ref;

		if (!r->cgroup_id || (i && r->cgroup_id == s->reqs[in->idx[i - 1]].cgroup_id))
			continue;
		if (cw_tenant_ref_load(db, node, r->cgroup_id, &ref) < 0 || !ref.known || !cw_tenant_is_workload(&ref))
			continue;
		add_pids_of(db, c, "SELECT pid FROM processes WHERE node = ?1 AND cgroup_id = ?2 ORDER BY pid", node,
			    (int64_t)r->cgroup_id);
	}
}

static struct thr *add_tid(struct thr *v, int *n, int64_t pid, int64_t tid)
{
	if (tid <= 0)
		return NULL;
	for (int i = 0; i < *n; i++)
		if (v[i].tid == tid)
			return &v[i];
	if (*n == CW_REQ_MAX_TIDS)
		return NULL;
	memset(&v[*n], 0, sizeof(v[0]));
	v[*n].pid = pid;
	v[*n].tid = tid;
	return &v[(*n)++];
}

/* Every thread of the server's processes trace saw: the main thread
 * (tid = pid), those that made traced calls (threads), those that read
 * or wrote a request. */
static int find_tids(sqlite3 *db, const char *node, const struct cw_req_set *s, const struct cw_req_causes *c,
		     struct thr *v)
{
	sqlite3_stmt *st = NULL;
	int n = 0;

	for (int i = 0; i < c->npids; i++)
		add_tid(v, &n, c->pids[i], c->pids[i]);
	if (sqlite3_prepare_v2(db, "SELECT tid FROM threads WHERE node = ?1 AND pid = ?2 ORDER BY tid", -1, &st,
			       NULL) == SQLITE_OK) {
		for (int i = 0; i < c->npids; i++) {
			sqlite3_reset(st);
			sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 2, c->pids[i]);
			while (sqlite3_step(st) == SQLITE_ROW)
				add_tid(v, &n, c->pids[i], sqlite3_column_int64(st, 0));
		}
	}
	sqlite3_finalize(st);
	for (size_t i = 0; i < s->n; i++)
		if (has_pid(c, s->reqs[i].pid)) {
			add_tid(v, &n, s->reqs[i].pid, s->reqs[i].tid);
			add_tid(v, &n, s->reqs[i].pid, s->reqs[i].resp_tid);
		}
	return n;
}

static void add_hog(struct cw_culprit_acc *hogs, int *nhogs, const char *comm, int64_t pid, uint64_t cg, int cpu,
		    uint64_t ns, uint64_t wall)
{
	struct cw_culprit_acc *a = NULL;

	for (int i = 0; i < *nhogs && !a; i++)
		if (hogs[i].pid == pid && hogs[i].cpu == cpu && !strcmp(hogs[i].comm, comm))
			a = &hogs[i];
	if (!a && *nhogs < MAX_HOGS) {
		a = &hogs[(*nhogs)++];
		memset(a, 0, sizeof(*a));
		snprintf(a->comm, sizeof(a->comm), "%s", comm);
		a->pid = pid;
		a->cgroup_id = cg;
		a->cpu = cpu;
	}
	if (!a)
		return;
	a->ns += ns;
	if (ns > a->worst_ns) {
		a->worst_ns = ns;
		a->worst_wall_ns = wall;
	}
}

/* The off-CPU intervals of t that overlap window piece [s, e): those
 * starting inside it and the last one starting before it (a thread's
 * intervals never overlap): seeks on (tid, start_mono_ns). */
static int measure_thread(sqlite3_stmt *st, const char *node, struct cw_sysctx *sys, struct thr *t,
			  struct pre_ivs *ivs, uint64_t s, uint64_t e)
{
	int rc;

	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, t->tid);
	sqlite3_bind_int64(st, 2, (int64_t)s);
	sqlite3_bind_int64(st, 3, (int64_t)e);
	sqlite3_bind_text(st, 4, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 5, t->pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t a = (uint64_t)sqlite3_column_int64(st, 0), b = (uint64_t)sqlite3_column_int64(st, 1);
		const char *reason = (const char *)sqlite3_column_text(st, 2);
		const char *comm = (const char *)sqlite3_column_text(st, 7);
		uint64_t len = cw_overlap(a, b, s, e);

		t->seen = 1;
		if (comm && !t->comm[0])
			snprintf(t->comm, sizeof(t->comm), "%s", comm);
		if (!len || !reason)
			continue;
		if (a < s)
			a = s;
		if (b > e)
			b = e;
		{
			const char *bc = (const char *)sqlite3_column_text(st, 5);
			struct pre_iv iv = {
				.a = a,
				.b = b,
				.wall = cw_sys_wall(sys, a),
				.preempted = !strcmp(reason, "preempted"),
				.cpu = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 3),
				.by_pid = sqlite3_column_int64(st, 4),
				.cg = (uint64_t)sqlite3_column_int64(st, 6),
			};

			snprintf(iv.comm, sizeof(iv.comm), "%s", bc ? bc : "?");
			push_iv(ivs, &iv);
		}
		if (!strcmp(reason, "preempted")) {
			t->pre += len;
		} else {
			uint64_t mem = cw_intervals_cover(sys->pressure, sys->npressure, a, b);
			uint64_t io = cw_sysctx_io_of_pid(sys, t->pid, a, b);

			t->blocked += len;
			t->mem += mem;
			t->io += io < len - mem ? io : len - mem;
		}
	}
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* (b): the CUDA and driver calls of the server's processes that overlap
 * the window and last at least the floor: through the events view by id
 * range (cw_events_id_at), so only the window's rows are read. */
static int measure_cuda(sqlite3 *db, const char *node, struct cw_sysctx *sys, struct cw_req_causes *c)
{
	static const char sql[] =
		"SELECT id, pid, tid, op, duration_ns, mono_ns, wall_ns FROM events WHERE id BETWEEN ?1 AND ?2"
		" AND node = ?3 AND source IN ('cuda', 'driver', 'graph') AND duration_ns >= ?4";
	sqlite3_stmt *st = NULL;
	struct cw_interval *v = NULL;
	size_t n = 0, cap = 0;
	int64_t lo, hi, best = 0;
	uint64_t from = cw_sys_wall(sys, c->win[0].start), to = cw_sys_wall(sys, c->win[c->nwin - 1].end);
	int rc, ret;

	/* A call overlapping the window began at most a minute before it. */
	if ((ret = cw_events_id_at(db, from > 60 * NSEC_PER_SEC ? from - 60 * NSEC_PER_SEC : 0, &lo)) < 0 ||
	    (ret = cw_events_id_at(db, to + NSEC_PER_SEC, &hi)) < 0)
		return ret;
	if (hi <= lo)
		return 0;
	if ((rc = cw_events_prepare_light(db, sql, &st)) != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, (int64_t)CW_REQ_FLOOR_NS);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 1);
		uint64_t dur = (uint64_t)sqlite3_column_int64(st, 4), mono = (uint64_t)sqlite3_column_int64(st, 5);
		uint64_t cov = 0;

		if (!has_pid(c, pid))
			continue;
		for (size_t k = 0; k < c->nwin; k++)
			cov += cw_overlap(mono, mono + dur, c->win[k].start, c->win[k].end);
		if (!cov)
			continue;
		if (cw_vec_reserve(&v, &cap, n + 1, sizeof(*v), 16) < 0) {
			rc = SQLITE_NOMEM;
			break;
		}
		v[n].start = mono;
		v[n++].end = mono + dur;
		if (dur > c->cuda_max_ns) {
			const char *op = (const char *)sqlite3_column_text(st, 3);

			c->cuda_max_ns = dur;
			best = sqlite3_column_int64(st, 0);
			c->cuda_pid = pid;
			c->cuda_tid = sqlite3_column_int64(st, 2);
			c->cuda_wall_ns = (uint64_t)sqlite3_column_int64(st, 6);
			snprintf(c->cuda_op, sizeof(c->cuda_op), "%s", op ? op : "?");
		}
	}
	ret = rc == SQLITE_DONE ? 0 : rc == SQLITE_NOMEM ? -ENOMEM : cw_sqlite_errno(rc);
	sqlite3_finalize(st);
	st = NULL;
	n = cw_intervals_union(v, n);
	for (size_t k = 0; k < c->nwin; k++)
		c->cuda_ns += cw_intervals_cover(v, n, c->win[k].start, c->win[k].end);
	free(v);
	/* The longest call's Python stack; when it has none (stacks are
	 * taken for calls slow for their op's running mean, which a run of
	 * slow calls raises), the longest of the same op on the same thread
	 * in the window that has one: a decode loop's line is the same. */
	if (!ret && best &&
	    sqlite3_prepare_v2(db,
			       "SELECT py_stack_id FROM events WHERE id = ?1 AND py_stack_id IS NOT NULL"
			       " UNION ALL SELECT * FROM (SELECT py_stack_id FROM events WHERE id BETWEEN ?2 AND ?3"
			       " AND node = ?4 AND tid = ?5 AND op = ?6 AND duration_ns >= ?7 AND py_stack_id IS NOT NULL"
			       " ORDER BY duration_ns DESC LIMIT 1)",
			       -1, &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, best);
		sqlite3_bind_int64(st, 2, lo);
		sqlite3_bind_int64(st, 3, hi);
		sqlite3_bind_text(st, 4, node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 5, c->cuda_tid);
		sqlite3_bind_text(st, 6, c->cuda_op, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 7, (int64_t)CW_REQ_FLOOR_NS);
		if (sqlite3_step(st) == SQLITE_ROW)
			c->cuda_py_stack = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	return ret;
}

void cw_req_queueing(const struct cw_req_set *s, const struct cw_req_incident *in, uint64_t *queued_ns,
		     uint64_t *slow_part_ns, int *max_inflight)
{
	uint64_t lo = UINT64_MAX, hi = 0;

	*queued_ns = *slow_part_ns = 0;
	*max_inflight = 0;
	for (size_t i = 0; i < in->n; i++) {
		const struct cw_req *r = &s->reqs[in->idx[i]];
		uint64_t a = r->mono_ns, b = cw_req_slow_end(r);
		struct cw_interval tmp[64];
		size_t n = 0;

		*slow_part_ns += b - a;
		if (a < lo)
			lo = a;
		if (r->mono_ns + r->dur_ns > hi)
			hi = r->mono_ns + r->dur_ns;
		/* Earlier requests of the server answered to their end while
		 * this one waited for its first answer bytes. */
		for (size_t k = 0; k < s->n && n < 64; k++) {
			const struct cw_req *e = &s->reqs[k];
			uint64_t end = e->mono_ns + e->dur_ns;

			if (e == r || e->pid != r->pid || e->mono_ns > a || (e->mono_ns == a && e->id >= r->id))
				continue;
			if (end > a && end <= b) {
				tmp[n].start = e->mono_ns;
				tmp[n++].end = end;
			}
		}
		n = cw_intervals_union(tmp, n);
		*queued_ns += cw_intervals_cover(tmp, n, a, b);
	}
	/* The most requests of the server in flight at a start in the span. */
	for (size_t k = 0; k < s->n; k++) {
		const struct cw_req *e = &s->reqs[k];
		int n = 0;

		if (e->mono_ns < lo || e->mono_ns > hi || e->pid != s->reqs[in->idx[0]].pid)
			continue;
		for (size_t j = 0; j < s->n; j++)
			n += s->reqs[j].pid == e->pid && s->reqs[j].mono_ns <= e->mono_ns &&
			     s->reqs[j].mono_ns + s->reqs[j].dur_ns > e->mono_ns;
		if (n > *max_inflight)
			*max_inflight = n;
	}
}

int cw_req_causes_measure(sqlite3 *db, const char *node, struct cw_sysctx *sys, const struct cw_req_set *s,
			  const struct cw_req_incident *in, struct cw_req_causes *out)
{
	static const char off_sql[] =
		"SELECT start_mono_ns, end_mono_ns, reason, cpu, by_pid, by_comm, by_cgroup_id, comm"
		" FROM offcpu WHERE tid = ?1 AND start_mono_ns >= ?2 AND start_mono_ns < ?3"
		" AND node = ?4 AND pid = ?5"
		" UNION ALL SELECT * FROM (SELECT start_mono_ns, end_mono_ns, reason, cpu, by_pid, by_comm,"
		" by_cgroup_id, comm FROM offcpu WHERE tid = ?1 AND start_mono_ns < ?2 AND node = ?4 AND pid = ?5"
		" ORDER BY start_mono_ns DESC LIMIT 1)";
	struct thr *th = NULL;
	sqlite3_stmt *st = NULL;
	struct cw_culprit_acc all[MAX_HOGS], others[MAX_HOGS];
	struct pre_ivs ivs = { 0 };
	int nall = 0, nothers = 0, nth, ret = 0, rc;
	uint64_t pre_all = 0, pre_others = 0;

	memset(out, 0, sizeof(*out));
	out->hog.cpu = -1;
	if (!in->n)
		return 0;
	if (!(out->win = malloc(in->n * sizeof(*out->win))) || !(th = malloc(CW_REQ_MAX_TIDS * sizeof(*th)))) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < in->n; i++) {
		const struct cw_req *r = &s->reqs[in->idx[i]];

		out->win[i].start = r->mono_ns;
		out->win[i].end = cw_req_slow_end(r);
	}
	out->nwin = cw_intervals_union(out->win, in->n);
	for (size_t k = 0; k < out->nwin; k++)
		out->window_ns += out->win[k].end - out->win[k].start;
	cw_req_queueing(s, in, &out->queued_ns, &out->slow_part_ns, &out->max_inflight);
	find_pids(db, node, s, in, out);
	nth = find_tids(db, node, s, out, th);
	if ((ret = cw_sysctx_need_io(sys)) < 0)
		goto out;
	if ((rc = sqlite3_prepare_v2(db, off_sql, -1, &st, NULL)) != SQLITE_OK) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	for (int i = 0; i < nth; i++) {
		struct thr *t = &th[i];
		uint64_t on;

		for (size_t k = 0; k < out->nwin; k++)
			if ((ret = measure_thread(st, node, sys, t, &ivs, out->win[k].start, out->win[k].end)) < 0)
				goto out;
		if (!t->seen)
			continue;
		out->nthreads++;
		out->threads_preempted += t->pre > 0;
		if (t->pre > out->pre_ns) {
			out->pre_ns = t->pre;
			out->pre_pid = t->pid;
			out->pre_tid = t->tid;
			snprintf(out->pre_comm, sizeof(out->pre_comm), "%s", t->comm);
		}

		on = out->window_ns > t->pre + t->blocked ? out->window_ns - t->pre - t->blocked : 0;
		if (!t->pre && (double)on < WORKING_SHARE * (double)out->window_ns)
			continue;
		if (t->mem > out->mem_ns)
			out->mem_ns = t->mem, out->mem_tid = t->tid;
		if (t->io > out->io_ns)
			out->io_ns = t->io, out->io_tid = t->tid;
	}
	/* Who took the CPU at a switch-out is who ran first, not for how
	 * long: a sibling thread that wakes takes the CPU from another, and
	 * the hog then takes it from the sibling, or gets it when the sibling
	 * sleeps again. A preempted piece whose taker is a server thread is
	 * the server's own only until a server thread is switched out on that
	 * CPU (preempted or going to sleep) for another process within it;
	 * from then on it is that process's. */
	if (ivs.n)
		qsort(ivs.v, ivs.n, sizeof(*ivs.v), iv_cmp);
	for (size_t i = 0; i < ivs.n; i++) {
		const struct pre_iv *p = &ivs.v[i], *f = NULL;
		uint64_t own_end = p->b;

		if (!p->preempted)
			continue;
		if (has_pid(out, p->by_pid)) {
			for (size_t j = i + 1; j < ivs.n && ivs.v[j].a < p->b && !f; j++)
				if (ivs.v[j].cpu == p->cpu && !has_pid(out, ivs.v[j].by_pid))
					f = &ivs.v[j], own_end = ivs.v[j].a;
		} else {
			f = p, own_end = p->a;
		}
		if (own_end > p->a)
			add_hog(all, &nall, p->comm, p->by_pid, p->cg, p->cpu, own_end - p->a, p->wall);
		if (f) {
			add_hog(all, &nall, f->comm, f->by_pid, f->cg, f->cpu, p->b - own_end, p->wall);
			add_hog(others, &nothers, f->comm, f->by_pid, f->cg, f->cpu, p->b - own_end, p->wall);
			pre_others += p->b - own_end;
		}
		pre_all += p->b - p->a;
	}
	/* Another process is named when it took any real part; the server's
	 * own threads only when they took nearly all of it. */
	{
		int own = pre_all && (double)(pre_all - pre_others) >= OWN_SHARE * (double)pre_all;
		const struct cw_culprit_acc *v = own || !nothers ? all : others;
		int nv = own || !nothers ? nall : nothers;

		out->hog.cpu = -1;
		for (int h = 0; h < nv; h++)
			if (v[h].ns > out->hog.ns)
				out->hog = v[h];
		out->hog_of_ns = v == others ? pre_others : pre_all;
		out->hog_own_aside = v == others && pre_others < pre_all;
	}
	ret = measure_cuda(db, node, sys, out);
out:
	sqlite3_finalize(st);
	free(ivs.v);
	free(th);
	if (ret < 0)
		cw_req_causes_free(out);
	return ret;
}

void cw_req_causes_free(struct cw_req_causes *c)
{
	free(c->win);
	c->win = NULL;
	c->nwin = 0;
}
