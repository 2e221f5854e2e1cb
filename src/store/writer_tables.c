/* Every table but the events': sessions, off-CPU intervals, snapshots,
 * processes, threads, cgroups and their pressure, kernel names, NCCL. */
#include "store/writer_core.h"

int cw_session_begin(struct cw_store *st, const struct cw_session_info *in, int64_t *id)
{
	sqlite3_stmt *s;
	int rc, i = 1;

	rc = sqlite3_prepare_v2(st->db,
				"INSERT INTO sessions (node, kind, started_wall_ns, mono_to_wall_ns, host, kernel, gpu,"
				" driver, cuda, python, command, rank, local_rank, world_size)"
				" VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(st->db, rc);
	bind_text_or_null(s, i++, in->node);
	bind_text_or_null(s, i++, in->kind);
	sqlite3_bind_int64(s, i++, (int64_t)in->started_wall_ns);
	sqlite3_bind_int64(s, i++, in->mono_to_wall_ns);
	bind_text_or_null(s, i++, in->host);
	bind_text_or_null(s, i++, in->kernel);
	bind_text_or_null(s, i++, in->gpu);
	bind_text_or_null(s, i++, in->driver);
	bind_text_or_null(s, i++, in->cuda);
	bind_text_or_null(s, i++, in->python);
	bind_text_or_null(s, i++, in->command);
	if (in->rank >= 0)
		sqlite3_bind_int(s, i, in->rank);
	i++;
	if (in->local_rank >= 0)
		sqlite3_bind_int(s, i, in->local_rank);
	i++;
	if (in->world_size > 0)
		sqlite3_bind_int(s, i, in->world_size);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return cw_sqlite_db_errno(st->db, rc);
	*id = sqlite3_last_insert_rowid(st->db);
	return 0;
}

int cw_session_end(struct cw_store *st, int64_t id, uint64_t ended_wall_ns, int64_t mono_to_wall_ns)
{
	sqlite3_stmt *s;
	int rc;

	rc = sqlite3_prepare_v2(st->db, "UPDATE sessions SET ended_wall_ns = ?, mono_to_wall_ns = ? WHERE id = ?",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return cw_sqlite_db_errno(st->db, rc);
	sqlite3_bind_int64(s, 1, (int64_t)ended_wall_ns);
	sqlite3_bind_int64(s, 2, mono_to_wall_ns);
	sqlite3_bind_int64(s, 3, id);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : cw_sqlite_db_errno(st->db, rc);
}

/* Opens the batch for a row of statement id and binds its node (?1) and,
 * with session, the session (?2; NULL before there is one). NULL with
 * *err on failure. */
static sqlite3_stmt *row_begin(struct cw_writer *w, enum stmt_id id, int session, int *err)
{
	sqlite3_stmt *s = w->st[id];

	if ((*err = writer_begin(w)))
		return NULL;
	sqlite3_bind_text(s, 1, w->node, -1, SQLITE_STATIC);
	if (session && w->session_id)
		sqlite3_bind_int64(s, 2, w->session_id);
	return s;
}

int cw_writer_session_begin(struct cw_writer *w, const struct cw_session_info *info)
{
	WLOCK(w);
	int64_t id = 0;
	int err;

	if (w->session_id)
		return 0;
	err = writer_begin(w);
	if (err)
		return err;
	err = cw_session_begin(w->store, info, &id);
	if (err) {
		writer_note_error(w, err);
		/* Nothing else is in this batch yet: end it, lock released. */
		if (w->in_tx && !sqlite3_get_autocommit(w->db))
			cw_exec(w->db, "ROLLBACK");
		writer_lose_tx(w);
		return err;
	}
	cw_writer_set_session(w, id);
	w->session_in_tx = 1;
	return 0;
}

int cw_writer_offcpu(struct cw_writer *w, const struct cw_offcpu_row *r)
{
	WLOCK(w);
	int err;
	sqlite3_stmt *s = row_begin(w, ST_OFFCPU, 1, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, 3, r->pid);
	sqlite3_bind_int64(s, 4, r->tid);
	bind_text_or_null(s, 5, r->comm);
	sqlite3_bind_int64(s, 6, (int64_t)r->start_mono_ns);
	sqlite3_bind_int64(s, 7, (int64_t)r->end_mono_ns);
	sqlite3_bind_int64(s, 8, (int64_t)r->wall_ns);
	sqlite3_bind_int64(s, 9, (int64_t)(r->end_mono_ns - r->start_mono_ns));
	bind_text_or_null(s, 10, r->reason);
	if (r->cpu >= 0)
		sqlite3_bind_int(s, 11, r->cpu);
	if (r->by_pid || r->by_comm) {
		sqlite3_bind_int64(s, 12, r->by_pid);
		sqlite3_bind_int64(s, 13, r->by_tid);
	}
	bind_text_or_null(s, 14, r->by_comm);
	if (r->by_cgroup_id)
		sqlite3_bind_int64(s, 15, (int64_t)r->by_cgroup_id);
	if (r->waker_pid)
		sqlite3_bind_int64(s, 16, r->waker_pid);
	bind_text_or_null(s, 17, r->waker_comm);
	err = step_reset(s);
	if (!err) {
		w->stats.offcpu++;
		w->tx_offcpu++;
	}
	return writer_row_done(w, err);
}

int cw_writer_snapshot(struct cw_writer *w, const struct cw_snapshot_row *r)
{
	WLOCK(w);
	int err;
	sqlite3_stmt *s = row_begin(w, ST_SNAPSHOT, 1, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, 3, (int64_t)r->mono_ns);
	sqlite3_bind_int64(s, 4, (int64_t)r->wall_ns);
	sqlite3_bind_double(s, 5, r->cpu_pct);
	sqlite3_bind_double(s, 6, r->mem_pct);
	sqlite3_bind_int64(s, 7, r->swap_used_bytes);
	sqlite3_bind_double(s, 8, r->load1);
	sqlite3_bind_int(s, 9, r->ncpu);
	sqlite3_bind_int64(s, 10, r->page_alloc_per_s);
	sqlite3_bind_int64(s, 11, r->io_bytes_per_s);
	sqlite3_bind_double(s, 12, r->io_busy_pct);
	err = step_reset(s);
	if (!err) {
		w->stats.snapshots++;
		w->tx_snapshots++;
	}
	return writer_row_done(w, err);
}

int cw_writer_process(struct cw_writer *w, const struct cw_process_row *r)
{
	WLOCK(w);
	int err;
	sqlite3_stmt *s = row_begin(w, ST_PROCESS, 0, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, 2, r->pid);
	if (r->ppid)
		sqlite3_bind_int64(s, 3, r->ppid);
	bind_text_or_null(s, 4, r->comm);
	bind_text_or_null(s, 5, r->cmdline);
	if (r->cgroup_id)
		sqlite3_bind_int64(s, 6, (int64_t)r->cgroup_id);
	if (r->rank >= 0)
		sqlite3_bind_int(s, 7, r->rank);
	if (r->local_rank >= 0)
		sqlite3_bind_int(s, 8, r->local_rank);
	if (r->world_size > 0)
		sqlite3_bind_int(s, 9, r->world_size);
	if (r->start_wall_ns)
		sqlite3_bind_int64(s, 10, (int64_t)r->start_wall_ns);
	if (r->has_exit)
		sqlite3_bind_int(s, 11, r->exit_code);
	return writer_row_done(w, step_reset(s));
}

static int put4(struct cw_writer *w, enum stmt_id id, int64_t a, int64_t b, const char *c, const char *d,
		int b_is_text)
{
	int err;
	sqlite3_stmt *s = row_begin(w, id, 0, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, 2, a);
	if (b_is_text)
		bind_text_or_null(s, 3, c);
	else
		sqlite3_bind_int64(s, 3, b);
	bind_text_or_null(s, 4, d);
	return writer_row_done(w, step_reset(s));
}

int cw_writer_thread(struct cw_writer *w, uint32_t pid, uint32_t tid, const char *comm)
{
	WLOCK(w);
	return put4(w, ST_THREAD, tid, pid, NULL, comm, 0);
}

int cw_writer_cgroup_ident(struct cw_writer *w, const struct cw_cgroup_ident *r)
{
	WLOCK(w);
	const char *const text[] = { r->path,	 r->container, r->runtime,   r->container_id, r->pod,
				     r->pod_uid, r->ns,	       r->qos,	     r->slurm_job,    r->slurm_step,
				     r->unit,	 r->tenant };
	int err;
	sqlite3_stmt *s = row_begin(w, ST_CGROUP, 0, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, 2, (int64_t)r->cgroup_id);
	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		bind_text_or_null(s, 3 + (int)i, text[i]);
	if (r->seen_wall_ns)
		sqlite3_bind_int64(s, 15, (int64_t)r->seen_wall_ns);
	return writer_row_done(w, step_reset(s));
}

int cw_writer_cgroup_seen(struct cw_writer *w, uint64_t cgroup_id, uint64_t wall_ns)
{
	WLOCK(w);
	int err;
	sqlite3_stmt *s = row_begin(w, ST_CGROUP_SEEN, 0, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, 2, (int64_t)cgroup_id);
	sqlite3_bind_int64(s, 3, (int64_t)wall_ns);
	return writer_row_done(w, step_reset(s));
}

int cw_writer_cgroup_pressure(struct cw_writer *w, const struct cw_pressure_row *r)
{
	WLOCK(w);
	int err, i;
	sqlite3_stmt *s = row_begin(w, ST_PRESSURE, 1, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, 3, (int64_t)r->cgroup_id);
	sqlite3_bind_int64(s, 4, (int64_t)r->wall_ns);
	sqlite3_bind_int64(s, 5, (int64_t)r->mono_ns);
	/* -1 marks a value the kernel did not offer: NULL. */
	for (i = 0; i < 6; i++)
		if (r->psi_total_us[i] >= 0)
			sqlite3_bind_int64(s, 6 + i, r->psi_total_us[i]);
	for (i = 0; i < 3; i++)
		if (r->psi_avg10[i] >= 0)
			sqlite3_bind_double(s, 12 + i, r->psi_avg10[i]);
	if (r->nr_periods >= 0)
		sqlite3_bind_int64(s, 15, r->nr_periods);
	if (r->nr_throttled >= 0)
		sqlite3_bind_int64(s, 16, r->nr_throttled);
	if (r->throttled_usec >= 0)
		sqlite3_bind_int64(s, 17, r->throttled_usec);
	if (r->quota_us >= 0)
		sqlite3_bind_int64(s, 18, r->quota_us);
	if (r->period_us >= 0)
		sqlite3_bind_int64(s, 19, r->period_us);
	return writer_row_done(w, step_reset(s));
}

int cw_writer_kernel_name(struct cw_writer *w, uint32_t pid, uint64_t handle, const char *name)
{
	WLOCK(w);
	int err;
	sqlite3_stmt *s = row_begin(w, ST_KERNEL_NAME, 0, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, 2, pid);
	sqlite3_bind_int64(s, 3, (int64_t)handle);
	bind_text_or_null(s, 4, name);
	return writer_row_done(w, step_reset(s));
}

static void bind_opt(sqlite3_stmt *s, int i, int64_t v)
{
	if (v == CW_NCCL_NONE)
		sqlite3_bind_null(s, i);
	else
		sqlite3_bind_int64(s, i, v);
}

int cw_writer_nccl_call(struct cw_writer *w, const struct cw_nccl_call_row *r)
{
	WLOCK(w);
	int err, i = 3;
	sqlite3_stmt *s = row_begin(w, ST_NCCL_CALL, 1, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, i++, r->pid);
	sqlite3_bind_int64(s, i++, r->tid);
	bind_opt(s, i++, r->comm);
	bind_opt(s, i++, r->comm_id);
	bind_opt(s, i++, r->rank);
	bind_opt(s, i++, r->nranks);
	sqlite3_bind_int64(s, i++, r->seq);
	bind_text_or_null(s, i++, r->op);
	bind_opt(s, i++, r->count);
	bind_opt(s, i++, r->datatype);
	bind_opt(s, i++, r->bytes);
	bind_opt(s, i++, r->redop);
	bind_opt(s, i++, r->peer);
	bind_opt(s, i++, r->stream);
	sqlite3_bind_int64(s, i++, (int64_t)r->wall_ns);
	sqlite3_bind_int64(s, i++, (int64_t)r->mono_ns);
	sqlite3_bind_int64(s, i++, (int64_t)r->duration_ns);
	bind_opt(s, i++, r->ret);
	bind_opt(s, i++, r->done_wall_ns);
	bind_opt(s, i++, r->wait_ns);
	return writer_row_done(w, step_reset(s));
}

int cw_writer_nccl_comm(struct cw_writer *w, const struct cw_nccl_comm_row *r)
{
	WLOCK(w);
	int err, i = 2;
	sqlite3_stmt *s = row_begin(w, ST_NCCL_COMM, 0, &err);

	if (!s)
		return writer_row_done(w, err);
	sqlite3_bind_int64(s, i++, r->pid);
	sqlite3_bind_int64(s, i++, r->comm);
	bind_opt(s, i++, r->comm_id);
	bind_opt(s, i++, r->nranks);
	bind_opt(s, i++, r->rank);
	bind_opt(s, i++, r->parent_id);
	bind_text_or_null(s, i++, r->op);
	bind_opt(s, i++, r->created_wall_ns);
	bind_opt(s, i++, r->destroyed_wall_ns);
	bind_opt(s, i++, r->async_error);
	return writer_row_done(w, step_reset(s));
}
