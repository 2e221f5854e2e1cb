/* The causal engine: picks the ops with a latency tail from the per-second
 * aggregates, probes their slow calls (probe.c), lets every rule measure
 * how much of the slow time its cause explains, and keeps the dominant
 * cause as the op's chain. Node-wide rules (memcpy_bound,
 * dataloader_starvation) run once per node. See docs/rules.md. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/gpuctx.h"
#include "store/store.h"
#include "util/timeutil.h"

/* A python location is named when one user frame issued at least this
 * share of the slow calls that carry a python stack. */
#define CW_PY_MIN_SHARE 0.5

typedef int (*cw_op_rule_fn)(const struct cw_rule_ctx *, struct cw_chain *);
/* The GPU telemetry rules come first: on equal shares the device's own
 * measured state (clocks, memory) is the more specific cause. Without
 * GPU samples they never apply. */
static const cw_op_rule_fn op_rules[] = {
	cw_rule_thermal_throttling, cw_rule_power_capping,  cw_rule_gpu_memory_pressure,
	cw_rule_cpu_preemption, cw_rule_io_contention,      cw_rule_memory_pressure,
	cw_rule_cold_start,     cw_rule_periodic_allocator, cw_rule_gpu_time_slicing,
	cw_rule_network,        cw_rule_graph_launch_tail,  cw_rule_host_memory,
};

#define CW_GPU_RULE_MARGIN 0.10

static int is_gpu_rule(cw_op_rule_fn f)
{
	return f == cw_rule_thermal_throttling || f == cw_rule_power_capping || f == cw_rule_gpu_memory_pressure;
}

struct chains {
	struct cw_chain *v;
	int n, cap;
};

static struct cw_chain *chains_push(struct chains *cs)
{
	if (cs->n == cs->cap) {
		int nc = cs->cap ? cs->cap * 2 : 8;
		struct cw_chain *nv = realloc(cs->v, (size_t)nc * sizeof(*nv));
		if (!nv)
			return NULL;
		cs->v = nv;
		cs->cap = nc;
	}
	return &cs->v[cs->n++];
}

/* Keeps what a node-wide rule returned: ret > 0 means it filled c.
 * Returns ret, or -ENOMEM. */
static int keep_chain(struct chains *cs, int ret, const struct cw_chain *c)
{
	struct cw_chain *slot;

	if (ret <= 0)
		return ret;
	slot = chains_push(cs);
	if (!slot)
		return -ENOMEM;
	*slot = *c;
	return ret;
}

static int warn(struct cw_explain_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int warn(struct cw_explain_result *r, const char *fmt, ...)
{
	char buf[512], **nv;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	nv = realloc(r->warnings, (size_t)(r->nwarnings + 1) * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	r->warnings = nv;
	if (!(nv[r->nwarnings] = strdup(buf)))
		return -ENOMEM;
	r->nwarnings++;
	return 0;
}

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

static int load_python(sqlite3 *db, struct cw_chain *c, int64_t stack_id)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT user_file, user_line, user_function FROM py_stacks WHERE id = ?1",
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

static int fill_identity(sqlite3 *db, struct cw_chain *c, const struct cw_slowcall *calls, size_t ncalls)
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
			if ((ret = load_python(db, c, py_id)) < 0)
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
	static const char *const sqls[] = {
		"SELECT duration_ns, pid, tid, comm, py_stack_id, stack_id FROM kevents"
		" WHERE op = ?1 AND anomalous = 1 AND node = ?2 AND wall_ns BETWEEN ?3 AND ?4"
		" AND (?5 = 0 OR pid = ?5) AND ?6 <= ?7 ORDER BY duration_ns DESC LIMIT 256",
		"SELECT duration_ns, pid, tid, comm, py_stack_id, stack_id FROM kevents"
		" WHERE id BETWEEN ?6 AND ?7 AND op = ?1 AND node = ?2 AND wall_ns BETWEEN ?3 AND ?4"
		" AND (?5 = 0 OR pid = ?5) ORDER BY id LIMIT 256",
	};
	/* Schema v7, a call's op: the same through calls_slow (op id, dur). */
	static const char calls_sql[] =
		"SELECT c.dur, t.pid, t.tid, t.comm, c.pystack, c.stack FROM " CW_CALLS_FROM
		" WHERE " CW_CALL_OP_IS("?1") " AND c.anomalous = 1 AND t.node = ?2 AND " CW_CALL_WALL " BETWEEN ?3 AND ?4"
		" AND (?5 = 0 OR t.pid = ?5) AND ?6 <= ?7 ORDER BY c.dur DESC LIMIT 256";
	struct cw_slowcall *calls;
	size_t n = 0;
	int64_t lo, hi;
	/* ... and the rowid sample, from calls alone (the view's compound
	 * would be sorted whole for its ORDER BY id). */
	static const char calls_scan_sql[] =
		"SELECT c.dur, t.pid, t.tid, t.comm, c.pystack, c.stack FROM " CW_CALLS_FROM
		" WHERE c.id BETWEEN ?6 AND ?7 AND " CW_CALL_OP_IS("?1") " AND t.node = ?2 AND " CW_CALL_WALL
		" BETWEEN ?3 AND ?4 AND (?5 = 0 OR t.pid = ?5) ORDER BY c.id LIMIT 256";
	int rc, ret, call_op = cw_store_call_op(db, c->op);

	if ((ret = cw_events_id_at(db, from_wall, &lo)) < 0 || (ret = cw_events_id_at(db, to_wall, &hi)) < 0)
		return ret;
	calls = calloc(256, sizeof(*calls));
	if (!calls)
		return -ENOMEM;
	for (int pass = 0; pass < 2 && n == 0; pass++) {
		sqlite3_stmt *st = NULL;
		rc = sqlite3_prepare_v2(db, call_op > 0 ? (pass ? calls_scan_sql : calls_sql) : sqls[pass], -1, &st, NULL);
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
	ret = fill_identity(db, c, calls, n);
	free(calls);
	return ret;
}

/* Severity (docs/rules.md). lost = slow time beyond p50, times the
 * explained share, as a share of the window. */
static enum cw_severity severity_of(const struct cw_chain *c, double window_ns)
{
	double lost, lost_share;

	if (c->kind == CW_KIND_OOM_KILL)
		return CW_SEV_HIGH;
	if (c->kind == CW_KIND_MEMCPY_BOUND || c->kind == CW_KIND_DATALOADER_STARVATION ||
	    c->kind == CW_KIND_GRAPH_CHURN || c->kind == CW_KIND_COMM_BOUND)
		return c->explained_share >= 0.5 ? CW_SEV_HIGH : CW_SEV_MEDIUM;
	/* A job that stopped is the worst finding; an Xid is as severe as
	 * the catalogue says (evidence severity_rank: 3 critical, 2 error). */
	if (c->kind == CW_KIND_TRAINING_STALL)
		return CW_SEV_HIGH;
	if (c->kind == CW_KIND_XID_FAULT) {
		for (int i = 0; i < c->nevidence; i++)
			if (!strcmp(c->evidence[i].key, "severity_rank"))
				return c->evidence[i].value >= 3 ? CW_SEV_HIGH
				       : c->evidence[i].value >= 2 ? CW_SEV_MEDIUM
								   : CW_SEV_LOW;
		return CW_SEV_MEDIUM;
	}
	/* A hang stops the job; a straggler slows every rank. Waiting ranks
	 * are symptoms: LOW, below the straggler they point at. */
	if (c->kind == CW_KIND_NCCL_HANG || c->kind == CW_KIND_NCCL_STRAGGLER)
		return CW_SEV_HIGH;
	if (c->kind == CW_KIND_NCCL_WAIT)
		return CW_SEV_LOW;
	lost = (double)c->slow_time_ns - (double)c->slow_count * (double)c->p50_ns;
	if (lost < 0)
		lost = 0;
	lost_share = window_ns > 0 ? lost * c->explained_share / window_ns : 0;
	if (c->tail_ratio >= 5 && c->explained_share >= 0.5 && lost_share >= 0.01)
		return CW_SEV_HIGH;
	if (c->explained_share >= 0.35 && (c->tail_ratio >= 3 || lost_share >= 0.01))
		return CW_SEV_MEDIUM;
	return CW_SEV_LOW;
}

static void base_chain(struct cw_chain *c, const struct cw_rule_ctx *ctx)
{
	const struct cw_opstat *st = ctx->st;
	char d[32], p50[32];
	const struct cw_slowcall *slowest = &ctx->calls[0];

	memset(c, 0, sizeof(*c));
	snprintf(c->op, sizeof(c->op), "%s", st->op);
	snprintf(c->source, sizeof(c->source), "%s", st->source);
	snprintf(c->node, sizeof(c->node), "%s", st->node);
	c->count = st->count;
	c->slow_count = ctx->ncalls;
	c->p50_ns = st->p50_ns;
	c->p95_ns = st->p95_ns;
	c->p99_ns = st->p99_ns;
	c->max_ns = st->max_ns;
	c->tail_ratio = st->p50_ns ? (double)st->p99_ns / (double)st->p50_ns : 0;
	c->slow_time_ns = ctx->slow_time_ns;
	c->rank = -1;
	c->culprit.cpu = -1;
	for (size_t i = 1; i < ctx->ncalls; i++)
		if (ctx->calls[i].dur_ns > slowest->dur_ns)
			slowest = &ctx->calls[i];
	cw_format_duration(slowest->dur_ns, d, sizeof(d));
	cw_format_duration(st->p50_ns, p50, sizeof(p50));
	cw_chain_add_timeline(c, cw_layer_of_source(st->source), slowest->wall_ns, "slowest %s: %s (p50 %s)",
			      st->op, d, p50);
}

static void add_python_timeline(struct cw_chain *c, uint64_t t)
{
	if (c->has_python)
		cw_chain_add_timeline(c, CW_LAYER_PYTHON, t, "issued from %s() at %s:%d", c->py_function, c->py_file,
				      c->py_line);
}

static int timeline_cmp(const void *a, const void *b)
{
	const struct cw_timeline_entry *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return (int)x->layer - (int)y->layer;
}

/* Runs the per-op rules on one probed op (one pid or all) and appends the
 * chain of the dominant cause, or a warning when none explains enough. */
static int explain_op(struct cw_rule_ctx *ctx, struct chains *cs, struct cw_explain_result *r)
{
	struct cw_chain base, cand, best, best_gpu;
	int have = 0, have_gpu = 0, ret;

	base_chain(&base, ctx);
	if ((ret = fill_identity(ctx->db, &base, ctx->calls, ctx->ncalls)) < 0)
		return ret;
	/* An op examined only for its max (no p99 tail) has too few slow calls
	 * to matter unless they are structured: a cold start or a periodic
	 * allocator spike (1 call in a few hundred stays below p99). */
	int tail = (double)ctx->st->p99_ns >= CW_TAIL_RATIO * (double)ctx->st->p50_ns;
	for (size_t i = 0; i < sizeof(op_rules) / sizeof(op_rules[0]); i++) {
		if (!tail && op_rules[i] != cw_rule_cold_start && op_rules[i] != cw_rule_periodic_allocator)
			continue;
		cand = base;
		ret = op_rules[i](ctx, &cand);
		if (ret < 0)
			return ret;
		if (ret > 0 && cand.explained_share >= CW_MIN_EXPLAINED && is_gpu_rule(op_rules[i]) &&
		    (!have_gpu || cand.explained_share > best_gpu.explained_share)) {
			best_gpu = cand;
			have_gpu = 1;
		}
		if (ret > 0 && cand.explained_share >= CW_MIN_EXPLAINED &&
		    (!have || cand.explained_share > best.explained_share)) {
			best = cand;
			have = 1;
		}
	}
	/* The device's measured state (clock-event reasons, memory) is the
	 * more specific cause: it wins within CW_GPU_RULE_MARGIN of a pattern
	 * rule's share (a periodic allocator, preemption noise). */
	if (have_gpu && best_gpu.explained_share >= 0.5 &&
	    best_gpu.explained_share >= best.explained_share - CW_GPU_RULE_MARGIN)
		best = best_gpu;
	if (!have && !tail)
		return 0;
	if (!have) {
		cand = base;
		ret = cw_rule_throughput_drop(ctx, &cand);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			best = cand;
			have = 1;
		}
	}
	if (!have) {
		return warn(r, "%s on %s has p99 %.1fx p50 over %zu slow calls but no measured cause explains"
			       " %.0f %% of their time%s",
			    ctx->st->op, ctx->st->node, base.tail_ratio, ctx->ncalls, CW_MIN_EXPLAINED * 100,
			    ctx->offcpu_seen ? "" : " (no off-CPU intervals recorded for its threads)");
	}
	if (best.explained_share > 1)
		best.explained_share = 1;
	best.explained_ns = (uint64_t)((double)best.slow_time_ns * best.explained_share);
	/* Who the thread and the culprit are on a shared host; a quota of the
	 * thread's own or a neighbour tenant refines a preemption chain. */
	cw_chain_fill_tenants(ctx->db, &best);
	if (!cw_rule_cfs_throttling(ctx, &best))
		cw_rule_noisy_neighbour(ctx, &best);
	add_python_timeline(&best, ctx->calls[0].wall_ns);
	struct cw_chain *slot = chains_push(cs);
	if (!slot)
		return -ENOMEM;
	*slot = best;
	return 0;
}

static int has_tail(const struct cw_opstat *st)
{
	if (st->count < CW_TAIL_MIN_COUNT || !st->p50_ns)
		return 0;
	/* A cold start hides below p99 when fewer than 1 % of calls are
	 * cold; a max 20x p50 still marks the op for probing. */
	return (double)st->p99_ns >= CW_TAIL_RATIO * (double)st->p50_ns ||
	       (double)st->max_ns >= 20.0 * (double)st->p50_ns;
}

static int is_gpu_source(const char *s)
{
	return !strcmp(s, "cuda") || !strcmp(s, "driver") || !strcmp(s, "graph") || !strcmp(s, "nccl");
}

static int distinct_pids(const struct cw_rule_ctx *ctx, int64_t **out)
{
	int64_t *v = malloc((ctx->ncalls ? ctx->ncalls : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->ncalls; i++) {
		size_t j;
		for (j = 0; j < n && v[j] != ctx->calls[i].pid; j++)
			;
		if (j == n)
			v[n++] = ctx->calls[i].pid;
	}
	*out = v;
	return (int)n;
}

/* A call is slow from CW_SLOW_FACTOR x p50, and never inside p50's own
 * histogram bucket. */
static uint64_t slow_threshold(const struct cw_opstat *st)
{
	uint64_t next_bucket = cw_hist_bucket_low(cw_hist_bucket(st->p50_ns) + 1);
	uint64_t t = (uint64_t)(CW_SLOW_FACTOR * (double)st->p50_ns);

	return t < next_bucket ? next_bucket : t;
}

/* Probes and explains op for one process, judged against its own
 * distribution (percentiles, tail and slow threshold from its calls, not
 * the node's, where other processes' calls may dominate). */
static int analyse_pid(struct cw_rule_ctx *base, int64_t pid, struct chains *cs, struct cw_explain_result *r)
{
	struct cw_rule_ctx pc = {
		.db = base->db, .opts = base->opts, .sys = base->sys,
		.window_from_ns = base->window_from_ns, .window_to_ns = base->window_to_ns,
	};
	struct cw_opstat pst;
	int ret = cw_opstat_for_pid(base->db, base->st, pid, base->window_from_ns, base->window_to_ns, &pst);

	if (ret < 0)
		return ret;
	if (has_tail(&pst)) {
		pc.st = &pst;
		pc.threshold_ns = slow_threshold(&pst);
		ret = cw_probe_op(&pc, pid);
		if (ret > 0)
			ret = explain_op(&pc, cs, r);
		cw_probe_free(&pc);
	}
	free(pst.secs);
	return ret < 0 ? ret : 0;
}

static int analyse_op(sqlite3 *db, const struct cw_explain_opts *o, struct cw_sysctx *sys,
		      const struct cw_opstat *st, uint64_t from, uint64_t to, struct chains *cs,
		      struct cw_explain_result *r)
{
	struct cw_rule_ctx ctx = {
		.db = db, .opts = o, .st = st, .sys = sys, .window_from_ns = from, .window_to_ns = to,
	};
	int64_t *pids = NULL;
	int ret, np;

	if (o->pid)
		return analyse_pid(&ctx, o->pid, cs, r);
	/* A tenant filter: its processes, each against its own calls. */
	if (o->npids < 0)
		return 0;
	for (int i = 0; i < o->npids; i++)
		if ((ret = analyse_pid(&ctx, o->pids[i], cs, r)) < 0)
			return ret;
	if (o->npids > 0)
		return 0;
	ctx.threshold_ns = slow_threshold(st);
	ret = cw_probe_op(&ctx, 0);
	if (ret <= 0 || !(o->per_process || o->per_tenant)) {
		if (ret > 0)
			ret = explain_op(&ctx, cs, r);
		cw_probe_free(&ctx);
		return ret;
	}
	/* --per-process: the processes with node-wide slow calls, each then
	 * re-probed against its own distribution. */
	np = distinct_pids(&ctx, &pids);
	cw_probe_free(&ctx);
	if (np < 0)
		return np;
	ret = 0;
	for (int i = 0; i < np && ret >= 0; i++)
		ret = analyse_pid(&ctx, pids[i], cs, r);
	free(pids);
	return ret < 0 ? ret : 0;
}

static int chain_cmp(const void *a, const void *b)
{
	const struct cw_chain *x = a, *y = b;
	if (x->severity != y->severity)
		return (int)x->severity - (int)y->severity;
	if (x->explained_ns != y->explained_ns)
		return x->explained_ns > y->explained_ns ? -1 : 1;
	if (strcmp(x->node, y->node))
		return strcmp(x->node, y->node);
	if (strcmp(x->op, y->op))
		return strcmp(x->op, y->op);
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* --per-tenant: chains grouped by tenant, then in severity order. */
static int tenant_chain_cmp(const void *a, const void *b)
{
	const struct cw_chain *x = a, *y = b;
	int k = strcmp(x->container.key, y->container.key);

	return k ? k : chain_cmp(a, b);
}

static int window_bounds(sqlite3 *db, const char *node, int64_t *lo, int64_t *hi)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db,
				    "SELECT min(second), max(second) FROM aggregates WHERE ?1 IS NULL OR node = ?1",
				    -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	if (node)
		sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		*lo = sqlite3_column_int64(st, 0);
		*hi = sqlite3_column_int64(st, 1);
		rc = SQLITE_DONE;
	} else if (rc == SQLITE_ROW) {
		*lo = *hi = -1;
		rc = SQLITE_DONE;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

int cw_explain_newest_wall(sqlite3 *db, uint64_t *out)
{
	int64_t lo, hi;
	int ret = window_bounds(db, NULL, &lo, &hi);

	if (ret < 0)
		return ret;
	*out = hi < 0 ? 0 : (uint64_t)(hi + 1) * NSEC_PER_SEC;
	return 0;
}

static int is_peer(const struct cw_nccl_peers *p, const char *node, int64_t pid)
{
	for (int i = 0; i < p->n; i++)
		if (p->v[i].pid == pid && !strcmp(p->v[i].node, node))
			return 1;
	return 0;
}

/* Whether warning w is "OP on NODE has ..." for a synchronization of a
 * node whose traced ranks all wait for the straggler. */
static int peer_sync_warning(const char *w, const struct cw_nccl_peers *p)
{
	char op[64], node[64];

	if (sscanf(w, "%63s on %63s has", op, node) != 2 || !cw_op_is_sync(op))
		return 0;
	for (int i = 0; i < p->n; i++)
		if (!strcmp(p->v[i].node, node))
			return 1;
	return 0;
}

/* The arrival rules (rules/nccl_chains.c). With a straggler, the chains
 * of the ranks that wait for it point at it (caused_by), their syncs'
 * "no measured cause" warnings are dropped (the nccl_wait chains explain
 * them), and the older arrival-order straggler chain of the same rank is
 * replaced by nccl_straggler, which carries the cause on that rank. */
static int nccl_chains(sqlite3 *db, const struct cw_explain_opts *o, struct cw_explain_result *out,
		       struct chains *cs)
{
	enum { MAX_OUT = 2 + CW_NCCL_MAX_PEERS };
	struct cw_chain *v = malloc(MAX_OUT * sizeof(*v));
	struct cw_nccl_peers *p = malloc(sizeof(*p));
	int n, k = 0;

	if (!v || !p) {
		free(v);
		free(p);
		return -ENOMEM;
	}
	n = cw_rule_nccl(db, o, out->from_wall_ns, out->to_wall_ns, v, MAX_OUT, p);
	if (n > 0 && p->pid) {
		for (int i = 0; i < cs->n; i++) {
			struct cw_chain *c = &cs->v[i];

			if (c->kind == CW_KIND_STRAGGLER && c->pid == p->pid && !strcmp(c->node, p->node))
				continue;
			if (is_peer(p, c->node, c->pid) && (cw_op_is_sync(c->op) || !strcmp(c->source, "nccl"))) {
				snprintf(c->caused_by.kind, sizeof(c->caused_by.kind), "%s", p->kind);
				snprintf(c->caused_by.node, sizeof(c->caused_by.node), "%s", p->node);
				c->caused_by.pid = p->pid;
				c->caused_by.rank = p->rank;
			}
			cs->v[k++] = *c;
		}
		cs->n = k;
		k = 0;
		for (int i = 0; i < out->nwarnings; i++) {
			if (peer_sync_warning(out->warnings[i], p))
				free(out->warnings[i]);
			else
				out->warnings[k++] = out->warnings[i];
		}
		out->nwarnings = k;
	}
	for (int i = 0; i < n; i++) {
		struct cw_chain *slot = chains_push(cs);

		if (!slot) {
			n = -ENOMEM;
			break;
		}
		*slot = v[i];
	}
	free(v);
	free(p);
	return n < 0 ? n : 0;
}

/* The window as cw_explain_run resolves it: open ends at the first and
 * last second with data (of node_filter's node). lo/hi: -1 when none. */
static int resolve_window(sqlite3 *db, const struct cw_explain_opts *o, int64_t *lo, int64_t *hi, uint64_t *from,
			  uint64_t *to)
{
	int ret = window_bounds(db, o->node_filter, lo, hi);

	if (ret < 0)
		return ret;
	*from = o->from_wall_ns ? o->from_wall_ns : (*lo < 0 ? 0 : (uint64_t)*lo * NSEC_PER_SEC);
	*to = o->to_wall_ns ? o->to_wall_ns : (*hi < 0 ? 0 : (uint64_t)(*hi + 1) * NSEC_PER_SEC - 1);
	return 0;
}

int cw_explain_window(sqlite3 *db, const struct cw_explain_opts *o, uint64_t *from_wall_ns, uint64_t *to_wall_ns)
{
	int64_t lo, hi;

	return resolve_window(db, o, &lo, &hi, from_wall_ns, to_wall_ns);
}

int cw_explain_run(sqlite3 *db, const struct cw_explain_opts *o, struct cw_explain_result *out)
{
	struct cw_opstat *ops = NULL;
	struct chains cs = {0};
	int64_t lo, hi, from_sec, to_sec;
	int nops = 0, ret;

	memset(out, 0, sizeof(*out));
	if ((ret = resolve_window(db, o, &lo, &hi, &out->from_wall_ns, &out->to_wall_ns)) < 0)
		return ret;
	/* A trace that lost records reads as complete unless it says so. */
	ret = cw_store_losses(db, o->node_filter, out->from_wall_ns, out->to_wall_ns, &out->losses);
	if (ret < 0)
		return ret;
	out->nlosses = ret;
	for (int i = 0; i < out->nlosses; i++) {
		char line[768];

		cw_session_loss_text(&out->losses[i], line, sizeof(line));
		if ((ret = warn(out, "%s", line)) < 0)
			goto fail;
	}
	if (lo < 0 || out->to_wall_ns < out->from_wall_ns)
		return 0;
	from_sec = (int64_t)(out->from_wall_ns / NSEC_PER_SEC);
	to_sec = (int64_t)(out->to_wall_ns / NSEC_PER_SEC);
	nops = cw_opstats_load(db, o->node_filter, from_sec, to_sec, &ops);
	if (nops < 0)
		return nops;
	/* ops arrive grouped by node; each node gets its own system context. */
	for (int i = 0; i < nops;) {
		struct cw_sysctx sys;
		int j = i;
		while (j < nops && !strcmp(ops[j].node, ops[i].node))
			j++;
		if ((ret = cw_sysctx_load(db, ops[i].node, out->from_wall_ns, out->to_wall_ns, &sys)) < 0)
			goto fail;
		struct cw_gpuctx gpu;
		if ((ret = cw_gpuctx_load(db, ops[i].node, out->from_wall_ns, out->to_wall_ns, &gpu)) < 0) {
			cw_sysctx_free(&sys);
			goto fail;
		}
		sys.gpu = &gpu;
		for (int k = i; k < j && ret >= 0; k++) {
			if (!is_gpu_source(ops[k].source))
				continue;
			out->ops_analysed++;
			out->calls_analysed += ops[k].count;
			if (has_tail(&ops[k]))
				ret = analyse_op(db, o, &sys, &ops[k], out->from_wall_ns, out->to_wall_ns, &cs, out);
		}
		if (ret >= 0) {
			struct cw_chain tmp;
			ret = cw_rule_memcpy_bound(db, o, &sys, ops + i, (size_t)(j - i), out->from_wall_ns,
						   out->to_wall_ns, &tmp);
			ret = keep_chain(&cs, ret, &tmp);
		}
		if (ret >= 0) {
			struct cw_chain tmp;
			ret = cw_rule_dataloader_starvation(db, o, &sys, ops + i, (size_t)(j - i),
							    out->from_wall_ns, out->to_wall_ns, &tmp);
			ret = keep_chain(&cs, ret, &tmp);
		}
		if (ret >= 0) {
			struct cw_chain tmp;
			ret = cw_rule_graph_churn(db, o, &sys, ops + i, (size_t)(j - i), out->from_wall_ns,
						  out->to_wall_ns, &tmp);
			ret = keep_chain(&cs, ret, &tmp);
		}
		if (ret >= 0) {
			struct cw_chain kills[4];
			ret = cw_rule_oom_kill(db, o, &sys, out->from_wall_ns, out->to_wall_ns, kills, 4);
			for (int k = 0; k < ret; k++) {
				struct cw_chain *slot = chains_push(&cs);
				if (!slot) {
					ret = -ENOMEM;
					break;
				}
				*slot = kills[k];
			}
		}
		if (ret >= 0) {
			struct cw_chain tmp;
			ret = cw_rule_xid_fault(db, o, &sys, out->from_wall_ns, out->to_wall_ns, &tmp);
			ret = keep_chain(&cs, ret, &tmp);
		}
		if (ret >= 0) {
			struct cw_chain tmp;
			ret = cw_rule_training_stall(db, o, &sys, out->from_wall_ns, out->to_wall_ns, &tmp);
			ret = keep_chain(&cs, ret, &tmp);
		}
		if (ret >= 0 && sys.io_requests >= 2000000)
			ret = warn(out, "node \"%s\": block I/O capped at 2000000 requests for overlap", sys.node);
		cw_sysctx_free(&sys);
		cw_gpuctx_free(&gpu);
		if (ret < 0)
			goto fail;
		i = j;
	}
	{
		struct cw_chain tmp;
		ret = cw_rule_straggler(db, o, out->from_wall_ns, out->to_wall_ns, cs.v, cs.n, &tmp);
		if (ret > 0) {
			struct cw_chain *slot = chains_push(&cs);
			if (!slot)
				ret = -ENOMEM;
			else
				*slot = tmp;
		}
		if (ret < 0)
			goto fail;
	}
	if ((ret = nccl_chains(db, o, out, &cs)) < 0)
		goto fail;
	/* Node-wide and cross-rank chains: kept under a tenant filter only
	 * when they are about one of its processes. */
	for (int i = 0; o->npids && i < cs.n;) {
		int keep = 0;
		for (int k = 0; k < o->npids && !keep; k++)
			keep = cs.v[i].pid == o->pids[k];
		if (keep)
			i++;
		else
			cs.v[i] = cs.v[--cs.n];
	}
	for (int i = 0; i < cs.n; i++) {
		struct cw_chain *c = &cs.v[i];
		if (!c->container.known)
			cw_chain_fill_tenants(db, c);
		c->severity = severity_of(c, (double)(out->to_wall_ns - out->from_wall_ns));
		qsort(c->timeline, (size_t)c->ntimeline, sizeof(c->timeline[0]), timeline_cmp);
	}
	if (cs.n > 1)
		qsort(cs.v, (size_t)cs.n, sizeof(*cs.v), o->per_tenant ? tenant_chain_cmp : chain_cmp);
	out->chains = cs.v;
	out->count = cs.n;
	cw_opstats_free(ops, (size_t)nops);
	return 0;
fail:
	free(cs.v);
	cw_opstats_free(ops, (size_t)nops);
	cw_explain_result_free(out);
	return ret;
}

void cw_explain_result_free(struct cw_explain_result *r)
{
	if (!r)
		return;
	free(r->chains);
	for (int i = 0; i < r->nwarnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	free(r->losses);
	memset(r, 0, sizeof(*r));
}
