/* nccl_straggler, nccl_hang, comm_bound and nccl_wait: the chains of the
 * arrival analysis (analysis/nccl_arrival.c) over nccl_calls.
 *
 * nccl_straggler: the rank that enters the collectives last. Its lag in
 * each late collective is the time the others were already waiting; that
 * window, just before its entry, is decomposed on the rank's own calling
 * thread from the off-CPU intervals: preempted (by whom), blocked with
 * its process's block I/O in flight (io_contention), blocked and woken by
 * another thread of its own process or another process (waiting for
 * input: dataloader_starvation), blocked otherwise (blocked: a lock, a
 * sleep), and on CPU (compute). The largest part is root_cause.because.
 * nccl_wait: each waiting rank's chain, pointing at the straggler
 * (caused_by). nccl_hang: a collective entered by some ranks and not the
 * others for longer than the threshold, naming the missing ranks and what
 * they are doing. comm_bound: no straggler, and the median rank spends
 * half its steps waiting for collectives. See docs/rules.md. */
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/rules/rules.h"
#include "analysis/nccl_arrival.h"
#include "analysis/ras_report.h"
#include "analysis/rules/nccl_load.h"
#include "analysis/thread_states.h"
#include "pipeline/ops.h"
#include "store/store.h"
#include "util/timeutil.h"

/* What the late rank's calling thread did in its lag windows. */
struct decomp {
	uint64_t lag, preempted, io, input, blocked, mem;
	struct cw_culprit_acc by[8]; /* who preempted it */
	size_t nby;
	char waker[32];              /* who it waited for (input) */
	int64_t waker_pid;
	uint64_t waker_ns;
};

static uint64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;
	return hi > lo ? (uint64_t)(hi - lo) : 0;
}

/* Block I/O of pid in flight over [a, b) (mono), through events_io. */
static int io_overlap(sqlite3 *db, const char *node, int64_t pid, int64_t mono_to_wall, int64_t a, int64_t b,
		      uint64_t *out)
{
	static const char sql[] = "SELECT mono_ns, duration_ns FROM kevents WHERE source = 'io' AND node = ?1"
				  " AND wall_ns BETWEEN ?2 AND ?3 AND pid = ?4";
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	*out = 0;
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, a + mono_to_wall - 10 * (int64_t)NSEC_PER_SEC);
	sqlite3_bind_int64(st, 3, b + mono_to_wall);
	sqlite3_bind_int64(st, 4, pid);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t s = sqlite3_column_int64(st, 0), d = sqlite3_column_int64(st, 1);
		*out += overlap(s, s + d, a, b);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static int session_offset(sqlite3 *db, const char *node, int64_t *off)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT mono_to_wall_ns FROM sessions WHERE node = ?1 ORDER BY id DESC LIMIT 1",
				    -1, &st, NULL);

	*off = 0;
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, node, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW)
		*off = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

static int decompose(sqlite3 *db, const struct cw_nccl_rank *r, const struct cw_nccl_arrival *a, struct decomp *d)
{
	static const char sql[] =
		"SELECT start_mono_ns, end_mono_ns, reason, by_pid, by_comm, by_cgroup_id, cpu, waker_pid, waker_comm"
		" FROM offcpu WHERE tid = ?1 AND node = ?2 AND start_mono_ns BETWEEN ?3 AND ?4 AND end_mono_ns > ?5";
	sqlite3_stmt *st = NULL;
	int64_t m2w;
	int rc, ret;

	memset(d, 0, sizeof(*d));
	if ((ret = session_offset(db, r->node, &m2w)) < 0)
		return ret;
	rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	for (size_t w = 0; w < a->nlate; w++) {
		int64_t hi = a->late[w].entry_mono, lo = hi - a->late[w].lag_ns;

		d->lag += (uint64_t)a->late[w].lag_ns;
		sqlite3_bind_int64(st, 1, r->tid);
		sqlite3_bind_text(st, 2, r->node, -1, SQLITE_STATIC);
		/* Off-CPU intervals longer than a minute are not looked for. */
		sqlite3_bind_int64(st, 3, lo - 60 * (int64_t)NSEC_PER_SEC);
		sqlite3_bind_int64(st, 4, hi);
		sqlite3_bind_int64(st, 5, lo);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			int64_t s = sqlite3_column_int64(st, 0), e = sqlite3_column_int64(st, 1);
			const char *reason = (const char *)sqlite3_column_text(st, 2);
			uint64_t ov = overlap(s, e, lo, hi);

			if (!ov || !reason)
				continue;
			if (!strcmp(reason, "preempted")) {
				const char *bc = (const char *)sqlite3_column_text(st, 4);
				int64_t bp = sqlite3_column_int64(st, 3);
				size_t k;

				d->preempted += ov;
				for (k = 0; k < d->nby && d->by[k].pid != bp; k++)
					;
				if (k == d->nby && d->nby < 8) {
					memset(&d->by[k], 0, sizeof(d->by[k]));
					d->by[k].pid = bp;
					snprintf(d->by[k].comm, sizeof(d->by[k].comm), "%s", bc ? bc : "?");
					d->by[k].cgroup_id = (uint64_t)sqlite3_column_int64(st, 5);
					d->by[k].cpu = sqlite3_column_int(st, 6);
					d->nby++;
				}
				if (k < d->nby)
					d->by[k].ns += ov;
			} else {
				int64_t wp = sqlite3_column_int64(st, 7);
				const char *wc = (const char *)sqlite3_column_text(st, 8);
				uint64_t io = 0;

				if ((ret = io_overlap(db, r->node, r->pid, m2w, s > lo ? s : lo, e < hi ? e : hi, &io)) < 0)
					break;
				if (io > ov)
					io = ov;
				if (io * 2 >= ov) {
					d->io += ov;
				} else if (wp != 0) {
					/* Woken by a thread or process that produces what
					 * it waited for: input. */
					d->input += ov;
					if (wp != d->waker_pid)
						d->waker_ns = 0;
					d->waker_pid = wp;
					d->waker_ns += ov;
					snprintf(d->waker, sizeof(d->waker), "%s", wc ? wc : "?");
				} else if (wc && !strncmp(wc, "kswapd", 6)) {
					d->mem += ov;
				} else {
					d->blocked += ov;
				}
			}
		}
		sqlite3_reset(st);
		if (ret < 0 || (rc != SQLITE_DONE && rc != SQLITE_ROW)) {
			sqlite3_finalize(st);
			return ret < 0 ? ret : cw_sqlite_errno(rc);
		}
	}
	sqlite3_finalize(st);
	return 0;
}

static void rank_head(const struct cw_nccl_rank *r, char *buf, size_t len)
{
	if (r->rank >= 0)
		snprintf(buf, len, "rank %d (pid %lld on %s)", r->rank, (long long)r->pid, r->node);
	else
		snprintf(buf, len, "pid %lld on %s", (long long)r->pid, r->node);
}

static void base(struct cw_chain *c, const struct cw_nccl_rank *r, enum cw_kind kind, int op)
{
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->culprit.cpu = -1;
	snprintf(c->op, sizeof(c->op), "%s", cw_op_name((unsigned)op) ? cw_op_name((unsigned)op) : "ncclAllReduce");
	snprintf(c->source, sizeof(c->source), "nccl");
	snprintf(c->node, sizeof(c->node), "%s", r->node);
	c->pid = r->pid;
	c->tid = r->tid;
	c->rank = r->rank;
	snprintf(c->comm, sizeof(c->comm), "%s", r->comm);
}

/* The Python line of the rank's collectives (the step that issued them). */
static int python_of(sqlite3 *db, struct cw_chain *c)
{
	static const char sql[] =
		"SELECT p.user_file, p.user_line, p.user_function, e.comm FROM events e JOIN py_stacks p"
		" ON p.id = e.py_stack_id WHERE e.op = ?1 AND e.anomalous IN (0, 1) AND e.node = ?2 AND e.pid = ?3"
		" AND p.user_file IS NOT NULL LIMIT 1";
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);

	if (rc != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, c->op, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, c->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, c->pid);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *fn = (const char *)sqlite3_column_text(st, 2), *comm = (const char *)sqlite3_column_text(st, 3);
		c->has_python = 1;
		snprintf(c->py_file, sizeof(c->py_file), "%s", sqlite3_column_text(st, 0));
		c->py_line = sqlite3_column_int(st, 1);
		snprintf(c->py_function, sizeof(c->py_function), "%s", fn ? fn : "");
		snprintf(c->comm, sizeof(c->comm), "%s", comm ? comm : "");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

static int straggler_chain(sqlite3 *db, const struct cw_nccl_loaded *l, const struct cw_nccl_arrival *a, struct cw_chain *c)
{
	const struct cw_nccl_rank *r = &l->ranks[a->straggler];
	struct decomp d;
	uint64_t compute, best;
	const char *because;
	char head[160], lag[32], part[32], why[400];
	double mean_lag = (double)r->lag_ns / (double)r->late;
	int ret;

	if ((ret = decompose(db, r, a, &d)) < 0)
		return ret;
	base(c, r, CW_KIND_NCCL_STRAGGLER, a->comm_op);
	if ((ret = python_of(db, c)) < 0)
		return ret;
	compute = d.lag - (d.preempted + d.io + d.input + d.blocked + d.mem < d.lag
				   ? d.preempted + d.io + d.input + d.blocked + d.mem
				   : d.lag);
	because = "compute";
	best = compute;
	if (d.preempted > best)
		best = d.preempted, because = cw_kind_name(CW_KIND_CPU_PREEMPTION);
	if (d.io > best)
		best = d.io, because = cw_kind_name(CW_KIND_IO_CONTENTION);
	if (d.input > best)
		best = d.input, because = cw_kind_name(CW_KIND_DATALOADER_STARVATION);
	if (d.mem > best)
		best = d.mem, because = cw_kind_name(CW_KIND_MEMORY_PRESSURE);
	if (d.blocked > best)
		best = d.blocked, because = "blocked";
	snprintf(c->because, sizeof(c->because), "%s", because);
	rank_head(r, head, sizeof(head));
	cw_format_duration((uint64_t)mean_lag, lag, sizeof(lag));
	cw_format_duration(best, part, sizeof(part));
	if (!strcmp(because, "cpu_preemption") && d.nby) {
		size_t top = 0;
		for (size_t k = 1; k < d.nby; k++)
			if (d.by[k].ns > d.by[top].ns)
				top = k;
		c->culprit.known = 1;
		snprintf(c->culprit.comm, sizeof(c->culprit.comm), "%s", d.by[top].comm);
		c->culprit.pid = d.by[top].pid;
		c->culprit.cgroup_id = d.by[top].cgroup_id;
		c->culprit.cpu = d.by[top].cpu;
		c->culprit.overlap_ns = d.by[top].ns;
		snprintf(why, sizeof(why), "preempted by %s (pid %lld) on CPU %d for %s of its lag", d.by[top].comm,
			 (long long)d.by[top].pid, d.by[top].cpu, part);
		cw_chain_add_advice(c, "move %s (pid %lld) off CPU %d, or pin rank %d's threads to CPUs of their own"
			       " (taskset / cgroup cpuset)", d.by[top].comm, (long long)d.by[top].pid, d.by[top].cpu,
			       r->rank);
	} else if (!strcmp(because, "dataloader_starvation")) {
		c->culprit.known = 1;
		snprintf(c->culprit.comm, sizeof(c->culprit.comm), "%s", d.waker);
		c->culprit.pid = d.waker_pid;
		c->culprit.overlap_ns = d.waker_ns;
		snprintf(why, sizeof(why), "waiting for input from %s (pid %lld) for %s of its lag", d.waker,
			 (long long)d.waker_pid, part);
		cw_chain_add_advice(c, "prefetch batches on rank %d (DataLoader num_workers, prefetch_factor,"
			       " pin_memory) so the next batch is ready when the step ends", r->rank);
	} else if (!strcmp(because, "io_contention")) {
		snprintf(why, sizeof(why), "blocked on its own block I/O for %s of its lag", part);
		cw_chain_add_advice(c, "move rank %d's reads off the step's critical path (prefetch, page cache,"
			       " faster storage)", r->rank);
	} else if (!strcmp(because, "memory_pressure")) {
		snprintf(why, sizeof(why), "blocked under memory pressure (reclaim) for %s of its lag", part);
		cw_chain_add_advice(c, "reduce rank %d's host memory use or give its node more memory", r->rank);
	} else if (!strcmp(because, "blocked")) {
		snprintf(why, sizeof(why), "blocked (sleep, lock or wait, woken by the kernel) for %s of its lag", part);
		cw_chain_add_fix(c, "causeway where %lld  # where rank %d sleeps before the collective",
				 (long long)r->pid, r->rank);
	} else {
		if (c->has_python)
			snprintf(why, sizeof(why), "on CPU computing for %s of its lag (in %.100s() at %.100s:%d)", part,
				 c->py_function, c->py_file, c->py_line);
		else
			snprintf(why, sizeof(why), "on CPU computing for %s of its lag", part);
		cw_chain_add_advice(c, "balance the work across ranks: rank %d computes longer before each collective",
				 r->rank);
		cw_chain_add_fix(c, "py-spy record --pid %lld  # where rank %d's extra time goes", (long long)r->pid,
				 r->rank);
	}
	if (snprintf(c->summary, sizeof(c->summary),
		     "%s is the NCCL straggler: it entered %s last in %llu of %llu collectives, %s after the next"
		     " rank on average; in those windows it was %s",
		     head, c->op, (unsigned long long)r->late, (unsigned long long)a->complete, lag, why) >=
	    (int)sizeof(c->summary))
		c->summary[sizeof(c->summary) - 1] = '\0';
	c->count = a->complete;
	c->slow_count = r->late;
	c->p50_ns = (uint64_t)mean_lag;
	c->p99_ns = c->max_ns = a->nlate ? (uint64_t)a->late[0].lag_ns : 0;
	c->p95_ns = c->p50_ns;
	c->tail_ratio = c->p50_ns ? (double)c->p99_ns / (double)c->p50_ns : 0;
	c->slow_time_ns = d.lag;
	c->explained_share = d.lag ? (double)best / (double)d.lag : 0;
	c->explained_ns = best;
	c->seq = a->nlate ? a->late[0].seq : 0;
	c->comm_id = a->nlate ? a->late[0].comm_id : 0;
	cw_chain_add_timeline(c, CW_LAYER_NCCL, a->nlate ? (uint64_t)a->late[0].entry : 0,
			      "%s entered %s #%lld last, %s late (the largest lag)", head, c->op,
			      (long long)c->seq, lag);
	cw_chain_add_timeline(c, CW_LAYER_HOST, a->nlate ? (uint64_t)a->late[0].entry : 0,
			      "lag windows: preempted %llu ms, I/O %llu ms, input %llu ms, blocked %llu ms, on CPU %llu ms",
			      (unsigned long long)(d.preempted / NSEC_PER_MSEC), (unsigned long long)(d.io / NSEC_PER_MSEC),
			      (unsigned long long)(d.input / NSEC_PER_MSEC), (unsigned long long)(d.blocked / NSEC_PER_MSEC),
			      (unsigned long long)(compute / NSEC_PER_MSEC));
	cw_chain_add_evidence(c, "late_collectives", (double)r->late, 1);
	cw_chain_add_evidence(c, "collectives", (double)a->complete, 1);
	cw_chain_add_evidence(c, "lag_share", a->total_lag_ns ? (double)r->lag_ns / (double)a->total_lag_ns : 0, 0);
	cw_chain_add_evidence(c, "mean_lag_ns", mean_lag, 1);
	cw_chain_add_evidence(c, "preempted_ns", (double)d.preempted, 1);
	cw_chain_add_evidence(c, "blocked_io_ns", (double)d.io, 1);
	cw_chain_add_evidence(c, "input_wait_ns", (double)d.input, 1);
	cw_chain_add_evidence(c, "blocked_ns", (double)d.blocked, 1);
	cw_chain_add_evidence(c, "on_cpu_ns", (double)compute, 1);
	cw_chain_add_evidence(c, "ranks", (double)l->nranks, 1);
	return 1;
}

static int wait_chain(const struct cw_nccl_loaded *l, const struct cw_nccl_arrival *a, int i, struct cw_chain *c)
{
	const struct cw_nccl_rank *r = &l->ranks[i], *s = &l->ranks[a->straggler];
	char head[160], sh[160], w[32];

	base(c, r, CW_KIND_NCCL_WAIT, a->comm_op);
	rank_head(r, head, sizeof(head));
	rank_head(s, sh, sizeof(sh));
	cw_format_duration(r->waited_ns, w, sizeof(w));
	c->count = r->groups;
	c->slow_count = s->late;
	c->slow_time_ns = r->waited_ns;
	c->explained_ns = r->waited_ns;
	c->explained_share = r->wait_ns ? (double)r->waited_ns / (double)r->wait_ns : 1;
	if (c->explained_share > 1)
		c->explained_share = 1;
	snprintf(c->summary, sizeof(c->summary),
		 "%s waits for %s, the NCCL straggler: %s in all inside its synchronizations after %s"
		 " (%.0f %% of its collective wait)",
		 head, sh, w, c->op, c->explained_share * 100);
	snprintf(c->because, sizeof(c->because), "%s", cw_kind_name(CW_KIND_NCCL_STRAGGLER));
	snprintf(c->caused_by.kind, sizeof(c->caused_by.kind), "%s", cw_kind_name(CW_KIND_NCCL_STRAGGLER));
	snprintf(c->caused_by.node, sizeof(c->caused_by.node), "%s", s->node);
	c->caused_by.pid = s->pid;
	c->caused_by.rank = s->rank;
	cw_chain_add_advice(c, "fix rank %d (the nccl_straggler chain); this rank only waits for it", s->rank);
	cw_chain_add_evidence(c, "waited_ns", (double)r->waited_ns, 1);
	cw_chain_add_evidence(c, "collective_wait_ns", (double)r->wait_ns, 1);
	return 1;
}

/* Reads a short /proc file's first line into buf ("" when unreadable). */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = '\0';
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* Live state of a process on this host, when the pid still runs the same
 * program: each thread's state and kernel wait (wchan: futex_do_wait for a
 * lock, hrtimer_nanosleep for a sleep, ...) from /proc, the NCCL-calling
 * thread first, at most 4. */
static void proc_state(int64_t pid, int64_t tid, const char *comm, char *buf, size_t len)
{
	char path[96], c2[64], line[256], wchan[64];
	size_t off = 0;
	DIR *d;
	struct dirent *de;
	int n = 0, more = 0;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%lld/comm", (long long)pid);
	read_line(path, c2, sizeof(c2));
	if (!c2[0] || (comm && comm[0] && strncmp(c2, comm, 15)))
		return;
	snprintf(path, sizeof(path), "/proc/%lld/task", (long long)pid);
	if (!(d = opendir(path)))
		return;
	for (int pass = 0; pass < 2; pass++) {
		rewinddir(d);
		while ((de = readdir(d))) {
			long long t = strtoll(de->d_name, NULL, 10);
			char *p;

			if (de->d_name[0] == '.' || (pass == 0) != (t == tid))
				continue;
			if (n == 4) {
				more++;
				continue;
			}
			snprintf(path, sizeof(path), "/proc/%lld/task/%lld/stat", (long long)pid, t);
			read_line(path, line, sizeof(line));
			if (!(p = strrchr(line, ')')) || p[1] != ' ')
				continue;
			snprintf(path, sizeof(path), "/proc/%lld/task/%lld/wchan", (long long)pid, t);
			read_line(path, wchan, sizeof(wchan));
			if (off < len)
				off += (size_t)snprintf(buf + off, len - off, "%s thread %lld %s%s%s", n ? "," : "; now:", t,
							p[2] == 'R' ? "running" : p[2] == 'D' ? "in uninterruptible wait" : p[2] == 'S' ? "sleeping" : "stopped",
							wchan[0] && strcmp(wchan, "0") ? " in " : "", wchan[0] && strcmp(wchan, "0") ? wchan : "");
			n++;
		}
	}
	closedir(d);
	if (more && off < len)
		snprintf(buf + off, len - off, ", %d more", more);
}

/* What a missing rank is doing, from the store (and /proc when live). */
static int missing_state(sqlite3 *db, const struct cw_nccl_rank *r, int64_t until, char *buf, size_t len)
{
	static const char last_sql[] =
		"SELECT op, wall_ns, duration_ns, ret IS NULL, comm FROM events WHERE node = ?1 AND pid = ?2"
		" AND source IN ('cuda', 'driver', 'nccl', 'graph') ORDER BY id DESC LIMIT 1";
	static const char off_sql[] =
		"SELECT reason, duration_ns, waker_comm FROM offcpu WHERE tid = ?1 AND node = ?2"
		" ORDER BY start_mono_ns DESC LIMIT 1";
	static const char py_sql[] =
		"SELECT p.user_file, p.user_line, p.user_function FROM events e JOIN py_stacks p ON p.id = e.py_stack_id"
		" WHERE e.node = ?1 AND e.pid = ?2 AND p.user_file IS NOT NULL ORDER BY e.id DESC LIMIT 1";
	sqlite3_stmt *st = NULL;
	char head[160], ago[32], d[32], live[200] = "", comm[32] = "";
	size_t off;
	int rc;

	rank_head(r, head, sizeof(head));
	off = (size_t)snprintf(buf, len, "%s", head);
	if (sqlite3_prepare_v2(db, last_sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, r->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, r->pid);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW && off < len) {
		int64_t w = sqlite3_column_int64(st, 1), du = sqlite3_column_int64(st, 2);
		const char *cm = (const char *)sqlite3_column_text(st, 4);
		cw_format_duration(until > w + du ? (uint64_t)(until - w - du) : 0, ago, sizeof(ago));
		cw_format_duration((uint64_t)du, d, sizeof(d));
		snprintf(comm, sizeof(comm), "%s", cm ? cm : "");
		off += (size_t)snprintf(buf + off, len - off, ": last call %s (%s%s), %s before the end of the trace",
					sqlite3_column_text(st, 0), d, sqlite3_column_int(st, 3) ? ", unfinished" : "", ago);
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, off_sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(st, 1, r->tid);
	sqlite3_bind_text(st, 2, r->node, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW && off < len) {
		const char *wc = (const char *)sqlite3_column_text(st, 2);
		cw_format_duration((uint64_t)sqlite3_column_int64(st, 1), d, sizeof(d));
		off += (size_t)snprintf(buf + off, len - off, "; its thread was last off CPU %s for %s%s%s",
					sqlite3_column_text(st, 0), d, wc ? ", woken by " : "", wc ? wc : "");
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, py_sql, -1, &st, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(st, 1, r->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, r->pid);
	if (sqlite3_step(st) == SQLITE_ROW && off < len)
		off += (size_t)snprintf(buf + off, len - off, "; last python %s:%d %s", sqlite3_column_text(st, 0),
					sqlite3_column_int(st, 1), sqlite3_column_text(st, 2));
	sqlite3_finalize(st);
	{
		char host[64] = "";
		if (!gethostname(host, sizeof(host) - 1) && !strcmp(host, r->node))
			proc_state(r->pid, r->tid, comm, live, sizeof(live));
	}
	if (live[0] && off < len)
		snprintf(buf + off, len - off, "%s", live);
	return 0;
}

/* Off-CPU intervals ending this close to the end of the data count as
 * the thread's state at the end (records of the last one arrive when it
 * runs again: a thread still off CPU when the trace ends has none). */
#define END_SLACK_NS (1000 * NSEC_PER_MSEC)

/* One rank's place at the hang: its newest GPU call, its calling thread's
 * state at the end (trace's stored thread states, else its last off-CPU
 * interval when that reaches the end, else an open call) and its line. */
static int wavefront_rank(sqlite3 *db, const struct cw_nccl_rank *r, int missing, int64_t until, int64_t min_id,
			  struct cw_wavefront_rank *w)
{
	static const char last_sql[] =
		"SELECT op, wall_ns, duration_ns, ret IS NULL FROM events WHERE node = ?1 AND pid = ?2"
		" AND source IN ('cuda', 'driver', 'nccl', 'graph') ORDER BY id DESC LIMIT 1";
	static const char off_sql[] =
		"SELECT reason, wall_ns, duration_ns FROM offcpu WHERE tid = ?1 AND node = ?2"
		" ORDER BY start_mono_ns DESC LIMIT 1";
	static const char py_sql[] =
		"SELECT p.user_file, p.user_line, p.user_function FROM events e JOIN py_stacks p ON p.id = e.py_stack_id"
		" WHERE e.node = ?1 AND e.pid = ?2 AND p.user_file IS NOT NULL ORDER BY e.id DESC LIMIT 1";
	struct cw_chain_thread th[1];
	sqlite3_stmt *st = NULL;
	char from[16];
	int total, n, rc;

	memset(w, 0, sizeof(*w));
	w->rank = r->rank;
	w->pid = r->pid;
	w->tid = r->tid;
	w->missing = missing;
	w->last_seq = r->last_seq;
	snprintf(w->node, sizeof(w->node), "%s", r->node);
	if ((rc = sqlite3_prepare_v2(db, last_sql, -1, &st, NULL)) != SQLITE_OK)
		return cw_sqlite_errno(rc);
	sqlite3_bind_text(st, 1, r->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, r->pid);
	if (sqlite3_step(st) == SQLITE_ROW) {
		int64_t wall = sqlite3_column_int64(st, 1), du = sqlite3_column_int64(st, 2);
		const char *op = (const char *)sqlite3_column_text(st, 0);

		snprintf(w->last_call, sizeof(w->last_call), "%s", op ? op : "?");
		w->last_call_open = sqlite3_column_int(st, 3);
		/* An open call is dated from its start: it never ended. */
		if (w->last_call_open)
			du = 0;
		w->last_call_ago_ns = until > wall + du ? (uint64_t)(until - wall - du) : 0;
	}
	sqlite3_finalize(st);
	n = cw_stored_threads(db, r->node, r->pid, min_id, r->tid, th, 1, &total, from, sizeof(from));
	if (n < 0)
		return n;
	if (n == 1 && th[0].tid == r->tid) {
		const char *k = th[0].blocked_in;

		w->th = th[0];
		snprintf(w->state_from, sizeof(w->state_from), "%s", from);
		snprintf(w->thread_state, sizeof(w->thread_state), "%s",
			 !strcmp(k, "cuda_call") ? "in_call" : !strcmp(k, "running") ? "running"
			 : !strcmp(k, "runnable_starved") ? "preempted" : "blocked");
		snprintf(w->python, sizeof(w->python), "%s", th[0].python);
	} else {
		if ((rc = sqlite3_prepare_v2(db, off_sql, -1, &st, NULL)) != SQLITE_OK)
			return cw_sqlite_errno(rc);
		sqlite3_bind_int64(st, 1, r->tid);
		sqlite3_bind_text(st, 2, r->node, -1, SQLITE_STATIC);
		if (sqlite3_step(st) == SQLITE_ROW) {
			const char *reason = (const char *)sqlite3_column_text(st, 0);
			int64_t s = sqlite3_column_int64(st, 1), d = sqlite3_column_int64(st, 2);

			if (s + d + (int64_t)END_SLACK_NS >= until && reason) {
				snprintf(w->thread_state, sizeof(w->thread_state), "%s",
					 !strcmp(reason, "preempted") ? "preempted" : "blocked");
				snprintf(w->state_from, sizeof(w->state_from), "offcpu");
				w->off_cpu_ns = (uint64_t)d;
			}
		}
		sqlite3_finalize(st);
		if (!w->thread_state[0] && w->last_call_open) {
			snprintf(w->thread_state, sizeof(w->thread_state), "in_call");
			snprintf(w->state_from, sizeof(w->state_from), "calls");
		}
	}
	if (!w->python[0]) {
		if ((rc = sqlite3_prepare_v2(db, py_sql, -1, &st, NULL)) != SQLITE_OK)
			return cw_sqlite_errno(rc);
		sqlite3_bind_text(st, 1, r->node, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, r->pid);
		if (sqlite3_step(st) == SQLITE_ROW)
			snprintf(w->python, sizeof(w->python), "%.150s:%d in %.40s", sqlite3_column_text(st, 0),
				 sqlite3_column_int(st, 1), sqlite3_column_text(st, 2) ? (const char *)sqlite3_column_text(st, 2) : "?");
		sqlite3_finalize(st);
	}
	return 0;
}

/* Where r's node's trace ended: until, or earlier in a merged file. */
static int64_t rank_end(const struct cw_nccl_rank *r, int64_t until)
{
	return r->node_end > 0 && r->node_end < until ? r->node_end : until;
}

/* The wavefront: the missing ranks first, then those waiting in the
 * collective, as many as the chain holds. */
static int wavefront(sqlite3 *db, const struct cw_nccl_loaded *l, const struct cw_nccl_arrival *a, int64_t until,
		     struct cw_chain *c)
{
	int64_t min_id = 0;
	int ret;

	/* Stored thread states come after the hang began. */
	if ((ret = cw_events_id_at(db, a->hang_started > 60 * (int64_t)NSEC_PER_SEC
					       ? (uint64_t)(a->hang_started - 60 * (int64_t)NSEC_PER_SEC) : 0, &min_id)) < 0)
		return ret;
	c->nwavefront_total = a->hang_members;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < l->nranks && c->nwavefront < CW_CHAIN_MAX_WAVEFRONT; i++) {
			int missing = 0;

			if (i < CW_NCCL_MAX_RANKS && !a->hang_member[i])
				continue;
			for (int k = 0; k < a->nmissing; k++)
				missing |= a->missing[k] == i;
			if ((pass == 0) != missing)
				continue;
			if ((ret = wavefront_rank(db, &l->ranks[i], missing, rank_end(&l->ranks[i], until), min_id,
						  &c->wavefront[c->nwavefront])) < 0)
				return ret;
			c->nwavefront++;
		}
	return 0;
}

/* The newest RAS answer trace stored since the hang began (a minute
 * before it, as the wavefront's thread states), on any node: RAS answers
 * for the whole job, and trace asks where it sees ranks diverge, which
 * need not be the missing rank's node. Its JSON in c->ras.
 * A file without the table (older layout) or without a row leaves it
 * empty ("not_asked"); a row that cannot be read is "bad_reply". */
static void ras_answer(sqlite3 *db, int64_t hang_started, struct cw_chain *c)
{
	static const char sql[] = "SELECT detail FROM kevents WHERE id >= ?1 AND source = 'ras'"
				  " AND op = 'status' ORDER BY id DESC LIMIT 1";
	sqlite3_stmt *st = NULL;
	int64_t min_id = 0;
	json_t *d;

	c->ras[0] = '\0';
	if (cw_events_id_at(db, hang_started > 60 * (int64_t)NSEC_PER_SEC
					? (uint64_t)(hang_started - 60 * (int64_t)NSEC_PER_SEC) : 0, &min_id) < 0 ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return;
	}
	sqlite3_bind_int64(st, 1, min_id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		/* Stored content is hostile too: a row past what trace stores is
		 * not parsed (no jansson tree of a damaged file's megabytes), the
		 * rest re-encoded with its lists cut to the room kept. A row that
		 * is there is never shown as "not asked". */
		d = sqlite3_column_type(st, 0) == SQLITE_TEXT && sqlite3_column_bytes(st, 0) <= CW_CHAIN_RAS_STORED_MAX
			    ? json_loadb((const char *)sqlite3_column_text(st, 0), (size_t)sqlite3_column_bytes(st, 0), 0,
					 NULL)
			    : NULL;
		if (!json_is_object(d) || !json_is_string(json_object_get(d, "status"))) {
			json_decref(d);
			d = json_pack("{s:s, s:s}", "status", "bad_reply", "why", "the stored answer cannot be read");
		}
		if (d)
			(void)cw_ras_fit(d, c->ras, sizeof(c->ras));
		json_decref(d);
	}
	sqlite3_finalize(st);
}

static int hang_chain(sqlite3 *db, const struct cw_nccl_loaded *l, const struct cw_nccl_arrival *a, int64_t until,
		      struct cw_chain *c)
{
	const struct cw_nccl_rank *m = &l->ranks[a->missing[0]];
	char who[256] = "", f[32], thr[32];
	size_t off = 0;
	int ret;

	base(c, m, CW_KIND_NCCL_HANG, a->comm_op);
	for (int i = 0; i < a->nmissing && off < sizeof(who); i++) {
		const struct cw_nccl_rank *r = &l->ranks[a->missing[i]];
		c->missing_ranks[c->nmissing++] = r->rank;
		off += (size_t)snprintf(who + off, sizeof(who) - off, "%s%s%d (pid %lld on %s)", i ? ", " : "",
					r->rank >= 0 ? "rank " : "pid ", r->rank >= 0 ? r->rank : (int)r->pid,
					(long long)r->pid, r->node);
		if (i < CW_CHAIN_MAX_MISSING &&
		    (ret = missing_state(db, r, rank_end(r, until), c->missing_state[i], sizeof(c->missing_state[i]))) < 0)
			return ret;
	}
	if ((ret = wavefront(db, l, a, until, c)) < 0)
		return ret;
	ras_answer(db, a->hang_started, c);
	cw_format_duration((uint64_t)a->hang_for_ns, f, sizeof(f));
	cw_format_duration(a->hang_threshold_ns, thr, sizeof(thr));
	c->seq = a->hang_seq;
	c->comm_id = a->hang_comm;
	snprintf(c->because, sizeof(c->because), "missing_rank");
	if (snprintf(c->summary, sizeof(c->summary),
		     "NCCL hang: collective #%lld was entered by %d of %d ranks %s ago (threshold %s); never entered"
		     " by %s. %s",
		     (long long)a->hang_seq, a->hang_members - a->nmissing, a->hang_members, f, thr, who,
		     c->missing_state[0]) >= (int)sizeof(c->summary))
		c->summary[sizeof(c->summary) - 1] = '\0';
	c->count = a->complete;
	c->slow_count = 1;
	/* The time lost is every waiting rank's: they all sit in it. */
	c->slow_time_ns = c->explained_ns = (uint64_t)a->hang_for_ns * (uint64_t)(a->hang_members - a->nmissing);
	c->explained_share = 1;
	c->p50_ns = (uint64_t)a->median_step_ns;
	c->p99_ns = c->max_ns = (uint64_t)a->hang_for_ns;
	c->tail_ratio = c->p50_ns ? (double)c->p99_ns / (double)c->p50_ns : 0;
	cw_chain_add_timeline(c, CW_LAYER_NCCL, (uint64_t)a->hang_started, "collective #%lld entered by %d rank%s",
			      (long long)a->hang_seq, a->hang_members - a->nmissing,
			      a->hang_members - a->nmissing == 1 ? "" : "s");
	for (int i = 0; i < c->nmissing && i < CW_CHAIN_MAX_FIX; i++)
		cw_chain_add_fix(c, "causeway where %lld  # on %s: why rank %d never reached collective #%lld",
				 (long long)l->ranks[a->missing[i]].pid, l->ranks[a->missing[i]].node,
				 l->ranks[a->missing[i]].rank, (long long)a->hang_seq);
	cw_chain_add_evidence(c, "seq", (double)a->hang_seq, 1);
	cw_chain_add_evidence(c, "hung_for_ns", (double)a->hang_for_ns, 1);
	cw_chain_add_evidence(c, "threshold_ns", (double)a->hang_threshold_ns, 1);
	cw_chain_add_evidence(c, "median_step_ns", (double)a->median_step_ns, 1);
	cw_chain_add_evidence(c, "missing", a->nmissing, 1);
	return 1;
}

static int comm_bound_chain(const struct cw_nccl_loaded *l, const struct cw_nccl_arrival *a, struct cw_chain *c)
{
	const struct cw_nccl_rank *r = &l->ranks[0];
	char by[32], tr[32];

	base(c, r, CW_KIND_COMM_BOUND, a->comm_op);
	c->pid = c->tid = 0;
	c->rank = -1;
	cw_format_duration((uint64_t)a->transfer_p50_ns, tr, sizeof(tr));
	snprintf(by, sizeof(by), "%.1f MiB", (double)a->bytes_p50 / (1 << 20));
	snprintf(c->because, sizeof(c->because), "collective_wait");
	if (snprintf(c->summary, sizeof(c->summary),
		     "communication-bound: the median rank spends %.0f %% of its steps waiting for %s to complete"
		     " (%s per collective, p50 %s after the last rank arrives: %.2f GB/s bus bandwidth over %d"
		     " ranks); no rank is late",
		     a->comm_share * 100, c->op, by, tr, a->busbw_gbps, l->nranks) >= (int)sizeof(c->summary))
		c->summary[sizeof(c->summary) - 1] = '\0';
	c->count = a->complete;
	c->explained_share = a->comm_share > 1 ? 1 : a->comm_share;
	c->p50_ns = (uint64_t)a->transfer_p50_ns;
	for (int i = 0; i < l->nranks; i++)
		c->slow_time_ns += l->ranks[i].wait_ns;
	c->explained_ns = c->slow_time_ns;
	cw_chain_add_advice(c, "overlap communication with compute (bucketed gradients: DDP bucket_cap_mb,"
		       " FSDP prefetch), or communicate less (gradient accumulation, compression)");
	cw_chain_add_advice(c, "check the interconnect: %.2f GB/s bus bandwidth; compare with nccl-tests on the"
		       " same nodes (all_reduce_perf)", a->busbw_gbps);
	cw_chain_add_evidence(c, "comm_share", a->comm_share, 0);
	cw_chain_add_evidence(c, "bytes_p50", (double)a->bytes_p50, 1);
	cw_chain_add_evidence(c, "transfer_p50_ns", (double)a->transfer_p50_ns, 1);
	cw_chain_add_evidence(c, "busbw_gbps", a->busbw_gbps, 0);
	cw_chain_add_evidence(c, "collectives", (double)a->complete, 1);
	cw_chain_add_evidence(c, "ranks", (double)l->nranks, 1);
	return 1;
}

int cw_rule_nccl(sqlite3 *db, const struct cw_explain_opts *o, uint64_t from_wall, uint64_t to_wall,
		 struct cw_chain *out, int max_out, struct cw_nccl_peers *peers)
{
	struct cw_nccl_loaded l;
	struct cw_nccl_arrival *a = NULL;
	int64_t until;
	int n = 0, ret;

	memset(peers, 0, sizeof(*peers));
	if ((ret = cw_nccl_load(db, o->node_filter, from_wall, to_wall, &l)) < 0 || l.nranks < 2)
		goto out;
	snprintf(peers->note, sizeof(peers->note), "%s", l.note);
	if (!(a = malloc(sizeof(*a)))) {
		ret = -ENOMEM;
		goto out;
	}
	if ((ret = cw_nccl_observed_until(db, &l, &until)) < 0)
		goto out;
	if ((ret = cw_nccl_arrival_analyse(l.calls, l.n, l.ranks, l.nranks, until, o->hang_min_ns, a)) < 0)
		goto out;
	if (a->hang && n < max_out) {
		const struct cw_nccl_rank *m = &l.ranks[a->missing[0]];

		if ((ret = hang_chain(db, &l, a, until, &out[n])) < 0)
			goto out;
		n++;
		/* The ranks that entered wait for the missing one. */
		snprintf(peers->kind, sizeof(peers->kind), "%s", cw_kind_name(CW_KIND_NCCL_HANG));
		snprintf(peers->node, sizeof(peers->node), "%s", m->node);
		peers->pid = m->pid;
		peers->rank = m->rank;
		for (int i = 0; i < l.nranks && peers->n < CW_NCCL_MAX_PEERS; i++) {
			int missing = 0;

			if (i < CW_NCCL_MAX_RANKS && !a->hang_member[i])
				continue;
			for (int k = 0; k < a->nmissing; k++)
				missing |= a->missing[k] == i;
			if (missing)
				continue;
			snprintf(peers->v[peers->n].node, sizeof(peers->v[0].node), "%s", l.ranks[i].node);
			peers->v[peers->n++].pid = l.ranks[i].pid;
		}
	}
	ret = 0;
	if (a->straggler >= 0 && n < max_out) {
		const struct cw_nccl_rank *s = &l.ranks[a->straggler];

		if ((ret = straggler_chain(db, &l, a, &out[n])) < 0)
			goto out;
		n++;
		peers->n = 0;
		snprintf(peers->kind, sizeof(peers->kind), "%s", cw_kind_name(CW_KIND_NCCL_STRAGGLER));
		snprintf(peers->node, sizeof(peers->node), "%s", s->node);
		peers->pid = s->pid;
		peers->rank = s->rank;
		for (int i = 0; i < l.nranks && n < max_out; i++) {
			if (i == a->straggler || !l.ranks[i].waited_ns)
				continue;
			if (peers->n < CW_NCCL_MAX_PEERS) {
				snprintf(peers->v[peers->n].node, sizeof(peers->v[0].node), "%s", l.ranks[i].node);
				peers->v[peers->n++].pid = l.ranks[i].pid;
			}
			n += wait_chain(&l, a, i, &out[n]);
		}
	} else if (!a->hang && a->complete >= CW_NCCL_COMM_MIN_GROUPS && a->comm_share >= CW_NCCL_COMM_BOUND_SHARE &&
		   n < max_out) {
		n += comm_bound_chain(&l, a, &out[n]);
	}
	ret = n;
out:
	free(a);
	cw_nccl_loaded_free(&l);
	return ret;
}

int cw_rule_nccl_arrival(const struct cw_rule_ctx *ctx, struct cw_chain *c)
{
	return cw_rule_nccl(ctx->db, ctx->opts, ctx->window_from_ns, ctx->window_to_ns, c, ctx->max_out, ctx->peers);
}
