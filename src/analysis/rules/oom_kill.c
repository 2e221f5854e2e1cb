/* oom_kill: the kernel's OOM killer (global, or a memory cgroup at its
 * limit: memory.max on cgroup v2, memory.limit_in_bytes on v1) killed a
 * traced process, or a neighbour: a process in the cgroup of a traced
 * one, or a victim chosen while a traced process allocated. The kill is
 * read from mem.bpf.c's oom_kill events (index events_oom, or through
 * the aggregates; never a scan): the victim, its RSS and its cgroup's
 * limit. The 30 s before it give the victim's allocation trend: its page
 * allocations (index events_pagealloc, or that rowid range) and its
 * host-side CUDA allocations (pinned or managed: device memory never
 * counts toward a host OOM), newest first, at most 256 and a bounded scan;
 * the newest gives the Python line. One chain per kill, at most 4;
 * always HIGH. explained_share = 1; its time is the victim's run time in
 * the window lost to the kill. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "store/store.h"
#include "util/timeutil.h"

#define CW_OOM_TREND_NS (30 * NSEC_PER_SEC)
#define CW_OOM_RECENT_NS (10 * NSEC_PER_SEC)
/* A limit this large is "max" (PAGE_COUNTER_MAX pages). */
#define CW_OOM_NO_LIMIT (1ULL << 60)

struct trend {
	uint64_t pages_recent, pages_before; /* last 10 s, the 20 s before */
	uint64_t cuda_bytes, cuda_calls;
	char last_op[48];
	int64_t last_py; /* py_stacks.id of the newest allocation call, 0 none */
	uint64_t last_wall, oldest_alloc_wall;
	int truncated; /* the allocation scan hit its step budget */
};

/* Whether the kill concerns the traced processes of the node; sets
 * *neighbour when only through a cgroup or the allocating task. */
static int traced_kill(sqlite3 *db, const char *node, const struct cw_rare_event *k, int64_t victim, int *neighbour)
{
	sqlite3_stmt *st = NULL;
	int rc, hit = 0;

	*neighbour = 0;
	rc = sqlite3_prepare_v2(db,
				"SELECT pid = ?2 FROM processes WHERE node = ?1 AND"
				" (pid = ?2 OR pid = ?3 OR (?4 != 0 AND cgroup_id = ?4)) ORDER BY pid = ?2 DESC LIMIT 1",
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, victim);
	sqlite3_bind_int64(st, 3, k->pid);
	sqlite3_bind_int64(st, 4, (int64_t)k->cgroup_id);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		hit = 1;
		*neighbour = !sqlite3_column_int(st, 0);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	return hit;
}

/* SQLite VM steps one scan of the trend may take (about 2 million rows
 * of events): a dense store is cut short rather than read for seconds. */
#define CW_OOM_SCAN_STEPS 20000000
#define CW_OOM_MAX_ALLOCS 256

static int stop_scan(void *arg)
{
	return ++*(int *)arg > CW_OOM_SCAN_STEPS / 1000;
}

/* ?1-?6 of the victim's scans: its id range, node, pid and wall range. */
static void bind_victim(sqlite3_stmt *st, int64_t lo, int64_t hi, const char *node, int64_t victim, uint64_t from,
			uint64_t kill_wall)
{
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, victim);
	sqlite3_bind_int64(st, 5, (int64_t)from);
	sqlite3_bind_int64(st, 6, (int64_t)kill_wall);
}

/* The victim's host page allocations in the 30 s before the kill: an index
 * seek on events_pagealloc (schema v3), or the rowid range of the 30 s. */
static int load_pages(sqlite3 *db, const char *node, int64_t victim, uint64_t from, uint64_t kill_wall,
		      int64_t lo, int64_t hi, struct trend *t)
{
	static const char idx_sql[] =
		"SELECT wall_ns, arg0 FROM kevents WHERE op = 'page_alloc' AND node = ?3 AND pid = ?4"
		" AND wall_ns BETWEEN ?5 AND ?6 AND ?1 <= ?2";
	static const char scan_sql[] =
		"SELECT wall_ns, arg0 FROM kevents WHERE id BETWEEN ?1 AND ?2 AND op = 'page_alloc' AND node = ?3"
		" AND pid = ?4 AND wall_ns BETWEEN ?5 AND ?6";
	sqlite3_stmt *st = NULL;
	int has = cw_events_has_index(db, "events_pagealloc"), rc;

	if (has < 0)
		return has;
	rc = sqlite3_prepare_v2(db, has ? idx_sql : scan_sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	bind_victim(st, lo, hi, node, victim, from, kill_wall);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t w = (uint64_t)sqlite3_column_int64(st, 0), pages = (uint64_t)sqlite3_column_int64(st, 1);
		if (w + CW_OOM_RECENT_NS >= kill_wall)
			t->pages_recent += pages;
		else
			t->pages_before += pages;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* The victim's pinned and managed CUDA allocation calls, newest first from the kill back to
 * 30 s before it: at most CW_OOM_MAX_ALLOCS calls and CW_OOM_SCAN_STEPS
 * VM steps (a progress handler interrupts the scan). */
static int load_allocs(sqlite3 *db, const char *node, int64_t victim, uint64_t from, uint64_t kill_wall,
		       int64_t lo, int64_t hi, struct trend *t)
{
	static const char sql[] =
		"SELECT op, wall_ns, bytes, py_stack_id FROM events WHERE id BETWEEN ?1 AND ?2 AND node = ?3"
		" AND pid = ?4 AND wall_ns BETWEEN ?5 AND ?6 AND source IN ('cuda', 'driver') ORDER BY id DESC";
	sqlite3_stmt *st = NULL;
	int rc, ticks = 0;

	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	bind_victim(st, lo, hi, node, victim, from, kill_wall);
	sqlite3_progress_handler(db, 1000, stop_scan, &ticks);
	while (t->cuda_calls < CW_OOM_MAX_ALLOCS && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *op = (const char *)sqlite3_column_text(st, 0);
		uint64_t w = (uint64_t)sqlite3_column_int64(st, 1);
		/* Device memory never counts toward a host OOM: only pinned
		 * host allocations and managed memory (which pages on the host). */
		if (!op || !(cw_op_is_host_alloc(op) || strstr(op, "Managed")))
			continue;
		t->cuda_calls++;
		t->cuda_bytes += (uint64_t)sqlite3_column_int64(st, 2);
		if (w >= t->last_wall) {
			t->last_wall = w;
			snprintf(t->last_op, sizeof(t->last_op), "%s", op);
		}
		/* Python stacks are taken for slow calls only (trace
		 * --py-stacks): the newest call that has one. */
		if (!t->last_py && sqlite3_column_int64(st, 3) > 0)
			t->last_py = sqlite3_column_int64(st, 3);
		if (t->oldest_alloc_wall == 0 || w < t->oldest_alloc_wall)
			t->oldest_alloc_wall = w;
	}
	sqlite3_progress_handler(db, 0, NULL, NULL);
	sqlite3_finalize(st);
	if (rc == SQLITE_INTERRUPT)
		t->truncated = 1;
	return rc == SQLITE_DONE || rc == SQLITE_ROW || rc == SQLITE_INTERRUPT ? 0 : cw_sqlite_errno(rc);
}

static int load_trend(sqlite3 *db, const char *node, int64_t victim, uint64_t kill_wall, struct trend *t)
{
	uint64_t from = kill_wall > CW_OOM_TREND_NS ? kill_wall - CW_OOM_TREND_NS : 0;
	int64_t lo, hi;
	int ret;

	memset(t, 0, sizeof(*t));
	if ((ret = cw_events_id_at(db, from, &lo)) < 0 || (ret = cw_events_id_at(db, kill_wall + 2 * NSEC_PER_SEC, &hi)) < 0)
		return ret;
	if ((ret = load_pages(db, node, victim, from, kill_wall, lo, hi, t)) < 0)
		return ret;
	return load_allocs(db, node, victim, from, kill_wall, lo, hi, t);
}

/* When the victim started (wall ns), 0 unknown. */
static uint64_t victim_start(sqlite3 *db, const char *node, int64_t pid, int *rank)
{
	sqlite3_stmt *st = NULL;
	uint64_t v = 0;

	*rank = -1;
	if (sqlite3_prepare_v2(db, "SELECT start_wall_ns, rank FROM processes WHERE node = ?1 AND pid = ?2", -1, &st,
			       NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, pid);
	if (sqlite3_step(st) == SQLITE_ROW) {
		v = (uint64_t)sqlite3_column_int64(st, 0);
		if (sqlite3_column_type(st, 1) != SQLITE_NULL)
			*rank = sqlite3_column_int(st, 1);
	}
	sqlite3_finalize(st);
	return v;
}

static void fill(sqlite3 *db, const struct cw_sysctx *sys, const struct cw_rare_event *k, int neighbour,
		 const struct trend *t, uint64_t from_wall, int nkills, struct cw_chain *c)
{
	int64_t victim = k->arg[2];
	uint64_t rss = (uint64_t)(k->arg[0] > 0 ? k->arg[0] : 0) * 4096, limit = (uint64_t)(k->arg[1] > 0 ? k->arg[1] : 0);
	uint64_t start, lost;
	double recent = (double)t->pages_recent * 4096 / (1 << 20); /* MiB in the last 10 s */
	double before = (double)t->pages_before * 4096 / (1 << 20); /* MiB in the 20 s before */
	char lim[64], cause[96], host_calls[128] = "";

	memset(c, 0, sizeof(*c));
	c->kind = CW_KIND_OOM_KILL;
	snprintf(c->op, sizeof(c->op), "oom_kill");
	snprintf(c->source, sizeof(c->source), "mem");
	snprintf(c->node, sizeof(c->node), "%s", sys->node);
	c->culprit.cpu = -1;
	c->count = (uint64_t)nkills;
	c->slow_count = 1;
	c->explained_share = 1;
	start = victim_start(db, sys->node, victim, &c->rank);
	if (start < from_wall)
		start = from_wall;
	lost = k->wall_ns > start ? k->wall_ns - start : 0;
	c->slow_time_ns = c->explained_ns = lost;
	c->pid = c->tid = victim;
	snprintf(c->comm, sizeof(c->comm), "%.31s", k->detail[0] ? k->detail : "?");
	if (limit && limit < CW_OOM_NO_LIMIT)
		snprintf(lim, sizeof(lim), "its cgroup's limit %.0f MiB", (double)limit / (1 << 20));
	else
		snprintf(lim, sizeof(lim), "no cgroup limit recorded (host memory exhausted)");
	snprintf(cause, sizeof(cause), "%s", neighbour ? " (a neighbour of the traced processes)" : "");
	if (t->cuda_calls)
		snprintf(host_calls, sizeof(host_calls), " and %.0f MiB through %llu pinned or managed host allocation calls%s",
			 (double)t->cuda_bytes / (1 << 20), (unsigned long long)t->cuda_calls,
			 t->cuda_calls >= CW_OOM_MAX_ALLOCS || t->truncated ? " (the latest ones)" : "");
	cw_chain_summary(c,
		 "oom_kill: the kernel OOM killer killed pid %lld (%s)%s with RSS %.0f MiB, %s; allocation by"
		 " pid %lld (%s) triggered it; in the 10 s before, the victim allocated %.0f MiB of host pages"
		 " (%.0f MiB in the 20 s before)%s",
		 (long long)victim, c->comm, cause, (double)rss / (1 << 20), lim, (long long)k->pid, k->comm, recent,
		 before, host_calls);
	if (t->last_py > 0)
		cw_chain_load_python(db, c, t->last_py);
	if (before > 0 && k->wall_ns > 20 * NSEC_PER_SEC)
		cw_chain_add_timeline(c, CW_LAYER_SYSTEM, k->wall_ns - 20 * NSEC_PER_SEC,
				      "victim allocating host pages: %.0f MiB over the next 20 s", before);
	if (recent > 0)
		cw_chain_add_timeline(c, CW_LAYER_SYSTEM, k->wall_ns - (k->wall_ns > 10 * NSEC_PER_SEC ? 10 * NSEC_PER_SEC : 0),
				      "victim allocating host pages: %.0f MiB in the last 10 s (%.1f MiB/s)", recent,
				      recent / 10);
	if (t->last_wall)
		cw_chain_add_timeline(c, CW_LAYER_CUDA, t->last_wall, "last host allocation call before the kill: %s",
				      t->last_op);
	if (c->has_python)
		cw_chain_add_timeline(c, CW_LAYER_PYTHON, t->last_wall, "last host allocation from %s() at %s:%d",
				      c->py_function, c->py_file, c->py_line);
	cw_chain_add_timeline(c, CW_LAYER_SYSTEM, k->wall_ns, "OOM kill of pid %lld (%s), RSS %.0f MiB%s",
			      (long long)victim, c->comm, (double)rss / (1 << 20),
			      limit && limit < CW_OOM_NO_LIMIT ? " at its cgroup limit" : "");
	if (limit && limit < CW_OOM_NO_LIMIT)
		cw_chain_add_advice(c, "raise the container's memory limit above %.0f MiB (memory.max on cgroup v2, memory.limit_in_bytes on v1, resources.limits.memory in Kubernetes)",
				 (double)rss * 1.5 / (1 << 20));
	else
		cw_chain_add_advice(c, "give the job a memory limit it fits in, or move other tenants off the node; dmesg | grep -i 'killed process'");
	cw_chain_add_advice(c, "lower host memory per step: DataLoader(num_workers=2, prefetch_factor=2, persistent_workers=False); each worker holds its own copy of the dataset object");
	cw_chain_add_advice(c, "drop references every step: accumulate loss.item(), not loss; del outputs before the next batch");
	cw_chain_add_fix(c, "python -X tracemalloc=25 train.py  # or tracemalloc.take_snapshot() every N steps to find what grows");
	if (victim > 0)
		cw_chain_add_fix(c, "cat /proc/%lld/status | grep -E 'VmRSS|VmHWM'  # watch the next run grow", (long long)victim);
	cw_chain_add_evidence(c, "victim_pid", (double)victim, 1);
	cw_chain_add_evidence(c, "victim_rss_bytes", (double)rss, 1);
	cw_chain_add_evidence(c, "cgroup_limit_bytes", limit < CW_OOM_NO_LIMIT ? (double)limit : 0, 1);
	cw_chain_add_evidence(c, "trigger_pid", (double)k->pid, 1);
	cw_chain_add_evidence(c, "host_alloc_mib_last_10s", recent, 0);
	cw_chain_add_evidence(c, "host_alloc_mib_10_to_30s", before, 0);
	cw_chain_add_evidence(c, "cuda_host_alloc_bytes_30s", (double)t->cuda_bytes, 1);
	cw_chain_add_evidence(c, "neighbour", neighbour, 1);
	cw_chain_add_evidence(c, "kills", nkills, 1);
}

int cw_rule_oom_kill(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	sqlite3 *db = ctx->db;
	const struct cw_explain_opts *o = ctx->opts;
	const struct cw_sysctx *sys = ctx->sys;
	struct cw_rare_event *k = NULL;
	int n, out = 0, ret = 0;

	n = cw_rare_events_load(db, sys->node, "mem", "oom_kill", ctx->window_from_ns, ctx->window_to_ns, 64,
				&k);
	if (n <= 0)
		return n;
	for (int i = 0; i < n && out < ctx->max_out; i++) {
		int64_t victim = k[i].arg[2];
		struct trend t;
		int neighbour;

		if (o->pid && victim != o->pid && k[i].pid != o->pid)
			continue;
		ret = traced_kill(db, sys->node, &k[i], victim, &neighbour);
		if (ret < 0)
			break;
		if (!ret)
			continue;
		if ((ret = load_trend(db, sys->node, victim, k[i].wall_ns, &t)) < 0)
			break;
		fill(db, sys, &k[i], neighbour, &t, ctx->window_from_ns, n, &c[out++]);
		ret = 0;
	}
	free(k);
	return ret < 0 ? ret : out;
}
