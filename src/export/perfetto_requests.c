/* Inference requests in the Perfetto export (docs/export.md): per node,
 * one track per served connection (named by the server's comm, port and
 * connection) after the thread tracks, an "X" slice per request named
 * "METHOD path" with its status, TTFT and bytes in args, and an "i"
 * instant where the first response body bytes went out (the TTFT). The
 * same clock and origin as every other track, so a slow request lines up
 * with the CUDA calls and off-CPU intervals of the threads that served it.
 * A store without the requests table (before schema v11) exports none. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "export/perfetto_int.h"
#include "store/requests.h"
#include "util/u64map.h"

/* Track ids of connection k: past every thread lane (tid + lane x
 * CW_LANE_STRIDE stays below 2^30), CW_REQ_TRACK_LANES each, a second one
 * only when a request starts before the previous one of its connection
 * ended (a pipelined or cut-short exchange). */
#define CW_REQ_TRACK_BASE (1LL << 30)
#define CW_REQ_TRACK_LANES 4

static int missing(sqlite3 *db, int rc)
{
	return rc == SQLITE_ERROR && strstr(sqlite3_errmsg(db), "no such table");
}

static int name_track(struct pf_ctx *c, const struct pf_node *n, int64_t tid, const char *comm, int64_t port,
		      int64_t conn, int lane)
{
	json_t *name = lane ? cw_trace_strf("%.16s :%lld conn %lld (overlap %d)", comm, (long long)port,
					    (long long)conn, lane)
			    : cw_trace_strf("%.16s :%lld conn %lld", comm, (long long)port, (long long)conn);
	int ret;

	ret = cw_tracew_event(&c->w, json_pack("{s:s,s:s,s:i,s:I,s:{s:o}}", "ph", "M", "name", "thread_name", "pid",
					       n->pid, "tid", (json_int_t)tid, "args", "name", name));
	if (!ret)
		ret = cw_tracew_event(&c->w, json_pack("{s:s,s:s,s:i,s:I,s:{s:I}}", "ph", "M", "name",
						       "thread_sort_index", "pid", n->pid, "tid", (json_int_t)tid,
						       "args", "sort_index", (json_int_t)tid));
	return ret;
}

static void put_int(json_t *args, const char *k, sqlite3_stmt *st, int col)
{
	if (sqlite3_column_type(st, col) != SQLITE_NULL)
		json_object_set_new(args, k, json_integer(sqlite3_column_int64(st, col)));
}

int pf_emit_requests(struct pf_ctx *c, int ni)
{
	/* Columns: 0 id, 1 wall, 2 duration, 3 ttft, 4 session, 5 conn, 6
	 * port, 7 method, 8 path, 9 status, 10 bytes_in, 11 bytes_out, 12
	 * streamed, 13 pid, 14 tid, 15 resp_tid, 16 comm, 17 end_reason. */
	static const char sql[] =
		"SELECT id, wall_ns, duration_ns, ttft_ns, session_id, conn_id, port, method, path, status, bytes_in,"
		" bytes_out, streamed, pid, tid, resp_tid, comm, end_reason FROM requests"
		" WHERE node = ?1 AND wall_ns BETWEEN ?2 AND ?3 AND (?4 = 0 OR pid = ?4)"
		" ORDER BY session_id, conn_id, wall_ns, id LIMIT ?5";
	uint64_t max = c->o->max_events ? c->o->max_events : CW_EXPORT_DEFAULT_MAX_EVENTS;
	const struct pf_node *n = &c->nodes[ni];
	int64_t k = -1, sess = INT64_MIN, conn = INT64_MIN, one;
	int64_t lane_end[CW_REQ_TRACK_LANES];
	int lanes = 0, rc, ret = 0;
	sqlite3_stmt *st = NULL;

	rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK) {
		if (missing(c->db, rc))
			return 0;
		snprintf(c->err, c->errlen, "reading requests: %s", sqlite3_errmsg(c->db));
		return -EIO;
	}
	sqlite3_bind_text(st, 1, n->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, n->from);
	sqlite3_bind_int64(st, 3, n->to);
	sqlite3_bind_int64(st, 4, c->o->pid);
	sqlite3_bind_int64(st, 5, max > INT64_MAX ? INT64_MAX : (int64_t)max);
	while (!ret && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t wall = sqlite3_column_int64(st, 1), dur = sqlite3_column_int64(st, 2);
		int64_t s = sqlite3_column_int64(st, 4), cn = sqlite3_column_int64(st, 5), tid;
		const char *method = (const char *)sqlite3_column_text(st, 7);
		const char *path = (const char *)sqlite3_column_text(st, 8);
		const char *comm = (const char *)sqlite3_column_text(st, 16);
		const char *end = (const char *)sqlite3_column_text(st, 17);
		json_t *args;
		int lane;

		if (c->o->npids &&
		    (c->o->npids < 0 || !u64map_get(&c->pids, (uint64_t)sqlite3_column_int64(st, 13), &one)))
			continue;
		if (dur < 0)
			dur = 0;
		if (s != sess || cn != conn) {
			sess = s;
			conn = cn;
			k++;
			lanes = 0;
		}
		/* The first lane whose last request ended by this one's start. */
		for (lane = 0; lane < lanes && lane_end[lane] > wall; lane++)
			;
		if (lane == CW_REQ_TRACK_LANES) {
			c->st->requests_unplaced++;
			continue;
		}
		tid = CW_REQ_TRACK_BASE + k * CW_REQ_TRACK_LANES + lane;
		if (lane == lanes) {
			lanes++;
			if ((ret = name_track(c, n, tid, comm ? comm : "server", sqlite3_column_int64(st, 6), cn, lane)))
				break;
		}
		lane_end[lane] = wall + dur;
		args = json_pack("{s:I,s:I,s:I,s:b,s:I}", "request_id", (json_int_t)sqlite3_column_int64(st, 0),
				 "bytes_in", (json_int_t)sqlite3_column_int64(st, 10), "bytes_out",
				 (json_int_t)sqlite3_column_int64(st, 11), "streamed", sqlite3_column_int(st, 12) != 0,
				 "pid", (json_int_t)sqlite3_column_int64(st, 13));
		put_int(args, "status", st, 9);
		put_int(args, "tid", st, 14);
		put_int(args, "resp_tid", st, 15);
		if (sqlite3_column_type(st, 3) != SQLITE_NULL)
			json_object_set_new(args, "ttft_ms", json_real((double)sqlite3_column_int64(st, 3) / 1e6));
		json_object_set_new(args, "end_reason", cw_trace_str(end ? end : "?"));
		/* Wire text: the writer kept printable ASCII; the JSON writer
		 * escapes it, and the precisions bound it. */
		ret = cw_tracew_event(&c->w, json_pack("{s:s,s:o,s:s,s:i,s:I,s:o,s:o,s:o}", "ph", "X", "name",
						       cw_trace_strf("%.16s %.256s", method ? method : "?",
								     path ? path : "?"),
						       "cat", "http", "pid", n->pid, "tid", (json_int_t)tid, "ts",
						       pf_ts(c, n, wall), "dur", cw_trace_us(dur), "args", args));
		c->st->requests++;
		if (!ret && sqlite3_column_type(st, 3) != SQLITE_NULL) {
			int64_t ttft = sqlite3_column_int64(st, 3);

			if (ttft < 0)
				ttft = 0;
			if (ttft > dur)
				ttft = dur;
			ret = cw_tracew_event(&c->w, json_pack("{s:s,s:s,s:s,s:s,s:i,s:I,s:o,s:{s:f}}", "ph", "i",
							       "name", "first byte (TTFT)", "cat", "http", "s", "t",
							       "pid", n->pid, "tid", (json_int_t)tid, "ts",
							       pf_ts(c, n, wall + ttft), "args", "ttft_ms",
							       (double)ttft / 1e6));
		}
	}
	if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW) {
		snprintf(c->err, c->errlen, "reading requests: %s", sqlite3_errmsg(c->db));
		ret = -EIO;
	}
	sqlite3_finalize(st);
	return ret;
}
