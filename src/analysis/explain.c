/* The causal engine: resolves the window, walks the per-second aggregates'
 * ops node by node (each op with a latency tail gets its chain in
 * explain_op.c), runs the node-wide and cross-rank rules of the table
 * (rules/rules.h), then grades and orders the chains. See docs/rules.md. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/explain.h"
#include "analysis/gpuctx.h"
#include "analysis/rules/rules.h"
#include "store/store.h"
#include "util/timeutil.h"

/* Severity (docs/rules.md). lost = slow time beyond p50, times the
 * explained share, as a share of the window. */
static enum cw_severity severity_of(const struct cw_chain *c, double window_ns)
{
	double lost, lost_share, expected, tail;

	if (c->kind == CW_KIND_OOM_KILL)
		return CW_SEV_HIGH;
	if (c->kind == CW_KIND_MEMCPY_BOUND || c->kind == CW_KIND_DATALOADER_STARVATION ||
	    c->kind == CW_KIND_GRAPH_CHURN || c->kind == CW_KIND_COMM_BOUND)
		return c->explained_share >= 0.5 ? CW_SEV_HIGH : CW_SEV_MEDIUM;
	/* A job that stopped is the worst finding; an Xid is as severe as
	 * the catalogue says, a failing call as its rule graded it (evidence
	 * severity_rank: 3 high, 2 medium). */
	if (c->kind == CW_KIND_TRAINING_STALL)
		return CW_SEV_HIGH;
	if (c->kind == CW_KIND_XID_FAULT || c->kind == CW_KIND_CUDA_ERROR || c->kind == CW_KIND_DEVICE_OOM ||
	    c->kind == CW_KIND_NCCL_ERROR) {
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
	/* Slow requests: HIGH when their cause is found for most of their
	 * time and they broke an objective or cost a second beyond normal. */
	if (c->kind == CW_KIND_INFERENCE_LATENCY) {
		int big = cw_chain_evidence_value(c, "slo_breaches", 0) > 0 ||
			  cw_chain_evidence_value(c, "excess_ns", 0) >= 1e9;

		return c->explained_share >= 0.5 && big ? CW_SEV_HIGH
		       : c->explained_share >= CW_MIN_EXPLAINED ? CW_SEV_MEDIUM
								  : CW_SEV_LOW;
	}
	/* An incident is judged in its own neighbourhood (its seconds and
	 * 10 s on each side), so a 3 s incident weighs the same in a minute,
	 * an hour or a day of data. */
	if (c->incident_to_ns > c->incident_from_ns && c->incident_to_ns - c->incident_from_ns + 20 * 1e9 < window_ns)
		window_ns = (double)(c->incident_to_ns - c->incident_from_ns) + 20 * 1e9;
	/* Judged against the op's expected latency (from outside the window
	 * when there is data there): a window narrowed around an incident
	 * keeps its severity. */
	expected = c->expected_ns ? (double)c->expected_ns : (double)c->p50_ns;
	tail = expected > 0 && c->p99_ns ? (double)c->p99_ns / expected : c->tail_ratio;
	if (tail < c->tail_ratio)
		tail = c->tail_ratio;
	lost = (double)c->slow_time_ns - (double)c->slow_count * expected;
	if (lost < 0)
		lost = 0;
	lost_share = window_ns > 0 ? lost * c->explained_share / window_ns : 0;
	if (tail >= 5 && c->explained_share >= 0.5 && lost_share >= 0.01)
		return CW_SEV_HIGH;
	if (c->explained_share >= 0.35 && (tail >= 3 || lost_share >= 0.01))
		return CW_SEV_MEDIUM;
	return CW_SEV_LOW;
}

static int timeline_cmp(const void *a, const void *b)
{
	const struct cw_timeline_entry *x = a, *y = b;
	if (x->t_ns != y->t_ns)
		return x->t_ns < y->t_ns ? -1 : 1;
	return (int)x->layer - (int)y->layer;
}

static int is_gpu_source(const char *s)
{
	return !strcmp(s, "cuda") || !strcmp(s, "driver") || !strcmp(s, "graph") || !strcmp(s, "nccl");
}

static int chain_cmp(const void *a, const void *b)
{
	const struct cw_chain *x = a, *y = b;
	if (x->severity != y->severity)
		return (int)x->severity - (int)y->severity;
	/* A symptom after the causes of its severity. */
	if (!x->caused_by.kind[0] != !y->caused_by.kind[0])
		return x->caused_by.kind[0] ? 1 : -1;
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

/* Widens [lo, hi] (seconds, -1: none) to the seconds of inference
 * requests (request_totals: never pruned, like the aggregates): a server
 * without GPU calls has no aggregates. A file from before schema v11 has
 * no such table: nothing to widen. */
static int request_bounds(sqlite3 *db, const char *node, int64_t *lo, int64_t *hi)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db,
				    "SELECT min(first_wall_ns), max(last_wall_ns) FROM request_totals"
				    " WHERE ?1 IS NULL OR node = ?1",
				    -1, &st, NULL);

	if (rc != SQLITE_OK)
		return 0;
	if (node)
		sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		int64_t a = cw_clamp_second(sqlite3_column_int64(st, 0) / (int64_t)NSEC_PER_SEC);
		int64_t b = cw_clamp_second(sqlite3_column_int64(st, 1) / (int64_t)NSEC_PER_SEC);

		if (a >= 0 && (*lo < 0 || a < *lo))
			*lo = a;
		if (b >= 0 && b > *hi)
			*hi = b;
	}
	if (rc == SQLITE_ROW)
		rc = SQLITE_DONE;
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
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
		/* Hostile seconds are clamped: the window in ns cannot overflow. */
		*lo = cw_clamp_second(sqlite3_column_int64(st, 0));
		*hi = cw_clamp_second(sqlite3_column_int64(st, 1));
		rc = SQLITE_DONE;
	} else if (rc == SQLITE_ROW) {
		*lo = *hi = -1;
		rc = SQLITE_DONE;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	return request_bounds(db, node, lo, hi);
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

/* With a straggler named by the arrival rules (rules/nccl_chains.c), the
 * chains of the ranks that wait for it point at it (caused_by), their
 * syncs' "no measured cause" warnings are dropped (the nccl_wait chains
 * explain them), and the older arrival-order straggler chain of the same
 * rank is dropped for nccl_straggler, which carries the cause on that rank. */
static void point_at_straggler(struct cw_chain_list *cs, struct cw_explain_result *out,
			       const struct cw_nccl_peers *p)
{
	int k = 0;

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

/* A chain another chain causes (a rank waiting on a hang or a straggler)
 * is a symptom: never more severe than its cause, and its own advice
 * (warm-up for the waits a hang made look like start-up cost, say) would
 * misread it, so it points at the cause's fixes instead. */
static void defer_to_causes(struct cw_chain_list *cs)
{
	for (int i = 0; i < cs->n; i++) {
		struct cw_chain *c = &cs->v[i];

		if (!c->caused_by.kind[0])
			continue;
		for (int k = 0; k < cs->n; k++) {
			const struct cw_chain *by = &cs->v[k];

			if (k == i || strcmp(cw_kind_name(by->kind), c->caused_by.kind) || by->pid != c->caused_by.pid ||
			    strcmp(by->node, c->caused_by.node))
				continue;
			if (c->severity < by->severity)
				c->severity = by->severity;
			break;
		}
		c->nfix = 0;
		if (c->caused_by.rank >= 0)
			cw_chain_add_advice(c, "a symptom of the %s of rank %d (pid %lld on %s): fix that chain first",
					 c->caused_by.kind, c->caused_by.rank, (long long)c->caused_by.pid, c->caused_by.node);
		else
			cw_chain_add_advice(c, "a symptom of the %s of pid %lld on %s: fix that chain first", c->caused_by.kind,
					 (long long)c->caused_by.pid, c->caused_by.node);
	}
}

static int is_error_kind(enum cw_kind k)
{
	return k == CW_KIND_CUDA_ERROR || k == CW_KIND_DEVICE_OOM || k == CW_KIND_NCCL_ERROR;
}

/* The latency of calls that mostly fail is the latency of the failure
 * path (a few microseconds, a slow first failure): a latency chain about
 * an op of the same process of which an error chain says at least half
 * the calls failed would read the failure as a slow op (cold start,
 * periodic allocator) and give advice for the wrong problem. It is
 * dropped. */
static int mostly_failing(const struct cw_chain *e, const struct cw_chain *c)
{
	if (!is_error_kind(e->kind) || e->pid != c->pid || strcmp(e->node, c->node))
		return 0;
	for (int o = 0; o < e->nfailed_ops; o++)
		if (!strcmp(e->failed_ops[o].op, c->op) && e->failed_ops[o].share >= 0.5)
			return 1;
	return 0;
}

static void drop_failure_latency(struct cw_chain_list *cs)
{
	for (int i = 0; i < cs->n;) {
		int drop = 0;

		for (int k = 0; k < cs->n && !drop && !is_error_kind(cs->v[i].kind); k++)
			drop = mostly_failing(&cs->v[k], &cs->v[i]);
		if (drop)
			cs->v[i] = cs->v[--cs->n];
		else
			i++;
	}
}

static int same_fixes(const struct cw_chain *a, const struct cw_chain *b)
{
	/* A symptom's one pointer at its cause stays as it is. */
	if (a->nfix != b->nfix || a->nfix < 2 || b->caused_by.kind[0])
		return 0;
	for (int i = 0; i < a->nfix; i++)
		if (a->fix_kind[i] != b->fix_kind[i] || strcmp(a->fix[i], b->fix[i]))
			return 0;
	return 1;
}

/* Two chains of one cause (a neighbour slowing both the launches and the
 * syncs) carry the same fixes: the later one points at the earlier one
 * instead of repeating every line. Runs on the sorted list. */
static void share_repeated_fixes(struct cw_chain_list *cs)
{
	for (int i = 1; i < cs->n; i++)
		for (int k = 0; k < i; k++)
			if (same_fixes(&cs->v[k], &cs->v[i])) {
				cs->v[i].nfix = 0;
				cw_chain_add_advice(&cs->v[i], "the same fixes as the %s chain of %s above",
						    cw_kind_name(cs->v[k].kind), cs->v[k].op);
				break;
			}
}

static int rules_max_out(void)
{
	int m = 1;

	for (size_t i = 0; i < cw_nrules; i++)
		if (cw_rules[i].max_out > m)
			m = cw_rules[i].max_out;
	return m;
}

/* Runs the table's rules of one phase (CW_RULE_NODE once per node,
 * CW_RULE_CROSS once after every node) and keeps the chains each fills,
 * in table order. buf holds rules_max_out() chains. */
static int run_rules(unsigned phase, struct cw_rule_ctx *ctx, struct cw_chain_list *cs,
		     struct cw_explain_result *out, struct cw_chain *buf)
{
	struct cw_nccl_peers peers;

	for (size_t i = 0; i < cw_nrules; i++) {
		const struct cw_rule *rule = &cw_rules[i];
		int n;

		if (!(rule->flags & phase))
			continue;
		memset(&peers, 0, sizeof(peers));
		ctx->max_out = rule->max_out ? rule->max_out : 1;
		ctx->chains = cs->v;
		ctx->nchains = cs->n;
		ctx->peers = &peers;
		if ((n = rule->fn(ctx, buf)) < 0)
			return n;
		if (peers.note[0] && cw_explain_warn(out, "%s", peers.note))
			return -ENOMEM;
		if (n > 0 && (rule->flags & CW_RULE_PEERS) && peers.pid)
			point_at_straggler(cs, out, &peers);
		for (int k = 0; k < n; k++) {
			struct cw_chain *slot = cw_chain_list_push(cs);

			if (!slot)
				return -ENOMEM;
			*slot = buf[k];
		}
	}
	return 0;
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
	struct cw_chain_list cs = {0};
	struct cw_chain *buf = NULL;
	struct cw_rule_ctx ctx = {.db = db, .opts = o};
	int64_t lo, hi, from_sec, to_sec;
	int nops = 0, ret;

	memset(out, 0, sizeof(*out));
	if ((ret = resolve_window(db, o, &lo, &hi, &out->from_wall_ns, &out->to_wall_ns)) < 0)
		return ret;
	ctx.window_from_ns = out->from_wall_ns;
	ctx.window_to_ns = out->to_wall_ns;
	ctx.requests_seen = &out->requests_analysed;
	/* A trace that lost records reads as complete unless it says so. */
	ret = cw_store_losses(db, o->node_filter, out->from_wall_ns, out->to_wall_ns, &out->losses);
	if (ret < 0)
		return ret;
	out->nlosses = ret;
	for (int i = 0; i < out->nlosses; i++) {
		char line[768];

		cw_session_loss_text(&out->losses[i], line, sizeof(line));
		if ((ret = cw_explain_warn(out, "%s", line)) < 0)
			goto fail;
	}
	if ((ret = cw_explain_history(db, o, out)) < 0)
		goto fail;
	if (lo < 0 || out->to_wall_ns < out->from_wall_ns)
		return 0;
	from_sec = (int64_t)(out->from_wall_ns / NSEC_PER_SEC);
	to_sec = (int64_t)(out->to_wall_ns / NSEC_PER_SEC);
	nops = cw_opstats_load(db, o->node_filter, from_sec, to_sec, &ops);
	if (nops < 0) {
		ret = nops;
		nops = 0;
		goto fail;
	}
	if (!(buf = malloc((size_t)rules_max_out() * sizeof(*buf)))) {
		ret = -ENOMEM;
		goto fail;
	}
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
			out->calls_analysed += ops[k].count + ops[k].errors;
			out->calls_failed += ops[k].errors;
			ret = cw_explain_op(db, o, &sys, &ops[k], out->from_wall_ns, out->to_wall_ns, &cs, out);
		}
		if (ret >= 0) {
			ctx.sys = &sys;
			ctx.ops = ops + i;
			ctx.nops = (size_t)(j - i);
			ret = run_rules(CW_RULE_NODE, &ctx, &cs, out, buf);
		}
		if (ret >= 0 && sys.io_requests >= 2000000)
			ret = cw_explain_warn(out, "node \"%s\": block I/O capped at 2000000 requests for overlap",
					      sys.node);
		cw_sysctx_free(&sys);
		cw_gpuctx_free(&gpu);
		if (ret < 0)
			goto fail;
		i = j;
	}
	ctx.sys = NULL;
	ctx.ops = NULL;
	ctx.nops = 0;
	if ((ret = run_rules(CW_RULE_CROSS, &ctx, &cs, out, buf)) < 0)
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
	drop_failure_latency(&cs);
	defer_to_causes(&cs);
	if (cs.n > 1)
		qsort(cs.v, (size_t)cs.n, sizeof(*cs.v), o->per_tenant ? tenant_chain_cmp : chain_cmp);
	share_repeated_fixes(&cs);
	out->chains = cs.v;
	out->count = cs.n;
	free(buf);
	cw_opstats_free(ops, (size_t)nops);
	return 0;
fail:
	free(buf);
	free(cs.v);
	cw_opstats_free(ops, (size_t)nops);
	cw_explain_result_free(out);
	return ret;
}
