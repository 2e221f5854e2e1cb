/* The store's side of a trace: the session row, and the gate that opens
 * each batch without ever waiting for another process's write lock. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "loader/session.h"
#include "trace/session.h"
#include "util/log.h"
#include "util/timeutil.h"

int64_t trace_measure_offset(void)
{
	uint64_t m0 = cw_monotonic_ns(), r = cw_realtime_ns(), m1 = cw_monotonic_ns();

	return (int64_t)r - (int64_t)(m0 + (m1 - m0) / 2);
}

/* What stops the store, in words, or NULL. */
const char *trace_store_problem(int err)
{
	if (!err)
		return NULL;
	return err == -ENOSPC ? "disk full" : cw_store_strerror(err);
}

/* The session row's facts, known at start; written by trace_store_gate(). */
void trace_session_prepare(struct trace *t)
{
	struct cw_session_info *si = &t->sess;
	char *cmd = t->command_line;
	size_t len = sizeof(t->command_line);
	int i;

	cw_host_facts_read(&t->hf);
	cmd[0] = '\0';
	for (i = 0; t->o.command && t->o.command[i]; i++)
		snprintf(cmd + strlen(cmd), len - strlen(cmd), "%s%s", i ? " " : "", t->o.command[i]);
	memset(si, 0, sizeof(*si));
	si->node = t->o.node;
	si->kind = "trace";
	si->started_wall_ns = t->start_wall_ns;
	si->mono_to_wall_ns = trace_measure_offset();
	si->host = t->hf.host;
	si->kernel = t->hf.kernel;
	si->gpu = t->hf.gpu[0] ? t->hf.gpu : NULL;
	si->driver = t->hf.driver[0] ? t->hf.driver : (t->driver_version[0] ? t->driver_version : NULL);
	si->cuda = t->cuda_version[0] ? t->cuda_version : NULL;
	si->command = cmd[0] ? cmd : NULL;
	si->rank = si->local_rank = si->world_size = -1;
	if (t->o.command == NULL && t->o.npids)
		cw_proc_ranks(t->o.pids[0], &si->rank, &si->local_rank, &si->world_size);
	if (t->o.npids && !t->python_version[0]) {
		char py[16];

		if (!cw_proc_python_version(t->o.pids[0], py, sizeof(py)))
			snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	}
	si->python = t->python_version[0] ? t->python_version : NULL;
}

/* cw_consumer_gate, consumer lock held: can the store take rows now?
 * Opens the writer's batch, taking the write lock (never waiting for it:
 * the consumer must keep draining the rings), and writes the session row
 * first, so no row is ever stored without its session. */
int trace_store_gate(void *ctx)
{
	struct trace *t = ctx;
	int rc = cw_writer_try_begin(t->w);

	if (!rc && !cw_writer_session(t->w))
		rc = cw_writer_session_begin(t->w, &t->sess);
	t->store_err = rc;
	return rc == 0;
}

/* Facts learned after the session row was written: a launched command
 * maps libpython and its CUDA copies only after exec, and rescans find
 * them. Only empty columns are filled. */
void trace_session_late_facts(struct trace *t)
{
	sqlite3_stmt *s = NULL;

	if (!t->st || !t->session_id || (!t->python_version[0] && !t->cuda_version[0] && !t->driver_version[0]))
		return;
	/* The writer thread shares the connection while it runs. */
	cw_writer_db_lock(t->w);
	if (sqlite3_prepare_v2(t->st->db,
			       "UPDATE sessions SET python = coalesce(python, ?1), cuda = coalesce(cuda, ?2), "
			       "driver = coalesce(driver, ?3) WHERE id = ?4",
			       -1, &s, NULL) != SQLITE_OK) {
		cw_writer_db_unlock(t->w);
		return;
	}
	if (t->python_version[0])
		sqlite3_bind_text(s, 1, t->python_version, -1, SQLITE_STATIC);
	if (t->cuda_version[0])
		sqlite3_bind_text(s, 2, t->cuda_version, -1, SQLITE_STATIC);
	if (t->driver_version[0])
		sqlite3_bind_text(s, 3, t->driver_version, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, t->session_id);
	if (sqlite3_step(s) != SQLITE_DONE)
		cw_debug("session facts: %s", sqlite3_errmsg(t->st->db));
	sqlite3_finalize(s);
	cw_writer_db_unlock(t->w);
}

/* At the end of a trace whose store is locked: the held records are
 * written if the lock goes within what is left of --lock-wait. */
void trace_wait_for_store(struct trace *t)
{
	int said = 0;

	for (;;) {
		uint64_t held_ns;
		int busy;

		cw_consumer_lock(&t->cons);
		busy = !cw_consumer_store_ready(&t->cons);
		held_ns = t->cons.held ? cw_monotonic_ns() - t->cons.held_since_ns : 0;
		cw_consumer_unlock(&t->cons);
		if (!busy && said)
			cw_trace_say(&t->o.say, "causeway: database \"%s\" writable again; %llu held records written\n", t->o.db,
				(unsigned long long)(t->cons.spool_replayed - t->replayed_mark));
		if (!busy || held_ns > t->o.lock_wait_ns)
			return;
		if (!said && !t->o.json && held_ns) {
			cw_trace_say(&t->o.say, "causeway: waiting for the write lock on \"%s\" to store the held records\n",
				t->o.db);
			said = 1;
		}
		{
			struct timespec ts = { 0, 100 * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
}
