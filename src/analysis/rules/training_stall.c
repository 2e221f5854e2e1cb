/* training_stall: a process that made GPU calls at a steady rhythm made
 * none for longer than max(10 x its step, 30 s) while alive: from the
 * start of its last call to the end of the data or its exit, or between
 * two calls (a stall that resumed). Silence runs from a call's start, so
 * a call that never returns is a stall too. The step is the slowest
 * steady rhythm among its ops (gpu/stall.h, shared with trace's live
 * detector).
 * When trace named the stall live, its event (source 'stall') carries
 * every thread's state at that moment (syscall, what it waits on, wchan,
 * Python line) and its threshold; otherwise the chain reads the silent
 * thread's off-CPU intervals after its last call. The longest stall of
 * the node is the chain; explained_share is 1 (the silence is the
 * finding). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/rules/rules.h"
#include "analysis/thread_states.h"
#include "gpu/stall.h"
#include "gpu/threadstate.h"
#include "store/store.h"
#include "util/timeutil.h"

#define SCAN_MAX_ROWS 2000000
#define MAX_PIDS 64
/* Newest calls kept per process: enough of each op for its rhythm. */
#define CALLS_PER_OP (CW_STALL_GAPS + 1)
#define CALLS_PER_PID (CW_STALL_OPS * CALLS_PER_OP)

struct pcall {
	char op[48];
	char source[16];
	int64_t tid;
	uint64_t mono, dur, wall;
};

struct pidscan {
	int64_t pid;
	char comm[32];
	struct pcall calls[CALLS_PER_PID]; /* newest first */
	int n;
	char ops[CW_STALL_OPS][48];
	int op_n[CW_STALL_OPS], nops;
	/* Rows per op in its newest CW_STALL_SECS wall seconds (summary
	 * capture's rhythm, with the folded table). */
	struct {
		int64_t sec;
		uint32_t rows;
	} secs[CW_STALL_OPS][CW_STALL_SECS];
	uint64_t total; /* GPU calls scanned */
	uint64_t exit_wall;
	int64_t stall_event; /* events.id of a live-detected stall, 0 none */
	int64_t threads_event; /* events.id of the end-of-trace thread states, 0 none */
	/* The longest silence between two calls of the scan (start to start). */
	uint64_t next_start, gap_ns;
	struct pcall gap_call; /* the call before that silence */
};

static struct pidscan *pid_get(struct pidscan *v, int *n, int64_t pid)
{
	for (int i = 0; i < *n; i++)
		if (v[i].pid == pid)
			return &v[i];
	if (*n == MAX_PIDS)
		return NULL;
	memset(&v[*n], 0, sizeof(v[0]));
	v[*n].pid = pid;
	return &v[(*n)++];
}

static int is_gpu_source(const char *s)
{
	return s && (!strcmp(s, "cuda") || !strcmp(s, "driver") || !strcmp(s, "nccl") || !strcmp(s, "graph"));
}

struct scan_arg {
	struct pidscan *v;
	int *n;
};

static void scan_row(const struct cw_scan_row *r, struct pidscan *v, int *n);

static void scan_one(const struct cw_scan_row *r, void *arg)
{
	struct scan_arg *a = arg;

	scan_row(r, a->v, a->n);
}

/* Newest GPU calls per process, exits and live stall events, reading the
 * window backwards by rowid. */
static int scan(sqlite3 *db, const char *node, int64_t lo, int64_t hi, struct pidscan *v, int *n)
{
	struct scan_arg a = { v, n };

	return cw_events_scan_back(db, node, lo, hi, SCAN_MAX_ROWS, scan_one, &a);
}

/* One row of scan(), newest first. */
static void scan_row(const struct cw_scan_row *r, struct pidscan *v, int *n)
{
	{
		const char *src = r->source;
		const char *op = r->op;
		int64_t pid = r->pid;
		struct pidscan *p;

		if (!src || !op || pid <= 0)
			return;
		if (!strcmp(src, "proc")) {
			if (!strcmp(op, "exit") && (p = pid_get(v, n, pid)) && !p->exit_wall)
				p->exit_wall = r->wall;
			return;
		}
		if (!strcmp(src, "stall")) {
			if ((p = pid_get(v, n, pid)) && !p->stall_event)
				p->stall_event = r->id;
			return;
		}
		if (!strcmp(src, "threads")) {
			if (!strcmp(op, "end_of_trace") && (p = pid_get(v, n, pid)) && !p->threads_event)
				p->threads_event = r->id;
			return;
		}
		if (!is_gpu_source(src) || !(p = pid_get(v, n, pid)))
			return;
		{
			struct pcall tmp, *k = &tmp;
			const char *cm = r->comm;
			int oi;

			for (oi = 0; oi < p->nops && strcmp(p->ops[oi], op); oi++)
				;
			if (oi == p->nops && oi < CW_STALL_OPS)
				snprintf(p->ops[p->nops++], sizeof(p->ops[0]), "%s", op);
			if (oi < p->nops && r->wall) {
				int64_t sec = (int64_t)(r->wall / NSEC_PER_SEC);
				unsigned si = (unsigned)((uint64_t)sec % CW_STALL_SECS);

				/* Newest first: a slot keeps its newest second. */
				if (!p->secs[oi][si].sec) {
					p->secs[oi][si].sec = sec;
					p->secs[oi][si].rows = 0;
				}
				if (p->secs[oi][si].sec == sec)
					p->secs[oi][si].rows++;
			}
			if (oi < p->nops && p->op_n[oi] < CALLS_PER_OP && p->n < CALLS_PER_PID) {
				k = &p->calls[p->n++];
				p->op_n[oi]++;
			}
			p->total++;
			snprintf(k->op, sizeof(k->op), "%s", op);
			snprintf(k->source, sizeof(k->source), "%s", src);
			k->tid = r->tid;
			k->mono = r->mono;
			k->dur = r->dur;
			k->wall = r->wall;
			if (!p->comm[0])
				snprintf(p->comm, sizeof(p->comm), "%s", cm ? cm : "");
			/* Rows come newest first: the silence after this call
			 * ends at the start of the one scanned before. */
			if (p->next_start > k->wall && p->next_start - k->wall > p->gap_ns) {
				p->gap_ns = p->next_start - k->wall;
				p->gap_call = *k;
			}
			if (!p->next_start || k->wall < p->next_start)
				p->next_start = k->wall;
		}
	}
}

static int node_end(sqlite3 *db, const char *node, uint64_t to_wall, uint64_t *end)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT max(second) FROM aggregates WHERE node = ?1", -1, &st, NULL);

	*end = to_wall;
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		uint64_t e = (uint64_t)(cw_clamp_second(sqlite3_column_int64(st, 0)) + 1) * NSEC_PER_SEC;
		if (e < *end)
			*end = e;
	}
	sqlite3_finalize(st);
	return 0;
}

/* A stored event's detail (NULL when none): the live stall's or the
 * end-of-trace thread states'; *mono: when it was taken. */
static json_t *event_detail(sqlite3 *db, int64_t id, uint64_t *mono)
{
	sqlite3_stmt *st = NULL;
	json_t *d = NULL;

	if (mono)
		*mono = 0;
	if (!id || sqlite3_prepare_v2(db, "SELECT detail, mono_ns FROM kevents WHERE id = ?1", -1, &st, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT) {
		d = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
		if (mono)
			*mono = (uint64_t)sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return d;
}

static json_t *stall_detail(sqlite3 *db, int64_t id)
{
	return event_detail(db, id, NULL);
}

/* Every thread's state from a stored detail into the chain (the silent
 * thread first), runnable ones judged starved from their off-CPU rows. */
static void chain_threads(sqlite3 *db, const char *node, const json_t *d, uint64_t mono, const char *from,
			  struct cw_chain *c)
{
	c->nthreads = cw_threads_from_detail(d, c->tid, c->threads, CW_CHAIN_MAX_THREADS, &c->nthreads_total);
	if (c->nthreads > 0) {
		snprintf(c->threads_from, sizeof(c->threads_from), "%s", from);
		(void)cw_threads_mark_starved(db, node, mono, c->threads, c->nthreads);
	}
}

/* Off-CPU time of tid after mono (blocked, preempted), from the
 * (tid, start) index. */
static void offcpu_after(sqlite3 *db, const char *node, int64_t tid, uint64_t mono, uint64_t *blocked,
			 uint64_t *preempted, char *waker, size_t wlen)
{
	sqlite3_stmt *st = NULL;
	uint64_t best = 0;

	*blocked = *preempted = 0;
	waker[0] = '\0';
	if (sqlite3_prepare_v2(db,
			       "SELECT reason, duration_ns, waker_comm FROM offcpu WHERE tid = ?1 AND start_mono_ns >= ?2"
			       " AND node = ?3 LIMIT 100000",
			       -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_int64(st, 1, tid);
	sqlite3_bind_int64(st, 2, (int64_t)mono);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *r = (const char *)sqlite3_column_text(st, 0);
		const char *w = (const char *)sqlite3_column_text(st, 2);
		uint64_t d = (uint64_t)sqlite3_column_int64(st, 1);
		if (r && !strcmp(r, "blocked")) {
			*blocked += d;
			if (d > best && w) {
				best = d;
				snprintf(waker, wlen, "%s", w);
			}
		} else
			*preempted += d;
	}
	sqlite3_finalize(st);
}

/* Wall time of a snapshot taken at mono, from the last call's pair. */
static uint64_t snap_wall(const struct pidscan *p, uint64_t mono, const struct pcall *last)
{
	(void)p;
	return mono > last->mono ? last->wall + (mono - last->mono) : last->wall;
}

/* The rhythm of pid's calls summary capture folded in the kernel (the
 * folded table, per op and second, every thread's together) beside the
 * rows of the same seconds: the rows left are the op's first, sampled
 * and slow calls, whose gaps overstate its step (gpu/stall.h). A file
 * without the table (before schema v9) folded nothing. */
static void folded_rhythm(sqlite3 *db, const char *node, const struct pidscan *p, uint64_t from_wall,
			  uint64_t to_wall, struct cw_stall_proc *sp)
{
	static const char sql[] = "SELECT op, second, sum(count) FROM folded WHERE node = ?1 AND pid = ?2"
				  " AND second BETWEEN ?3 AND ?4 GROUP BY op, second ORDER BY second DESC LIMIT 256";
	sqlite3_stmt *st = NULL;

	for (int oi = 0; oi < p->nops; oi++)
		for (int k = 0; k < CW_STALL_SECS; k++)
			if (p->secs[oi][k].sec)
				cw_stall_proc_row_second(sp, p->ops[oi], p->secs[oi][k].sec, p->secs[oi][k].rows);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, p->pid);
	sqlite3_bind_int64(st, 3, (int64_t)(from_wall / NSEC_PER_SEC));
	sqlite3_bind_int64(st, 4, (int64_t)(to_wall / NSEC_PER_SEC));
	while (sqlite3_step(st) == SQLITE_ROW)
		if (sqlite3_column_type(st, 0) == SQLITE_TEXT && sqlite3_column_int64(st, 2) > 0)
			cw_stall_proc_folded(sp, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
					     (uint64_t)sqlite3_column_int64(st, 2));
	sqlite3_finalize(st);
}

/* The start of the latest wall second, up to to_wall, in which the kernel
 * folded calls of pid; 0 when none, or the file has no folded table
 * (before schema v9). Summary capture keeps a folded call's second (its
 * entry's), not its time, nor the second's last entry (cw_fold_val in
 * bpf/cuda.bpf.h): the last folded call started somewhere in it. */
static uint64_t last_folded_wall(sqlite3 *db, const char *node, int64_t pid, uint64_t to_wall)
{
	sqlite3_stmt *st = NULL;
	uint64_t w = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT max(second) FROM folded WHERE node = ?1 AND pid = ?2 AND second <= ?3"
			       " AND source IN ('cuda','driver','nccl','graph')",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, (int64_t)(to_wall / NSEC_PER_SEC));
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
		w = (uint64_t)sqlite3_column_int64(st, 0) * NSEC_PER_SEC;
	sqlite3_finalize(st);
	return w;
}

static void add_thread_fixes(struct cw_chain *c, const char *wait, int64_t pid)
{
	if (!strcmp(wait, "runnable_starved"))
		cw_chain_add_advice(c, "the process is runnable but gets no CPU: see the cpu_preemption and cfs_throttling chains, or give it CPUs of its own (taskset / cgroup cpuset)");
	else if (!strcmp(wait, "pipe"))
		cw_chain_add_advice(c, "the process waits on a pipe: check its producer (a DataLoader worker or subprocess) is alive; DataLoader(timeout=...) makes a stuck worker raise");
	else if (!strcmp(wait, "futex"))
		cw_chain_add_advice(c, "the process waits on a lock: causeway where %lld shows which thread holds it", (long long)pid);
	else if (!strcmp(wait, "socket"))
		cw_chain_add_advice(c, "the process waits on the network: check the other ranks (a dead peer); init_process_group(timeout=...) and TORCH_NCCL_ASYNC_ERROR_HANDLING=1 end a hung collective");
	else if (!strcmp(wait, "running") || !strcmp(wait, "gpu_driver") || !strcmp(wait, "cuda_call"))
		cw_chain_add_advice(c, "a thread spins or sits in the driver: a CUDA synchronization that never returns points at the GPU (check Xid faults: journalctl -k | grep -i xid)");
}

/* The GPU calls of node's seconds s0..s1 in a per-second table. */
#define GPU_SECONDS " WHERE node = ?1 AND second BETWEEN ?2 AND ?3 AND source IN ('cuda','driver','nccl','graph')"

/* *out = the single number sql (GPU_SECONDS' parameters, ?4 = pid when it
 * has one) returns; -1 when it cannot be prepared (a table or column an
 * older file lacks), *out unchanged. */
static int sum_seconds(sqlite3 *db, const char *sql, const char *node, int64_t s0, int64_t s1, int64_t pid,
		       int64_t *out)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, s0);
	sqlite3_bind_int64(st, 3, s1);
	if (sqlite3_bind_parameter_count(st) >= 4)
		sqlite3_bind_int64(st, 4, pid);
	if (sqlite3_step(st) == SQLITE_ROW)
		*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

/* 1 when the silence of pid's rows in the whole seconds inside
 * (from_wall, to_wall) is not known to be the process's own: the GPU calls
 * the aggregates count there outnumber the rows stored plus the calls the
 * kernel folded for other processes (summary capture keeps their pid in
 * `folded`). The rest are pid's own folded calls, or calls the size cap
 * pruned (docs/schema.md "Retention"), whose pid is not kept. Such a
 * silence is never called a stall (trace's live detector, which saw every
 * call, still names one). */
static int silence_unstored(sqlite3 *db, const char *node, int64_t pid, uint64_t from_wall, uint64_t to_wall)
{
	int64_t s0 = (int64_t)(from_wall / NSEC_PER_SEC) + 1, s1 = (int64_t)(to_wall / NSEC_PER_SEC) - 1, lo, hi;
	sqlite3_stmt *st = NULL;
	int64_t agg = 0, errors = 0, rows = 0, other_folded = 0;

	if (s1 < s0)
		return 0;
	if (sum_seconds(db, "SELECT total(count) FROM aggregates" GPU_SECONDS, node, s0, s1, pid, &agg))
		return 0;
	/* Failing calls are counted apart (schema v10); older files lack the
	 * column and count them in count. */
	if (!sum_seconds(db, "SELECT total(errors) FROM aggregates" GPU_SECONDS, node, s0, s1, pid, &errors))
		agg += errors;
	if (!agg)
		return 0;
	/* Files before schema v9 have no folded table: nothing was folded. */
	sum_seconds(db, "SELECT total(count) FROM folded" GPU_SECONDS " AND pid <> ?4", node, s0, s1, pid, &other_folded);
	if (cw_events_id_at(db, (uint64_t)s0 * NSEC_PER_SEC, &lo) < 0 ||
	    cw_events_id_at(db, (uint64_t)(s1 + 1) * NSEC_PER_SEC, &hi) < 0)
		return 0;
	if (sqlite3_prepare_v2(db,
			       "SELECT count(*) FROM events WHERE id >= ?1 AND id < ?2 AND node = ?3"
			       " AND source IN ('cuda','driver','nccl','graph') AND wall_ns >= ?4 AND wall_ns < ?5",
			       -1, &st, NULL) != SQLITE_OK)
		return 0;
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	sqlite3_bind_text(st, 3, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, s0 * (int64_t)NSEC_PER_SEC);
	sqlite3_bind_int64(st, 5, (s1 + 1) * (int64_t)NSEC_PER_SEC);
	if (sqlite3_step(st) == SQLITE_ROW)
		rows = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return agg > rows + other_folded;
}

int cw_rule_training_stall(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	sqlite3 *db = ctx->db;
	const struct cw_sysctx *sys = ctx->sys;
	uint64_t from_wall = ctx->window_from_ns, to_wall = ctx->window_to_ns;
	struct pidscan *v;
	int n = 0, ret, best = -1;
	int64_t lo, hi;
	uint64_t end, best_silent = 0, best_step = 0, best_thr = 0, best_last = 0;
	int best_resumed = 0, best_folded = 0;

	if ((ret = cw_events_id_at(db, from_wall, &lo)) < 0 || (ret = cw_events_id_at(db, to_wall + 1, &hi)) < 0)
		return ret;
	if ((ret = node_end(db, sys->node, to_wall, &end)) < 0)
		return ret;
	v = calloc(MAX_PIDS, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if ((ret = scan(db, sys->node, lo, hi, v, &n)) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		struct cw_stall_proc sp;
		struct pidscan *p = &v[i];
		uint64_t step, thr, last = 0, seen = 0, life_end, silent;
		int resumed = 0, folded = 0;
		json_t *d;

		if ((ctx->opts->pid && p->pid != ctx->opts->pid) || p->n < CW_STALL_MIN_CALLS)
			continue;
		memset(&sp, 0, sizeof(sp));
		for (int k = p->n - 1; k >= 0; k--)
			cw_stall_proc_call(&sp, (uint32_t)p->calls[k].tid, p->calls[k].op, p->calls[k].mono,
					   p->calls[k].mono + p->calls[k].dur);
		folded_rhythm(db, sys->node, p, from_wall, to_wall, &sp);
		step = cw_stall_proc_step(&sp, CW_STALL_MIN_CALLS);
		if (!step)
			continue;
		{
			struct cw_stall_opts so = {.floor_ns = ctx->opts->stall_min_ns};
			thr = cw_stall_threshold(step, &so);
		}
		/* trace's own threshold (--stall-after) when it named the stall. */
		if ((d = stall_detail(db, p->stall_event))) {
			json_int_t t = json_integer_value(json_object_get(d, "threshold_ns"));
			if (t > 0 && (uint64_t)t < thr)
				thr = (uint64_t)t;
			json_decref(d);
		}
		for (int k = 0; k < p->n; k++)
			if (p->calls[k].wall > last)
				last = p->calls[k].wall;
		seen = last;
		{
			/* Calls folded after the last row: the silence is counted
			 * from the end of their second, the latest the last of
			 * them can have started, so it is never overstated (up
			 * to a second short). seen, the second's start, is the
			 * earliest: an exit after it is this process's own. */
			uint64_t lf = last_folded_wall(db, sys->node, p->pid, to_wall);

			if (lf && lf + NSEC_PER_SEC > last) {
				if (lf > seen)
					seen = lf;
				last = lf + NSEC_PER_SEC;
				folded = 1;
			}
		}
		life_end = p->exit_wall && p->exit_wall >= seen && p->exit_wall < end ? p->exit_wall : end;
		silent = life_end > last ? life_end - last : 0;
		if (p->gap_ns > silent &&
		    (p->stall_event || !silence_unstored(db, sys->node, p->pid, p->gap_call.wall, p->gap_call.wall + p->gap_ns))) {
			/* A stall that ended: the calls resumed. */
			silent = p->gap_ns;
			last = p->gap_call.wall;
			resumed = 1;
			folded = 0;
		}
		if (silent <= thr || silent <= best_silent)
			continue;
		if (!resumed && !p->stall_event && silence_unstored(db, sys->node, p->pid, last, last + silent))
			continue;
		best = i;
		best_silent = silent;
		best_step = step;
		best_thr = thr;
		best_last = last;
		best_resumed = resumed;
		best_folded = folded;
	}
	if (best < 0) {
		ret = 0;
		goto out;
	}
	{
		struct pidscan *p = &v[best];
		const struct pcall *last = best_resumed ? &p->gap_call : &p->calls[0];
		char silent[32], stepd[32], thrd[32], what[400] = "", wait[32] = "";
		json_t *d = stall_detail(db, p->stall_event);
		uint64_t snap_mono = 0;
		int exited = !best_resumed && p->exit_wall && p->exit_wall > best_last && p->exit_wall < end;

		memset(c, 0, sizeof(*c));
		c->kind = CW_KIND_TRAINING_STALL;
		snprintf(c->op, sizeof(c->op), "%s", last->op);
		snprintf(c->source, sizeof(c->source), "%s", last->source);
		snprintf(c->node, sizeof(c->node), "%s", sys->node);
		c->count = p->total;
		c->p50_ns = c->p95_ns = c->p99_ns = best_step;
		c->max_ns = best_silent;
		c->slow_count = 1;
		c->slow_time_ns = best_silent;
		c->explained_share = 1;
		c->rank = -1;
		c->culprit.cpu = -1;
		c->pid = p->pid;
		c->tid = last->tid;
		snprintf(c->comm, sizeof(c->comm), "%s", p->comm);
		cw_format_duration(best_silent, silent, sizeof(silent));
		cw_format_duration(best_step, stepd, sizeof(stepd));
		cw_format_duration(best_thr, thrd, sizeof(thrd));
		cw_chain_add_timeline(c, cw_layer_of_source(last->source), last->wall, "last GPU call: %s by thread %lld",
				      last->op, (long long)last->tid);
		if (best_folded)
			cw_chain_add_timeline(c, cw_layer_of_source(last->source), best_last,
					      "end of the last second with GPU calls folded in the kernel (summary capture"
					      " keeps their second, not their time): the silence is counted from here");
		if (d) {
			/* Live thread states: the thread that made the last call
			 * first, then the others (up to the timeline's room). */
			json_t *arr = json_object_get(d, "threads"), *t;
			size_t i;
			int shown = 0;
			for (int pass = 0; pass < 2; pass++)
				json_array_foreach(arr, i, t) {
					struct cw_thread_state ts;
					const char *s;
					int mine = json_integer_value(json_object_get(t, "tid")) == c->tid;
					char line[320];

					if ((pass == 0) != mine || shown >= 6)
						continue;
					memset(&ts, 0, sizeof(ts));
					ts.tid = (int)json_integer_value(json_object_get(t, "tid"));
					if ((s = json_string_value(json_object_get(t, "comm"))))
						snprintf(ts.comm, sizeof(ts.comm), "%s", s);
					if ((s = json_string_value(json_object_get(t, "state"))))
						ts.state = s[0];
					if ((s = json_string_value(json_object_get(t, "wait"))))
						snprintf(ts.wait, sizeof(ts.wait), "%s", s);
					if ((s = json_string_value(json_object_get(t, "syscall_name"))))
						snprintf(ts.syscall_name, sizeof(ts.syscall_name), "%s", s);
					if ((s = json_string_value(json_object_get(t, "target"))))
						snprintf(ts.target, sizeof(ts.target), "%s", s);
					if ((s = json_string_value(json_object_get(t, "wchan"))))
						snprintf(ts.wchan, sizeof(ts.wchan), "%s", s);
					if ((s = json_string_value(json_object_get(t, "python"))))
						snprintf(ts.python, sizeof(ts.python), "%s", s);
					if ((s = json_string_value(json_object_get(t, "in_call")))) {
						snprintf(ts.in_call, sizeof(ts.in_call), "%s", s);
						ts.in_call_ns = (unsigned long long)json_integer_value(
							json_object_get(t, "in_call_ns"));
					}
					cw_thread_state_describe(&ts, line, sizeof(line));
					cw_chain_add_timeline(c, CW_LAYER_HOST, best_last + best_thr, "%s", line);
					if (!what[0] || mine) {
						snprintf(what, sizeof(what), "%s", line);
						snprintf(wait, sizeof(wait), "%s", cw_blocked_kind(ts.wait, 0));
					}
					if (mine && ts.python[0]) {
						char *colon = strrchr(ts.python, ':');
						c->has_python = 1;
						snprintf(c->py_file, sizeof(c->py_file), "%.*s",
							 colon ? (int)(colon - ts.python) : 0, ts.python);
						c->py_line = colon ? (int)strtol(colon + 1, NULL, 10) : 0;
						if ((s = strstr(ts.python, " in ")))
							snprintf(c->py_function, sizeof(c->py_function), "%s", s + 4);
					}
					shown++;
				}
			cw_chain_add_evidence(c, "threads", (double)json_array_size(arr), 1);
			cw_chain_add_evidence(c, "detected_live", 1, 1);
			{
				uint64_t mono;
				json_t *d2 = event_detail(db, p->stall_event, &mono);
				if (d2)
					chain_threads(db, sys->node, d2, mono, "stall", c);
				json_decref(d2);
			}
			/* The silent thread starved of CPU reads as running in
			 * /proc: its off-CPU rows tell. */
			if (c->nthreads && c->threads[0].tid == c->tid && !strcmp(c->threads[0].blocked_in, "runnable_starved"))
				snprintf(wait, sizeof(wait), "runnable_starved");
			json_decref(d);
		} else if ((d = event_detail(db, p->threads_event, &snap_mono)) &&
			   (chain_threads(db, sys->node, d, snap_mono, "end_of_trace", c), c->nthreads > 0)) {
			/* Not named live: the states trace stored at its end. */
			for (int k = 0; k < c->nthreads && k < CW_CHAIN_MAX_TIMELINE - 2 - best_folded; k++) {
				char line[600];

				cw_chain_thread_text(&c->threads[k], line, sizeof(line));
				cw_chain_add_timeline(c, CW_LAYER_HOST, snap_wall(p, snap_mono, last), "%s", line);
			}
			cw_chain_thread_text(&c->threads[0], what, sizeof(what));
			snprintf(wait, sizeof(wait), "%s", c->threads[0].blocked_in);
			if (c->threads[0].tid == c->tid && c->threads[0].python[0]) {
				const char *py = c->threads[0].python, *colon = strrchr(py, ':'), *in = strstr(py, " in ");
				if (colon) {
					c->has_python = 1;
					snprintf(c->py_file, sizeof(c->py_file), "%.*s", (int)(colon - py), py);
					c->py_line = (int)strtol(colon + 1, NULL, 10);
					if (in)
						snprintf(c->py_function, sizeof(c->py_function), "%s", in + 4);
				}
			}
			cw_chain_add_evidence(c, "threads", (double)c->nthreads_total, 1);
			cw_chain_add_evidence(c, "detected_live", 0, 1);
			json_decref(d);
		} else {
			json_decref(d);
			uint64_t blocked, preempted;
			char waker[32], b[32];
			offcpu_after(db, sys->node, last->tid, last->mono, &blocked, &preempted, waker, sizeof(waker));
			cw_format_duration(blocked, b, sizeof(b));
			if (blocked > preempted && blocked)
				snprintf(what, sizeof(what), "thread %lld was blocked (off CPU, not runnable) for %s%s%s",
					 (long long)last->tid, b, waker[0] ? ", woken last by " : "", waker);
			else if (preempted)
				snprintf(what, sizeof(what), "thread %lld was runnable but preempted for %s",
					 (long long)last->tid, b);
			if (what[0])
				cw_chain_add_timeline(c, CW_LAYER_HOST, best_last, "%s", what);
			cw_chain_add_evidence(c, "blocked_ns", (double)blocked, 1);
			cw_chain_add_evidence(c, "preempted_ns", (double)preempted, 1);
			cw_chain_add_evidence(c, "detected_live", 0, 1);
		}
		if (exited)
			cw_chain_add_timeline(c, CW_LAYER_HOST, p->exit_wall, "process %lld exited", (long long)p->pid);
		{
			/* Composed long, cut to the summary's size. */
			char sum[1024];
			size_t len;
			snprintf(sum, sizeof(sum),
				 "process %lld (%s) made no GPU call for %s %s (steady step %s, threshold %s); last call %s%s%s",
				 (long long)p->pid, p->comm, silent,
				 best_resumed ? "while alive, then resumed" : exited ? "before it exited" : "while alive",
				 stepd, thrd, last->op, what[0] ? "; " : "", what);
			len = strnlen(sum, sizeof(c->summary) - 1);
			memcpy(c->summary, sum, len);
			c->summary[len] = '\0';
		}
		add_thread_fixes(c, wait, c->pid);
		cw_chain_add_fix(c, "causeway where %lld  # every thread's Python and native stack now", (long long)c->pid);
		cw_chain_add_advice(c, "alert on progress, not utilization: a last-step timestamp older than the threshold");
		cw_chain_add_evidence(c, "silent_ns", (double)best_silent, 1);
		cw_chain_add_evidence(c, "step_ns", (double)best_step, 1);
		cw_chain_add_evidence(c, "threshold_ns", (double)best_thr, 1);
		cw_chain_add_evidence(c, "exited", exited, 1);
		cw_chain_add_evidence(c, "resumed", best_resumed, 1);
		/* 1: the silence starts at the end of a folded second, a lower
		 * bound of it (at most 1 s short). */
		cw_chain_add_evidence(c, "silence_from_folded_second", best_folded, 1);
		c->explained_ns = best_silent;
		ret = 1;
	}
out:
	free(v);
	return ret;
}
