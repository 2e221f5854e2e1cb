/* /api/v1/timeline: what one thread (or the threads of one process) did in a
 * window, lane by lane: CUDA calls, off-CPU intervals, block I/O, memory
 * events and NCCL collectives (docs/api.md).
 *
 * Every lane is read through an index or a rowid range, never a scan of
 * the whole events table: CUDA calls through the rowid range of the window
 * (cw_events_id_at: rows are appended in roughly time order), off-CPU
 * intervals through offcpu_tid_time, I/O and memory through their partial
 * indexes, NCCL calls through nccl_calls_time. Answers are paged: lanes are
 * filled in a fixed order, each in rowid order, and the cursor names the
 * lane and the last rowid sent, so a page boundary never repeats or loses
 * an interval. */
#define _GNU_SOURCE
#include "server/routes_api.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/explain.h"
#include "store/store.h"
#include "util/sat.h"
#include "util/timeutil.h"
#include "util/utf8.h"

#define TL_DEFAULT_LIMIT 20000
#define TL_MAX_LIMIT 200000
/* A call is written at its return, so its row sits among the rows of
 * calls that started about when it ended: the window's rowid range is
 * widened by the longest call of the window's seconds (from the
 * aggregates), at least TL_SLACK_MIN_NS for the writer's reordering and at
 * most TL_SLACK_NS. On a dense file (250,000 calls/s) each second of slack
 * is a quarter of a million rows to read. */
#define TL_SLACK_NS (2 * NSEC_PER_SEC)
#define TL_SLACK_MIN_NS (50 * NSEC_PER_MSEC)
#define TL_MAX_THREADS 4096

enum tl_lane { TL_CUDA, TL_OFFCPU, TL_IO, TL_MEMORY, TL_NCCL, TL_NLANES };
static const char *const lane_names[TL_NLANES] = { "cuda", "offcpu", "io", "memory", "nccl" };

/* Each query binds: ?1 after-id (for the rowid-range lanes at least the
 * range's start: with two lower bounds SQLite seeks on one of them, maybe
 * the looser), ?2 pid (0 any), ?3 tid (0 any), ?4 from, ?5 to, ?6 scan
 * low, ?7 scan high, ?8 row limit. Columns 0-5 are common: id, start wall
 * ns, duration ns, pid, tid, comm. */
static const char *const lane_sql[TL_NLANES] = {
	/* TL_CUDA: CW_READ_TIMELINE_CUDA (layout.h). */
	/* ?6/?7 are monotonic bounds here: offcpu_tid_time is (tid,
	 * start_mono_ns); a pid is its threads' (the threads table). The
	 * unary + keeps the planner off a rowid scan for the ORDER BY. */
	[TL_OFFCPU] = "SELECT o.id, o.wall_ns, o.duration_ns, o.pid, o.tid, o.comm, o.reason, o.by_pid,"
		      " o.by_comm, coalesce(cg.container, cg.path), o.waker_pid, o.waker_comm, o.cpu"
		      " FROM offcpu o LEFT JOIN cgroups cg ON cg.node = o.node AND cg.cgroup_id = o.by_cgroup_id"
		      " WHERE o.tid IN (SELECT ?3 WHERE ?3 != 0 UNION SELECT tid FROM threads WHERE ?3 = 0 AND pid = ?2)"
		      " AND o.start_mono_ns >= ?6 AND o.start_mono_ns <= ?7 AND +o.id > ?1 AND (?2 = 0 OR o.pid = ?2)"
		      " AND o.wall_ns <= ?5 AND o.wall_ns + o.duration_ns >= ?4 ORDER BY o.id LIMIT ?8",
	/* Block I/O of the process: requests complete on whichever thread, so
	 * the lane is per process. */
	[TL_IO] = "SELECT id, wall_ns, duration_ns, pid, tid, comm, op, detail, bytes, arg1"
		  " FROM kevents WHERE source = 'io' AND node IN (SELECT DISTINCT node FROM sessions)"
		  " AND wall_ns >= ?4 - 2000000000 AND wall_ns <= ?5 AND +id > ?1 AND pid = ?2"
		  " AND wall_ns + duration_ns >= ?4 ORDER BY id LIMIT ?8",
	/* page_alloc records are per process and cover arg1 ns; an OOM kill
	 * is shown on the victim's (arg2) and the killer's process. */
	[TL_MEMORY] = "SELECT id, wall_ns, max(duration_ns, coalesce(arg1, 0)), pid, tid, comm, op, bytes,"
		      " arg0, arg2, detail FROM kevents"
		      " WHERE op = 'page_alloc' AND node IN (SELECT DISTINCT node FROM sessions) AND pid = ?2"
		      " AND wall_ns >= ?4 - 2000000000 AND wall_ns <= ?5 AND +id > ?1"
		      " AND wall_ns + max(duration_ns, coalesce(arg1, 0)) >= ?4"
		      " UNION ALL SELECT id, wall_ns, duration_ns, pid, tid, comm, op, bytes, arg0, arg2, detail"
		      " FROM kevents WHERE op = 'oom_kill' AND node IN (SELECT DISTINCT node FROM sessions)"
		      " AND wall_ns >= ?4 AND wall_ns <= ?5 AND +id > ?1 AND (pid = ?2 OR arg2 = ?2)"
		      " ORDER BY 1 LIMIT ?8",
	[TL_NCCL] = "SELECT id, wall_ns, duration_ns, pid, tid, NULL, op, seq, comm_id, bytes, rank, wait_ns"
		    " FROM nccl_calls WHERE wall_ns >= ?4 - 2000000000 AND wall_ns <= ?5 AND +id > ?1"
		    " AND (?2 = 0 OR pid = ?2) AND (?3 = 0 OR tid = ?3) AND wall_ns + duration_ns >= ?4"
		    " ORDER BY id LIMIT ?8",
};

/* The memory lane on a file without the v4 partial indexes (opened
 * read-only, never migrated): the window's rowid range instead. */
static const char memory_noindex_sql[] =
	"SELECT id, wall_ns, max(duration_ns, coalesce(arg1, 0)), pid, tid, comm, op, bytes, arg0, arg2, detail"
	" FROM events WHERE id > ?1 AND id < ?7 AND op IN ('page_alloc', 'oom_kill')"
	" AND (pid = ?2 OR (op = 'oom_kill' AND arg2 = ?2)) AND wall_ns <= ?5"
	" AND wall_ns + max(duration_ns, coalesce(arg1, 0)) >= ?4 ORDER BY id LIMIT ?8";

struct tl_lane_out {
	int lane;
	int64_t key; /* tid, or pid for the per-process lanes */
	json_t *obj, *intervals;
};

struct tl {
	json_t *lanes; /* the answer's "lanes" */
	struct tl_lane_out *v;
	size_t n, cap;
};

static json_t *lane_of(struct tl *t, int lane, int64_t pid, int64_t tid)
{
	int per_process = lane == TL_IO || lane == TL_MEMORY;
	int64_t key = per_process ? pid : tid;
	struct tl_lane_out *o;

	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].lane == lane && t->v[i].key == key)
			return t->v[i].intervals;
	if (t->n == t->cap) {
		size_t nc = t->cap ? t->cap * 2 : 16;
		struct tl_lane_out *nv = realloc(t->v, nc * sizeof(*nv));

		if (!nv)
			return NULL;
		t->v = nv;
		t->cap = nc;
	}
	o = &t->v[t->n];
	o->intervals = json_array();
	o->obj = json_pack("{s:s, s:I, s:o, s:O}", "lane", lane_names[lane], "pid", (json_int_t)pid, "tid",
			   per_process ? json_null() : json_integer(tid), "intervals", o->intervals);
	if (!o->obj || json_array_append_new(t->lanes, o->obj))
		return NULL;
	json_decref(o->intervals); /* the lane object holds it */
	o->lane = lane;
	o->key = key;
	t->n++;
	return o->intervals;
}

/* Linux dev_t as the kernel's block tracepoints report it: major in the
 * high 12 bits of 32, minor in the low 20. */
static json_t *dev_json(sqlite3_stmt *st, int i)
{
	char b[32];
	int64_t d;

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return json_null();
	d = sqlite3_column_int64(st, i);
	snprintf(b, sizeof(b), "%" PRId64 ":%" PRId64, d >> 20, d & 0xfffff);
	return cw_json_str(b);
}

static json_t *interval(int lane, sqlite3_stmt *st)
{
	int64_t start = sqlite3_column_int64(st, 1), dur = sqlite3_column_int64(st, 2);
	const char *op = (const char *)sqlite3_column_text(st, 6);
	json_t *iv = json_pack("{s:I, s:I}", "start_ns", (json_int_t)start, "end_ns", (json_int_t)(start + dur));
	char label[160];

	if (!iv)
		return NULL;
	switch (lane) {
	case TL_CUDA: {
		const char *detail = (const char *)sqlite3_column_text(st, 8);

		/* A launch's detail is its kernel's name: the useful label. */
		snprintf(label, sizeof(label), "%s", detail && cw_op_is_launch(op ? op : "") ? detail : op ? op : "");
		json_object_set_new(iv, "op", cw_api_text(st, 6));
		json_object_set_new(iv, "error", json_integer(sqlite3_column_int64(st, 7)));
		json_object_set_new(iv, "kernel", detail && cw_op_is_launch(op ? op : "") ? cw_json_str(detail)
										       : json_null());
		json_object_set_new(iv, "python", cw_api_python(st, 9));
		break;
	}
	case TL_OFFCPU: {
		const char *by = (const char *)sqlite3_column_text(st, 8);

		if (sqlite3_column_int64(st, 7) > 0 || by)
			snprintf(label, sizeof(label), "%s by %s", op ? op : "", by ? by : "?");
		else
			snprintf(label, sizeof(label), "%s", op ? op : "");
		json_object_set_new(iv, "reason", cw_api_text(st, 6));
		json_object_set_new(iv, "preempted_by",
				    sqlite3_column_int64(st, 7) > 0 || by
					    ? json_pack("{s:o, s:o, s:o}", "pid", cw_api_int_or_null(st, 7), "comm",
							cw_api_text(st, 8), "container", cw_api_text(st, 9))
					    : json_null());
		json_object_set_new(iv, "waker",
				    sqlite3_column_type(st, 10) != SQLITE_NULL || sqlite3_column_text(st, 11)
					    ? json_pack("{s:o, s:o}", "pid", cw_api_int_or_null(st, 10), "comm",
							cw_api_text(st, 11))
					    : json_null());
		json_object_set_new(iv, "cpu", cw_api_int_or_null(st, 12));
		break;
	}
	case TL_IO:
		snprintf(label, sizeof(label), "%s %lld B", op ? op : "", (long long)sqlite3_column_int64(st, 8));
		json_object_set_new(iv, "op", cw_api_text(st, 6));
		json_object_set_new(iv, "rwbs", cw_api_text(st, 7));
		json_object_set_new(iv, "bytes", cw_api_int_or_null(st, 8));
		json_object_set_new(iv, "device", dev_json(st, 9));
		break;
	case TL_MEMORY:
		snprintf(label, sizeof(label), "%s", op ? op : "");
		json_object_set_new(iv, "kind", cw_api_text(st, 6));
		json_object_set_new(iv, "bytes", cw_api_int_or_null(st, 7));
		json_object_set_new(iv, "pages", cw_api_int_or_null(st, 8));
		json_object_set_new(iv, "victim", op && !strcmp(op, "oom_kill")
							  ? json_pack("{s:o, s:o}", "pid", cw_api_int_or_null(st, 9),
								      "comm", cw_api_text(st, 10))
							  : json_null());
		break;
	case TL_NCCL:
		snprintf(label, sizeof(label), "%s #%lld", op ? op : "", (long long)sqlite3_column_int64(st, 7));
		json_object_set_new(iv, "op", cw_api_text(st, 6));
		json_object_set_new(iv, "seq", cw_api_int_or_null(st, 7));
		json_object_set_new(iv, "comm_id", cw_api_int_or_null(st, 8));
		json_object_set_new(iv, "bytes", cw_api_int_or_null(st, 9));
		json_object_set_new(iv, "rank", cw_api_int_or_null(st, 10));
		json_object_set_new(iv, "wait_ns", cw_api_int_or_null(st, 11));
		break;
	}
	json_object_set_new(iv, "label", cw_json_str(label));
	return iv;
}

struct tl_req {
	int64_t pid, tid; /* what was asked for; pid 0 with tid: the thread's */
	int64_t *pids;    /* the processes of the per-process lanes */
	size_t npids;
	uint64_t from, to;
	int64_t id_lo, id_hi;     /* events rowid range of the window */
	int64_t mono_lo, mono_hi; /* offcpu monotonic range */
	int mem_indexed;          /* the file has events_pagealloc and events_oom */
	const char *cuda_sql;     /* the CUDA lane for the file's layout */
	int64_t mem_id_lo, mem_id_hi; /* rowid range of the memory lane without them */
};

/* Runs one lane from after_id; appends at most budget intervals. Sets
 * *more when the lane holds more than budget, *last to the last rowid
 * sent. A table an older file lacks (nccl_calls) is an empty lane. */
static int run_lane(sqlite3 *db, struct tl *t, int lane, const struct tl_req *q, int64_t pid, int64_t after_id,
		    int64_t budget, int64_t *sent, int *more, int64_t *last)
{
	sqlite3_stmt *st;
	int rc, ret = 0;
	int64_t n = 0;

	rc = sqlite3_prepare_v2(db,
				lane == TL_MEMORY && !q->mem_indexed ? memory_noindex_sql
				: lane == TL_CUDA		     ? q->cuda_sql
								     : lane_sql[lane],
				-1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc == SQLITE_ERROR ? 0 : cw_sqlite_errno(rc);
	if (lane == TL_CUDA && after_id < q->id_lo - 1)
		after_id = q->id_lo - 1;
	if (lane == TL_MEMORY && !q->mem_indexed && after_id < q->mem_id_lo - 1)
		after_id = q->mem_id_lo - 1;
	sqlite3_bind_int64(st, 1, after_id);
	sqlite3_bind_int64(st, 2, pid);
	sqlite3_bind_int64(st, 3, lane == TL_IO || lane == TL_MEMORY ? 0 : q->tid);
	sqlite3_bind_int64(st, 4, (int64_t)q->from);
	sqlite3_bind_int64(st, 5, (int64_t)q->to);
	/* ?6/?7: the monotonic range for offcpu, else the rowid range. */
	sqlite3_bind_int64(st, 6, lane == TL_OFFCPU ? q->mono_lo : lane == TL_MEMORY ? q->mem_id_lo : q->id_lo);
	sqlite3_bind_int64(st, 7, lane == TL_OFFCPU ? q->mono_hi : lane == TL_MEMORY ? q->mem_id_hi : q->id_hi);
	sqlite3_bind_int64(st, 8, budget + 1);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		json_t *arr, *iv;

		if (n == budget) {
			*more = 1;
			break;
		}
		arr = lane_of(t, lane, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
		iv = interval(lane, st);
		if (!arr || !iv || json_array_append_new(arr, iv)) {
			ret = -ENOMEM;
			goto out;
		}
		*last = sqlite3_column_int64(st, 0);
		n++;
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = cw_sqlite_errno(rc);
out:
	*sent += n;
	sqlite3_finalize(st);
	return ret;
}

/* The threads the answer covers (and the processes of the per-process
 * lanes): the tid's row, or every thread of pid, from the threads table. */
static int load_threads(sqlite3 *db, struct tl_req *q, json_t *threads)
{
	sqlite3_stmt *st;
	int rc, ret = 0;

	if ((rc = cw_api_prepare(db, "SELECT t.pid, t.tid, t.comm, p.rank FROM threads t LEFT JOIN processes p"
				     " ON p.node = t.node AND p.pid = t.pid WHERE (?1 = 0 OR t.tid = ?1)"
				     " AND (?2 = 0 OR t.pid = ?2) ORDER BY t.pid, t.tid LIMIT ?3", &st)))
		return rc;
	sqlite3_bind_int64(st, 1, q->tid);
	sqlite3_bind_int64(st, 2, q->pid);
	sqlite3_bind_int(st, 3, TL_MAX_THREADS);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t pid = sqlite3_column_int64(st, 0);
		size_t i;

		json_array_append_new(threads, json_pack("{s:I, s:I, s:o, s:o}", "pid", (json_int_t)pid, "tid",
							 (json_int_t)sqlite3_column_int64(st, 1), "comm",
							 cw_api_text(st, 2), "rank", cw_api_int_or_null(st, 3)));
		for (i = 0; i < q->npids && q->pids[i] != pid; i++)
			;
		if (i == q->npids) {
			int64_t *nv = realloc(q->pids, (q->npids + 1) * sizeof(*nv));

			if (!nv) {
				ret = -ENOMEM;
				break;
			}
			q->pids = nv;
			q->pids[q->npids++] = pid;
		}
	}
	if (!ret && rc != SQLITE_ROW && rc != SQLITE_DONE)
		ret = cw_sqlite_errno(rc);
	sqlite3_finalize(st);
	/* A thread the threads table does not know (an older or merged
	 * file): its process is the one asked for. */
	if (!ret && !q->npids && q->pid) {
		if (!(q->pids = malloc(sizeof(*q->pids))))
			return -ENOMEM;
		q->pids[q->npids++] = q->pid;
	}
	return ret;
}

/* The monotonic range of the window in every session's clock. */
static int mono_range(sqlite3 *db, struct tl_req *q)
{
	sqlite3_stmt *st;
	int rc;
	int64_t lo_off = 0, hi_off = 0;

	if ((rc = cw_api_prepare(db, "SELECT min(mono_to_wall_ns), max(mono_to_wall_ns) FROM sessions", &st)))
		return rc;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		lo_off = sqlite3_column_int64(st, 0);
		hi_off = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return cw_sqlite_errno(rc);
	/* An interval that overlaps the window starts at most its own length
	 * before it; off-CPU intervals past the slack are rare and long ones
	 * are found by the query of the window after them. */
	q->mono_lo = cw_sub_sat(cw_sub_sat((int64_t)q->from, hi_off), (int64_t)TL_SLACK_NS);
	q->mono_hi = cw_add_sat(cw_sub_sat((int64_t)q->to, lo_off), (int64_t)TL_SLACK_NS);
	return 0;
}

/* The slack of the rowid range (see TL_SLACK_NS). */
static int call_slack(sqlite3 *db, const struct tl_req *q, uint64_t *slack)
{
	sqlite3_stmt *st;
	int rc;

	*slack = TL_SLACK_NS;
	if ((rc = cw_api_prepare(db, "SELECT max(max_ns) FROM aggregates WHERE second >= ?1 AND second <= ?2"
				     " AND source IN ('cuda', 'driver', 'graph')", &st)))
		return rc;
	sqlite3_bind_int64(st, 1, (int64_t)(q->from / NSEC_PER_SEC) - 2);
	sqlite3_bind_int64(st, 2, (int64_t)(q->to / NSEC_PER_SEC) + 2);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
		uint64_t m = (uint64_t)sqlite3_column_int64(st, 0) + TL_SLACK_MIN_NS;

		*slack = m < TL_SLACK_NS ? m : TL_SLACK_NS;
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : cw_sqlite_errno(rc);
}

/* chain=INDEX: the chain's thread and timeline_window from the /chains
 * answer for the same window (cached: no second explain run). */
static int chain_window(struct cw_server *s, struct MHD_Connection *c, sqlite3 *db, uint64_t deadline,
			struct tl_req *q, json_t **chain_out, struct cw_reply *r)
{
	json_t *ans, *ch, *w;
	size_t n;
	int64_t idx;
	int rc;

	if (cw_api_int(c, "chain", 0, 100000, 0, &idx, r))
		return -EINVAL;
	if ((rc = cw_chains_answer(s, c, db, deadline, &ans, r)))
		return rc;
	n = json_array_size(json_object_get(ans, "chains"));
	if ((size_t)idx >= n) {
		cw_reply_error(r, 404, "no chain %lld in the window (%zu chains)", (long long)idx, n);
		json_decref(ans);
		return -ENOENT;
	}
	ch = json_array_get(json_object_get(ans, "chains"), (size_t)idx);
	w = json_object_get(ch, "timeline_window");
	q->from = (uint64_t)json_integer_value(json_object_get(w, "from_ns"));
	q->to = (uint64_t)json_integer_value(json_object_get(w, "to_ns"));
	q->tid = json_integer_value(json_object_get(w, "tid"));
	q->pid = q->tid ? 0 : json_integer_value(json_object_get(w, "pid"));
	*chain_out = json_pack("{s:I, s:O?, s:O?, s:O?, s:O?, s:O?}", "index", (json_int_t)idx, "kind",
			       json_object_get(json_object_get(ch, "root_cause"), "kind"), "severity",
			       json_object_get(ch, "severity"), "op", json_object_get(ch, "op"), "pid",
			       json_object_get(ch, "pid"), "tid", json_object_get(ch, "tid"));
	json_decref(ans);
	if (!q->tid && !q->pid) {
		json_decref(*chain_out);
		*chain_out = NULL;
		cw_reply_error(r, 404, "chain %lld names no thread or process", (long long)idx);
		return -ENOENT;
	}
	return 0;
}

static int parse_cursor(const char *s, int *lane, int64_t *id)
{
	char *end;
	long l;
	long long v;

	if (!s)
		return 0;
	l = strtol(s, &end, 10);
	if (end == s || *end != '.' || l < 0 || l >= TL_NLANES)
		return -EINVAL;
	s = end + 1;
	v = strtoll(s, &end, 10);
	if (end == s || *end || v < 0)
		return -EINVAL;
	*lane = (int)l;
	*id = v;
	return 0;
}

void cw_route_timeline(struct cw_server *s, struct MHD_Connection *c, struct cw_reply *r)
{
	struct tl_req q = { 0 };
	struct tl t = { 0 };
	json_t *threads = NULL, *chain = NULL, *j;
	const char *after = cw_api_arg(c, "after");
	uint64_t deadline, lo, hi, slack;
	int64_t limit, sent = 0, last = 0, after_id = 0, proc_pid;
	int lane0 = 0, more = 0, rc, has_chain = cw_api_arg(c, "chain") != NULL;
	sqlite3 *db;

	if (cw_api_int(c, "limit", 1, TL_MAX_LIMIT, TL_DEFAULT_LIMIT, &limit, r) ||
	    cw_api_int(c, "pid", 1, INT32_MAX, 0, &q.pid, r) || cw_api_int(c, "tid", 1, INT32_MAX, 0, &q.tid, r))
		return;
	if (parse_cursor(after, &lane0, &after_id)) {
		cw_reply_error(r, 400, "invalid cursor \"%s\" (pass back \"next\")", after);
		return;
	}
	if (has_chain && (q.pid || q.tid)) {
		cw_reply_error(r, 400, "\"chain\" cannot be combined with \"pid\" or \"tid\"");
		return;
	}
	if (!has_chain && !q.pid && !q.tid) {
		cw_reply_error(r, 400, "missing \"tid\", \"pid\" or \"chain\"");
		return;
	}
	if (cw_api_open(s, &db, &deadline, r))
		return;
	if (has_chain) {
		if (chain_window(s, c, db, deadline, &q, &chain, r))
			goto out;
	} else {
		if (cw_api_window(db, c, &q.from, &q.to, r))
			goto out;
		if (!q.from || !q.to) {
			/* An open side: the data's own edge. */
			if ((rc = cw_api_data_range(db, &lo, &hi))) {
				cw_api_fail(s, deadline, rc, "timeline", r);
				goto out;
			}
			q.from = q.from ? q.from : lo;
			q.to = q.to ? q.to : hi;
		}
	}
	threads = json_array();
	t.lanes = json_array();
	if (!threads || !t.lanes) {
		cw_reply_error(r, 500, "out of memory");
		goto out;
	}
	if ((rc = load_threads(db, &q, threads)) || (rc = mono_range(db, &q)) ||
	    (rc = call_slack(db, &q, &slack)) ||
	    (rc = cw_events_id_at(db, q.from > slack ? q.from - slack : 0, &q.id_lo)) < 0 ||
	    (rc = cw_events_id_at(db, q.to + slack, &q.id_hi)) < 0) {
		cw_api_fail(s, deadline, rc, "timeline", r);
		goto out;
	}
	if ((rc = cw_events_has_index(db, "events_pagealloc")) < 0 ||
	    (rc > 0 && (rc = cw_events_has_index(db, "events_oom")) < 0)) {
		cw_api_fail(s, deadline, rc, "timeline", r);
		goto out;
	}
	q.mem_indexed = rc > 0;
	if ((rc = cw_store_read_sql(db, CW_READ_TIMELINE_CUDA, &q.cuda_sql)) < 0) {
		cw_api_fail(s, deadline, rc, "timeline", r);
		goto out;
	}
	/* Page-allocation records cover a second and are written at its
	 * end: without their index, the full slack. */
	if (!q.mem_indexed &&
	    ((rc = cw_events_id_at(db, q.from > TL_SLACK_NS ? q.from - TL_SLACK_NS : 0, &q.mem_id_lo)) < 0 ||
	     (rc = cw_events_id_at(db, q.to + TL_SLACK_NS, &q.mem_id_hi)) < 0)) {
		cw_api_fail(s, deadline, rc, "timeline", r);
		goto out;
	}
	proc_pid = q.npids ? q.pids[0] : q.pid;
	for (int lane = lane0; lane < TL_NLANES && !more; lane++) {
		int64_t from_id = lane == lane0 ? after_id : 0;

		last = from_id;
		if (lane == TL_IO || lane == TL_MEMORY)
			/* Per process: a tid belongs to one process, and a pid
			 * filter names one. */
			rc = proc_pid ? run_lane(db, &t, lane, &q, proc_pid, from_id, limit - sent, &sent, &more, &last)
				      : 0;
		else
			rc = run_lane(db, &t, lane, &q, q.tid ? 0 : q.pid, from_id, limit - sent, &sent, &more, &last);
		if (rc) {
			cw_api_fail(s, deadline, rc, "timeline", r);
			goto out;
		}
		if (more) {
			char cur[48];

			snprintf(cur, sizeof(cur), "%d.%lld", lane, (long long)last);
			j = cw_json_str(cur);
			goto answer_more;
		}
	}
	j = json_null();
answer_more:;
	{
		json_t *out = json_pack("{s:s, s:I, s:I, s:o, s:O, s:b, s:o, s:I}", "node", s->node, "from_ns",
					(json_int_t)q.from, "to_ns", (json_int_t)q.to, "threads", threads, "lanes",
					t.lanes, "truncated", more, "next", j, "intervals", (json_int_t)sent);

		threads = NULL;
		if (out && chain) {
			json_object_set_new(out, "chain", chain);
			chain = NULL;
		}
		cw_reply_json(r, 200, out);
	}
out:
	json_decref(threads);
	json_decref(chain);
	json_decref(t.lanes);
	free(t.v);
	free(q.pids);
	cw_server_close_db(db);
}
