/* gpu_memory_pressure: slow device allocations (cudaMalloc and kin) made
 * while their GPU's memory was >= 90 % used. The caching allocator then
 * frees its cache and retries (cudaFree + synchronize inside the call),
 * and allocations start to fail. A call counts when a sample of its
 * device within CW_GPU_MEM_NEAR_NS of it shows the device near full
 * (memory is sampled, allocations are not: a call between two samples
 * belongs to both). explained_share = time of such slow allocations /
 * slow allocation time; failed allocations of the op in the window and
 * the process holding the most device memory are named. */
#include <stdio.h>

#include "analysis/rules/rules.h"
#include "analysis/gpuctx.h"
#include "store/store.h"
#include "util/timeutil.h"

#define CW_GPU_MEM_FULL 0.90
#define CW_GPU_MEM_NEAR_NS NSEC_PER_SEC

static int near_full(const struct cw_gsample *s)
{
	return s->mem_total > 0 && s->mem_used >= 0 && (double)s->mem_used >= CW_GPU_MEM_FULL * (double)s->mem_total;
}

/* Failed calls of op in the window (through the rowid range). */
static int64_t failures(const struct cw_rule_ctx *ctx)
{
	sqlite3_stmt *st = NULL;
	int64_t lo, hi, n = 0;

	if (cw_events_id_at(ctx->db, ctx->window_from_ns, &lo) || cw_events_id_at(ctx->db, ctx->window_to_ns, &hi))
		return 0;
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT count(*) FROM events WHERE id BETWEEN ?1 AND ?2 AND op = ?3 AND node = ?4"
			       " AND ret IS NOT NULL AND ret != 0",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, ctx->st->op, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, ctx->st->node, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

/* The process with the most device memory on device near wall. */
static int64_t top_holder(const struct cw_rule_ctx *ctx, int device, uint64_t wall, int64_t *bytes)
{
	sqlite3_stmt *st = NULL;
	int64_t pid = 0;

	*bytes = 0;
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT pid, max(used_bytes) AS b FROM gpu_processes WHERE node = ?1 AND device = ?2"
			       " AND wall_ns BETWEEN ?3 AND ?4 GROUP BY pid ORDER BY b DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return 0; /* an older file without the table */
	sqlite3_bind_text(st, 1, ctx->st->node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, device);
	sqlite3_bind_int64(st, 3, (int64_t)(wall - 5 * NSEC_PER_SEC));
	sqlite3_bind_int64(st, 4, (int64_t)(wall + 5 * NSEC_PER_SEC));
	if (sqlite3_step(st) == SQLITE_ROW) {
		pid = sqlite3_column_int64(st, 0);
		*bytes = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return pid;
}

int cw_rule_gpu_memory_pressure(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	const struct cw_gpuctx *g = ctx->sys->gpu;
	const struct cw_gsample *hit = NULL;
	const struct cw_gdev *dev;
	uint64_t overlap = 0;
	int64_t failed, holder, held;
	double share, pct;
	char head[128];

	if (!g || !g->n || !ctx->slow_time_ns || !cw_op_is_alloc(ctx->st->op))
		return 0;
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_slowcall *k = &ctx->calls[i];
		uint64_t from = k->mono_ns > CW_GPU_MEM_NEAR_NS ? k->mono_ns - CW_GPU_MEM_NEAR_NS : 0;
		if (cw_gpuctx_overlap(g, k->device, from, k->mono_ns + k->dur_ns + CW_GPU_MEM_NEAR_NS, near_full, &hit))
			overlap += k->dur_ns;
	}
	if (!overlap || !hit)
		return 0;
	share = (double)overlap / (double)ctx->slow_time_ns;
	pct = 100.0 * (double)hit->mem_used / (double)hit->mem_total;
	dev = cw_gpuctx_dev(g, hit->device);
	failed = failures(ctx);
	holder = top_holder(ctx, hit->device, hit->wall, &held);
	c->kind = CW_KIND_GPU_MEMORY_PRESSURE;
	c->explained_share = share;
	cw_chain_headline(c, head, sizeof(head));
	cw_chain_summary(c,
		 "%s: %.0f %% of the slow allocations' time ran while GPU %d%s%s%s had %.1f of %.1f GiB in use (%.0f %%)"
		 "; %lld allocation(s) failed",
		 head, share * 100, hit->device, dev ? " (" : "", dev ? dev->name : "", dev ? ")" : "",
		 hit->mem_used / 1073741824.0, hit->mem_total / 1073741824.0, pct, (long long)failed);
	if (holder > 0) {
		size_t len = 0;
		while (c->summary[len])
			len++;
		snprintf(c->summary + len, sizeof(c->summary) - len, "; pid %lld holds %.1f GiB", (long long)holder,
			 held / 1073741824.0);
	}
	cw_chain_add_timeline(c, CW_LAYER_DRIVER, hit->wall, "GPU %d memory %.0f %% used", hit->device, pct);
	cw_chain_add_fix(c, "nvidia-smi --query-compute-apps=pid,used_memory --format=csv -i %d  # who holds the memory",
			 hit->device);
	cw_chain_add_fix(c, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True  # less fragmentation in the caching allocator");
	cw_chain_add_advice(c, "allocate once outside the step loop and reuse buffers; lower the batch size or checkpoint activations");
	cw_chain_add_evidence(c, "near_full_overlap_ns", (double)overlap, 1);
	cw_chain_add_evidence(c, "device", hit->device, 1);
	cw_chain_add_evidence(c, "mem_used_bytes", (double)hit->mem_used, 1);
	cw_chain_add_evidence(c, "mem_total_bytes", (double)hit->mem_total, 1);
	cw_chain_add_evidence(c, "mem_used_pct", pct, 0);
	cw_chain_add_evidence(c, "failed_allocations", (double)failed, 1);
	if (holder > 0)
		cw_chain_add_evidence(c, "top_holder_pid", (double)holder, 1);
	return 1;
}
