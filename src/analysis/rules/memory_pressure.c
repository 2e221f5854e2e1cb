/* memory_pressure: the slow calls' thread was blocked during seconds of
 * memory pressure: swap use growing by >= 1 MiB/s, a page-allocation storm
 * (>= 50,000 pages/s and >= 4x the window's median) or memory > 95 % used.
 * explained_share = blocked time inside pressure seconds / slow-call time. */
#include <stdio.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

int cw_rule_memory_pressure(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], blk[32];
	double share, mem_max = 0;
	int64_t swap_growth = 0, page_max = 0;
	uint64_t t_swap = 0, t_page = 0;

	if (!ctx->slow_time_ns || !ctx->blocked_mem_ns)
		return 0;
	share = (double)ctx->blocked_mem_ns / (double)ctx->slow_time_ns;
	c->kind = CW_KIND_MEMORY_PRESSURE;
	c->explained_share = share;
	for (size_t i = 0; i < ctx->sys->nsnaps; i++) {
		const struct cw_snap *s = &ctx->sys->snaps[i];
		int64_t g = i ? s->swap_used - ctx->sys->snaps[i - 1].swap_used : 0;
		if (s->wall_ns < ctx->calls[0].wall_ns || s->wall_ns > ctx->calls[ctx->ncalls - 1].wall_ns + NSEC_PER_SEC)
			continue;
		if (g > swap_growth) {
			swap_growth = g;
			t_swap = s->wall_ns;
		}
		if (s->page_alloc_per_s > page_max) {
			page_max = s->page_alloc_per_s;
			t_page = s->wall_ns;
		}
		if (s->mem_pct > mem_max)
			mem_max = s->mem_pct;
	}
	cw_chain_headline(c, head, sizeof(head));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: thread %lld (%s) was blocked under memory pressure for %.0f %% of its slow calls' time"
		 " (swap +%lld MiB/s, %lld pages/s allocated, memory %.0f %% used)",
		 head, (long long)c->tid, c->comm, share * 100, (long long)(swap_growth >> 20),
		 (long long)page_max, mem_max);
	cw_format_duration(ctx->blocked_mem_ns, blk, sizeof(blk));
	if (t_swap)
		cw_chain_add_timeline(c, CW_LAYER_SYSTEM, t_swap, "swap grew %lld MiB in one second",
				      (long long)(swap_growth >> 20));
	if (t_page)
		cw_chain_add_timeline(c, CW_LAYER_SYSTEM, t_page, "page allocation at %lld pages/s, memory %.0f %% used",
				      (long long)page_max, mem_max);
	cw_chain_add_timeline(c, CW_LAYER_HOST, ctx->calls[0].wall_ns,
			      "thread %lld blocked %s during pressure seconds (reclaim, swap-in)",
			      (long long)c->tid, blk);
	cw_chain_add_fix(c, "echo 1 > /proc/sys/vm/swappiness");
	cw_chain_add_advice(c, "lower host memory use: DataLoader(prefetch_factor=2), fewer num_workers, or a memory.high limit on the noisy cgroup");
	if (c->pid > 0)
		cw_chain_add_fix(c, "echo -1000 > /proc/%lld/oom_score_adj", (long long)c->pid);
	cw_chain_add_fix(c, "grep -E 'pswp|pgmajfault|allocstall' /proc/vmstat");
	cw_chain_add_evidence(c, "blocked_mem_ns", (double)ctx->blocked_mem_ns, 1);
	cw_chain_add_evidence(c, "blocked_ns", (double)ctx->blocked_ns, 1);
	cw_chain_add_evidence(c, "swap_growth_bytes_per_s_max", (double)swap_growth, 1);
	cw_chain_add_evidence(c, "page_alloc_per_s_max", (double)page_max, 1);
	cw_chain_add_evidence(c, "mem_pct_max", mem_max, 0);
	cw_chain_add_evidence(c, "pressure_intervals", (double)ctx->sys->npressure, 1);
	return 1;
}
