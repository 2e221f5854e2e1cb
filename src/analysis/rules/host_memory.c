/* host_memory: page-locked host allocations (cudaHostAlloc,
 * cudaMallocHost, cudaHostRegister, cuMemHostAlloc, ...) are slow because
 * the host cannot hand out pages fast: the call allocates, zeroes and pins
 * every page itself, so under reclaim (a node-wide memory-pressure second,
 * docs/rules.md) or a cgroup near its memory limit (the calling thread's
 * own page-allocation records, mem.bpf.c, show >= 25,000 pages/s, about
 * 100 MiB/s, around the call) it runs direct reclaim or waits for
 * swap-in. A slow call counts when it overlaps either; its time less what
 * it spent preempted is explained, plus the time the op's slow calls were
 * preempted by the kernel's reclaim and writeback threads (kswapd*,
 * kworker*), which run the same reclaim on the thread's CPU. The thread's page-allocation records
 * are read for the 256 slowest calls only, one seek of the index
 * events_pagealloc each (a rowid range of [start - 1 s, end] on files
 * without it). explained_share = that time / slow-call time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "store/store.h"
#include "util/timeutil.h"

#define CW_HOSTMEM_OWN_RATE 25000.0 /* pages per second */
#define CW_HOSTMEM_MAX_CALLS 256

/* The thread's highest page-allocation rate (pages/s) in records that
 * overlap [s, e]; records cover [mono, mono + interval]. */
static int own_rate(const struct cw_rule_ctx *ctx, sqlite3_stmt *st, const struct cw_slowcall *c, double *rate)
{
	uint64_t s = c->mono_ns, e = c->mono_ns + c->dur_ns;
	uint64_t ws = c->wall_ns > NSEC_PER_SEC ? c->wall_ns - NSEC_PER_SEC : 0, we = c->wall_ns + c->dur_ns;
	int64_t lo, hi;
	int rc, ret;

	*rate = 0;
	/* A record is written when its interval closes, after the call. */
	if ((ret = cw_events_id_at(ctx->db, ws, &lo)) < 0 || (ret = cw_events_id_at(ctx->db, we + 2 * NSEC_PER_SEC, &hi)) < 0)
		return ret;
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, ctx->st->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, c->tid);
	sqlite3_bind_int64(st, 5, c->pid);
	sqlite3_bind_int64(st, 6, (int64_t)ws);
	sqlite3_bind_int64(st, 7, (int64_t)(we + NSEC_PER_SEC));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t m = (uint64_t)sqlite3_column_int64(st, 0);
		int64_t pages = sqlite3_column_int64(st, 1), iv = sqlite3_column_int64(st, 2);
		if (iv <= 0 || pages <= 0 || !cw_overlap(m, m + (uint64_t)iv + 1, s, e + 1))
			continue;
		if ((double)pages * 1e9 / (double)iv > *rate)
			*rate = (double)pages * 1e9 / (double)iv;
	}
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static int dur_desc(const void *a, const void *b)
{
	const struct cw_slowcall *x = *(const struct cw_slowcall *const *)a, *y = *(const struct cw_slowcall *const *)b;
	return x->dur_ns > y->dur_ns ? -1 : x->dur_ns < y->dur_ns;
}

int cw_rule_host_memory(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	/* Index events_pagealloc (schema v3) when the file has it, else the
	 * rowid range of the call. */
	static const char idx_sql[] =
		"SELECT mono_ns, arg0, arg1 FROM kevents WHERE op = 'page_alloc' AND node = ?3 AND pid = ?5"
		" AND wall_ns BETWEEN ?6 AND ?7 AND tid = ?4 AND ?1 <= ?2";
	static const char scan_sql[] =
		"SELECT mono_ns, arg0, arg1 FROM kevents WHERE id BETWEEN ?1 AND ?2 AND op = 'page_alloc'"
		" AND source = 'mem' AND node = ?3 AND tid = ?4 AND ?5 = ?5 AND wall_ns BETWEEN ?6 AND ?7";
	int has;
	const struct cw_slowcall **by = NULL;
	sqlite3_stmt *st = NULL;
	uint64_t explained = 0, in_pressure = 0, own_heavy = 0, reclaim_ns = 0;
	double max_rate = 0, share;
	size_t n;
	char head[128], exp[32];
	int rc, ret = 0;

	if (!cw_op_is_host_alloc(c->op) || !ctx->slow_time_ns)
		return 0;
	by = malloc(ctx->ncalls * sizeof(*by));
	if (!by)
		return -ENOMEM;
	for (size_t i = 0; i < ctx->ncalls; i++)
		by[i] = &ctx->calls[i];
	qsort(by, ctx->ncalls, sizeof(*by), dur_desc);
	if ((has = cw_events_has_index(ctx->db, "events_pagealloc")) < 0) {
		ret = has;
		goto out;
	}
	rc = sqlite3_prepare_v2(ctx->db, has ? idx_sql : scan_sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		ret = cw_sqlite_errno(rc);
		goto out;
	}
	n = ctx->ncalls < CW_HOSTMEM_MAX_CALLS ? ctx->ncalls : CW_HOSTMEM_MAX_CALLS;
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_slowcall *s = by[i];
		uint64_t e = s->mono_ns + s->dur_ns;
		int press = cw_intervals_cover(ctx->sys->pressure, ctx->sys->npressure, s->mono_ns, e) > 0;
		double rate = 0;

		if (i < n && (ret = own_rate(ctx, st, s, &rate)) < 0)
			goto out;
		if (rate > max_rate)
			max_rate = rate;
		if (press)
			in_pressure++;
		if (rate >= CW_HOSTMEM_OWN_RATE)
			own_heavy++;
		if (press || rate >= CW_HOSTMEM_OWN_RATE)
			explained += s->dur_ns > s->preempted_ns ? s->dur_ns - s->preempted_ns : 0;
	}
	if (!explained)
		goto out;
	for (size_t i = 0; i < ctx->nculprits; i++)
		if (!strncmp(ctx->culprits[i].comm, "kswapd", 6) || !strncmp(ctx->culprits[i].comm, "kworker", 7))
			reclaim_ns += ctx->culprits[i].ns;
	explained += reclaim_ns;
	share = (double)explained / (double)ctx->slow_time_ns;
	c->kind = CW_KIND_HOST_MEMORY;
	c->explained_share = share;
	cw_chain_headline(c, head, sizeof(head));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: pinned host allocations by thread %lld (%s) waited on the kernel for pages for %.0f %% of"
		 " their slow time (%llu slow calls in memory-pressure seconds, %llu while the thread itself"
		 " allocated up to %.0f pages/s): reclaim or swap-in inside the allocation",
		 head, (long long)c->tid, c->comm, share * 100, (unsigned long long)in_pressure,
		 (unsigned long long)own_heavy, max_rate);
	cw_format_duration(explained, exp, sizeof(exp));
	cw_chain_add_timeline(c, CW_LAYER_SYSTEM, ctx->calls[0].wall_ns,
			      "%s of slow %s calls under host page-allocation pressure", exp, c->op);
	if (ctx->blocked_ns)
		cw_chain_add_timeline(c, CW_LAYER_HOST, ctx->calls[ctx->ncalls - 1].wall_ns,
				      "thread %lld blocked inside the calls (reclaim writeback, swap-in)",
				      (long long)c->tid);
	cw_chain_add_advice(c, "allocate pinned buffers once at start-up and reuse them (a pinned pool), not per step");
	cw_chain_add_advice(c, "DataLoader(pin_memory=True) pins from the loader's pool; drop manual per-batch pin_memory()/cudaHostAlloc");
	cw_chain_add_advice(c, "raise the container's memory limit (memory.max / memory.limit_in_bytes) above pinned + page cache");
	cw_chain_add_fix(c, "grep -E 'allocstall|pgscan_direct|pswpin' /proc/vmstat  # direct reclaim and swap-in counts");
	cw_chain_add_evidence(c, "explained_ns", (double)explained, 1);
	cw_chain_add_evidence(c, "calls_in_pressure", (double)in_pressure, 1);
	cw_chain_add_evidence(c, "calls_own_alloc_heavy", (double)own_heavy, 1);
	cw_chain_add_evidence(c, "own_page_alloc_per_s_max", max_rate, 1);
	cw_chain_add_evidence(c, "blocked_ns", (double)ctx->blocked_ns, 1);
	cw_chain_add_evidence(c, "reclaim_thread_preempted_ns", (double)reclaim_ns, 1);
	ret = 1;
out:
	sqlite3_finalize(st);
	free(by);
	return ret;
}
