/* inference_latency: slow requests of a traced inference server (trace
 * --inference), one chain per incident of slow requests of a route, or
 * one per route when its slow requests are spread over more than
 * CW_REQ_MAX_INCIDENTS incidents; the cause is what happened on the
 * server's threads during them (request_causes.h): CPU preemption, slow
 * GPU calls, memory or I/O stalls, else queueing behind other requests.
 * Runs once after every node (a CPU-only server has no GPU ops for the
 * per-node phase), over the nodes that stored requests. The costliest
 * chains (by time beyond the routes' normal) are kept. docs/rules.md. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/request_chain.h"
#include "analysis/rules/rules.h"
#include "store/store.h"

#define CW_REQ_MAX_INCIDENTS 4
#define MAX_NODES 64

/* Keeps chain c among the ctx->max_out costliest in out[0..*n). */
static void keep(const struct cw_rule_ctx *ctx, struct cw_chain *out, int *n, const struct cw_chain *c, uint64_t excess,
		 uint64_t *excess_of)
{
	int k = *n;

	if (*n == ctx->max_out) {
		int min = 0;

		for (int i = 1; i < *n; i++)
			if (excess_of[i] < excess_of[min])
				min = i;
		if (excess_of[min] >= excess)
			return;
		k = min;
	} else {
		(*n)++;
	}
	out[k] = *c;
	excess_of[k] = excess;
}

/* The incidents of route r, merged into one when there are too many to
 * name one by one. Returns how many, or -ENOMEM. */
static int route_incidents(const struct cw_req_set *s, int r, struct cw_req_incident **v)
{
	int n = cw_req_incidents(s, r, v);

	if (n <= CW_REQ_MAX_INCIDENTS)
		return n;
	for (int i = 1; i < n; i++) {
		memcpy((*v)[0].idx + (*v)[0].n, (*v)[i].idx, (*v)[i].n * sizeof(size_t));
		(*v)[0].n += (*v)[i].n;
		(*v)[0].excess_ns += (*v)[i].excess_ns;
		free((*v)[i].idx);
		(*v)[i].idx = NULL;
	}
	return 1;
}

static int explain_node(const struct cw_rule_ctx *ctx, const char *node, struct cw_chain *out, int *nout,
			uint64_t *excess_of, struct cw_chain *tmp)
{
	const struct cw_explain_opts *o = ctx->opts;
	struct cw_req_set s;
	struct cw_sysctx sys;
	int ret, loaded = 0;

	ret = cw_req_load(ctx->db, node, ctx->window_from_ns, ctx->window_to_ns, o ? o->pid : 0, o ? o->pids : NULL,
			  o ? o->npids : 0, &s);
	if (ret < 0)
		return ret;
	if (ctx->requests_seen)
		*ctx->requests_seen += s.n;
	for (size_t r = 0; r < s.nroutes && ret >= 0; r++) {
		struct cw_req_incident *inc = NULL;
		int ni;

		if (!s.routes[r].nslow)
			continue;
		if (!loaded) {
			if ((ret = cw_sysctx_load(ctx->db, node, ctx->window_from_ns, ctx->window_to_ns, &sys)) < 0)
				break;
			loaded = 1;
		}
		if ((ni = route_incidents(&s, (int)r, &inc)) < 0) {
			ret = ni;
			break;
		}
		for (int i = 0; i < ni && ret >= 0; i++) {
			struct cw_req_causes m;

			if ((ret = cw_req_causes_measure(ctx->db, node, &sys, &s, &inc[i], &m)) < 0)
				break;
			if (cw_req_chain_fill(ctx->db, node, &sys, &s, &inc[i], &m, tmp))
				keep(ctx, out, nout, tmp, inc[i].excess_ns, excess_of);
			cw_req_causes_free(&m);
		}
		cw_req_incidents_free(inc, ni);
	}
	if (loaded)
		cw_sysctx_free(&sys);
	cw_req_free(&s);
	return ret;
}

int cw_rule_inference_latency(const struct cw_rule_ctx *ctx, struct cw_chain *out)
{
	const char *filter = ctx->opts ? ctx->opts->node_filter : NULL;
	char (*nodes)[64] = NULL;
	uint64_t *excess_of = NULL;
	struct cw_chain *tmp = NULL;
	sqlite3_stmt *st = NULL;
	int nnodes = 0, n = 0, ret = 0, rc;

	/* request_totals: a row per node that ever stored a request (small,
	 * never pruned); a store from before schema v11 has none. */
	rc = sqlite3_prepare_v2(ctx->db, "SELECT DISTINCT node FROM request_totals WHERE ?1 IS NULL OR node = ?1"
					 " ORDER BY node", -1, &st, NULL);
	if (rc != SQLITE_OK)
		return 0;
	if (filter)
		sqlite3_bind_text(st, 1, filter, -1, SQLITE_STATIC);
	if (!(nodes = calloc(MAX_NODES, sizeof(*nodes))) || !(excess_of = calloc((size_t)ctx->max_out, sizeof(*excess_of))) ||
	    !(tmp = malloc(sizeof(*tmp)))) {
		ret = -ENOMEM;
		goto out;
	}
	while (nnodes < MAX_NODES && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(st, 0);

		if (t)
			snprintf(nodes[nnodes++], sizeof(nodes[0]), "%s", (const char *)t);
	}
	sqlite3_finalize(st);
	st = NULL;
	for (int i = 0; i < nnodes && ret >= 0; i++)
		ret = explain_node(ctx, nodes[i], out, &n, excess_of, tmp);
out:
	sqlite3_finalize(st);
	free(nodes);
	free(excess_of);
	free(tmp);
	return ret < 0 ? ret : n;
}
