/* graph_churn: CUDA graphs are re-captured or re-instantiated in the
 * steady state, so the point of graphs (launch a step's work once,
 * replay it cheaply) is lost: every capture re-runs the launches into the
 * graph and every instantiation re-validates and re-uploads it. Counts
 * come from the per-second aggregates (no scan): graph-building ops
 * (captures: cudaStreamEndCapture; instantiations: cudaGraphInstantiate*,
 * cuGraphInstantiate*, cudaGraphExecUpdate, ...; builds = the larger of
 * the two) and graph launches in the steady state, the
 * seconds after the first max(2 s, 10 % of the graph-active span). It
 * fires with >= 10 steady builds and >= 0.2 builds per steady launch (a
 * graph replayed fewer than 5 times per build). explained_share = builds
 * per launch, capped at 1; the chain's time is the build calls' time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

#define CW_CHURN_MIN_BUILDS 10
#define CW_CHURN_RATIO 0.2

static const char *capture_mode_name(int64_t m)
{
	/* cudaStreamCaptureMode (CUDA 10.1+). */
	switch (m) {
	case 0: return "global";
	case 1: return "thread_local";
	case 2: return "relaxed";
	default: return "unknown";
	}
}

int cw_rule_graph_churn(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	const struct cw_sysctx *sys = ctx->sys;
	int64_t first = INT64_MAX, last = INT64_MIN, steady;
	uint64_t builds = 0, launches = 0, build_ns = 0, all_builds = 0;
	const struct cw_opstat *top = NULL;
	struct cw_rare_event *cap = NULL;
	int64_t mode = -1;
	double ratio;
	char head[128], bt[32];
	int ret, ncap;

	for (size_t i = 0; i < ctx->nops; i++) {
		const struct cw_opstat *s = &ctx->ops[i];
		if (strcmp(s->node, sys->node) || !s->nsecs ||
		    (!cw_op_is_graph_launch(s->op) && !cw_op_is_graph_build(s->op)))
			continue;
		if (s->secs[0].second < first)
			first = s->secs[0].second;
		if (s->secs[s->nsecs - 1].second > last)
			last = s->secs[s->nsecs - 1].second;
	}
	if (!(last >= first))
		return 0;
	steady = first + ((last - first + 1) / 10 > 2 ? (last - first + 1) / 10 : 2);
	/* Captures and instantiations are counted apart and the larger is
	 * the build count: a capture is normally instantiated once, and an
	 * instantiation API can nest in another (the runtime's in the
	 * driver's, cudaGraphInstantiate in its WithFlags form), so each
	 * family counts its busiest op, not the sum. */
	uint64_t cap_n = 0, cap_ns = 0, inst_n = 0, inst_ns = 0;
	const struct cw_opstat *cap_top = NULL, *inst_top = NULL;
	for (size_t i = 0; i < ctx->nops; i++) {
		const struct cw_opstat *s = &ctx->ops[i];
		int build = cw_op_is_graph_build(s->op);
		int capture = build && strstr(s->op, "Capture") != NULL;
		uint64_t n = 0, ns = 0;
		if (strcmp(s->node, sys->node) || (!cw_op_is_graph_launch(s->op) && !build))
			continue;
		for (size_t k = 0; k < s->nsecs; k++)
			if (s->secs[k].second >= steady) {
				n += s->secs[k].count;
				ns += s->secs[k].sum_ns;
			}
		if (!build) {
			launches += n;
			continue;
		}
		if (capture && n > cap_n) {
			cap_n = n;
			cap_ns = ns;
			cap_top = s;
		} else if (!capture && n > inst_n) {
			inst_n = n;
			inst_ns = ns;
			inst_top = s;
		}
		if (s->count > all_builds)
			all_builds = s->count;
	}
	builds = cap_n > inst_n ? cap_n : inst_n;
	build_ns = cap_ns + inst_ns;
	top = inst_top ? inst_top : cap_top;
	if (!top || builds < CW_CHURN_MIN_BUILDS)
		return 0;
	ratio = launches ? (double)builds / (double)launches : 1.0;
	if (ratio < CW_CHURN_RATIO)
		return 0;
	cw_chain_from_opstat(c, top);
	c->kind = CW_KIND_GRAPH_CHURN;
	c->slow_count = builds;
	c->explained_share = ratio > 1 ? 1 : ratio;
	c->slow_time_ns = build_ns;
	c->explained_ns = build_ns;
	if ((ret = cw_chain_identity_of_node(ctx, c)) < 0)
		return ret;
	/* The capture mode of the first capture: a global-mode capture also
	 * forbids unsafe calls on every other thread while it runs. */
	ncap = cw_rare_events_load(ctx->db, sys->node, "graph", "cudaStreamBeginCapture", ctx->window_from_ns,
				   ctx->window_to_ns, 1, &cap);
	if (ncap < 0)
		return ncap;
	if (ncap > 0)
		mode = cap[0].arg[1];
	free(cap);
	cw_chain_headline(c, head, sizeof(head));
	cw_format_duration(build_ns, bt, sizeof(bt));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: CUDA graphs are rebuilt in the steady state: %llu captures/instantiations for %llu graph"
		 " launches (%.2f per launch, %s spent building) by thread %lld (%s); each graph is replayed"
		 " %s, so the point of graphs is lost%s%s",
		 head, (unsigned long long)builds, (unsigned long long)launches, ratio, bt, (long long)c->tid, c->comm,
		 ratio >= 1 ? "at most once" : "only a few times", mode >= 0 ? "; capture mode " : "",
		 mode >= 0 ? capture_mode_name(mode) : "");
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), (uint64_t)top->secs[0].second * NSEC_PER_SEC,
			      "first %s; %llu in the whole window", top->op, (unsigned long long)all_builds);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), (uint64_t)steady * NSEC_PER_SEC,
			      "steady state: %llu builds, %llu launches", (unsigned long long)builds,
			      (unsigned long long)launches);
	if (c->has_python)
		cw_chain_add_timeline(c, CW_LAYER_PYTHON, (uint64_t)steady * NSEC_PER_SEC, "rebuilt from %s() at %s:%d",
				      c->py_function, c->py_file, c->py_line);
	cw_chain_add_advice(c, "capture once outside the loop and replay: g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): ...; then g.replay() each step");
	cw_chain_add_advice(c, "keep captured shapes and pointers static: copy new inputs into the captured tensors (static_input.copy_(batch)) instead of re-capturing");
	cw_chain_add_advice(c, "update an instantiated graph in place with cudaGraphExecUpdate when only parameters change");
	cw_chain_add_advice(c, "torch.compile(mode=\"reduce-overhead\"): mark_dynamic or bucket dynamic shapes so each shape is captured once");
	cw_chain_add_evidence(c, "steady_builds", (double)builds, 1);
	cw_chain_add_evidence(c, "steady_launches", (double)launches, 1);
	cw_chain_add_evidence(c, "builds_per_launch", ratio, 0);
	cw_chain_add_evidence(c, "build_ns", (double)build_ns, 1);
	if (mode >= 0)
		cw_chain_add_evidence(c, "capture_mode", (double)mode, 1);
	return 1;
}
