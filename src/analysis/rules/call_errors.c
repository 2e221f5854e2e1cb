/* call_errors: failing CUDA runtime, driver and NCCL calls as causes.
 * A failing call is fast, so no latency rule ever sees it; yet "no
 * CUDA-capable device" and "out of memory" are the first failures ML
 * engineers meet. Per process, the window's failing calls are grouped by
 * what a person does about them (gpu/call_errors.h families):
 *   device_oom  device memory exhausted (cudaErrorMemoryAllocation,
 *               CUDA_ERROR_OUT_OF_MEMORY), joined to the device's NVML
 *               memory state and its largest holders at the failure;
 *   nccl_error  a failing NCCL call;
 *   cuda_error  every other failing runtime or driver call.
 * Codes that report a state (cudaErrorNotReady from a query, ncclInProgress)
 * are not failures. Severity (docs/rules.md "Failing calls"): HIGH when the
 * process did not recover (no successful call of the op after its last
 * failure, or at least half its calls of the op failed), for NCCL failures
 * and for kernel faults (sticky: the context is lost); MEDIUM when it
 * recovered; LOW for a few (< CW_ERR_FEW) failures of the "other" family
 * that the process outlived. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "analysis/gpuctx.h"
#include "gpu/call_errors.h"
#include "store/layout.h"
#include "store/store.h"
#include "util/timeutil.h"

#define CW_ERR_FEW 10
#define MAX_GROUPS 64
#define MAX_CODES 4
#define MAX_OPS CW_CHAIN_MAX_FAILED_OPS

/* One op of a group: its failing calls and all its calls. */
struct err_op {
	char op[48];
	uint64_t failing, calls;
};

/* One (process, chain kind) group of failing calls. */
struct err_group {
	int64_t pid;
	enum cw_kind kind;
	enum cw_error_family family; /* of the dominant code */
	uint64_t failing, calls;      /* failing calls; all calls of the failing ops */
	uint64_t ok_after;            /* successful calls of those ops after the last failure */
	int64_t first_id, last_id, last_ok_id;
	int ok_folded_after;          /* a folded success in a second after the last failure's */
	uint64_t first_wall, last_wall;
	char op[48];                  /* the op with most failures */
	uint64_t op_failing;
	struct err_op ops[MAX_OPS];   /* the ops that failed */
	int nops;
	int device;
	struct {
		int64_t code;
		enum cw_error_api api;
		uint64_t n;
	} codes[MAX_CODES];
	int ncodes;
};

static enum cw_kind kind_of(enum cw_error_family f)
{
	if (f == CW_ERRF_OUT_OF_MEMORY)
		return CW_KIND_DEVICE_OOM;
	if (f >= CW_ERRF_NCCL_CUDA && f <= CW_ERRF_NCCL_REMOTE)
		return CW_KIND_NCCL_ERROR;
	return CW_KIND_CUDA_ERROR;
}

static struct err_group *group_of(struct err_group *g, int *ng, int64_t pid, enum cw_kind kind)
{
	for (int i = 0; i < *ng; i++)
		if (g[i].pid == pid && g[i].kind == kind)
			return &g[i];
	if (*ng >= MAX_GROUPS)
		return NULL;
	memset(&g[*ng], 0, sizeof(g[0]));
	g[*ng].pid = pid;
	g[*ng].kind = kind;
	g[*ng].device = -1;
	return &g[(*ng)++];
}

static void add_code(struct err_group *e, enum cw_error_api api, int64_t code, uint64_t n)
{
	int i;

	for (i = 0; i < e->ncodes; i++)
		if (e->codes[i].code == code && e->codes[i].api == api) {
			e->codes[i].n += n;
			break;
		}
	if (i == e->ncodes && e->ncodes < MAX_CODES) {
		e->codes[i].code = code;
		e->codes[i].api = api;
		e->codes[i].n = n;
		e->ncodes++;
	}
	/* The dominant code first. */
	for (; i > 0 && i < e->ncodes && e->codes[i].n > e->codes[i - 1].n; i--) {
		__typeof__(e->codes[0]) t = e->codes[i];
		e->codes[i] = e->codes[i - 1];
		e->codes[i - 1] = t;
	}
}

/* Per (pid, op, ret): the window's GPU calls grouped (read_rows). Rows of
 * an op that never failed for the pid are skipped after the pass. */
struct op_row {
	int64_t pid, code, n, min_id, max_id;
	uint64_t min_wall, max_wall;
	int device;
	char op[48];
};

/* One grouped pass over the window's GPU calls: the failing (non-zero)
 * returns only when failing_only, else every call of the ops named in
 * ops[0..nops) (of every op when nops is 0). */
static int grouped_rows(const struct cw_rule_ctx *ctx, int64_t lo, int64_t hi, int failing_only,
			char *const *ops, int nops, struct op_row **out, size_t *nout)
{
	char sql[1024];
	size_t len;
	sqlite3_stmt *st = NULL;
	size_t n = 0, cap = 0;
	struct op_row *v = NULL;
	int rc;

	*out = NULL;
	*nout = 0;
	len = (size_t)snprintf(sql, sizeof(sql), "%s",
			       "SELECT pid, op, coalesce(ret, 0), count(*), min(id), max(id), min(wall_ns), max(wall_ns),"
			       " max(device) FROM events WHERE id BETWEEN ?1 AND ?2 AND node = ?3"
			       " AND source IN ('cuda','driver','nccl','graph') AND (?4 = 0 OR pid = ?4)");
	if (failing_only)
		len += (size_t)snprintf(sql + len, sizeof(sql) - len, " AND ret <> 0");
	for (int i = 0; i < nops; i++)
		len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s?%d", i ? "," : " AND op IN (", 5 + i);
	snprintf(sql + len, sizeof(sql) - len, "%s GROUP BY pid, op, coalesce(ret, 0)", nops ? ")" : "");
	rc = sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, ctx->sys->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, ctx->opts->pid);
	for (int i = 0; i < nops; i++)
		sqlite3_bind_text(st, 5 + i, ops[i], -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *op = (const char *)sqlite3_column_text(st, 1);
		struct op_row *r;

		if (n == cap) {
			struct op_row *nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));
			if (!nv) {
				rc = SQLITE_NOMEM;
				break;
			}
			v = nv;
		}
		r = &v[n++];
		r->pid = sqlite3_column_int64(st, 0);
		snprintf(r->op, sizeof(r->op), "%s", op ? op : "?");
		r->code = sqlite3_column_int64(st, 2);
		r->n = sqlite3_column_int64(st, 3);
		r->min_id = sqlite3_column_int64(st, 4);
		r->max_id = sqlite3_column_int64(st, 5);
		r->min_wall = (uint64_t)sqlite3_column_int64(st, 6);
		r->max_wall = (uint64_t)sqlite3_column_int64(st, 7);
		r->device = sqlite3_column_type(st, 8) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 8);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE) {
		free(v);
		return cw_sqlite_errno(rc);
	}
	*out = v;
	*nout = n;
	return 0;
}

/* Appends to *v the successful calls of pid's op in ids [lo, hi]: one
 * row of code 0, as the grouping of every call would give (none when no
 * call succeeded). */
static int add_ok_row(const struct cw_rule_ctx *ctx, int64_t lo, int64_t hi, int64_t pid, const char *op,
		      struct op_row **v, size_t *n)
{
	const char *sql;
	sqlite3_stmt *st;
	struct op_row *nv, *r;
	int64_t ok = 0, last = 0;
	int rc;

	if ((rc = cw_store_op_read_sql(ctx->db, op, CW_OP_READ_CALL_TOTALS, &sql)) < 0)
		return rc;
	if ((rc = sqlite3_prepare_v2(ctx->db, sql, -1, &st, NULL)) != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, op, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, ctx->sys->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, pid);
	sqlite3_bind_int64(st, 4, lo);
	sqlite3_bind_int64(st, 5, hi);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		ok = sqlite3_column_int64(st, 1);
		last = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return cw_sqlite_errno(rc);
	if (!ok)
		return 0;
	if (!(nv = realloc(*v, (*n + 1) * sizeof(**v))))
		return -ENOMEM;
	*v = nv;
	r = &nv[(*n)++];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	snprintf(r->op, sizeof(r->op), "%s", op);
	r->n = ok;
	r->min_id = r->max_id = last;
	r->device = -1;
	return 0;
}

/* The failing calls are few and the window's calls can be an hour of
 * millions, most of them of the op that failed (a few failing launches
 * among every step's): a first pass groups the non-zero returns alone (no
 * row of a successful call reaches the grouping); then, per process and
 * op that failed, one count of its calls that succeeded reads the calls
 * table itself (CW_OP_READ_CALL_TOTALS: no join of the events view, no
 * grouping), the row of code 0 a grouping of every call would give. Rows
 * of the other ops make no group (build_groups), so the groups are those
 * of one pass over every call. */
static int read_rows(const struct cw_rule_ctx *ctx, struct op_row **out, size_t *nout)
{
	struct op_row *v;
	int64_t lo, hi;
	int all = 0, rc;
	size_t n, nfirst;

	*out = NULL;
	*nout = 0;
	if (cw_events_id_at(ctx->db, ctx->window_from_ns, &lo) || cw_events_id_at(ctx->db, ctx->window_to_ns + 1, &hi))
		return 0;
	if ((rc = grouped_rows(ctx, lo, hi, 1, NULL, 0, &v, &n)))
		return rc;
	/* A name as long as the row's buffer may be cut short: count every
	 * op's calls in one grouping instead. */
	for (size_t i = 0; i < n && !all; i++)
		all = cw_call_error_family(cw_error_api_of_op(v[i].op), v[i].code) != CW_ERRF_NONE &&
		      strlen(v[i].op) >= sizeof(v[i].op) - 1;
	if (all) {
		free(v);
		return grouped_rows(ctx, lo, hi, 0, NULL, 0, out, nout);
	}
	nfirst = n;
	for (size_t i = 0; i < nfirst && rc == 0; i++) {
		size_t j;

		if (cw_call_error_family(cw_error_api_of_op(v[i].op), v[i].code) == CW_ERRF_NONE)
			continue;
		/* Once per (pid, op): the first failing row of it. */
		for (j = 0; j < i; j++)
			if (v[j].pid == v[i].pid && !strcmp(v[j].op, v[i].op) &&
			    cw_call_error_family(cw_error_api_of_op(v[j].op), v[j].code) != CW_ERRF_NONE)
				break;
		if (j == i) {
			char op[sizeof(v[i].op)];

			/* v may move under the call. */
			snprintf(op, sizeof(op), "%s", v[i].op);
			rc = add_ok_row(ctx, lo, hi, v[i].pid, op, &v, &n);
		}
	}
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}

/* Groups the failing rows; then counts, per group, every call of the ops
 * that failed and the successes after the last failure. */
static int build_groups(const struct op_row *v, size_t n, struct err_group *g)
{
	int ng = 0;

	for (size_t i = 0; i < n; i++) {
		enum cw_error_api api = cw_error_api_of_op(v[i].op);
		enum cw_error_family f = cw_call_error_family(api, v[i].code);
		struct err_group *e;

		if (f == CW_ERRF_NONE || !(e = group_of(g, &ng, v[i].pid, kind_of(f))))
			continue;
		if (!e->failing || v[i].min_id < e->first_id) {
			e->first_id = v[i].min_id;
			e->first_wall = v[i].min_wall;
		}
		if (v[i].max_id > e->last_id) {
			e->last_id = v[i].max_id;
			e->last_wall = v[i].max_wall;
		}
		e->failing += (uint64_t)v[i].n;
		add_code(e, api, v[i].code, (uint64_t)v[i].n);
		e->family = cw_call_error_family(e->codes[0].api, e->codes[0].code);
		if (v[i].device >= 0)
			e->device = v[i].device;
	}
	for (int k = 0; k < ng; k++) {
		struct err_group *e = &g[k];

		/* Per op of the group: its failing calls, then all its calls. */
		for (size_t i = 0; i < n; i++) {
			enum cw_error_family f = cw_call_error_family(cw_error_api_of_op(v[i].op), v[i].code);
			int o;

			if (v[i].pid != e->pid || f == CW_ERRF_NONE || kind_of(f) != e->kind)
				continue;
			for (o = 0; o < e->nops && strcmp(e->ops[o].op, v[i].op); o++)
				;
			if (o == e->nops) {
				if (o == MAX_OPS)
					continue;
				snprintf(e->ops[e->nops++].op, sizeof(e->ops[0].op), "%s", v[i].op);
			}
			e->ops[o].failing += (uint64_t)v[i].n;
		}
		for (size_t j = 0; j < n; j++)
			for (int o = 0; o < e->nops; o++)
				if (v[j].pid == e->pid && !strcmp(e->ops[o].op, v[j].op)) {
					e->ops[o].calls += (uint64_t)v[j].n;
					if (!v[j].code && v[j].max_id > e->last_ok_id)
						e->last_ok_id = v[j].max_id;
				}
		for (int o = 0; o < e->nops; o++) {
			e->calls += e->ops[o].calls;
			if (e->ops[o].failing > e->op_failing) {
				e->op_failing = e->ops[o].failing;
				snprintf(e->op, sizeof(e->op), "%s", e->ops[o].op);
			}
		}
	}
	return ng;
}

/* Summary capture (trace's default) folds a process's fast successful
 * calls in the kernel into per-second counts (the folded table) and keeps
 * no row of them: the failing ops' calls in the window are their rows plus
 * their folded calls, else the failing share reads as if nearly every
 * call failed (and the latency chain of an op that mostly succeeds is
 * dropped as "mostly failing"). A folded success in a later second than
 * the last failure is a recovery. A file without the table has none. */
static int add_folded_calls(const struct cw_rule_ctx *ctx, struct err_group *g, int ng)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(ctx->db,
				    "SELECT total(count), max(second) FROM folded WHERE node = ?1 AND pid = ?2 AND op = ?3"
				    " AND second BETWEEN ?4 AND ?5",
				    -1, &st, NULL);

	if (rc != SQLITE_OK) {
		sqlite3_finalize(st);
		return strstr(sqlite3_errmsg(ctx->db), "no such table") ? 0 : cw_sqlite_errno(rc);
	}
	for (int k = 0; k < ng; k++) {
		struct err_group *e = &g[k];

		for (int o = 0; o < e->nops; o++) {
			sqlite3_reset(st);
			sqlite3_bind_text(st, 1, ctx->sys->node, -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 2, e->pid);
			sqlite3_bind_text(st, 3, e->ops[o].op, -1, SQLITE_STATIC);
			sqlite3_bind_int64(st, 4, (int64_t)(ctx->window_from_ns / NSEC_PER_SEC));
			sqlite3_bind_int64(st, 5, (int64_t)(ctx->window_to_ns / NSEC_PER_SEC));
			if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
				sqlite3_finalize(st);
				return cw_sqlite_errno(rc);
			}
			uint64_t folded = (uint64_t)sqlite3_column_double(st, 0);
			e->ops[o].calls += folded;
			e->calls += folded;
			if (folded && sqlite3_column_int64(st, 1) > (int64_t)(e->last_wall / NSEC_PER_SEC))
				e->ok_folded_after = 1;
		}
	}
	sqlite3_finalize(st);
	return 0;
}

static int recovered(const struct err_group *e)
{
	return e->last_ok_id > e->last_id || e->ok_folded_after;
}

static enum cw_severity group_severity(const struct err_group *e)
{

	if (e->kind == CW_KIND_NCCL_ERROR || e->family == CW_ERRF_KERNEL_FAULT)
		return CW_SEV_HIGH;
	if (!recovered(e) || 2 * e->failing >= e->calls)
		return CW_SEV_HIGH;
	if (e->family == CW_ERRF_OTHER && e->failing < CW_ERR_FEW)
		return CW_SEV_LOW;
	return CW_SEV_MEDIUM;
}

/* The thread, comm and Python line of the group's first failing call that
 * carries a Python stack (else its first failing call). */
static void load_site(sqlite3 *db, const char *node, const struct err_group *e, struct cw_chain *c, int64_t *req)
{
	sqlite3_stmt *st = NULL;

	*req = -1;
	if (sqlite3_prepare_v2(db,
			       "SELECT tid, comm, py_stack_id, arg1 FROM events WHERE id BETWEEN ?1 AND ?2 AND node = ?3"
			       " AND pid = ?4 AND op = ?5 AND ret = ?6 ORDER BY py_stack_id IS NULL, id LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, e->first_id);
	sqlite3_bind_int64(st, 2, e->last_id);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, e->pid);
	sqlite3_bind_text(st, 5, e->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, e->codes[0].code);
	if (sqlite3_step(st) == SQLITE_ROW) {
		const char *cm = (const char *)sqlite3_column_text(st, 1);

		c->tid = sqlite3_column_int64(st, 0);
		snprintf(c->comm, sizeof(c->comm), "%s", cm ? cm : "");
		if (sqlite3_column_type(st, 2) != SQLITE_NULL)
			cw_chain_load_python(db, c, sqlite3_column_int64(st, 2));
		if (cw_op_is_alloc(e->op) && sqlite3_column_type(st, 3) != SQLITE_NULL)
			*req = sqlite3_column_int64(st, 3);
	}
	sqlite3_finalize(st);
}

/* device_oom: what NVML saw on the device at the first failure (used of
 * total) and the processes holding the most of it. */
static void oom_join(const struct cw_rule_ctx *ctx, const struct err_group *e, struct cw_chain *c)
{
	const struct cw_gpuctx *g = ctx->sys->gpu;
	const struct cw_gsample *best = NULL;
	sqlite3_stmt *st = NULL;
	char held[256] = "";
	size_t len = 0;
	int n = 0;

	for (size_t i = 0; g && i < g->n; i++) {
		const struct cw_gsample *s = &g->v[i];
		if ((e->device < 0 || s->device == e->device) && s->wall <= e->first_wall + NSEC_PER_SEC &&
		    s->mem_total > 0 && (!best || s->wall > best->wall))
			best = s;
	}
	if (best) {
		double used = (double)best->mem_used / (double)best->mem_total;
		cw_chain_add_timeline(c, CW_LAYER_DRIVER, best->wall, "GPU %d: %.1f of %.1f GiB in use (%.0f %%)",
				      best->device, (double)best->mem_used / (1 << 30),
				      (double)best->mem_total / (1 << 30), used * 100);
		cw_chain_add_evidence(c, "device_mem_used_share", used, 0);
		cw_chain_add_evidence(c, "device_mem_used_bytes", (double)best->mem_used, 1);
		cw_chain_add_evidence(c, "device_mem_total_bytes", (double)best->mem_total, 1);
	}
	if (sqlite3_prepare_v2(ctx->db,
			       "SELECT p.pid, max(p.used_bytes) AS b, (SELECT comm FROM processes r WHERE r.node = p.node"
			       " AND r.pid = p.pid) FROM gpu_processes p WHERE p.node = ?1 AND (?2 < 0 OR p.device = ?2)"
			       " AND p.wall_ns BETWEEN ?3 AND ?4 GROUP BY p.pid ORDER BY b DESC LIMIT 3",
			       -1, &st, NULL) != SQLITE_OK)
		return; /* an older store without the GPU tables */
	sqlite3_bind_text(st, 1, ctx->sys->node, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 2, e->device);
	sqlite3_bind_int64(st, 3, (int64_t)(e->first_wall > 5 * NSEC_PER_SEC ? e->first_wall - 5 * NSEC_PER_SEC : 0));
	sqlite3_bind_int64(st, 4, (int64_t)(e->first_wall + NSEC_PER_SEC));
	while (sqlite3_step(st) == SQLITE_ROW && len < sizeof(held) - 1) {
		const char *cm = (const char *)sqlite3_column_text(st, 2);
		int64_t pid = sqlite3_column_int64(st, 0);

		len += (size_t)snprintf(held + len, sizeof(held) - len, "%spid %lld (%s%s) %.1f GiB", n++ ? ", " : "",
					(long long)pid, cm ? cm : "not traced", pid == e->pid ? ", itself" : "",
					(double)sqlite3_column_int64(st, 1) / (1 << 30));
		if (pid != e->pid)
			cw_chain_add_evidence(c, "other_holder_pid", (double)pid, 1);
	}
	sqlite3_finalize(st);
	if (n)
		cw_chain_add_timeline(c, CW_LAYER_DRIVER, e->first_wall, "largest holders of device memory: %s", held);
}

static void add_fixes(struct cw_chain *c, const struct err_group *e)
{
	const char *code = cw_call_error_name(e->codes[0].api, e->codes[0].code);

	switch (e->family) {
	case CW_ERRF_NO_DEVICE:
		if (code && (strstr(code, "StubLibrary") || strstr(code, "STUB_LIBRARY")))
			cw_chain_add_advice(c, "the process loaded the toolkit's stub libcuda.so (lib64/stubs): take the stubs "
					       "directory out of LD_LIBRARY_PATH");
		else if (code && (strstr(code, "InsufficientDriver") || strstr(code, "DriverMismatch") ||
				  strstr(code, "RequiresNewerDriver") || strstr(code, "DRIVER_MISMATCH")))
			cw_chain_add_advice(c, "no NVIDIA driver is loaded, or it is older than the CUDA runtime the program "
					       "uses: install or update the driver, or use a runtime no newer than the CUDA "
					       "version nvidia-smi reports");
		else
			cw_chain_add_advice(c, "in a container: run it with the NVIDIA runtime (docker --gpus all, Kubernetes "
					       "runtimeClassName: nvidia and a nvidia.com/gpu limit)");
		cw_chain_add_fix(c, "nvidia-smi -L  # the GPUs and driver this host sees");
		cw_chain_add_fix(c, "grep -E 'libcuda|nvidia' /proc/%lld/maps | awk '{print $6}' | sort -u", (long long)e->pid);
		cw_chain_add_fix(c, "tr '\\0' '\\n' < /proc/%lld/environ | grep -E '^(CUDA|NVIDIA)_VISIBLE_DEVICES='",
				 (long long)e->pid);
		break;
	case CW_ERRF_OUT_OF_MEMORY:
		cw_chain_add_fix(c, "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv");
		cw_chain_add_advice(c, "reduce the batch size or activation memory (gradient checkpointing, mixed precision)");
		cw_chain_add_advice(c, "fragmentation: start the job with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
		cw_chain_add_code(c, "print(torch.cuda.memory_summary())  # where the allocator's memory went");
		break;
	case CW_ERRF_KERNEL_FAULT:
		cw_chain_add_advice(c, "a kernel fault is sticky: the CUDA context is lost and the process must restart");
		cw_chain_add_advice(c, "rerun under compute-sanitizer --tool memcheck, with CUDA_LAUNCH_BLOCKING=1 to find "
				       "the faulting kernel");
		cw_chain_add_fix(c, "journalctl -k | grep -i xid  # a fault the driver logged");
		break;
	case CW_ERRF_NCCL_SYSTEM:
	case CW_ERRF_NCCL_REMOTE:
	case CW_ERRF_NCCL_INTERNAL:
		cw_chain_add_advice(c, "rerun with NCCL_DEBUG=WARN (or INFO) for NCCL's own reason; a remote or internal "
				       "error usually follows another rank's failure: look at the other ranks' chains");
		cw_chain_add_fix(c, "df -h /dev/shm  # NCCL's shared memory transport needs room here");
		cw_chain_add_fix(c, "ulimit -l  # registered memory (RDMA) needs a high memlock limit");
		break;
	case CW_ERRF_NCCL_CUDA:
		cw_chain_add_advice(c, "a CUDA call inside NCCL failed: rerun with NCCL_DEBUG=WARN and look for a CUDA error "
				       "chain of the same process");
		break;
	case CW_ERRF_NCCL_USAGE:
		cw_chain_add_advice(c, "NCCL was called with an invalid argument or out of order: the ranks must issue the "
				       "same collectives in the same order with matching counts and types");
		break;
	default:
		cw_chain_add_advice(c, "look up the code in the CUDA runtime API's error reference and check the call's "
				       "arguments at the line shown");
		break;
	}
}

/* "all" or "44 %": the share of calls that failed. */
static void format_share(uint64_t failing, uint64_t calls, char *buf, size_t len)
{
	if (failing == calls)
		snprintf(buf, len, "all");
	else
		snprintf(buf, len, "%.0f %%", 100.0 * (double)failing / (double)(calls ? calls : 1));
}

/* Most failures first: the headline names each op with its own count. */
static int by_failing(const void *a, const void *b)
{
	const struct err_op *x = a, *y = b;

	if (x->failing != y->failing)
		return x->failing < y->failing ? 1 : -1;
	return strcmp(x->op, y->op);
}

#define HEADLINE_OPS 4

/* "cudaMalloc failed 2000 times (all of 2000 calls), cudaStreamSynchronize
 * 1500 times (75 % of 2000 calls)": each failing op with its own count
 * and calls, never the group's sum under the first op's name; past
 * HEADLINE_OPS (and one more), the rest in one clause. */
static void format_ops(const struct err_group *e, char *buf, size_t size)
{
	struct err_op ops[MAX_OPS];
	uint64_t rest = 0;
	size_t len = 0;
	int n = e->nops;
	char share[16];

	memcpy(ops, e->ops, sizeof(ops[0]) * (size_t)n);
	qsort(ops, (size_t)n, sizeof(ops[0]), by_failing);
	buf[0] = '\0';
	for (int o = 0; o < n && len < size; o++) {
		if (o >= HEADLINE_OPS && n > HEADLINE_OPS + 1) {
			rest += ops[o].failing;
			continue;
		}
		format_share(ops[o].failing, ops[o].calls, share, sizeof(share));
		len += (size_t)snprintf(buf + len, size - len, "%s%s%s %llu time%s (%s of %llu calls)", o ? ", " : "",
					ops[o].op, o ? "" : " failed", (unsigned long long)ops[o].failing,
					ops[o].failing == 1 ? "" : "s", share, (unsigned long long)ops[o].calls);
	}
	if (rest && len < size)
		snprintf(buf + len, size - len, ", %d more ops %llu times", n - HEADLINE_OPS,
			 (unsigned long long)rest);
}

static void fill_chain(const struct cw_rule_ctx *ctx, const struct err_group *e, struct cw_chain *c)
{
	char first[40], last[40], codes[200] = "", ops[400];
	const char *name;
	int64_t req;
	size_t len = 0;

	memset(c, 0, sizeof(*c));
	c->kind = e->kind;
	c->rank = -1;
	c->culprit.cpu = -1;
	c->pid = e->pid;
	snprintf(c->op, sizeof(c->op), "%s", e->op);
	snprintf(c->source, sizeof(c->source), "%s",
		 e->kind == CW_KIND_NCCL_ERROR ? "nccl" : cw_error_api_of_op(e->op) == CW_ERR_API_DRIVER ? "driver" : "cuda");
	snprintf(c->node, sizeof(c->node), "%s", ctx->sys->node);
	c->count = e->calls;
	c->slow_count = e->failing;
	c->explained_share = 1; /* the failure is the finding */
	name = cw_call_error_name(e->codes[0].api, e->codes[0].code);
	load_site(ctx->db, ctx->sys->node, e, c, &req);
	cw_chain_fill_tenants(ctx->db, c);
	for (int i = 0; i < e->ncodes; i++) {
		char cname[64];
		cw_call_error_format(e->codes[i].api, e->codes[i].code, cname, sizeof(cname));
		len += (size_t)snprintf(codes + len, sizeof(codes) - len, "%s%s (%lld) x%llu", i ? ", " : "", cname,
					(long long)e->codes[i].code, (unsigned long long)e->codes[i].n);
		if (len >= sizeof(codes))
			break;
	}
	cw_format_time(e->first_wall, first, sizeof(first));
	cw_format_time(e->last_wall, last, sizeof(last));
	format_ops(e, ops, sizeof(ops));
	cw_chain_summary(c, "%s, %s: %s; first %s, last %s%s", ops, cw_error_family_text(e->family), codes, first,
			 last,
			 recovered(e)    ? "; later calls succeeded"
			 : e->nops > 1 ? "; no call of them succeeded after"
				       : "; no call of it succeeded after");
	if (req > 0) {
		len = strlen(c->summary);
		snprintf(c->summary + len, sizeof(c->summary) - len, "; the failing request was %.1f MiB",
			 (double)req / (1 << 20));
		cw_chain_add_evidence(c, "request_bytes", (double)req, 1);
	}
	cw_chain_add_timeline(c, cw_layer_of_source(c->source), e->first_wall, "first failure: %s returned %s (%lld)",
			      e->op, name ? name : "an unknown code", (long long)e->codes[0].code);
	if (e->last_wall != e->first_wall)
		cw_chain_add_timeline(c, cw_layer_of_source(c->source), e->last_wall, "last failure (%llu in all)",
				      (unsigned long long)e->failing);
	if (e->kind == CW_KIND_DEVICE_OOM)
		oom_join(ctx, e, c);
	add_fixes(c, e);
	cw_chain_add_evidence(c, "failing_calls", (double)e->failing, 1);
	cw_chain_add_evidence(c, "failing_share", (double)e->failing / (double)(e->calls ? e->calls : 1), 0);
	cw_chain_add_evidence(c, "error_code", (double)e->codes[0].code, 1);
	cw_chain_add_evidence(c, "error_codes", e->ncodes, 1);
	cw_chain_add_evidence(c, "recovered", recovered(e), 1);
	cw_chain_add_evidence(c, "severity_rank", 3 - (int)group_severity(e), 1);
	if (e->device >= 0)
		cw_chain_add_evidence(c, "device", e->device, 1);
	for (int o = 0; o < e->nops; o++) {
		snprintf(c->failed_ops[o].op, sizeof(c->failed_ops[o].op), "%s", e->ops[o].op);
		c->failed_ops[o].failing = e->ops[o].failing;
		c->failed_ops[o].calls = e->ops[o].calls;
		c->failed_ops[o].share = (double)e->ops[o].failing / (double)(e->ops[o].calls ? e->ops[o].calls : 1);
	}
	c->nfailed_ops = e->nops;
	c->error_code = e->codes[0].code;
	snprintf(c->error_name, sizeof(c->error_name), "%s", name ? name : "");
	snprintf(c->error_family, sizeof(c->error_family), "%s", cw_error_family_name(e->family));
}

static int by_severity_then_count(const void *a, const void *b)
{
	const struct err_group *x = a, *y = b;
	enum cw_severity sx = group_severity(x), sy = group_severity(y);

	if (sx != sy)
		return (int)sx - (int)sy;
	return x->failing < y->failing ? 1 : x->failing > y->failing ? -1 : 0;
}

int cw_rule_call_errors(const struct cw_rule_ctx *ctx, struct cw_chain *out)
{
	struct err_group g[MAX_GROUPS];
	struct op_row *v;
	size_t n;
	int ng, rc, k;

	if ((rc = read_rows(ctx, &v, &n)))
		return rc;
	ng = build_groups(v, n, g);
	free(v);
	if ((rc = add_folded_calls(ctx, g, ng)))
		return rc;
	qsort(g, (size_t)ng, sizeof(g[0]), by_severity_then_count);
	for (k = 0; k < ng && k < ctx->max_out; k++)
		fill_chain(ctx, &g[k], &out[k]);
	return k;
}
