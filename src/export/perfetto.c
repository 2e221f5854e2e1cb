/* Store -> Chrome trace JSON (perfetto.h). Slices are read in one stream
 * per node (sorted by tid, then time), laid out on nesting lanes as they
 * come, and each one is read again by id when it is written; what was
 * written is kept in a temporary database (emitted.h), so memory holds
 * the open slices of one thread, never the rows. */
#include "export/perfetto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "export/perfetto_int.h"
#include "store/store.h"
#include "util/sat.h"
#include "util/timeutil.h"
#include "util/utf8.h"

#define ERR(c, ...) snprintf((c)->err, (c)->errlen, __VA_ARGS__)

static int db_fail(struct pf_ctx *c, int rc, const char *what)
{
	ERR(c, "reading %s: %s", what, sqlite3_errmsg(c->db));
	return cw_sqlite_errno(rc) ? cw_sqlite_errno(rc) : -EIO;
}

/* Offsets measured by merge: {"nodes": {"node2": {"offset_ns": N}}}. */
static void load_skew(struct pf_ctx *c)
{
	char *s = c->o->no_skew ? NULL : cw_meta_get(c->db, "merge.skew");
	json_t *root = s ? json_loads(s, 0, NULL) : NULL, *nodes = json_object_get(root, "nodes");

	for (int i = 0; nodes && i < c->nnodes; i++) {
		json_t *off = json_object_get(json_object_get(nodes, c->nodes[i].name), "offset_ns");
		if (json_is_integer(off)) {
			c->nodes[i].offset_ns = json_integer_value(off);
			c->nodes[i].has_offset = 1;
			c->st->skew_applied++;
		}
	}
	json_decref(root);
	free(s);
}

static int load_nodes(struct pf_ctx *c)
{
	static const char sql[] =
		"SELECT node, (SELECT max(second) FROM aggregates a WHERE a.node = n.node),"
		" (SELECT min(second) FROM aggregates a WHERE a.node = n.node) FROM"
		" (SELECT node FROM aggregates UNION SELECT node FROM sessions UNION SELECT node FROM snapshots"
		" UNION SELECT node FROM processes) n ORDER BY node";
	sqlite3_stmt *st = NULL;
	int64_t *newest = NULL, *oldest = NULL;
	int rc, n = 0, ret = 0;
	int64_t to_ref = 0, from_ref = INT64_MAX;

	if ((rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL)) != SQLITE_OK)
		return db_fail(c, rc, "nodes");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct pf_node *nv = realloc(c->nodes, (size_t)(n + 1) * sizeof(*nv));
		int64_t *no = realloc(oldest, (size_t)(n + 1) * sizeof(*no));

		if (no)
			oldest = no;
		int64_t *nw = realloc(newest, (size_t)(n + 1) * sizeof(*nw));
		if (nv)
			c->nodes = nv;
		if (nw)
			newest = nw;
		if (!nv || !nw || !no) {
			ret = -ENOMEM;
			goto out;
		}
		memset(&nv[n], 0, sizeof(nv[n]));
		snprintf(nv[n].name, sizeof(nv[n].name), "%s", (const char *)sqlite3_column_text(st, 0));
		nv[n].pid = n + 1;
		newest[n] = sqlite3_column_type(st, 1) == SQLITE_NULL
				    ? -1
				    : (cw_clamp_second(sqlite3_column_int64(st, 1)) + 1) * (int64_t)NSEC_PER_SEC;
		/* A second early: off-CPU intervals and samples may start before
		 * the first call of the first second. */
		oldest[n] = sqlite3_column_type(st, 2) == SQLITE_NULL
				    ? -1
				    : (cw_clamp_second(sqlite3_column_int64(st, 2)) - 1) * (int64_t)NSEC_PER_SEC;
		n++;
	}
	if (rc != SQLITE_DONE) {
		ret = db_fail(c, rc, "nodes");
		goto out;
	}
	c->nnodes = n;
	c->st->nodes = n;
	load_skew(c);
	/* A node without aggregates (written by something other than the
	 * writer): its newest event, at the cost of a scan. */
	for (int i = 0; i < n; i++) {
		sqlite3_stmt *q = NULL;
		if (newest[i] >= 0)
			continue;
		if (cw_events_prepare_light(c->db,
					    "SELECT max(wall_ns + duration_ns), min(wall_ns) FROM events WHERE node = ?1",
					    &q) != SQLITE_OK) {
			ret = db_fail(c, SQLITE_ERROR, "events");
			goto out;
		}
		sqlite3_bind_text(q, 1, c->nodes[i].name, -1, SQLITE_STATIC);
		if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
			newest[i] = cw_add_sat(sqlite3_column_int64(q, 0), 1);
			oldest[i] = sqlite3_column_int64(q, 1);
		}
		sqlite3_finalize(q);
	}
	/* The window is on the reference clock: each node's newest data is
	 * moved by its offset before taking the latest. */
	for (int i = 0; i < n; i++) {
		if (newest[i] >= 0 && newest[i] - c->nodes[i].offset_ns > to_ref)
			to_ref = newest[i] - c->nodes[i].offset_ns;
		if (oldest[i] >= 0 && oldest[i] - c->nodes[i].offset_ns < from_ref)
			from_ref = oldest[i] - c->nodes[i].offset_ns;
	}
	if (c->o->from_wall_ns || c->o->to_wall_ns) {
		c->st->from_wall_ns = c->o->from_wall_ns;
		c->st->to_wall_ns = c->o->to_wall_ns ? c->o->to_wall_ns : (uint64_t)to_ref;
	} else {
		/* No --since: the whole store (from its oldest second), the
		 * window explain and query read. */
		uint64_t since = c->o->since_ns;
		c->st->to_wall_ns = (uint64_t)to_ref;
		/* since UINT64_MAX (a local export without a window) or 0 (a
		 * fleet reader's default): the whole store, from its oldest
		 * second; a window reaching past the oldest data starts at it
		 * (timestamps are relative to the start, and doubles keep their
		 * nanoseconds only while they stay small). */
		if (since && since != UINT64_MAX)
			c->st->from_wall_ns = (uint64_t)to_ref > since ? (uint64_t)to_ref - since : 0;
		else
			c->st->from_wall_ns = 0;
		if (from_ref != INT64_MAX && from_ref > 0 && from_ref < to_ref &&
		    (uint64_t)from_ref > c->st->from_wall_ns)
			c->st->from_wall_ns = (uint64_t)from_ref;
	}
out:
	sqlite3_finalize(st);
	free(newest);
	free(oldest);
	return ret;
}

static void set_node_windows(struct pf_ctx *c)
{
	for (int i = 0; i < c->nnodes; i++) {
		c->nodes[i].from = (int64_t)c->st->from_wall_ns + c->nodes[i].offset_ns;
		c->nodes[i].to = (int64_t)c->st->to_wall_ns + c->nodes[i].offset_ns;
	}
	c->base = (int64_t)c->st->from_wall_ns;
}

static int cmp_desc(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x > y ? -1 : x < y;
}

/* Counts the slices in the window and, past max_events, moves the window
 * start so that only the newest max_events remain. */
static int apply_cap(struct pf_ctx *c)
{
	static const char count_sql[] =
		"SELECT (SELECT count(*) FROM events WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3"
		" AND (?5 = 0 OR pid = ?5))"
		" + (SELECT count(*) FROM offcpu WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3 AND (?5 = 0 OR pid = ?5))";
	static const char newest_sql[] =
		"SELECT w FROM (SELECT wall_ns AS w FROM events WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3"
		" AND (?5 = 0 OR pid = ?5)"
		" UNION ALL SELECT wall_ns FROM offcpu WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3"
		" AND (?5 = 0 OR pid = ?5))"
		" ORDER BY w DESC LIMIT ?4";
	uint64_t max = c->o->max_events ? c->o->max_events : CW_EXPORT_DEFAULT_MAX_EVENTS;
	sqlite3_stmt *st = NULL;
	int64_t *keep = NULL;
	size_t nkeep = 0;
	int rc, ret = 0;

	if ((rc = cw_events_prepare_light(c->db, count_sql, &st)) != SQLITE_OK)
		return db_fail(c, rc, "events");
	for (int i = 0; i < c->nnodes; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, c->nodes[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, c->nodes[i].from);
		sqlite3_bind_int64(st, 3, c->nodes[i].to);
		sqlite3_bind_int64(st, 5, c->o->pid);
		if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
			ret = db_fail(c, rc, "events");
			goto out;
		}
		c->st->in_window += (uint64_t)sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	st = NULL;
	if (c->st->in_window <= max)
		return 0;
	/* max + 1 starts per node: the one past the cut tells whether the cut
	 * falls between two slices (exactly max kept) or inside a tie. */
	if (!(keep = malloc(2 * (max + 1) * sizeof(*keep))))
		return -ENOMEM;
	if ((rc = cw_events_prepare_light(c->db, newest_sql, &st)) != SQLITE_OK) {
		ret = db_fail(c, rc, "events");
		goto out;
	}
	for (int i = 0; i < c->nnodes; i++) {
		sqlite3_reset(st);
		sqlite3_bind_text(st, 1, c->nodes[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, c->nodes[i].from);
		sqlite3_bind_int64(st, 3, c->nodes[i].to);
		sqlite3_bind_int64(st, 4, (int64_t)max + 1);
		sqlite3_bind_int64(st, 5, c->o->pid);
		while ((rc = sqlite3_step(st)) == SQLITE_ROW)
			keep[nkeep++] = sqlite3_column_int64(st, 0) - c->nodes[i].offset_ns;
		if (rc != SQLITE_DONE) {
			ret = db_fail(c, rc, "events");
			goto out;
		}
		/* Bounded: never more than 2 x (max + 1) starts held. */
		qsort(keep, nkeep, sizeof(*keep), cmp_desc);
		if (nkeep > max + 1)
			nkeep = max + 1;
	}
	/* From the max-th newest start: exactly max slices. Where the next
	 * older one starts at the same nanosecond, strictly after it instead,
	 * so that a tie never takes the count past max. */
	if (nkeep > max && keep[max] == keep[max - 1])
		c->st->cut_from_wall_ns = (uint64_t)keep[max - 1] + 1;
	else
		c->st->cut_from_wall_ns = (uint64_t)keep[max - 1];
	c->st->from_wall_ns = c->st->cut_from_wall_ns;
	set_node_windows(c);
out:
	sqlite3_finalize(st);
	free(keep);
	return ret;
}

static json_t *meta_ev(const char *what, int pid, int64_t tid, json_t *args)
{
	json_t *e = json_pack("{s:s,s:s,s:i,s:o}", "ph", "M", "name", what, "pid", pid, "args", args);
	if (e && tid >= 0)
		json_object_set_new(e, "tid", json_integer(tid));
	return e;
}

static int is_launch(const char *op)
{
	return strstr(op, "Launch") != NULL;
}

static json_t *event_slice(struct pf_ctx *c, const struct pf_node *n, sqlite3_stmt *q, int64_t tid)
{
	const char *source = (const char *)sqlite3_column_text(q, 0), *op = (const char *)sqlite3_column_text(q, 1);
	const char *detail = (const char *)sqlite3_column_text(q, 6), *pyf = (const char *)sqlite3_column_text(q, 8);
	json_t *args = json_pack("{s:o}", "op", cw_trace_str(op ? op : "?"));
	json_t *e;

	if (sqlite3_column_type(q, 4) != SQLITE_NULL)
		json_object_set_new(args, "bytes", json_integer(sqlite3_column_int64(q, 4)));
	if (sqlite3_column_type(q, 5) != SQLITE_NULL)
		json_object_set_new(args, "ret", json_integer(sqlite3_column_int64(q, 5)));
	if (detail)
		json_object_set_new(args, op && is_launch(op) ? "kernel" : "detail", cw_trace_str(detail));
	if (sqlite3_column_type(q, 7) != SQLITE_NULL && sqlite3_column_int(q, 7) >= 0 && source &&
	    strcmp(source, "io"))
		json_object_set_new(args, "device", json_integer(sqlite3_column_int(q, 7)));
	if (pyf)
		json_object_set_new(args, "python",
				    /* Precisions: vsnprintf walks all of a %s, however long. */
				    cw_trace_strf("%.240s:%d %.240s", pyf, sqlite3_column_int(q, 9),
						 sqlite3_column_text(q, 10) ? (const char *)sqlite3_column_text(q, 10)
									    : "?"));
	/* attributed: the stack is thread python_via's, waiting on this one */
	if (pyf && sqlite3_column_type(q, 12) == SQLITE_INTEGER)
		json_object_set_new(args, "python_via", json_integer(sqlite3_column_int64(q, 12)));
	if (sqlite3_column_int(q, 11))
		json_object_set_new(args, "anomalous", json_true());
	e = json_pack("{s:s,s:o,s:o,s:i,s:I,s:o,s:o,s:o}", "ph", "X", "name", cw_trace_str(op ? op : "?"), "cat",
		      cw_trace_str(source ? source : "?"), "pid", n->pid, "tid", (json_int_t)tid, "ts",
		      pf_ts(c, n, sqlite3_column_int64(q, 2)), "dur", cw_trace_us(sqlite3_column_int64(q, 3)),
		      "args", args);
	if (source && !strcmp(source, "io"))
		c->st->io++;
	return e;
}

static json_t *offcpu_slice(struct pf_ctx *c, const struct pf_node *n, sqlite3_stmt *q, int64_t tid)
{
	const char *reason = (const char *)sqlite3_column_text(q, 2), *by = (const char *)sqlite3_column_text(q, 4);
	const char *waker = (const char *)sqlite3_column_text(q, 6);
	json_t *args = json_pack("{s:o}", "reason", cw_trace_str(reason ? reason : "?"));
	char name[128];

	if (reason && !strcmp(reason, "preempted") && by) {
		snprintf(name, sizeof(name), "off-cpu (preempted by %s)", by);
		json_object_set_new(args, "by_comm", cw_trace_str(by));
		json_object_set_new(args, "by_pid", json_integer(sqlite3_column_int64(q, 3)));
	} else if (waker && *waker) {
		snprintf(name, sizeof(name), "off-cpu (%s, woken by %s)", reason ? reason : "?", waker);
		json_object_set_new(args, "waker_comm", cw_trace_str(waker));
		json_object_set_new(args, "waker_pid", json_integer(sqlite3_column_int64(q, 5)));
	} else {
		snprintf(name, sizeof(name), "off-cpu (%s)", reason ? reason : "?");
	}
	if (sqlite3_column_type(q, 7) != SQLITE_NULL)
		json_object_set_new(args, "cpu", json_integer(sqlite3_column_int(q, 7)));
	c->st->offcpu++;
	return json_pack("{s:s,s:o,s:s,s:i,s:I,s:o,s:o,s:o}", "ph", "X", "name", cw_trace_str(name), "cat", "offcpu", "pid", n->pid,
			 "tid", (json_int_t)tid, "ts", pf_ts(c, n, sqlite3_column_int64(q, 0)), "dur",
			 cw_trace_us(sqlite3_column_int64(q, 1)), "args", args);
}

/* Names lanes from..from+n-1 of a thread's tracks. */
static int name_lanes(struct pf_ctx *c, const struct pf_node *n, int64_t tid, const char *comm, int from, int count,
		      const char *what)
{
	int ret = 0;

	for (int l = from; l < from + count && !ret; l++) {
		int64_t otid = tid + l * CW_LANE_STRIDE;
		json_t *name = !l ? cw_trace_strf("%s %lld", comm, (long long)tid)
				  : cw_trace_strf("%s %lld (%s %d)", comm, (long long)tid, what, from ? l - from + 1 : l);
		if ((ret = cw_tracew_event(&c->w, meta_ev("thread_name", n->pid, otid, json_pack("{s:o}", "name", name)))))
			break;
		ret = cw_tracew_event(&c->w, meta_ev("thread_sort_index", n->pid, otid,
						      json_pack("{s:I}", "sort_index", (json_int_t)otid)));
	}
	return ret;
}

/* One thread's layout while its slices stream past: the open slices of
 * each lane, never the placed ones. g[0] its calls and off-CPU intervals,
 * g[1] its block I/O requests, on lanes after g[0]'s. */
struct thread_out {
	int64_t tid;
	struct cw_lanes g[2];
	char comm[32];
	int64_t comm_wall, comm_id; /* the earliest event's comm wins */
	int comm_ev, any;
};

/* Writes one placed slice, read again by id with its details. */
static int emit_one(struct pf_ctx *c, int ni, int64_t otid, uint64_t key, sqlite3_stmt *ev_q, sqlite3_stmt *off_q)
{
	const struct pf_node *n = &c->nodes[ni];
	int off = (key & CW_KEY_OFFCPU) != 0, rc, ret;
	sqlite3_stmt *q = off ? off_q : ev_q;

	sqlite3_reset(q);
	sqlite3_bind_int64(q, 1, (int64_t)(key & ~CW_KEY_OFFCPU));
	if ((rc = sqlite3_step(q)) != SQLITE_ROW)
		return db_fail(c, rc, off ? "offcpu" : "events");
	ret = cw_tracew_event(&c->w, off ? offcpu_slice(c, n, q, otid) : event_slice(c, n, q, otid));
	if (!ret)
		ret = pf_emitted_put(&c->emitted, key, ((int64_t)ni << 32) | otid);
	c->st->slices++;
	return ret;
}

/* The thread's names, once its slices are out and its lanes counted (the
 * trace's readers take metadata from anywhere in the file). */
static int end_thread(struct pf_ctx *c, int ni, struct thread_out *t)
{
	const struct pf_node *n = &c->nodes[ni];
	int l0 = t->g[0].n, l1 = t->g[1].n, ret;

	if (!t->any)
		return 0;
	if (!t->comm[0])
		snprintf(t->comm, sizeof(t->comm), "thread");
	if ((ret = name_lanes(c, n, t->tid, t->comm, 0, l0, "overlap")) ||
	    (ret = name_lanes(c, n, t->tid, t->comm, l0, l1, "I/O")))
		return ret;
	c->st->threads++;
	c->st->lanes_extra += l0 + l1 > 1 ? l0 + l1 - 1 : 0;
	return 0;
}

/* Slices of one node in one stream sorted by thread, then group (calls and
 * off-CPU intervals before block I/O), then start, longer first, key: each
 * is placed on its lane and written as it comes, so memory holds no
 * thread's slices however many calls it made. */
static int emit_node_slices(struct pf_ctx *c, int ni)
{
	static const char sl_sql[] =
		"SELECT tid, wall_ns, duration_ns, k, comm, pid, g FROM ("
		" SELECT tid, wall_ns, duration_ns, id AS k, comm, pid, source IS 'io' AS g FROM events"
		" WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3 AND (?4 = 0 OR pid = ?4)"
		" UNION ALL SELECT tid, wall_ns, duration_ns, id | 4611686018427387904, comm, pid, 0 FROM offcpu"
		" WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3 AND (?4 = 0 OR pid = ?4))"
		" ORDER BY tid, g, wall_ns, wall_ns + max(coalesce(duration_ns, 0), 0) DESC, k";
	static const char ev_one[] =
		"SELECT e.source, e.op, e.wall_ns, e.duration_ns, e.bytes, e.ret, e.detail, e.device,"
		" p.user_file, p.user_line, p.user_function, e.anomalous, p.python_via"
		" FROM events e LEFT JOIN py_stacks p ON p.id = e.py_stack_id WHERE e.id = ?1";
	static const char off_one[] = "SELECT wall_ns, duration_ns, reason, by_pid, by_comm, waker_pid, waker_comm,"
				      " cpu FROM offcpu WHERE id = ?1";
	const struct pf_node *n = &c->nodes[ni];
	sqlite3_stmt *s[3] = { NULL };
	const char *sql[3] = { sl_sql, ev_one, off_one };
	struct thread_out t = { .tid = INT64_MIN };
	int rc = SQLITE_DONE, ret = 0;

	for (int i = 0; i < 3; i++) {
		int r = i == 0 ? cw_events_prepare_light(c->db, sql[i], &s[i])
				: sqlite3_prepare_v2(c->db, sql[i], -1, &s[i], NULL);
		if (r != SQLITE_OK) {
			ret = db_fail(c, r, "slices");
			goto out;
		}
	}
	sqlite3_bind_text(s[0], 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s[0], 2, n->from);
	sqlite3_bind_int64(s[0], 3, n->to);
	sqlite3_bind_int64(s[0], 4, c->o->pid);
	while (!ret && (rc = sqlite3_step(s[0])) == SQLITE_ROW) {
		int64_t tid = sqlite3_column_int64(s[0], 0), start = sqlite3_column_int64(s[0], 1);
		int64_t dur = sqlite3_column_int64(s[0], 2), id = sqlite3_column_int64(s[0], 3);
		uint64_t key = (uint64_t)id;
		const char *comm = (const char *)sqlite3_column_text(s[0], 4);
		int g = sqlite3_column_int(s[0], 6) != 0, lane;
		int64_t one;

		/* A tenant filter keeps its own processes' threads. */
		if (c->o->npids &&
		    (c->o->npids < 0 || !u64map_get(&c->pids, (uint64_t)sqlite3_column_int64(s[0], 5), &one)))
			continue;
		if (tid != t.tid) {
			if ((ret = end_thread(c, ni, &t)))
				break;
			cw_lanes_reset(&t.g[0]);
			cw_lanes_reset(&t.g[1]);
			t.tid = tid;
			t.comm[0] = '\0';
			t.comm_ev = t.any = 0;
		}
		t.any = 1;
		/* The name: the earliest event's comm, else an off-CPU row's. */
		if (comm && (key & CW_KEY_OFFCPU ? !t.comm[0]
					       : !t.comm_ev || start < t.comm_wall ||
							 (start == t.comm_wall && id < t.comm_id))) {
			snprintf(t.comm, sizeof(t.comm), "%s", comm);
			if (!(key & CW_KEY_OFFCPU)) {
				t.comm_ev = 1;
				t.comm_wall = start;
				t.comm_id = id;
			}
		}
		lane = cw_lanes_place(&t.g[g], start, start + (dur > 0 ? dur : 0),
				      g ? CW_MAX_LANES - t.g[0].n : CW_MAX_LANES);
		if (lane == -ENOMEM) {
			ret = lane;
			break;
		}
		if (lane < 0) {
			c->st->unplaced++;
			continue;
		}
		ret = emit_one(c, ni, tid + (lane + (g ? t.g[0].n : 0)) * CW_LANE_STRIDE, key, s[1], s[2]);
	}
	if (!ret && rc != SQLITE_DONE)
		ret = db_fail(c, rc, "slices");
	if (!ret)
		ret = end_thread(c, ni, &t);
out:
	for (int i = 0; i < 3; i++)
		sqlite3_finalize(s[i]);
	cw_lanes_free(&t.g[0]);
	cw_lanes_free(&t.g[1]);
	return ret;
}

static int emit_counters(struct pf_ctx *c, int ni)
{
	static const char sql[] = "SELECT wall_ns, cpu_pct, mem_pct, io_busy_pct FROM snapshots"
				  " WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3 ORDER BY wall_ns, id";
	static const char *const keys[3] = { "cpu %", "mem %", "io busy %" };
	const struct pf_node *n = &c->nodes[ni];
	sqlite3_stmt *st = NULL;
	int rc, ret = 0;

	if ((rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL)) != SQLITE_OK)
		return db_fail(c, rc, "snapshots");
	sqlite3_bind_text(st, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, n->from);
	sqlite3_bind_int64(st, 3, n->to);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *args = json_object();
		for (int k = 0; k < 3; k++)
			if (sqlite3_column_type(st, k + 1) != SQLITE_NULL)
				json_object_set_new(args, keys[k], json_real(sqlite3_column_double(st, k + 1)));
		ret = cw_tracew_event(&c->w, json_pack("{s:s,s:s,s:s,s:i,s:i,s:o,s:o}", "ph", "C", "name", "system",
						       "cat", "system", "pid", n->pid, "tid", 0, "ts",
						       pf_ts(c, n, sqlite3_column_int64(st, 0)), "args", args));
		c->st->counters++;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = db_fail(c, rc, "snapshots");
	sqlite3_finalize(st);
	return ret;
}

static json_t *other_data(const struct pf_ctx *c)
{
	char from[40], to[40];
	json_t *offs = json_object(), *o;

	cw_format_time(c->st->from_wall_ns, from, sizeof(from));
	cw_format_time(c->st->to_wall_ns, to, sizeof(to));
	for (int i = 0; i < c->nnodes; i++)
		if (c->nodes[i].has_offset)
			cw_json_set(offs, c->nodes[i].name, json_integer(c->nodes[i].offset_ns));
	o = json_pack("{s:s,s:{s:s,s:s,s:I,s:I},s:I,s:o,s:I,s:I}", "producer", "causeway", "window", "from", from,
		      "to", to, "from_wall_ns", (json_int_t)c->st->from_wall_ns, "to_wall_ns",
		      (json_int_t)c->st->to_wall_ns, "ts_origin_wall_ns", (json_int_t)c->base, "clock_offsets_ns",
		      offs, "slices", (json_int_t)c->st->slices, "slices_in_window", (json_int_t)c->st->in_window);
	/* Only when there are some: a training trace's file stays as it was. */
	if (o && c->st->requests)
		json_object_set_new(o, "requests", json_integer((json_int_t)c->st->requests));
	if (o && c->st->cut_from_wall_ns)
		json_object_set_new(o, "cut", json_string("older slices beyond --max-events were left out"));
	return o;
}

int cw_export_perfetto(sqlite3 *db, const struct cw_export_opts *o, FILE *out, struct cw_export_stats *st,
		       char *err, size_t errlen)
{
	struct pf_ctx c = { .db = db, .o = o, .st = st, .err = err, .errlen = errlen };
	int ret;

	memset(st, 0, sizeof(*st));
	err[0] = '\0';
	if ((ret = pf_emitted_open(&c.emitted))) {
		snprintf(err, errlen, "opening a temporary database: %s", strerror(-ret));
		return ret;
	}
	if ((ret = u64map_init(&c.pids, 0)))
		goto out;
	for (int i = 0; i < o->npids && !ret; i++)
		if (o->pids[i] > 0)
			ret = u64map_put(&c.pids, (uint64_t)o->pids[i], 1);
	if (ret)
		goto out;
	if ((ret = load_nodes(&c)))
		goto out;
	set_node_windows(&c);
	if ((ret = apply_cap(&c)))
		goto out;
	if ((ret = cw_tracew_begin(&c.w, out)))
		goto out;
	for (int i = 0; i < c.nnodes && !ret; i++) {
		ret = cw_tracew_event(&c.w, meta_ev("process_name", c.nodes[i].pid, -1,
						    json_pack("{s:o}", "name", cw_trace_str(c.nodes[i].name))));
		if (!ret)
			ret = cw_tracew_event(&c.w, meta_ev("process_sort_index", c.nodes[i].pid, -1,
							    json_pack("{s:i}", "sort_index", c.nodes[i].pid)));
		if (!ret)
			ret = emit_node_slices(&c, i);
		if (!ret)
			ret = emit_counters(&c, i);
		if (!ret)
			ret = pf_emit_gpu(&c, i);
		if (!ret)
			ret = pf_emit_requests(&c, i);
	}
	if (!ret && !o->no_chains)
		ret = pf_emit_chains(&c);
	if (!ret)
		ret = cw_tracew_end(&c.w, other_data(&c));
	if (ret && !err[0])
		snprintf(err, errlen, "writing the trace: %s", strerror(-ret));
out:
	if (ret && !err[0])
		snprintf(err, errlen, "%s", strerror(-ret));
	pf_emitted_close(&c.emitted);
	u64map_free(&c.pids);
	free(c.nodes);
	return ret;
}
