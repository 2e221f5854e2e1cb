/* straggler: across ranks (processes calling NCCL collectives, on one node
 * or many), the rank that arrives last at the collectives makes every
 * other rank wait inside them: their collective calls are long, its own
 * short. Collectives are matched across ranks by completion time (every
 * rank leaves a blocking collective together, see src/fleet/merge_skew.c),
 * entry times are compared after removing the clock offsets merge stored
 * in meta 'merge.skew', and the rank that entered last, at least
 * CW_STRAG_MIN_LAG_NS after the next-latest, is counted. A rank that is
 * last in >= 60 % of >= 10 matched collectives, by >= 0.5 ms on average,
 * is the straggler; the most severe chain of its own node (why it is
 * late: preempted, blocked on I/O, ...) is attached as the reason.
 * explained_share = the share of collectives it entered last.
 * With blocking collectives (the host call lasts until the collective is
 * done) completions line up exactly; with asynchronous ones (enqueue and
 * return) completions are entries plus a few microseconds, and matching
 * the nearest within half a step still pairs the same collective while
 * the lag stays under half a step. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "analysis/rules/nccl_load.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/vec.h"
#include "util/search.h"

#define CW_STRAG_MIN_GROUPS 10
#define CW_STRAG_MIN_SHARE 0.60
#define CW_STRAG_MIN_MEAN_LAG_NS (NSEC_PER_MSEC / 2)
#define CW_STRAG_MIN_LAG_NS (NSEC_PER_USEC * 100)
#define CW_STRAG_MAX_ROWS 400000
#define CW_STRAG_MAX_RANKS 256

struct call {
	int64_t entry, end, dur;
};

struct rank {
	char node[64];
	int64_t pid;
	struct call *v;
	size_t n, cap;
	uint64_t last;       /* collectives it entered last */
	uint64_t lag_ns;     /* summed lag behind the next-latest rank */
	char op[48];
};

static int cmp_end(const void *a, const void *b)
{
	const struct call *x = a, *y = b;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int ends_before(const void *rows, size_t i, const void *key)
{
	return ((const struct call *)rows)[i].end < *(const int64_t *)key;
}

/* The call of r whose end is nearest to end, within tol; NULL if none. */
static const struct call *nearest(const struct rank *r, int64_t end, int64_t tol)
{
	size_t lo = cw_partition_point(r->v, r->n, &end, ends_before);
	const struct call *best = NULL;

	for (size_t i = lo > 0 ? lo - 1 : 0; i < r->n && i <= lo; i++) {
		int64_t d = llabs(r->v[i].end - end);
		if (d <= tol && (!best || d < llabs(best->end - end)))
			best = &r->v[i];
	}
	return best;
}

static int load_ranks(sqlite3 *db, const struct cw_explain_opts *o, uint64_t from, uint64_t to, struct rank **out,
		      int *nout)
{
	static const char sql[] =
		"SELECT node, pid, wall_ns, duration_ns, op FROM events WHERE source = 'nccl'"
		" AND op IN ('ncclAllReduce','ncclAllGather','ncclReduceScatter','ncclBroadcast','ncclReduce','ncclBcast')"
		" AND wall_ns BETWEEN ?1 AND ?2 AND ret IS NOT NULL AND (?3 IS NULL OR node = ?3)"
		" AND (?4 = 0 OR pid = ?4) ORDER BY node, pid, wall_ns LIMIT " "400000";
	char *skew = cw_meta_get(db, "merge.skew");
	json_t *sk = skew ? json_loads(skew, 0, NULL) : NULL, *nodes = json_object_get(sk, "nodes");
	struct rank *rv = NULL, *cur = NULL;
	sqlite3_stmt *st = NULL;
	int n = 0, rc, ret = 0;
	int64_t off = 0;

	free(skew);
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	sqlite3_bind_int64(st, 1, (int64_t)from);
	sqlite3_bind_int64(st, 2, (int64_t)to);
	if (o->node_filter)
		sqlite3_bind_text(st, 3, o->node_filter, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, o->pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *node = (const char *)sqlite3_column_text(st, 0), *op = (const char *)sqlite3_column_text(st, 4);
		int64_t pid = sqlite3_column_int64(st, 1);

		if (!node)
			continue;
		if (!cur || cur->pid != pid || strcmp(cur->node, node)) {
			struct rank *nv;
			if (n == CW_STRAG_MAX_RANKS)
				break;
			if (!(nv = realloc(rv, (size_t)(n + 1) * sizeof(*nv)))) {
				ret = -ENOMEM;
				goto out;
			}
			rv = nv;
			cur = &rv[n++];
			memset(cur, 0, sizeof(*cur));
			snprintf(cur->node, sizeof(cur->node), "%s", node);
			snprintf(cur->op, sizeof(cur->op), "%s", op ? op : "ncclAllReduce");
			cur->pid = pid;
			off = cw_merge_offset_of(nodes, node);
		}
		if (cw_vec_reserve(&cur->v, &cur->cap, cur->n + 1, sizeof(*cur->v), 64) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		struct call *c = &cur->v[cur->n++];
		c->entry = sqlite3_column_int64(st, 2) - off;
		c->dur = sqlite3_column_int64(st, 3);
		c->end = c->entry + c->dur;
	}
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = cw_sqlite_errno(rc);
out:
	sqlite3_finalize(st);
	json_decref(sk);
	*out = rv;
	*nout = n;
	return ret;
}

static void free_ranks(struct rank *rv, int n)
{
	for (int i = 0; i < n; i++)
		free(rv[i].v);
	free(rv);
}

static int64_t pct(int64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_i64);
	return v[(size_t)(p * (double)(n - 1))];
}

/* The most severe chain of the straggler's own node: why it is late. */
static const struct cw_chain *reason_of(const struct cw_chain *chains, int n, const char *node)
{
	const struct cw_chain *best = NULL;

	for (int i = 0; i < n; i++)
		if (!strcmp(chains[i].node, node) && chains[i].kind != CW_KIND_STRAGGLER &&
		    (!best || chains[i].explained_ns > best->explained_ns))
			best = &chains[i];
	return best;
}

static int fill(sqlite3 *db, const struct cw_explain_opts *o, uint64_t from, uint64_t to, struct rank *rv,
		int nr, int s, uint64_t groups, int64_t *lags, size_t nlags, const struct cw_chain *chains,
		int nchains, struct cw_chain *c)
{
	struct rank *r = &rv[s];
	int64_t *own = malloc((r->n ? r->n : 1) * sizeof(*own)), *peers;
	size_t npeers = 0, total = 0;
	const struct cw_chain *why = reason_of(chains, nchains, r->node);
	char head[160], lag[32], p50[32], mine[32];
	double share = (double)r->last / (double)groups, mean_lag = (double)r->lag_ns / (double)r->last;
	int ret;

	for (int i = 0; i < nr; i++)
		if (i != s)
			total += rv[i].n;
	peers = malloc((total ? total : 1) * sizeof(*peers));
	if (!own || !peers) {
		free(own);
		free(peers);
		return -ENOMEM;
	}
	for (size_t k = 0; k < r->n; k++)
		own[k] = r->v[k].dur;
	for (int i = 0; i < nr; i++)
		for (size_t k = 0; i != s && k < rv[i].n; k++)
			peers[npeers++] = rv[i].v[k].dur;
	memset(c, 0, sizeof(*c));
	c->kind = CW_KIND_STRAGGLER;
	c->rank = -1;
	c->culprit.cpu = -1;
	snprintf(c->op, sizeof(c->op), "%s", r->op);
	snprintf(c->source, sizeof(c->source), "nccl");
	snprintf(c->node, sizeof(c->node), "%s", r->node);
	c->count = groups;
	c->slow_count = r->last;
	c->p50_ns = (uint64_t)pct(own, r->n, 0.5);
	int64_t peer_p50 = pct(peers, npeers, 0.5);
	/* Blocking collectives: the peers' wait is inside their collective
	 * calls. Asynchronous ones (enqueue and return, PyTorch's default)
	 * are short everywhere and the peers wait later, in a synchronize:
	 * then the lag itself is how long they waited. Blocking when the
	 * peers' calls are longer than its own by at least half the lag. */
	double own_mean = 0, peer_mean = 0;
	for (size_t k = 0; k < r->n; k++)
		own_mean += (double)own[k] / (double)r->n;
	for (size_t k = 0; k < npeers; k++)
		peer_mean += (double)peers[k] / (double)npeers;
	int blocking = peer_mean - own_mean >= 0.5 * mean_lag;
	c->p95_ns = (uint64_t)pct(peers, npeers, 0.95);
	c->p99_ns = (uint64_t)pct(peers, npeers, 0.99);
	c->max_ns = (uint64_t)pct(peers, npeers, 1.0);
	if (!blocking) {
		c->p95_ns = (uint64_t)pct(lags, nlags, 0.95) > c->p95_ns ? (uint64_t)pct(lags, nlags, 0.95) : c->p95_ns;
		c->p99_ns = (uint64_t)pct(lags, nlags, 0.99) > c->p99_ns ? (uint64_t)pct(lags, nlags, 0.99) : c->p99_ns;
		c->max_ns = (uint64_t)pct(lags, nlags, 1.0) > c->max_ns ? (uint64_t)pct(lags, nlags, 1.0) : c->max_ns;
	}
	c->tail_ratio = c->p50_ns ? (double)c->p99_ns / (double)c->p50_ns : 0;
	c->explained_share = share;
	c->slow_time_ns = r->lag_ns;
	c->explained_ns = r->lag_ns;
	free(own);
	free(peers);
	if ((ret = cw_chain_identity(db, c, r->node, from, to, r->pid)) < 0)
		return ret;
	c->pid = r->pid;
	cw_format_duration((uint64_t)mean_lag, lag, sizeof(lag));
	cw_format_duration((uint64_t)peer_p50, p50, sizeof(p50));
	cw_format_duration(c->p50_ns, mine, sizeof(mine));
	if (c->rank >= 0)
		snprintf(head, sizeof(head), "rank %d on %s (pid %lld)", c->rank, r->node, (long long)r->pid);
	else
		snprintf(head, sizeof(head), "pid %lld on %s", (long long)r->pid, r->node);
	/* The reason's summary may not fit whole; the chain keeps its head. */
	char waits[200];
	if (blocking)
		snprintf(waits, sizeof(waits), "%d other rank%s wait%s in %s (p50 %s) while its own take %s", nr - 1,
			 nr - 1 == 1 ? "" : "s", nr - 1 == 1 ? "s" : "", r->op, p50, mine);
	else
		snprintf(waits, sizeof(waits),
			 "%s returns at once (asynchronous), so the %d other rank%s wait for it in their next"
			 " synchronization",
			 r->op, nr - 1, nr - 1 == 1 ? "" : "s");
	if (snprintf(c->summary, sizeof(c->summary),
		     "%s is the straggler: it entered %s last in %llu of %llu collectives (%.0f %%), %s after the"
		     " next rank on average; %s%s%s",
		     head, r->op, (unsigned long long)r->last, (unsigned long long)groups, share * 100, lag, waits,
		     why ? "; on its node: " : "; no cause found on its node", why ? why->summary : "") >=
	    (int)sizeof(c->summary))
		c->summary[sizeof(c->summary) - 1] = '\0';
	cw_chain_add_timeline(c, CW_LAYER_NCCL, r->v[0].entry > 0 ? (uint64_t)r->v[0].entry : 0,
			      "%s entered %s last in %llu/%llu collectives, mean lag %s", head, r->op,
			      (unsigned long long)r->last, (unsigned long long)groups, lag);
	cw_chain_add_timeline(c, CW_LAYER_NCCL, r->v[0].entry > 0 ? (uint64_t)r->v[0].entry : 0,
			      "%s: peers p50 %s, own p50 %s%s", r->op, p50, mine,
			      blocking ? " (they wait inside it)" : " (asynchronous)");
	if (why) {
		for (int i = 0; i < why->ntimeline && c->ntimeline < CW_CHAIN_MAX_TIMELINE; i++)
			c->timeline[c->ntimeline++] = why->timeline[i];
		for (int i = 0; i < why->nfix && c->nfix < CW_CHAIN_MAX_FIX; i++)
			cw_chain_copy_fix(c, why, i);
		c->culprit = why->culprit;
	} else {
		cw_chain_add_advice(c, "run causeway explain on %s's database: why rank %d is late", r->node, c->rank);
		cw_chain_add_fix(c, "causeway where %lld  # on %s", (long long)r->pid, r->node);
	}
	cw_chain_add_evidence(c, "last_share", share, 0);
	cw_chain_add_evidence(c, "mean_lag_ns", mean_lag, 1);
	cw_chain_add_evidence(c, "collectives", (double)groups, 1);
	cw_chain_add_evidence(c, "ranks", nr, 1);
	cw_chain_add_evidence(c, "peer_p50_ns", (double)peer_p50, 1);
	cw_chain_add_evidence(c, "blocking", blocking, 1);
	(void)o;
	return 1;
}

int cw_rule_straggler(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	sqlite3 *db = ctx->db;
	const struct cw_explain_opts *o = ctx->opts;
	struct rank *rv = NULL;
	int nr = 0, ref = 0, s = -1, ret, *glast = NULL;
	uint64_t groups = 0;
	int64_t tol, *gaps = NULL, *glag = NULL;
	size_t ng = 0;

	int any = 0;
	/* The rank scan below reads events without an index: a store without
	 * collectives (most single-node traces) never pays for it. One second
	 * of slack either side covers a call counted in its exit's second. */
	if ((ret = cw_aggregates_have(db, o->node_filter, "nccl",
				      (int64_t)(ctx->window_from_ns / NSEC_PER_SEC) - 1,
				      (int64_t)(ctx->window_to_ns / NSEC_PER_SEC) + 1, &any)) < 0 ||
	    !any)
		return ret;
	if ((ret = load_ranks(db, o, ctx->window_from_ns, ctx->window_to_ns, &rv, &nr)) < 0 || nr < 2)
		goto out;
	for (int i = 0; i < nr; i++) {
		qsort(rv[i].v, rv[i].n, sizeof(*rv[i].v), cmp_end);
		if (rv[i].n > rv[ref].n)
			ref = i;
	}
	if (rv[ref].n < CW_STRAG_MIN_GROUPS)
		goto out;
	/* Completions closer than half the usual gap between collectives are
	 * the same collective. */
	gaps = malloc(rv[ref].n * sizeof(*gaps));
	glag = malloc(rv[ref].n * sizeof(*glag));
	glast = malloc(rv[ref].n * sizeof(*glast));
	if (!gaps || !glag || !glast) {
		ret = -ENOMEM;
		goto out;
	}
	for (size_t k = 1; k < rv[ref].n; k++)
		gaps[k - 1] = rv[ref].v[k].end - rv[ref].v[k - 1].end;
	tol = pct(gaps, rv[ref].n - 1, 0.5) / 2;
	for (size_t k = 0; k < rv[ref].n; k++) {
		int64_t first = INT64_MIN, second = INT64_MIN;
		int last = -1, all = 1;
		for (int i = 0; i < nr && all; i++) {
			const struct call *m = i == ref ? &rv[ref].v[k] : nearest(&rv[i], rv[ref].v[k].end, tol);
			if (!m) {
				all = 0;
				break;
			}
			if (m->entry > first) {
				second = first;
				first = m->entry;
				last = i;
			} else if (m->entry > second) {
				second = m->entry;
			}
		}
		if (!all)
			continue;
		groups++;
		if (first - second >= (int64_t)CW_STRAG_MIN_LAG_NS) {
			rv[last].last++;
			rv[last].lag_ns += (uint64_t)(first - second);
			glast[ng] = last;
			glag[ng++] = first - second;
		}
	}
	if (groups < CW_STRAG_MIN_GROUPS)
		goto out;
	for (int i = 0; i < nr; i++)
		if (rv[i].last && (s < 0 || rv[i].last > rv[s].last))
			s = i;
	if (s < 0 || (double)rv[s].last < CW_STRAG_MIN_SHARE * (double)groups ||
	    (double)rv[s].lag_ns / (double)rv[s].last < (double)CW_STRAG_MIN_MEAN_LAG_NS)
		goto out;
	{
		size_t nl = 0;
		for (size_t g = 0; g < ng; g++)
			if (glast[g] == s)
				glag[nl++] = glag[g];
		ret = fill(db, o, ctx->window_from_ns, ctx->window_to_ns, rv, nr, s, groups, glag, nl, ctx->chains,
			   ctx->nchains, c);
	}
out:
	free(gaps);
	free(glag);
	free(glast);
	free_ranks(rv, nr);
	return ret;
}
