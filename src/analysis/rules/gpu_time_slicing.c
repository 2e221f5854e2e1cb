/* gpu_time_slicing: a GPU-bound op (sync, memcpy, launch) is slow while
 * its thread stayed on CPU (< 40 % off-CPU), and another process issued
 * CUDA work on the same device during the slow calls: the GPU time-slices
 * between contexts (without MPS, contexts of different processes do not
 * run concurrently). explained_share = on-CPU slow time of calls that
 * overlapped foreign activity / slow-call time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/vec.h"

#define CW_SLICE_MAX_OFFCPU 0.4
#define CW_SLICE_MAX_ROWS 1000000

struct foreign {
	uint64_t start, end;
	int64_t pid;
	int device;
	double weight; /* of its overlap, when naming the culprit: 1 for a call */
	char comm[32];
};

static int foreign_cmp(const void *a, const void *b)
{
	const struct foreign *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

#define GPU_WORK_OPS                                                                                        \
	"('cudaLaunchKernel', 'cuLaunchKernel', 'cudaLaunchKernelExC', 'cuLaunchKernelEx',"                 \
	" 'cudaStreamSynchronize', 'cudaDeviceSynchronize', 'cuStreamSynchronize', 'cuCtxSynchronize',"     \
	" 'cudaMemcpy', 'cudaMemcpyAsync', 'cudaGraphLaunch', 'cuGraphLaunch')"

/* Summary capture (trace's default) folds a process's fast calls in the
 * kernel: a neighbour's launches are then per-second counts (the folded
 * table), not rows. A wall second in which another process's folded GPU
 * work ran on the device counts as foreign activity over that whole
 * second, its overlap weighted by the second's busy share (the calls'
 * summed time / 1 s) when the culprit is named. The device is that of the
 * process's threads (call_threads, set from its first calls, which are
 * kept whole); a process on no known device is not counted, so that the
 * ranks of a job, each on its own GPU, never blame each other. */
static int load_foreign_folded(const struct cw_rule_ctx *ctx, int device, uint64_t from, uint64_t to,
			       struct foreign **v, size_t *n, size_t *cap)
{
	static const char sql[] =
		"SELECT f.pid, f.second, total(f.sum_ns),"
		" (SELECT t.device FROM call_threads t WHERE t.node = f.node AND t.pid = f.pid AND t.device >= 0 LIMIT 1),"
		" (SELECT t.comm FROM call_threads t WHERE t.node = f.node AND t.pid = f.pid LIMIT 1)"
		" FROM folded f WHERE f.node = ?1 AND f.second BETWEEN ?2 AND ?3 AND f.op IN " GPU_WORK_OPS
		" GROUP BY f.pid, f.second";
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK) {
		sqlite3_finalize(st);
		/* An older file: no folded table, or none of its columns. */
		return strstr(sqlite3_errmsg(ctx->db), "no such") ? 0 : cw_sqlite_errno(rc);
	}
	sqlite3_bind_text(st, 1, ctx->st->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)(from / NSEC_PER_SEC));
	sqlite3_bind_int64(st, 3, (int64_t)(to / NSEC_PER_SEC));
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t wall = sqlite3_column_int64(st, 1) * (int64_t)NSEC_PER_SEC - ctx->sys->mono_to_wall;
		double busy = sqlite3_column_double(st, 2) / (double)NSEC_PER_SEC;
		const char *comm = (const char *)sqlite3_column_text(st, 4);
		int dev;

		if (sqlite3_column_type(st, 3) == SQLITE_NULL || wall < 0)
			continue;
		dev = sqlite3_column_int(st, 3);
		if (device >= 0 && dev != device)
			continue;
		if (cw_vec_reserve(v, cap, *n + 1, sizeof(**v), 64) < 0) {
			sqlite3_finalize(st);
			return -ENOMEM;
		}
		(*v)[*n].start = (uint64_t)wall;
		(*v)[*n].end = (uint64_t)wall + NSEC_PER_SEC;
		(*v)[*n].pid = sqlite3_column_int64(st, 0);
		(*v)[*n].device = dev;
		(*v)[*n].weight = busy < 1 ? busy : 1;
		snprintf((*v)[*n].comm, sizeof((*v)[*n].comm), "%s", comm ? comm : "");
		(*n)++;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* One scan of the slow calls' time range (by rowid: events has no time
 * index) for other work submitted to the GPU, and the folded seconds of
 * the same range. */
static int load_foreign(const struct cw_rule_ctx *ctx, int device, struct foreign **out, size_t *nout)
{
	static const char sql[] =
		"SELECT mono_ns, duration_ns, pid, comm, device FROM events WHERE id BETWEEN ?6 AND ?7"
		" AND op IN " GPU_WORK_OPS
		" AND node = ?1 AND wall_ns BETWEEN ?2 AND ?3 AND (?4 < 0 OR device = ?4) LIMIT ?5";
	struct foreign *v = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st = NULL;
	uint64_t from = ctx->calls[0].wall_ns - NSEC_PER_SEC;
	uint64_t to = ctx->calls[ctx->ncalls - 1].wall_ns + ctx->calls[ctx->ncalls - 1].dur_ns;
	int64_t lo, hi;
	int rc;

	if ((rc = cw_events_id_at(ctx->db, from, &lo)) < 0 ||
	    (rc = cw_events_id_at(ctx->db, to + 2 * NSEC_PER_SEC, &hi)) < 0)
		return rc;
	rc = sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, ctx->st->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, (int64_t)from);
	sqlite3_bind_int64(st, 3, (int64_t)to);
	sqlite3_bind_int(st, 4, device);
	sqlite3_bind_int64(st, 5, CW_SLICE_MAX_ROWS);
	sqlite3_bind_int64(st, 6, lo);
	sqlite3_bind_int64(st, 7, hi);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (cw_vec_reserve(&v, &cap, n + 1, sizeof(*v), 1024) < 0) {
			free(v);
			sqlite3_finalize(st);
			return -ENOMEM;
		}
		const char *comm = (const char *)sqlite3_column_text(st, 3);
		v[n].start = (uint64_t)sqlite3_column_int64(st, 0);
		v[n].end = v[n].start + (uint64_t)sqlite3_column_int64(st, 1);
		v[n].pid = sqlite3_column_int64(st, 2);
		v[n].device = sqlite3_column_type(st, 4) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 4);
		v[n].weight = 1;
		snprintf(v[n].comm, sizeof(v[n].comm), "%s", comm ? comm : "");
		n++;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return cw_sqlite_errno(rc);
	}
	if ((rc = load_foreign_folded(ctx, device, from, to, &v, &n, &cap)) < 0) {
		free(v);
		return rc;
	}
	if (n)
		qsort(v, n, sizeof(*v), foreign_cmp);
	*out = v;
	*nout = n;
	return 0;
}

int cw_rule_gpu_time_slicing(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	char head[128];
	struct foreign *fv = NULL;
	size_t nf = 0, j = 0;
	uint64_t sliced = 0, best_ns = 0, maxlen = 0;
	int64_t best_pid = 0;
	char best_comm[32] = "";
	int device = -1, ret;
	double offshare, share;
	struct {
		int64_t pid;
		uint64_t ns;
		int device;
		char comm[32];
	} who[8];
	size_t nwho = 0;

	if (!ctx->slow_time_ns || !(cw_op_is_sync(c->op) || cw_op_is_memcpy(c->op) || cw_op_is_launch(c->op)))
		return 0;
	offshare = (double)(ctx->preempted_ns + ctx->blocked_ns) / (double)ctx->slow_time_ns;
	if (offshare >= CW_SLICE_MAX_OFFCPU)
		return 0;
	/* One device for the whole scan when the slow calls share it; calls on
	 * several devices (ranks of one job, each on its own GPU) scan them all
	 * and each call is matched against work on its own device below. */
	for (size_t i = 0; i < ctx->ncalls; i++) {
		int d = ctx->calls[i].device;
		if (d < 0 || d == device)
			continue;
		if (device >= 0) {
			device = -1;
			break;
		}
		device = d;
	}
	if ((ret = load_foreign(ctx, device, &fv, &nf)) < 0)
		return ret;
	for (size_t i = 0; i < nf; i++)
		if (fv[i].end - fv[i].start > maxlen)
			maxlen = fv[i].end - fv[i].start;
	for (size_t i = 0; i < ctx->ncalls; i++) {
		const struct cw_slowcall *s = &ctx->calls[i];
		uint64_t b = s->mono_ns, e = b + s->dur_ns;
		uint64_t from = b > maxlen ? b - maxlen : 0;
		int hit = 0;
		while (j < nf && fv[j].start < from)
			j++;
		for (size_t k = j; k < nf && fv[k].start < e; k++) {
			/* Only another process's work on the same GPU slices it: never
			 * the chain's own process, never a device the call did not use. */
			if (fv[k].pid == s->pid || fv[k].pid == c->pid || fv[k].end <= b)
				continue;
			if (s->device >= 0 && fv[k].device >= 0 && fv[k].device != s->device)
				continue;
			uint64_t o = cw_overlap(fv[k].start, fv[k].end, b, e);
			size_t p;
			hit = 1;
			for (p = 0; p < nwho && who[p].pid != fv[k].pid; p++)
				;
			if (p == nwho && nwho < 8) {
				who[nwho].pid = fv[k].pid;
				who[nwho].ns = 0;
				who[nwho].device = fv[k].device >= 0 ? fv[k].device : s->device;
				snprintf(who[nwho].comm, sizeof(who[nwho].comm), "%s", fv[k].comm);
				nwho++;
			}
			if (p < nwho) {
				uint64_t w = (uint64_t)((double)(o ? o : 1) * fv[k].weight);
				who[p].ns += w ? w : 1;
			}
		}
		if (hit)
			sliced += s->dur_ns - s->preempted_ns - s->blocked_ns;
	}
	free(fv);
	if (!sliced)
		return 0;
	for (size_t p = 0; p < nwho; p++)
		if (who[p].ns > best_ns) {
			best_ns = who[p].ns;
			best_pid = who[p].pid;
			device = who[p].device;
			snprintf(best_comm, sizeof(best_comm), "%s", who[p].comm);
		}
	share = (double)sliced / (double)ctx->slow_time_ns;
	c->kind = CW_KIND_GPU_TIME_SLICING;
	c->explained_share = share;
	c->culprit.known = best_pid != 0;
	snprintf(c->culprit.comm, sizeof(c->culprit.comm), "%s", best_comm);
	c->culprit.pid = best_pid;
	c->culprit.cpu = -1;
	c->culprit.overlap_ns = best_ns;
	cw_chain_headline(c, head, sizeof(head));
	snprintf(c->summary, sizeof(c->summary),
		 "%s: thread %lld (%s) stayed on CPU (%.0f %% off-CPU) while %s (pid %lld) ran CUDA work on"
		 " GPU %d during %.0f %% of its slow calls' time: the GPU is time-sliced between processes",
		 head, (long long)c->tid, c->comm, offshare * 100, best_comm, (long long)best_pid,
		 device < 0 ? 0 : device, share * 100);
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), ctx->calls[0].wall_ns,
			      "pid %lld (%s) launches and syncs on GPU %d interleave with the slow calls",
			      (long long)best_pid, best_comm, device < 0 ? 0 : device);
	cw_chain_add_timeline(c, CW_LAYER_HOST, ctx->calls[0].wall_ns,
			      "thread %lld off-CPU only %.0f %% of slow time", (long long)c->tid, offshare * 100);
	cw_chain_add_fix(c, "nvidia-smi -i %d -c EXCLUSIVE_PROCESS", device < 0 ? 0 : device);
	cw_chain_add_fix(c, "nvidia-cuda-mps-control -d  # share the GPU through MPS instead of time slicing");
	if (best_pid > 0)
		cw_chain_add_advice(c, "move pid %lld to another GPU (CUDA_VISIBLE_DEVICES) or a MIG slice", (long long)best_pid);
	cw_chain_add_evidence(c, "offcpu_share", offshare, 0);
	cw_chain_add_evidence(c, "sliced_ns", (double)sliced, 1);
	cw_chain_add_evidence(c, "foreign_pids", (double)nwho, 1);
	cw_chain_add_evidence(c, "device", device, 1);
	return 1;
}
