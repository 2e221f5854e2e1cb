/* dataloader_starvation: the thread that launches GPU work sits blocked
 * off-CPU between launches, woken by another process (a DataLoader
 * worker handing over a batch through a pipe or futex), for >= 30 % of
 * its active time, while the launch op itself has no latency tail (the
 * GPU is not slow, it is starved). Blocked intervals shorter than 1 ms or
 * woken by the kernel (waker pid 0: interrupts, e.g. a blocking
 * cudaStreamSynchronize) are not counted. explained_share = idle share. */
#include <stdio.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "store/store.h"
#include "util/timeutil.h"

#define CW_STARVE_SHARE 0.30
#define CW_STARVE_MIN_GAP_NS NSEC_PER_MSEC

struct waker {
	int64_t pid;
	char comm[32];
	uint64_t ns;
};

int cw_rule_dataloader_starvation(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	const struct cw_sysctx *sys = ctx->sys;
	const struct cw_opstat *ops = ctx->ops;
	static const char sql[] =
		"SELECT start_mono_ns, end_mono_ns, waker_pid, waker_comm FROM offcpu"
		" WHERE tid = ?1 AND node = ?2 AND reason = 'blocked' AND wall_ns BETWEEN ?3 AND ?4";
	const struct cw_opstat *launch = NULL;
	struct waker w[8];
	size_t nw = 0, top = 0;
	uint64_t idle = 0, gaps = 0;
	double span, share;
	sqlite3_stmt *st = NULL;
	char head[128], idl[32];
	int rc, ret;

	for (size_t i = 0; i < ctx->nops; i++)
		if (!strcmp(ops[i].node, sys->node) && cw_op_is_launch(ops[i].op) && ops[i].nsecs &&
		    (!launch || ops[i].count > launch->count))
			launch = &ops[i];
	if (!launch || launch->count < CW_TAIL_MIN_COUNT || !launch->p50_ns)
		return 0;
	if ((double)launch->p99_ns >= CW_TAIL_RATIO * (double)launch->p50_ns)
		return 0;
	cw_chain_from_opstat(c, launch);
	if ((ret = cw_chain_identity_of_node(ctx, c)) < 0)
		return ret;
	if (!c->tid)
		return 0;
	span = (double)(launch->secs[launch->nsecs - 1].second - launch->secs[0].second + 1) * 1e9;
	rc = sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, c->tid);
	sqlite3_bind_text(st, 2, sys->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, (int64_t)ctx->window_from_ns);
	sqlite3_bind_int64(st, 4, (int64_t)ctx->window_to_ns);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t a = (uint64_t)sqlite3_column_int64(st, 0), b = (uint64_t)sqlite3_column_int64(st, 1);
		int64_t wp = sqlite3_column_int64(st, 2);
		const char *wc = (const char *)sqlite3_column_text(st, 3);
		size_t p;
		if (b <= a || b - a < CW_STARVE_MIN_GAP_NS || wp == 0 || wp == c->pid)
			continue;
		idle += b - a;
		gaps++;
		for (p = 0; p < nw && w[p].pid != wp; p++)
			;
		if (p == nw && nw < 8) {
			w[nw].pid = wp;
			w[nw].ns = 0;
			snprintf(w[nw].comm, sizeof(w[nw].comm), "%s", wc ? wc : "?");
			nw++;
		}
		if (p < nw)
			w[p].ns += b - a;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	share = span > 0 ? (double)idle / span : 0;
	if (share < CW_STARVE_SHARE || !nw)
		return 0;
	if (share > 1)
		share = 1;
	for (size_t p = 1; p < nw; p++)
		if (w[p].ns > w[top].ns)
			top = p;
	c->kind = CW_KIND_DATALOADER_STARVATION;
	c->slow_count = gaps;
	c->explained_share = share;
	c->slow_time_ns = idle;
	c->explained_ns = idle;
	c->culprit.known = 1;
	snprintf(c->culprit.comm, sizeof(c->culprit.comm), "%s", w[top].comm);
	c->culprit.pid = w[top].pid;
	c->culprit.overlap_ns = w[top].ns;
	cw_chain_headline(c, head, sizeof(head));
	cw_format_duration(idle, idl, sizeof(idl));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: thread %lld (%s) sat idle waiting for input for %.0f %% of its time (%s in %llu gaps,"
		 " woken by %s pid %lld); the GPU calls themselves are not slow",
		 head, (long long)c->tid, c->comm, share * 100, idl, (unsigned long long)gaps,
		 w[top].comm, (long long)w[top].pid);
	cw_chain_add_timeline(c, CW_LAYER_HOST, (uint64_t)launch->secs[0].second * NSEC_PER_SEC,
			      "thread %lld blocked between launches %llu times, woken by %s (pid %lld)",
			      (long long)c->tid, (unsigned long long)gaps, w[top].comm, (long long)w[top].pid);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), (uint64_t)launch->secs[0].second * NSEC_PER_SEC,
			      "%s p99/p50 %.1f: no GPU-side tail", launch->op, c->tail_ratio);
	cw_chain_add_code(c, "DataLoader(..., num_workers=8, persistent_workers=True, prefetch_factor=4)");
	cw_chain_add_code(c, "DataLoader(..., pin_memory=True)");
	cw_chain_add_advice(c, "move decoding and augmentation to the GPU (e.g. NVIDIA DALI) or cache preprocessed samples");
	if (w[top].pid > 0)
		cw_chain_add_fix(c, "causeway where %lld  # see what the input worker is doing", (long long)w[top].pid);
	cw_chain_add_evidence(c, "idle_ns", (double)idle, 1);
	cw_chain_add_evidence(c, "idle_share", share, 0);
	cw_chain_add_evidence(c, "gaps", (double)gaps, 1);
	cw_chain_add_evidence(c, "active_seconds", span / 1e9, 1);
	return 1;
}
