/* An inference_latency chain from one incident (request_chain.h). */
#include "analysis/request_chain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/timeutil.h"

/* An incident with no cause found is named when it is this large. */
#define UNEXPLAINED_MIN_REQUESTS 3
#define UNEXPLAINED_MIN_EXCESS_NS NSEC_PER_SEC

/* "12:03:07" of a wall time. */
static void clock_s(uint64_t wall, char *buf, size_t len)
{
	char full[40];
	const char *t;

	cw_format_time(wall, full, sizeof(full));
	t = strchr(full, 'T');
	snprintf(buf, len, "%.8s", t ? t + 1 : full);
}

struct ranked {
	uint64_t excess, mono;
	size_t idx;
};

static int by_excess(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->excess != y->excess)
		return x->excess > y->excess ? -1 : 1;
	return x->mono < y->mono ? -1 : x->mono > y->mono;
}

static const char *why_of(unsigned slow)
{
	return slow & CW_REQ_SLOW_TTFT ? "ttft" : slow & CW_REQ_SLOW_DURATION ? "duration" : "itl";
}

/* "TTFT 9.91s, 10.20s total" of r. */
static void req_times(const struct cw_req *r, char *buf, size_t len)
{
	char t[32], d[32];

	cw_format_duration(r->dur_ns, d, sizeof(d));
	if (r->ttft_ns >= 0) {
		cw_format_duration((uint64_t)r->ttft_ns, t, sizeof(t));
		snprintf(buf, len, "TTFT %s, %s total", t, d);
	} else {
		snprintf(buf, len, "%s", d);
	}
	if ((r->slow & CW_REQ_SLOW_ITL) && r->itl_max_ns >= 0) {
		size_t n = strlen(buf);

		cw_format_duration((uint64_t)r->itl_max_ns, t, sizeof(t));
		snprintf(buf + n, len - n, ", a %s gap between tokens", t);
	}
}

/* What most of the incident's requests were slow in (TTFT first on a tie). */
static unsigned majority(const struct cw_req_set *s, const struct cw_req_incident *in)
{
	size_t nt = 0, nd = 0, ni = 0;

	for (size_t i = 0; i < in->n; i++) {
		unsigned f = s->reqs[in->idx[i]].slow;
		nt += !!(f & CW_REQ_SLOW_TTFT);
		nd += !!(f & CW_REQ_SLOW_DURATION);
		ni += !!(f & CW_REQ_SLOW_ITL);
	}
	return nt >= nd && nt >= ni ? CW_REQ_SLOW_TTFT : nd >= ni ? CW_REQ_SLOW_DURATION : CW_REQ_SLOW_ITL;
}

/* "TTFT p50 9.12s vs 41.0ms usual" for what most of the slow requests
 * were slow in. */
static void slow_what(const struct cw_req_set *s, const struct cw_req_route *rt, const struct cw_req_incident *in,
		      char *buf, size_t len)
{
	double *v = malloc(in->n * sizeof(*v));
	size_t k = 0;
	unsigned f = majority(s, in);
	int measure = f == CW_REQ_SLOW_TTFT ? 0 : f == CW_REQ_SLOW_DURATION ? 1 : 2;
	char a[24], b[24];
	uint64_t med, usual;

	for (size_t i = 0; v && i < in->n; i++) {
		const struct cw_req *r = &s->reqs[in->idx[i]];

		if (measure == 0 && r->ttft_ns >= 0)
			v[k++] = (double)r->ttft_ns;
		else if (measure == 1)
			v[k++] = (double)r->dur_ns;
		else if (measure == 2 && r->itl_max_ns >= 0)
			v[k++] = (double)r->itl_max_ns;
	}
	med = v && k ? (uint64_t)cw_median(v, k) : 0;
	free(v);
	cw_format_duration(med, a, sizeof(a));
	if (rt->slo) {
		cw_format_duration(measure == 0 ? CW_REQ_SLO_TTFT_NS : CW_REQ_SLO_DURATION_NS, b, sizeof(b));
		snprintf(buf, len, "%s p50 %s, over the %s objective", measure == 0 ? "TTFT" : "duration", a, b);
		return;
	}
	usual = measure == 0 ? rt->ttft_p50_ns : measure == 1 ? rt->dur_p50_ns : rt->itl_max_p50_ns;
	cw_format_duration(usual, b, sizeof(b));
	if (measure == 2)
		snprintf(buf, len, "token gaps p50 %s vs %s usual", a, b);
	else
		snprintf(buf, len, "%s p50 %s vs %s usual", measure == 0 ? "TTFT" : "duration", a, b);
}

/* "POST /v1/chat/completions", cut to len. */
static void route_name(const struct cw_req_route *rt, char *buf, size_t len)
{
	const char *m = rt->method[0] ? rt->method : "?", *p = rt->path[0] ? rt->path : "?";
	size_t lm = strlen(m), lp;

	if (lm > len - 1)
		lm = len - 1;

	memcpy(buf, m, lm);
	buf[lm] = 0;
	if (lm + 1 >= len)
		return;
	buf[lm] = ' ';
	lp = strlen(p);
	if (lp > len - lm - 2)
		lp = len - lm - 2;
	memcpy(buf + lm + 1, p, lp);
	buf[lm + 1 + lp] = 0;
}

static double share(uint64_t part, uint64_t whole)
{
	double s = whole ? (double)part / (double)whole : 0;

	return s > 1 ? 1 : s;
}

static int is_server_pid(const struct cw_req_causes *m, int64_t pid)
{
	for (int i = 0; i < m->npids; i++)
		if (m->pids[i] == pid)
			return 1;
	return 0;
}

static void preemption(const struct cw_sysctx *sys, const struct cw_req_causes *m, struct cw_chain *c, char *cause,
		       size_t len, uint64_t t0)
{
	const struct cw_culprit_acc *h = &m->hog;
	double sh = share(m->pre_ns, m->window_ns), hs = share(h->ns, m->hog_of_ns);
	const char *aside = m->hog_own_aside ? ", its own threads aside" : "";
	char pre[32], win[32], held[32];
	/* The host at the culprit's longest hold (else the window's start). */
	uint64_t at = h->ns && sys ? (uint64_t)((int64_t)h->worst_wall_ns - sys->mono_to_wall) : m->win[0].start;
	const struct cw_snap *sn = sys ? cw_sysctx_snap_at(sys, at) : NULL;
	int ncpu = sn && sn->ncpu > 0 ? sn->ncpu : 0;

	c->tid = m->pre_tid;
	c->pid = m->pre_pid;
	if (m->pre_comm[0])
		snprintf(c->comm, sizeof(c->comm), "%s", m->pre_comm);
	cw_format_duration(m->pre_ns, pre, sizeof(pre));
	cw_format_duration(m->window_ns, win, sizeof(win));
	cw_chain_add_timeline(c, CW_LAYER_HOST, h->ns ? h->worst_wall_ns : t0,
			      "thread %lld (%s) runnable but off-CPU for %s of the requests' %s (%.0f %%)",
			      (long long)m->pre_tid, c->comm, pre, win, sh * 100);
	if (!h->ns) {
		snprintf(cause, len, "%s's thread %lld was preempted for %.0f %% of it", c->comm, (long long)m->pre_tid,
			 sh * 100);
		cw_chain_add_advice(c, "give the server's threads CPUs of their own (a cpuset, or Kubernetes' static CPU"
				       " manager policy) or raise its CPU weight");
		return;
	}
	c->culprit.known = 1;
	snprintf(c->culprit.comm, sizeof(c->culprit.comm), "%s", h->comm);
	c->culprit.pid = h->pid;
	c->culprit.cgroup_id = h->cgroup_id;
	c->culprit.cpu = h->cpu;
	c->culprit.overlap_ns = h->ns;
	cw_format_duration(h->ns, held, sizeof(held));
	cw_chain_add_timeline(c, CW_LAYER_HOST, h->worst_wall_ns, "CPU %d taken by %s (pid %lld, cgroup %llu) from the server's threads for %s",
			      h->cpu, h->comm, (long long)h->pid, (unsigned long long)h->cgroup_id, held);
	if (h->cpu >= 0)
		snprintf(cause, len,
			 "%s's thread %lld was preempted for %.0f %% of it, %.0f %% of that by %s (pid %lld, cpu %d)%s",
			 c->comm, (long long)m->pre_tid, sh * 100, hs * 100, h->comm, (long long)h->pid, h->cpu, aside);
	else
		snprintf(cause, len, "%s's thread %lld was preempted for %.0f %% of it, %.0f %% of that by %s (pid %lld)%s",
			 c->comm, (long long)m->pre_tid, sh * 100, hs * 100, h->comm, (long long)h->pid, aside);
	if (sn)
		cw_chain_add_timeline(c, CW_LAYER_SYSTEM, sn->wall_ns, "cpu %.0f %%, load %.1f on %d CPUs", sn->cpu_pct,
				      sn->load1, ncpu);
	if (is_server_pid(m, h->pid)) {
		cw_chain_add_advice(c, "the server's own threads compete for its CPUs: fewer compute threads"
				       " (llama-server --threads, OMP_NUM_THREADS) or more CPUs for it");
		return;
	}
	if (h->pid > 0)
		cw_chain_add_fix(c, "renice +19 -p %lld", (long long)h->pid);
	if (h->cpu >= 0 && ncpu > 1 && c->pid > 0) {
		char cpus[128];

		cw_cpus_except(cpus, sizeof(cpus), ncpu, h->cpu);
		cw_chain_add_fix(c, "taskset -acp %s %lld  # keep the server off cpu %d", cpus, (long long)c->pid, h->cpu);
	}
	if (h->pid > 0 && h->cpu >= 0)
		cw_chain_add_fix(c, "taskset -acp %d %lld  # keep %s on cpu %d", h->cpu, (long long)h->pid, h->comm, h->cpu);
	cw_chain_add_advice(c, "pin the engine's threads to CPUs of their own (a cpuset, or Kubernetes' static CPU"
			       " manager policy) or raise the server's CPU weight over batch work");
}

static void cuda(sqlite3 *db, const struct cw_req_causes *m, struct cw_chain *c, char *cause, size_t len)
{
	/* at: a file's last component, bounded so the cause line fits */
	char d[32], at[160] = "";

	cw_format_duration(m->cuda_max_ns, d, sizeof(d));
	c->pid = m->cuda_pid;
	c->tid = m->cuda_tid;
	if (m->cuda_py_stack)
		cw_chain_load_python(db, c, m->cuda_py_stack);
	if (c->has_python) {
		const char *f = strrchr(c->py_file, '/');

		snprintf(at, sizeof(at), " at %.120s:%d", f ? f + 1 : c->py_file, c->py_line);
	}
	snprintf(cause, len, "the server was inside slow GPU calls for %.0f %% of it, the longest %s %s on thread %lld%s",
		 share(m->cuda_ns, m->window_ns) * 100, m->cuda_op, d, (long long)m->cuda_tid, at);
	cw_chain_add_timeline(c, CW_LAYER_CUDA, m->cuda_wall_ns, "%s took %s on thread %lld%s", m->cuda_op, d,
			      (long long)m->cuda_tid, at);
	cw_chain_add_advice(c, "the engine's GPU steps took the requests' time: look at what %s waits for%s (a sync per"
			       " step, a graph capture, a batch too large for the device)", m->cuda_op, at);
}

/* The cause with the largest share of the window, at least
 * CW_MIN_EXPLAINED; queueing only when no host cause reaches it. */
static const char *pick(const struct cw_req_causes *m, double *sh)
{
	double pre = share(m->pre_ns, m->window_ns), gpu = share(m->cuda_ns, m->window_ns);
	double mem = share(m->mem_ns, m->window_ns), io = share(m->io_ns, m->window_ns);
	double q = share(m->queued_ns, m->slow_part_ns);
	const char *b = CW_REQ_BECAUSE_UNKNOWN;

	*sh = 0;
	if (pre >= CW_MIN_EXPLAINED && pre >= *sh)
		*sh = pre, b = CW_REQ_BECAUSE_PREEMPTION;
	if (gpu >= CW_MIN_EXPLAINED && gpu > *sh)
		*sh = gpu, b = CW_REQ_BECAUSE_CUDA;
	if (mem >= CW_MIN_EXPLAINED && mem > *sh)
		*sh = mem, b = CW_REQ_BECAUSE_MEMORY;
	if (io >= CW_MIN_EXPLAINED && io > *sh)
		*sh = io, b = CW_REQ_BECAUSE_IO;
	if (*sh == 0 && q >= CW_MIN_EXPLAINED)
		*sh = q, b = CW_REQ_BECAUSE_QUEUEING;
	return b;
}

static void name_requests(const struct cw_req_set *s, const struct cw_req_incident *in, struct cw_chain *c,
			  size_t **order_out)
{
	size_t *order = malloc(in->n * sizeof(*order));
	struct ranked *rk = malloc(in->n * sizeof(*rk));

	*order_out = NULL;
	if (!order || !rk) {
		free(order);
		free(rk);
		return;
	}
	for (size_t i = 0; i < in->n; i++) {
		rk[i].excess = s->reqs[in->idx[i]].excess_ns;
		rk[i].mono = s->reqs[in->idx[i]].mono_ns;
		rk[i].idx = in->idx[i];
	}
	qsort(rk, in->n, sizeof(*rk), by_excess);
	for (size_t i = 0; i < in->n; i++)
		order[i] = rk[i].idx;
	free(rk);
	*order_out = order;
	for (size_t i = 0; i < in->n && c->nrequests < CW_CHAIN_MAX_REQUESTS; i++) {
		const struct cw_req *r = &s->reqs[order[i]];
		struct cw_chain_request *q = &c->requests[c->nrequests++];

		q->wall_ns = r->wall_ns;
		q->ttft_ns = r->ttft_ns;
		q->dur_ns = r->dur_ns;
		q->status = r->status;
		q->pid = r->pid;
		q->tid = r->tid;
		memcpy(q->why, why_of(r->slow), strlen(why_of(r->slow)) + 1); /* "duration" and shorter */
	}
}

int cw_req_chain_fill(sqlite3 *db, const char *node, const struct cw_sysctx *sys, const struct cw_req_set *s,
		      const struct cw_req_incident *in, const struct cw_req_causes *m, struct cw_chain *c)
{
	const struct cw_req_route *rt = &s->routes[in->route];
	const struct cw_req *worst;
	size_t *order = NULL;
	uint64_t from = UINT64_MAX, to = 0, slo = 0;
	char what[96], cause[400] = "", times[96], at[16], a[16], b[16];
	const char *because;
	double sh;

	memset(c, 0, sizeof(*c));
	c->kind = CW_KIND_INFERENCE_LATENCY;
	c->rank = -1;
	c->culprit.cpu = -1;
	route_name(rt, c->op, sizeof(c->op));
	snprintf(c->source, sizeof(c->source), "http");
	snprintf(c->node, sizeof(c->node), "%s", node);
	snprintf(c->route_method, sizeof(c->route_method), "%s", rt->method);
	snprintf(c->route_path, sizeof(c->route_path), "%s", rt->path);
	c->route_dur_p50_ns = rt->dur_p50_ns;
	c->route_ttft_p50_ns = rt->ttft_p50_ns;
	c->route_baseline_slo = rt->slo;
	c->count = rt->n;
	c->slow_count = in->n;
	c->p50_ns = rt->dur_p50_ns;
	c->p99_ns = rt->dur_p99_ns;
	c->tail_ratio = rt->dur_p50_ns ? (double)rt->dur_p99_ns / (double)rt->dur_p50_ns : 0;
	for (size_t i = 0; i < in->n; i++) {
		const struct cw_req *r = &s->reqs[in->idx[i]];

		from = r->wall_ns < from ? r->wall_ns : from;
		to = r->wall_ns + r->dur_ns > to ? r->wall_ns + r->dur_ns : to;
		c->max_ns = r->dur_ns > c->max_ns ? r->dur_ns : c->max_ns;
		slo += (r->ttft_ns >= 0 && (uint64_t)r->ttft_ns > CW_REQ_SLO_TTFT_NS) ||
		       (!r->streamed && r->dur_ns > CW_REQ_SLO_DURATION_NS);
	}
	c->incident_from_ns = from;
	c->incident_to_ns = to;
	name_requests(s, in, c, &order);
	if (!order)
		return 0;
	/* The worst in what most were slow in: the summary's figure. */
	worst = &s->reqs[order[0]];
	for (size_t i = 0; i < in->n; i++)
		if (s->reqs[order[i]].slow & majority(s, in)) {
			worst = &s->reqs[order[i]];
			break;
		}
	c->pid = worst->pid;
	c->tid = worst->resp_tid ? worst->resp_tid : worst->tid;
	snprintf(c->comm, sizeof(c->comm), "%s", worst->comm);
	because = pick(m, &sh);
	c->explained_share = sh;
	c->slow_time_ns = m->window_ns;
	c->explained_ns = (uint64_t)((double)m->window_ns * sh);
	snprintf(c->because, sizeof(c->because), "%s", because);
	if (!strcmp(because, CW_REQ_BECAUSE_UNKNOWN) && in->n < UNEXPLAINED_MIN_REQUESTS &&
	    worst->excess_ns < UNEXPLAINED_MIN_EXCESS_NS) {
		free(order);
		return 0;
	}

	/* The requests first: when, how many, the worst ones. */
	clock_s(from, a, sizeof(a));
	clock_s(to, b, sizeof(b));
	slow_what(s, rt, in, what, sizeof(what));
	cw_chain_add_timeline(c, CW_LAYER_NET, from, "%zu of %zu %s requests slow from %s to %s (%s)", in->n, rt->n,
			      c->op, a, b, what);
	for (int i = 0; i < c->nrequests && i < 3; i++) {
		const struct cw_req *r = &s->reqs[order[i]];

		req_times(r, times, sizeof(times));
		cw_chain_add_timeline(c, CW_LAYER_NET, r->wall_ns, "%s: %s, status %d (read by thread %lld)", c->op, times,
				      r->status, (long long)r->tid);
	}
	if (!strcmp(because, CW_REQ_BECAUSE_PREEMPTION)) {
		preemption(sys, m, c, cause, sizeof(cause), from);
	} else if (!strcmp(because, CW_REQ_BECAUSE_CUDA)) {
		cuda(db, m, c, cause, sizeof(cause));
	} else if (!strcmp(because, CW_REQ_BECAUSE_MEMORY) || !strcmp(because, CW_REQ_BECAUSE_IO)) {
		int mem = !strcmp(because, CW_REQ_BECAUSE_MEMORY);

		c->tid = mem ? m->mem_tid : m->io_tid;
		snprintf(cause, sizeof(cause), "thread %lld of the server was blocked %s for %.0f %% of it", (long long)c->tid,
			 mem ? "under memory pressure" : "on its process's own disk I/O", sh * 100);
		if (mem)
			cw_chain_add_advice(c, "the server stalled in memory reclaim: give it memory headroom (its cgroup's"
					       " memory.high) or stop what fills the host's memory");
		else
			cw_chain_add_advice(c, "the server waited for its own disk I/O while answering: keep model and cache"
					       " files on local fast storage, loaded before serving");
	} else if (!strcmp(because, CW_REQ_BECAUSE_QUEUEING)) {
		snprintf(cause, sizeof(cause),
			 "they waited for %.0f %% of it while earlier requests were answered (up to %d in flight):"
			 " the server answers one at a time",
			 sh * 100, m->max_inflight);
		cw_chain_add_timeline(c, CW_LAYER_NET, from, "up to %d requests in flight at once", m->max_inflight);
		cw_chain_add_advice(c, "raise the server's parallel slots (llama-server --parallel, vLLM --max-num-seqs)"
				       " or add replicas behind the balancer");
	} else {
		snprintf(cause, sizeof(cause),
			 "no host cause measured (preempted %.0f %%, blocked on memory or I/O %.0f %%, waiting behind"
			 " others %.0f %% of it)",
			 share(m->pre_ns, m->window_ns) * 100, share(m->mem_ns + m->io_ns, m->window_ns) * 100,
			 share(m->queued_ns, m->slow_part_ns) * 100);
		cw_chain_add_advice(c, "read the engine's own numbers for these seconds (queue depth, KV-cache use,"
				       " preemptions): causeway query \"SELECT * FROM engine_metrics\"");
	}
	req_times(worst, times, sizeof(times));
	clock_s(worst->wall_ns, at, sizeof(at));
	cw_chain_summary(c, "%s: %zu request%s slow (%s; worst at %s, %s): %s", c->op, in->n, in->n == 1 ? "" : "s", what,
			 at, times, cause);

	cw_chain_add_evidence(c, "requests", (double)rt->n, 1);
	cw_chain_add_evidence(c, "slow_requests", (double)in->n, 1);
	cw_chain_add_evidence(c, "slo_breaches", (double)slo, 1);
	cw_chain_add_evidence(c, "window_ns", (double)m->window_ns, 1);
	cw_chain_add_evidence(c, "excess_ns", (double)in->excess_ns, 1);
	cw_chain_add_evidence(c, "preempted_ns", (double)m->pre_ns, 1);
	if (c->culprit.known)
		cw_chain_add_evidence(c, "culprit_share", share(m->hog.ns, m->hog_of_ns), 0);
	cw_chain_add_evidence(c, "gpu_call_ns", (double)m->cuda_ns, 1);
	cw_chain_add_evidence(c, "blocked_mem_ns", (double)m->mem_ns, 1);
	cw_chain_add_evidence(c, "blocked_io_ns", (double)m->io_ns, 1);
	cw_chain_add_evidence(c, "queued_share", share(m->queued_ns, m->slow_part_ns), 0);
	cw_chain_add_evidence(c, "max_in_flight", (double)m->max_inflight, 1);
	cw_chain_add_evidence(c, "threads_measured", (double)m->nthreads, 1);
	cw_chain_add_evidence(c, "incident_from_ns", (double)c->incident_from_ns, 1);
	cw_chain_add_evidence(c, "incident_to_ns", (double)c->incident_to_ns, 1);
	free(order);
	return 1;
}
