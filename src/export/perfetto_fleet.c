/* export --nodes (perfetto_fleet.h). */
#include "export/perfetto_fleet.h"

#include <errno.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fleet/fetch.h"
#include "store/store.h"
#include "util/timeutil.h"
#include "util/utf8.h"

/* One table fetched from every agent. The SELECT's columns are, in order,
 * the columns of the local INSERT after node (the names are ours, never
 * the agents'). ?1/?2 are the window (wall ns, or seconds for the
 * aggregates), ?3 < rowid <= ?4 one page (fleet/fetch.h). */
#define ROWIDS(t) "SELECT min(rowid), max(rowid) FROM " t
/* Schema v7 keeps events in two tables under the view: their id bounds
 * are four seeks, the view's a scan (older agents: the view's). */
#define EVENT_IDS                                                                                          \
	"SELECT min(coalesce((SELECT min(id) FROM calls), 9223372036854775807),"                           \
	" coalesce((SELECT min(id) FROM kevents), 9223372036854775807)),"                                  \
	" max(coalesce((SELECT max(id) FROM calls), 0), coalesce((SELECT max(id) FROM kevents), 0))"
static const struct cw_fleet_fetch fetches[] = {
	{ "SELECT kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns, host, rank, local_rank, world_size, command"
	  " FROM sessions WHERE ?1 IS NOT NULL AND ?2 IS NOT NULL AND rowid > ?3 AND rowid <= ?4 ORDER BY id",
	  "INSERT INTO sessions (node, kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns, host, rank,"
	  " local_rank, world_size, command) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)",
	  9, -1, 4, ROWIDS("sessions"), NULL },
	{ "SELECT pid, ppid, comm, cmdline, cgroup_id, rank, local_rank, world_size, start_wall_ns, exit_code"
	  " FROM processes WHERE ?1 IS NOT NULL AND ?2 IS NOT NULL AND rowid > ?3 AND rowid <= ?4",
	  "INSERT OR IGNORE INTO processes (node, pid, ppid, comm, cmdline, cgroup_id, rank, local_rank, world_size,"
	  " start_wall_ns, exit_code) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
	  10, -1, 4, ROWIDS("processes"), NULL },
	{ "SELECT tid, pid, comm FROM threads WHERE ?1 IS NOT NULL AND ?2 IS NOT NULL AND rowid > ?3 AND rowid <= ?4",
	  "INSERT OR IGNORE INTO threads (node, tid, pid, comm) VALUES (?1,?2,?3,?4)", 3, -1, 4, ROWIDS("threads"),
	  NULL },
	{ "SELECT source, op, second, count, sum_ns, max_ns, hist FROM aggregates WHERE second BETWEEN ?1 AND ?2"
	  " AND rowid > ?3 AND rowid <= ?4",
	  "INSERT OR IGNORE INTO aggregates (node, source, op, second, count, sum_ns, max_ns, hist)"
	  " VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
	  7, 6, 4, ROWIDS("aggregates"), NULL },
	{ "SELECT pid, tid, comm, start_mono_ns, end_mono_ns, wall_ns, duration_ns, reason, cpu, by_pid, by_tid,"
	  " by_comm, by_cgroup_id, waker_pid, waker_comm FROM offcpu WHERE wall_ns BETWEEN ?1 AND ?2"
	  " AND id > ?3 AND id <= ?4",
	  "INSERT INTO offcpu (node, pid, tid, comm, start_mono_ns, end_mono_ns, wall_ns, duration_ns, reason, cpu,"
	  " by_pid, by_tid, by_comm, by_cgroup_id, waker_pid, waker_comm)"
	  " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
	  15, -1, 4, ROWIDS("offcpu"), NULL },
	{ "SELECT mono_ns, wall_ns, cpu_pct, mem_pct, swap_used_bytes, load1, ncpu, page_alloc_per_s, io_bytes_per_s,"
	  " io_busy_pct FROM snapshots WHERE wall_ns BETWEEN ?1 AND ?2 AND id > ?3 AND id <= ?4",
	  "INSERT INTO snapshots (node, mono_ns, wall_ns, cpu_pct, mem_pct, swap_used_bytes, load1, ncpu,"
	  " page_alloc_per_s, io_bytes_per_s, io_busy_pct) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
	  10, -1, 4, ROWIDS("snapshots"), NULL },
	/* NCCL calls (schema v3): the arrival analysis of the chains, and
	 * the arrows of an nccl_straggler, across the agents. */
	{ "SELECT session_id, pid, tid, comm, comm_id, rank, nranks, seq, op, count, datatype, bytes, redop, peer,"
	  " stream, wall_ns, mono_ns, duration_ns, ret, done_wall_ns, wait_ns FROM nccl_calls"
	  " WHERE wall_ns BETWEEN ?1 AND ?2 AND id > ?3 AND id <= ?4",
	  "INSERT INTO nccl_calls (node, session_id, pid, tid, comm, comm_id, rank, nranks, seq, op, count, datatype,"
	  " bytes, redop, peer, stream, wall_ns, mono_ns, duration_ns, ret, done_wall_ns, wait_ns)"
	  " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)",
	  21, -1, 4, ROWIDS("nccl_calls"), NULL },
	/* Events carry their Python stack inline (the last six columns),
	 * interned locally by hash, and are stored by fleet/fetch_events.c
	 * straight into the view's tables: the INSERT below names what each
	 * column is (the view's columns), it is not run. */
	{ "SELECT e.seq, e.wall_ns, e.mono_ns, e.pid, e.tid, e.cgroup_id, e.comm, e.source, e.op, e.duration_ns,"
	  " e.arg0, e.arg1, e.arg2, e.arg3, e.bytes, e.detail, e.ret, e.device, e.anomalous, p.hash, p.depth,"
	  " p.frames, p.user_file, p.user_line, p.user_function FROM events e LEFT JOIN py_stacks p"
	  " ON p.id = e.py_stack_id WHERE e.wall_ns BETWEEN ?1 AND ?2 AND e.id > ?3 AND e.id <= ?4",
	  "INSERT INTO events (node, seq, wall_ns, mono_ns, pid, tid, cgroup_id, comm, source, op, duration_ns, arg0,"
	  " arg1, arg2, arg3, bytes, detail, ret, device, anomalous, py_stack_id)"
	  " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21)",
	  19, -1, 4, EVENT_IDS, "SELECT min(id), max(id) FROM events" },
};
#define EVENTS_FETCH (sizeof(fetches) / sizeof(fetches[0]) - 1)

struct window {
	uint64_t from, to;  /* reference clock */
	int64_t fetch_from, fetch_to;
};

/* Newest data per node and the clock offsets (the first fan-out, which
 * also measures skew), stored as meta 'merge.skew'. */
static int plan(sqlite3 *db, const struct cw_fleet_opts *fo, const struct cw_export_opts *o, struct window *w,
		struct cw_fleet_warns *wr, char *err, size_t errlen)
{
	struct cw_fleet_opts f = *fo;
	struct cw_fleet_result res;
	json_t *merged = NULL, *req = json_pack("{s:s}", "sql", "SELECT (SELECT max(second) FROM aggregates), (SELECT min(second) FROM aggregates)");
	json_t *skew = json_object(), *nodes = json_object();
	int64_t to_ref = 0, from_ref = INT64_MAX, maxoff = 0;
	char *s = NULL;
	int ret;

	f.skew = 1;
	ret = cw_fleet_query_req(&f, req, &merged, &res, err, errlen);
	json_decref(req);
	cw_fleet_warns_add(wr, &res);
	if (ret == -EHOSTUNREACH)
		cw_fleet_none_answered(&res, fo->nnodes, err, errlen);
	if (ret)
		goto out;
	for (int i = 0; i < res.n; i++) {
		const struct cw_fleet_node *n = &res.nodes[i];
		json_t *rows = json_object_get(merged, "rows"), *row;
		size_t ri;
		int64_t off = n->skew.valid ? n->skew.offset_ns : 0;
		if (!n->ok)
			continue;
		if (n->skew.valid)
			cw_json_set(nodes, n->name, json_pack("{s:I,s:i}", "offset_ns", (json_int_t)off,
								      "samples", n->skew.samples));
		maxoff = llabs(off) > maxoff ? llabs(off) : maxoff;
		json_array_foreach(rows, ri, row) {
			json_t *sec = json_array_get(row, 1), *first = json_array_get(row, 2);
			if (strcmp(json_string_value(json_array_get(row, 0)) ?: "", n->name) || !json_is_integer(sec))
				continue;
			int64_t newest = (json_integer_value(sec) + 1) * (int64_t)NSEC_PER_SEC - off;
			if (newest > to_ref)
				to_ref = newest;
			/* A second early, as a local export (perfetto.c). */
			if (json_is_integer(first) &&
			    (json_integer_value(first) - 1) * (int64_t)NSEC_PER_SEC - off < from_ref)
				from_ref = (json_integer_value(first) - 1) * (int64_t)NSEC_PER_SEC - off;
		}
	}
	if (o->from_wall_ns || o->to_wall_ns) {
		w->from = o->from_wall_ns;
		w->to = o->to_wall_ns ? o->to_wall_ns : (uint64_t)to_ref;
	} else {
		uint64_t since = o->since_ns;
		w->to = (uint64_t)to_ref;
		if (since)
			w->from = w->to > since ? w->to - since : 0;
		else
			w->from = from_ref != INT64_MAX && from_ref > 0 && from_ref < to_ref ? (uint64_t)from_ref : 0;
	}
	w->fetch_from = (int64_t)w->from - maxoff - (int64_t)NSEC_PER_SEC;
	w->fetch_to = (int64_t)w->to + maxoff + (int64_t)NSEC_PER_SEC;
	json_object_set_new(skew, "method", json_string("fan-out NTP-style time samples"));
	json_object_set(skew, "nodes", nodes);
	if (!(s = json_dumps(skew, JSON_COMPACT)) || cw_meta_set(db, "merge.skew", s)) {
		snprintf(err, errlen, "writing the temporary store failed");
		ret = -EIO;
	}
out:
	free(s);
	json_decref(skew);
	json_decref(nodes);
	json_decref(merged);
	cw_fleet_result_free(&res);
	return ret;
}

int cw_export_perfetto_fleet(const struct cw_fleet_opts *fo, const struct cw_export_opts *o, FILE *out,
			     struct cw_export_stats *st, void (*warn)(void *arg, const char *msg), void *warn_arg,
			     char *err, size_t errlen)
{
	struct cw_fleet_tmp tmp;
	struct cw_fleet_warns wr = { .fn = warn, .arg = warn_arg };
	struct cw_export_opts lo = *o;
	struct cw_store *store;
	struct window w = { 0 };
	uint64_t max = o->max_events ? o->max_events : CW_EXPORT_DEFAULT_MAX_EVENTS;
	int64_t per;
	int ret;

	memset(st, 0, sizeof(*st));
	err[0] = '\0';
	if ((ret = cw_fleet_tmp_open(&tmp, "export", "fleet.db", err, errlen)))
		goto out;
	store = tmp.st;
	if ((ret = plan(store->db, fo, o, &w, &wr, err, errlen)))
		goto out;
	per = (int64_t)(max / (uint64_t)(fo->nnodes > 0 ? fo->nnodes : 1));
	if (per < 1)
		per = 1;
	for (size_t k = 0; k < sizeof(fetches) / sizeof(fetches[0]) && !ret; k++) {
		const struct cw_fleet_fetch *f = &fetches[k];
		int agg = strstr(f->select, "FROM aggregates") != NULL;

		ret = cw_fleet_fetch_rows(store->db, fo, f, agg ? w.fetch_from / (int64_t)NSEC_PER_SEC : w.fetch_from,
					  agg ? w.fetch_to / (int64_t)NSEC_PER_SEC : w.fetch_to, per, k == EVENTS_FETCH,
					  &wr, err, errlen);
		/* Agents of a schema before nccl_calls: a trace without it. */
		if (ret && strstr(f->select, "FROM nccl_calls")) {
			if (warn)
				warn(warn_arg, "NCCL calls not fetched (agents without nccl_calls); no NCCL arrows");
			ret = 0;
			err[0] = '\0';
		}
	}
	if (ret)
		goto out;
	/* The agents' pages are parsed and freed by then, but glibc keeps the
	 * freed heap resident (a step of some 7-8 MiB over the first pages):
	 * handed back, the trace phase runs on what it needs alone, and a
	 * per-slice cost there shows in the RSS instead of hiding in the
	 * fetch's leftovers (tests/golden/test_fleet_export_memory.sh). */
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	if (fo->progress)
		fo->progress(fo->progress_arg, "writing the trace", 0);
	lo.from_wall_ns = w.from;
	lo.to_wall_ns = w.to > w.from ? w.to : w.from + 1;
	ret = cw_export_perfetto(store->db, &lo, out, st, err, errlen);
out:
	cw_fleet_tmp_close(&tmp);
	cw_fleet_warns_free(&wr);
	return ret;
}
