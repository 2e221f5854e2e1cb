/* io_contention: the slow calls' thread was blocked (off-CPU, not
 * runnable) while block I/O was in flight on the node, e.g. a checkpoint
 * write saturating the disk. explained_share = blocked time overlapping
 * I/O in flight / slow-call time. */
#include <stdio.h>

#include "analysis/rules/rules.h"
#include "util/timeutil.h"

/* The pid with the most I/O time overlapping the slow calls. */
static int64_t top_io_pid(const struct cw_rule_ctx *ctx, uint64_t *ns_out)
{
	int64_t pids[16] = {0};
	uint64_t ns[16] = {0};
	size_t n = 0, best = 0;
	size_t j = 0;

	/* calls are sorted by start; io_raw by start. */
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_slowcall *c = &ctx->calls[i];
		uint64_t s = c->mono_ns, e = s + c->dur_ns;
		uint64_t from = s > 10 * NSEC_PER_SEC ? s - 10 * NSEC_PER_SEC : 0;
		while (j < ctx->sys->nio_raw && ctx->sys->io_raw[j].start < from)
			j++;
		for (size_t k = j; k < ctx->sys->nio_raw && ctx->sys->io_raw[k].start < e; k++) {
			uint64_t o = cw_overlap(ctx->sys->io_raw[k].start, ctx->sys->io_raw[k].end, s, e);
			size_t p;
			if (!o)
				continue;
			for (p = 0; p < n && pids[p] != ctx->sys->io_pid[k]; p++)
				;
			if (p == n) {
				if (n == 16)
					continue;
				pids[n++] = ctx->sys->io_pid[k];
			}
			ns[p] += o;
		}
	}
	if (!n)
		return 0;
	for (size_t p = 1; p < n; p++)
		if (ns[p] > ns[best])
			best = p;
	*ns_out = ns[best];
	return pids[best];
}

int cw_rule_io_contention(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128], blk[32];
	double share, busy = 0;
	uint64_t io_ns = 0;
	int64_t io_pid;

	if (!ctx->slow_time_ns || !ctx->blocked_io_ns)
		return 0;
	share = (double)ctx->blocked_io_ns / (double)ctx->slow_time_ns;
	c->kind = CW_KIND_IO_CONTENTION;
	c->explained_share = share;
	io_pid = top_io_pid(ctx, &io_ns);
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_snap *sn = cw_sysctx_snap_at(ctx->sys, ctx->calls[i].mono_ns);
		if (sn && sn->io_busy_pct > busy)
			busy = sn->io_busy_pct;
	}
	cw_chain_headline(c, head, sizeof(head));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: thread %lld (%s) was blocked while block I/O was in flight for %.0f %% of its slow calls' time%s",
		 head, (long long)c->tid, c->comm, share * 100,
		 io_pid == c->pid ? " (its own process's writes)" : "");
	if (io_pid && io_pid != c->pid) {
		size_t len = 0;
		while (c->summary[len])
			len++;
		snprintf(c->summary + len, sizeof(c->summary) - len, ", mostly requests of pid %lld",
			 (long long)io_pid);
	}
	cw_format_duration(ctx->blocked_io_ns, blk, sizeof(blk));
	cw_chain_add_timeline(c, CW_LAYER_IO, ctx->calls[0].wall_ns,
			      "%llu block requests in the window; thread %lld blocked %s behind them",
			      (unsigned long long)ctx->sys->io_requests, (long long)c->tid, blk);
	if (busy > 0)
		cw_chain_add_timeline(c, CW_LAYER_SYSTEM, ctx->calls[ctx->ncalls - 1].wall_ns,
				      "disk busy up to %.0f %% during the slow calls", busy);
	if (io_pid > 0 && io_pid != c->pid)
		cw_chain_add_fix(c, "ionice -c3 -p %lld", (long long)io_pid);
	if (io_pid == c->pid && c->pid > 0)
		cw_chain_add_advice(c, "write checkpoints asynchronously (torch.distributed.checkpoint.async_save) or from a background thread");
	cw_chain_add_fix(c, "sysctl -w vm.dirty_background_bytes=67108864 vm.dirty_bytes=268435456");
	if (c->pid > 0)
		cw_chain_add_fix(c, "ionice -c2 -n0 -p %lld", (long long)c->pid);
	cw_chain_add_advice(c, "put checkpoints and datasets on separate local NVMe devices");
	cw_chain_add_evidence(c, "blocked_io_ns", (double)ctx->blocked_io_ns, 1);
	cw_chain_add_evidence(c, "blocked_ns", (double)ctx->blocked_ns, 1);
	cw_chain_add_evidence(c, "same_pid_io_ns", (double)ctx->io_same_pid_ns, 1);
	cw_chain_add_evidence(c, "io_requests", (double)ctx->sys->io_requests, 1);
	cw_chain_add_evidence(c, "io_busy_pct_max", busy, 0);
	if (io_pid)
		cw_chain_add_evidence(c, "io_top_pid", (double)io_pid, 1);
	return 1;
}
