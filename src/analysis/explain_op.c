/* One op's chain: its slow calls probed (probe.c), every per-op rule of
 * the table (rules/rules.h) measuring how much of the slow time its cause
 * explains, and the dominant cause kept, refined by the tenant rules. With
 * --pid, a tenant filter or --per-process each process is judged against
 * its own distribution. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/baseline.h"
#include "analysis/engine.h"
#include "analysis/explain.h"
#include "analysis/incident.h"
#include "analysis/rules/rules.h"
#include "util/timeutil.h"

/* The device's measured state (clock-event reasons, memory) wins within
 * this margin of a pattern rule's share. */
#define CW_GPU_RULE_MARGIN 0.10

static void base_chain(struct cw_chain *c, const struct cw_rule_ctx *ctx)
{
	const struct cw_opstat *st = ctx->st;
	char d[32], p50[32];
	const struct cw_slowcall *slowest = &ctx->calls[0];

	cw_chain_from_opstat(c, st);
	c->slow_count = ctx->ncalls;
	c->slow_time_ns = ctx->slow_time_ns;
	for (size_t i = 1; i < ctx->ncalls; i++)
		if (ctx->calls[i].dur_ns > slowest->dur_ns)
			slowest = &ctx->calls[i];
	cw_format_duration(slowest->dur_ns, d, sizeof(d));
	cw_format_duration(st->p50_ns, p50, sizeof(p50));
	cw_chain_add_timeline(c, cw_layer_of_source(st->source), slowest->wall_ns, "slowest %s: %s (%s %s)",
			      st->op, d, st->expected_outside ? "expected ~" : "p50", p50);
}

static void add_python_timeline(struct cw_chain *c, uint64_t t)
{
	if (c->has_python)
		cw_chain_add_timeline(c, CW_LAYER_PYTHON, t, "issued from %s() at %s:%d", c->py_function, c->py_file,
				      c->py_line);
}

/* Runs the per-op rules on one probed op (one pid or all) and appends the
 * chain of the dominant cause, or a warning when none explains enough. */
static int explain_op(struct cw_rule_ctx *ctx, struct cw_chain_list *cs, struct cw_explain_result *r)
{
	struct cw_chain base, cand, best, best_gpu;
	int have = 0, have_gpu = 0, ret;

	base_chain(&base, ctx);
	if ((ret = cw_chain_identity_calls(ctx->db, &base, ctx->calls, ctx->ncalls)) < 0)
		return ret;
	ctx->max_out = 1;
	/* An op examined only for its max (no p99 tail) has too few slow calls
	 * to matter unless they are structured: a cold start or a periodic
	 * allocator spike (1 call in a few hundred stays below p99). An
	 * incident is slow by its seconds' means, whatever its p99: three
	 * 950 ms calls among 320 of 1 ms are 1 % of its calls and its time
	 * three times over. */
	int tail = ctx->incident || (double)ctx->st->p99_ns >= CW_TAIL_RATIO * (double)ctx->st->p50_ns;
	for (size_t i = 0; i < cw_nrules; i++) {
		const struct cw_rule *rule = &cw_rules[i];

		if (!(rule->flags & CW_RULE_OP) || (!tail && !(rule->flags & CW_RULE_NO_TAIL)))
			continue;
		cand = base;
		ret = rule->fn(ctx, &cand);
		if (ret < 0)
			return ret;
		if (ret > 0 && cand.explained_share >= CW_MIN_EXPLAINED && (rule->flags & CW_RULE_GPU) &&
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
	for (size_t i = 0; i < cw_nrules && !have; i++) {
		if (!(cw_rules[i].flags & CW_RULE_FALLBACK))
			continue;
		cand = base;
		ret = cw_rules[i].fn(ctx, &cand);
		if (ret < 0)
			return ret;
		if (ret > 0) {
			best = cand;
			have = 1;
		}
	}
	if (!have) {
		return cw_explain_warn(r,
				       "%s on %s has p99 %.1fx p50 over %zu slow calls but no measured cause explains"
				       " %.0f %% of their time%s",
				       ctx->st->op, ctx->st->node, base.tail_ratio, ctx->ncalls,
				       CW_MIN_EXPLAINED * 100,
				       ctx->offcpu_seen ? "" : " (no off-CPU intervals recorded for its threads)");
	}
	if (best.explained_share > 1)
		best.explained_share = 1;
	best.explained_ns = (uint64_t)((double)best.slow_time_ns * best.explained_share);
	/* Who the thread and the culprit are on a shared host; a quota of the
	 * thread's own or a neighbour tenant refines a preemption chain. */
	cw_chain_fill_tenants(ctx->db, &best);
	for (size_t i = 0; i < cw_nrules; i++)
		if ((cw_rules[i].flags & CW_RULE_REFINE) && cw_rules[i].fn(ctx, &best))
			break;
	add_python_timeline(&best, ctx->calls[0].wall_ns);
	struct cw_chain *slot = cw_chain_list_push(cs);
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
static int analyse_pid(struct cw_rule_ctx *base, int64_t pid, struct cw_chain_list *cs,
		       struct cw_explain_result *r)
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

static void annotate_incident(struct cw_chain *c, const struct cw_incident *inc, const struct cw_opstat *window)
{
	char mean[32], normal[32], p50[32];

	c->incident_from_ns = (uint64_t)inc->from_sec * NSEC_PER_SEC;
	c->incident_to_ns = (uint64_t)(inc->to_sec + 1) * NSEC_PER_SEC - 1;
	cw_format_duration(inc->sum_ns / inc->count, mean, sizeof(mean));
	cw_format_duration(inc->normal_mean_ns, normal, sizeof(normal));
	cw_format_duration(window->p50_ns, p50, sizeof(p50));
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), c->incident_from_ns,
			      "incident: %lld s of %s averaging %s per call against ~%s normally (p50 %s over the window)",
			      (long long)(inc->to_sec - inc->from_sec + 1), c->op, mean, normal, p50);
	cw_chain_add_evidence(c, "incident_from_ns", (double)c->incident_from_ns, 1);
	cw_chain_add_evidence(c, "incident_to_ns", (double)c->incident_to_ns, 1);
	cw_chain_add_evidence(c, "normal_mean_ns", (double)inc->normal_mean_ns, 1);
}

/* The share of a window chain's slow time an incident of the same cause
 * must hold for the window's chain to be that incident. */
#define CW_INCIDENT_IS_WINDOW 0.5

/* One incident of the op, probed and explained on its own seconds, each
 * call judged against the op's normal p50 (the window's, which the
 * incident barely moves), not against the slow seconds' own. An incident
 * that the window's chain of the op (window_chain, NULL none) already is
 * (the same cause, most of its slow time) adds no chain. */
static int explain_one_incident(struct cw_rule_ctx *ctx, struct cw_chain_list *cs, struct cw_explain_result *r,
				const struct cw_chain *window_chain, const struct cw_incident *inc)
{
	struct cw_opstat *ops = NULL, ist;
	struct cw_rule_ctx sub;
	int n, k, before = cs->n, warned = r->nwarnings, ret;

	if ((n = cw_opstats_load(ctx->db, ctx->st->node, inc->from_sec, inc->to_sec, &ops)) < 0)
		return n;
	for (k = 0; k < n && (strcmp(ops[k].op, ctx->st->op) || strcmp(ops[k].source, ctx->st->source)); k++)
		;
	if (k == n) {
		cw_opstats_free(ops, (size_t)n);
		return 0;
	}
	ist = ops[k];
	ist.p50_ns = ctx->st->p50_ns;
	ist.expected_outside = ctx->st->expected_outside;
	sub = *ctx;
	sub.st = &ist;
	sub.threshold_ns = slow_threshold(ctx->st);
	sub.window_from_ns = (uint64_t)inc->from_sec * NSEC_PER_SEC;
	sub.window_to_ns = (uint64_t)(inc->to_sec + 1) * NSEC_PER_SEC - 1;
	sub.incident = 1;
	ret = cw_probe_op(&sub, 0);
	if (ret > 0)
		ret = explain_op(&sub, cs, r);
	/* An incident no rule explains is worth a warning only when the
	 * window's own analysis of the op said nothing. */
	while (window_chain && r->nwarnings > warned)
		free(r->warnings[--r->nwarnings]);
	if (ret >= 0 && cs->n > before) {
		struct cw_chain *c = &cs->v[cs->n - 1];

		/* The window's own chain is this incident: the same cause,
		 * and the incident's slow time is most of the chain's (a short
		 * window around it). A window chain that names the same
		 * culprit over a longer stretch (its top preemptor over an
		 * hour) keeps the incident's own chain, at its seconds. */
		if (window_chain && window_chain->kind == c->kind && window_chain->culprit.pid == c->culprit.pid &&
		    (double)c->slow_time_ns >= CW_INCIDENT_IS_WINDOW * (double)window_chain->slow_time_ns)
			cs->n--;
		else
			annotate_incident(c, inc, ctx->st);
	}
	cw_probe_free(&sub);
	cw_opstats_free(ops, (size_t)n);
	return ret < 0 ? ret : 0;
}

/* An op may have had incidents in time, tail over the window or not:
 * runs of seconds whose calls were several times slower than its normal
 * (in an always-on store the window's tail is mostly everyday noise).
 * Each run is an incident of its own, explained on its own seconds, so
 * an hour with three hogs gives three chains, each naming its own hog,
 * beside the window's chain (docs/rules.md "Incidents in time"). */
static int explain_incident(struct cw_rule_ctx *ctx, struct cw_chain_list *cs, struct cw_explain_result *r,
			    const struct cw_chain *window_chain)
{
	struct cw_incident inc[CW_INCIDENT_MAX];
	int total, ret = 0, n = cw_incident_find_all(ctx->st, inc, CW_INCIDENT_MAX, &total);

	for (int i = 0; i < n && ret >= 0; i++)
		ret = explain_one_incident(ctx, cs, r, window_chain, &inc[i]);
	if (ret >= 0 && total > n)
		ret = cw_explain_warn(r, "%s on %s had %d incidents in the window; the %d costliest are explained "
				      "(narrow --from/--to for the others)",
				      ctx->st->op, ctx->st->node, total, n);
	return ret < 0 ? ret : 0;
}

static int explain_judged(sqlite3 *db, const struct cw_explain_opts *o, struct cw_sysctx *sys,
			  const struct cw_opstat *st, uint64_t from, uint64_t to, struct cw_chain_list *cs,
			  struct cw_explain_result *r)
{
	struct cw_rule_ctx ctx = {
		.db = db, .opts = o, .st = st, .sys = sys, .window_from_ns = from, .window_to_ns = to,
	};
	int64_t *pids = NULL;
	int ret, np;

	if (!has_tail(st)) {
		if (o->pid || o->npids || o->per_process || o->per_tenant || st->count < CW_TAIL_MIN_COUNT)
			return 0;
		return explain_incident(&ctx, cs, r, NULL);
	}
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
		int before = cs->n;

		if (ret > 0)
			ret = explain_op(&ctx, cs, r);
		cw_probe_free(&ctx);
		if (ret >= 0 && !(o->per_process || o->per_tenant)) {
			/* The copy: the list may grow (and move) under the call. */
			struct cw_chain own;
			int have = cs->n > before;

			if (have)
				own = cs->v[before];
			ret = explain_incident(&ctx, cs, r, have ? &own : NULL);
		}
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

/* The op's expected latency comes from outside the window when there is
 * data there (baseline.h): a window narrowed around an incident is slow
 * throughout, and judged against its own p50 it would have no tail. When
 * the window's p50 is CW_BASELINE_SLOWER x the baseline's, the op is
 * probed against the baseline instead. Chains keep the window's own
 * percentiles and carry the expectation as expected_ns. Per-process
 * analyses read events, not aggregates, and keep the window's. */
int cw_explain_op(sqlite3 *db, const struct cw_explain_opts *o, struct cw_sysctx *sys,
		  const struct cw_opstat *st, uint64_t from, uint64_t to, struct cw_chain_list *cs, struct cw_explain_result *r)
{
	struct cw_baseline bl;
	struct cw_opstat judged;
	int before = cs->n, outside = 0, ret;

	if (!o->pid && !o->npids && !o->per_process && !o->per_tenant) {
		ret = cw_baseline_load(db, st, (int64_t)(from / NSEC_PER_SEC), (int64_t)(to / NSEC_PER_SEC), &bl);
		if (ret < 0)
			return ret;
		outside = ret;
	}
	if (outside && CW_BASELINE_SLOWER * (double)bl.p50_ns <= (double)st->p50_ns) {
		judged = *st;
		judged.p50_ns = bl.p50_ns;
		judged.expected_outside = 1;
		ret = explain_judged(db, o, sys, &judged, from, to, cs, r);
	} else {
		ret = explain_judged(db, o, sys, st, from, to, cs, r);
	}
	for (int i = before; ret >= 0 && i < cs->n; i++) {
		struct cw_chain *c = &cs->v[i];

		if (strcmp(c->op, st->op) || strcmp(c->node, st->node))
			continue;
		if (!o->pid && !o->npids && !o->per_process && !o->per_tenant) {
			c->p50_ns = st->p50_ns;
			c->tail_ratio = st->p50_ns ? (double)c->p99_ns / (double)st->p50_ns : 0;
		}
		c->expected_ns = outside ? bl.p50_ns : c->p50_ns;
		c->expected_outside = outside;
	}
	return ret;
}
