/* The writer's prepared statements, and where its id and sequence
 * numbers resume in an existing file. */
#include "store/writer_core.h"

#include <errno.h>

#include "util/strbuf.h"

static const char *const stmt_sql[ST_MAX] = {
	/* Kernel-side events keep the whole row (schema v7). */
	[ST_KEVENT] = "INSERT INTO kevents (id, node, seq, session_id, wall_ns, mono_ns, pid, tid, cgroup_id, comm,"
		      " source, op, duration_ns, arg0, arg1, arg2, arg3, bytes, detail, ret, device, stack_id,"
		      " py_stack_id, anomalous) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,"
		      "?18,?19,?20,?21,?22,?23,?24)",
	[ST_TKEY_PUT] = "INSERT INTO call_threads (node, session_id, pid, tid, cgroup_id, comm, device, mono_base,"
			" wall_off) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
	[ST_OP_PUT] = "INSERT OR IGNORE INTO call_ops (source, op) VALUES (?1,?2)",
	[ST_OP_GET] = "SELECT id FROM call_ops WHERE source = ?1 AND op = ?2",
	[ST_STR_GET] = "SELECT id FROM strings WHERE text = ?1",
	[ST_STR_PUT] = "INSERT INTO strings (text) VALUES (?1)",
	[ST_ARGS_PUT] = "INSERT INTO call_args (a0, a1, a2, a3) VALUES (?1,?2,?3,?4)",
	/* ST_EVENT and ST_EVENT_MULTI are built at run time: event_sql(). */
	[ST_OFFCPU] = "INSERT INTO offcpu (node, session_id, pid, tid, comm, start_mono_ns, end_mono_ns, wall_ns,"
		      " duration_ns, reason, cpu, by_pid, by_tid, by_comm, by_cgroup_id, waker_pid, waker_comm)"
		      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
	[ST_REQUEST] = "INSERT INTO requests (node, session_id, wall_ns, mono_ns, pid, tid, resp_tid, cgroup_id, comm,"
		       " conn_id, port, method, path, status, bytes_in, bytes_out, ttft_ns, duration_ns, streamed,"
		       " body_events, itl_max_ns, itl_mean_ns, end_reason)"
		       " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23)",
	/* ST_REQ_TOTAL is built at run time: writer_req_total_sql(). */
	[ST_REQ_SAVEPOINT] = "SAVEPOINT cw_request",
	[ST_REQ_RELEASE] = "RELEASE cw_request",
	[ST_REQ_ROLLBACK] = "ROLLBACK TO cw_request",
	[ST_ENGINE_METRIC] = "INSERT INTO engine_metrics (node, session_id, wall_ns, pid, port, engine, name, value)"
			     " VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
	[ST_SNAPSHOT] = "INSERT INTO snapshots (node, session_id, mono_ns, wall_ns, cpu_pct, mem_pct,"
			" swap_used_bytes, load1, ncpu, page_alloc_per_s, io_bytes_per_s, io_busy_pct)"
			" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
	[ST_PROCESS] = "INSERT INTO processes (node, pid, ppid, comm, cmdline, cgroup_id, rank, local_rank,"
		       " world_size, start_wall_ns, exit_code) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
		       " ON CONFLICT (node, pid) DO UPDATE SET"
		       " ppid = coalesce(excluded.ppid, ppid), comm = coalesce(excluded.comm, comm),"
		       " cmdline = coalesce(excluded.cmdline, cmdline), cgroup_id = coalesce(excluded.cgroup_id, cgroup_id),"
		       " rank = coalesce(excluded.rank, rank), local_rank = coalesce(excluded.local_rank, local_rank),"
		       " world_size = coalesce(excluded.world_size, world_size),"
		       " start_wall_ns = coalesce(start_wall_ns, excluded.start_wall_ns),"
		       " exit_code = coalesce(excluded.exit_code, exit_code)",
	[ST_THREAD] = "INSERT OR REPLACE INTO threads (node, tid, pid, comm) VALUES (?1,?2,?3,?4)",
	/* A cgroup keeps the identity it was first resolved with (a short-lived
	 * container stays named after its directory is gone); later sightings
	 * fill only what was unknown and move last_seen. */
	[ST_CGROUP] = "INSERT INTO cgroups (node, cgroup_id, path, container, runtime, container_id, pod, pod_uid,"
		      " namespace, qos, slurm_job, slurm_step, unit, tenant, first_seen_wall_ns, last_seen_wall_ns)"
		      " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?15)"
		      " ON CONFLICT (node, cgroup_id) DO UPDATE SET path = coalesce(path, excluded.path),"
		      " container = coalesce(container, excluded.container), runtime = coalesce(runtime, excluded.runtime),"
		      " container_id = coalesce(container_id, excluded.container_id), pod = coalesce(pod, excluded.pod),"
		      " pod_uid = coalesce(pod_uid, excluded.pod_uid), namespace = coalesce(namespace, excluded.namespace),"
		      " qos = coalesce(qos, excluded.qos), slurm_job = coalesce(slurm_job, excluded.slurm_job),"
		      " slurm_step = coalesce(slurm_step, excluded.slurm_step), unit = coalesce(unit, excluded.unit),"
		      " tenant = coalesce(tenant, excluded.tenant),"
		      " first_seen_wall_ns = coalesce(first_seen_wall_ns, excluded.first_seen_wall_ns),"
		      " last_seen_wall_ns = max(coalesce(last_seen_wall_ns, 0), coalesce(excluded.last_seen_wall_ns, 0))",
	[ST_CGROUP_SEEN] = "UPDATE cgroups SET last_seen_wall_ns = max(coalesce(last_seen_wall_ns, 0), ?3)"
			   " WHERE node = ?1 AND cgroup_id = ?2",
	[ST_PRESSURE] = "INSERT INTO cgroup_pressure (node, session_id, cgroup_id, wall_ns, mono_ns, cpu_some_us,"
			" cpu_full_us, memory_some_us, memory_full_us, io_some_us, io_full_us, cpu_some_avg10,"
			" memory_some_avg10, io_some_avg10, nr_periods, nr_throttled, throttled_usec, quota_us, period_us)"
			" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)",
	[ST_KERNEL_NAME] = "INSERT OR REPLACE INTO kernel_names (node, pid, handle, name) VALUES (?1,?2,?3,?4)",
	[ST_STACK_GET] = "SELECT id FROM stacks WHERE hash = ?1",
	[ST_STACK_PUT] = "INSERT INTO stacks (hash, depth, frames) VALUES (?1,?2,?3)",
	[ST_PYSTACK_GET] = "SELECT id FROM py_stacks WHERE hash = ?1",
	[ST_PYSTACK_PUT] = "INSERT INTO py_stacks (hash, depth, frames, user_file, user_line, user_function, python_via)"
			   " VALUES (?1,?2,?3,?4,?5,?6,?7)",
	[ST_COUNTER] = "INSERT OR REPLACE INTO counters (node, session_id, name, value) VALUES (?1,?2,?3,?4)",
	[ST_AGG_GET] = "SELECT count, sum_ns, max_ns, hist, errors FROM aggregates"
		       " WHERE node = ?1 AND source = ?2 AND op = ?3 AND second = ?4",
	[ST_AGG_PUT] = "INSERT OR REPLACE INTO aggregates (node, source, op, second, count, sum_ns, max_ns, hist, errors)"
		       " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
	[ST_FOLD_GET] = "SELECT count, sum_ns, max_ns, hist FROM folded"
			" WHERE node = ?1 AND source = ?2 AND op = ?3 AND second = ?4 AND pid = ?9",
	[ST_FOLD_PUT] = "INSERT OR REPLACE INTO folded (node, source, op, second, count, sum_ns, max_ns, hist, pid)"
			" VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
	[ST_NCCL_CALL] = "INSERT INTO nccl_calls (node, session_id, pid, tid, comm, comm_id, rank, nranks, seq, op,"
			 " count, datatype, bytes, redop, peer, stream, wall_ns, mono_ns, duration_ns, ret, done_wall_ns, wait_ns)"
			 " VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22)",
	[ST_NCCL_COMM] = "INSERT INTO nccl_comms (node, pid, comm, comm_id, nranks, rank, parent_id, op,"
			 " created_wall_ns, destroyed_wall_ns, async_error) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"
			 " ON CONFLICT (node, pid, comm) DO UPDATE SET"
			 " comm_id = coalesce(excluded.comm_id, comm_id), nranks = coalesce(excluded.nranks, nranks),"
			 " rank = coalesce(excluded.rank, rank), parent_id = coalesce(excluded.parent_id, parent_id),"
			 " op = coalesce(excluded.op, op), created_wall_ns = coalesce(excluded.created_wall_ns, created_wall_ns),"
			 " destroyed_wall_ns = coalesce(excluded.destroyed_wall_ns, destroyed_wall_ns),"
			 " async_error = coalesce(excluded.async_error, async_error)",
};

/* The next id (over both event tables) and this node's next sequence
 * number: a node's sequence grows with the id, so its newest row holds the
 * largest; found by walking back from the newest row, not by a scan. */
int writer_load_next_seq(struct cw_writer *w)
{
	static const char *const sql[] = {
		"SELECT coalesce(max(id), 0) FROM calls",
		"SELECT coalesce(max(id), 0) FROM kevents",
		"SELECT coalesce(c.sq, c.id) FROM calls c JOIN call_threads t ON t.id = c.th WHERE t.node = ?1"
		" ORDER BY c.id DESC LIMIT 1",
		"SELECT seq FROM kevents WHERE node = ?1 ORDER BY id DESC LIMIT 1",
	};
	int64_t v[4] = { 0, 0, 0, 0 };
	sqlite3_stmt *s;
	int rc = SQLITE_OK;

	for (int i = 0; i < 4 && rc == SQLITE_OK; i++) {
		rc = sqlite3_prepare_v2(w->db, sql[i], -1, &s, NULL);
		if (rc != SQLITE_OK)
			break;
		if (i >= 2)
			sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
		if (rc == SQLITE_ROW)
			v[i] = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
		rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
	}
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(w->db, rc);
	w->next_id = (v[0] > v[1] ? v[0] : v[1]) + 1;
	w->next_seq = (v[2] > v[3] ? v[2] : v[3]) + 1;
	return 0;
}

/* INSERT INTO calls ... VALUES (row 1), ..., (row n). Row k's parameters
 * are numbered from 1 + k * EVENT_ROW_PARAMS, in column order. */
static int event_sql(struct strbuf *sb, int rows)
{
	int k, j, b, err;

	err = strbuf_adds(sb, "INSERT INTO calls (id, th, op, t, dur, a0, a1, a2, a3, bytes, s, ret, stack, pystack,"
			  " anomalous, sq, ar) VALUES ");
	for (k = 0; k < rows && !err; k++) {
		b = 1 + k * EVENT_ROW_PARAMS;
		err = strbuf_addf(sb, "%s(?%d", k ? "," : "", b);
		for (j = 1; j < EVENT_ROW_PARAMS && !err; j++)
			err = strbuf_addf(sb, ",?%d", b + j);
		if (!err)
			err = strbuf_addch(sb, ')');
	}
	return err;
}

int writer_prepare(struct cw_writer *w, enum stmt_id id)
{
	struct strbuf sb = STRBUF_INIT;
	const char *sql = stmt_sql[id];
	int rc, err = 0;

	if (id == ST_EVENT || id == ST_EVENT_MULTI) {
		err = event_sql(&sb, id == ST_EVENT ? 1 : EVENTS_PER_STMT);
		sql = strbuf_str(&sb);
	} else if (id == ST_REQ_TOTAL) {
		err = writer_req_total_sql(&sb);
		sql = strbuf_str(&sb);
	}
	if (!err) {
		rc = sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &w->st[id], NULL);
		err = cw_sqlite_db_errno(w->db, rc);
		if (rc != SQLITE_OK && !err)
			err = -EIO;
	}
	strbuf_release(&sb);
	return err;
}
