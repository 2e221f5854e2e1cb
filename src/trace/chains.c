/* Chains while tracing (chains.h). The pass runs on the main loop's
 * thread with a connection of its own (a WAL reader beside the writer's
 * connection; its one write, the chains rows, waits at most 5 s for the
 * writer's lock and is otherwise counted as failed). */
#include "trace/chains.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/explain.h"
#include "store/layout.h"
#include "trace/session.h"
#include "util/timeutil.h"

/* The ids of the kept slow calls of chain c (its incident's seconds, or
 * the pass's window), slowest first, as a JSON array. */
static json_t *evidence_calls(sqlite3 *db, const struct cw_chain *c, uint64_t from, uint64_t to)
{
	const char *sql;
	sqlite3_stmt *s = NULL;
	json_t *ids = json_array();

	if (!ids || !c->op[0] || cw_store_op_read_sql(db, c->op, CW_OP_READ_SLOWEST, &sql) < 0 ||
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		goto out;
	if (c->incident_from_ns)
		from = c->incident_from_ns, to = c->incident_to_ns;
	sqlite3_bind_text(s, 1, c->op, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, 0);
	sqlite3_bind_text(s, 3, c->node, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, (int64_t)from);
	sqlite3_bind_int64(s, 5, (int64_t)to);
	sqlite3_bind_int64(s, 6, c->pid);
	sqlite3_bind_int64(s, 7, CW_TRACE_CHAIN_IDS);
	while (sqlite3_step(s) == SQLITE_ROW)
		json_array_append_new(ids, json_integer(sqlite3_column_int64(s, 8)));
out:
	sqlite3_finalize(s);
	return ids;
}

/* Marks the n chains rows just stored (ids first..first+n-1, in r's
 * order): stored by trace, with their evidence ids. */
static int mark_rows(sqlite3 *db, const struct cw_explain_result *r, int64_t first)
{
	static const char sql[] = "UPDATE chains SET json = json_set(json, '$.stored_by', 'trace',"
				  " '$.evidence_ids', json_object('calls', json(?1))) WHERE id = ?2";
	sqlite3_stmt *s = NULL;
	int rc, err = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
		return -EIO;
	for (int i = 0; i < r->count && !err; i++) {
		json_t *ids = evidence_calls(db, &r->chains[i], r->from_wall_ns, r->to_wall_ns);
		char *txt = ids ? json_dumps(ids, JSON_COMPACT) : NULL;

		json_decref(ids);
		if (!txt) {
			err = -ENOMEM;
			break;
		}
		sqlite3_reset(s);
		sqlite3_bind_text(s, 1, txt, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 2, first + i);
		rc = sqlite3_step(s);
		free(txt);
		if (rc != SQLITE_DONE)
			err = cw_sqlite_errno(rc);
	}
	sqlite3_finalize(s);
	return err;
}

static int run_pass(struct trace *t, uint64_t from, uint64_t to)
{
	struct cw_explain_opts o = { .node_filter = t->o.node && *t->o.node ? t->o.node : NULL,
				     .from_wall_ns = from, .to_wall_ns = to };
	struct cw_explain_result r;
	sqlite3 *db;
	int64_t first;
	int n, err;

	if (!t->chains_st) {
		char e[256];

		err = cw_store_open(&t->chains_st, t->o.db, CW_STORE_READWRITE, e, sizeof(e));
		if (err)
			return err;
		/* The writer takes its lock again right after each commit: a
		 * busy handler that sleeps may miss a few windows. */
		sqlite3_busy_timeout(t->chains_st->db, 5000);
	}
	db = t->chains_st->db;
	memset(&r, 0, sizeof(r));
	err = cw_explain_run(db, &o, &r);
	if (err)
		goto out;
	n = cw_explain_store_chains(db, &r, cw_realtime_ns());
	if (n < 0) {
		err = n;
		goto out;
	}
	if (n > 0) {
		first = sqlite3_last_insert_rowid(db) - n + 1;
		err = mark_rows(db, &r, first);
		if (!err)
			t->chains_stored += (uint64_t)n;
	}
out:
	cw_explain_result_free(&r);
	return err;
}

void trace_chains_pass(struct trace *t, uint64_t now_wall_ns, int when)
{
	uint64_t now = cw_monotonic_ns();

	if (!t->chains_from_wall) {
		t->chains_from_wall = t->start_wall_ns;
		t->chains_last_mono = now;
	}
	if (when == CW_TRACE_CHAINS_DUE && now - t->chains_last_mono < CW_TRACE_CHAIN_PERIOD_NS)
		return;
	/* The last stretch of a session that never reached a period and
	 * pruned nothing is all there in raw rows: explain has it. */
	if (when == CW_TRACE_CHAINS_END && !t->chains_passes) {
		struct cw_writer_stats ws;

		cw_consumer_lock(&t->cons);
		cw_writer_get_stats(t->w, &ws);
		cw_consumer_unlock(&t->cons);
		if (!ws.pruned_events && !ws.pruned_evidence)
			return;
	}
	if (now_wall_ns <= t->chains_from_wall)
		return;
	t->chains_passes++;
	if (run_pass(t, t->chains_from_wall, now_wall_ns))
		t->chains_failed++;
	t->chains_from_wall = now_wall_ns;
	t->chains_last_mono = now;
	cw_consumer_lock(&t->cons);
	cw_writer_counter_set(t->w, "trace.chains.passes", t->chains_passes);
	cw_writer_counter_set(t->w, "trace.chains.stored", t->chains_stored);
	cw_writer_counter_set(t->w, "trace.chains.failed", t->chains_failed);
	cw_consumer_unlock(&t->cons);
}

void trace_chains_close(struct trace *t)
{
	cw_store_close(t->chains_st);
	t->chains_st = NULL;
}
