/* Chains while tracing (chains.h). The pass runs on the main loop's
 * thread: the analysis on a connection of its own (a WAL reader beside the
 * writer's connection), its one write, the chains rows, on the writer's
 * connection, into the writer's open batch. The writer holds the store's
 * write lock nearly all the time (a batch opens at the first record after
 * each commit, which at 100,000 calls/s follows within milliseconds, and
 * stays open until the consumer's next flush, 200 ms on): a write of the
 * pass's own waited for the few ms between two batches, and in a 30 min
 * soak at that rate one pass in three did not find them in 5 s. How a
 * pass's chains become rows (an incident going on extends its row):
 * chains_store.c. */
#include "trace/chains.h"

#include <string.h>

#include "analysis/explain.h"
#include "store/sqlite_util.h"
#include "trace/chains_store.h"
#include "trace/session.h"
#include "util/timeutil.h"

static int run_pass(struct trace *t, uint64_t from, uint64_t to)
{
	struct cw_explain_opts o = { .node_filter = t->o.node && *t->o.node ? t->o.node : NULL,
				     .from_wall_ns = from, .to_wall_ns = to };
	struct cw_explain_result r;
	sqlite3 *db;
	int added, extended, err;
	char **ids = NULL;

	if (!t->chains_st) {
		char e[256];

		err = cw_store_open(&t->chains_st, t->o.db, CW_STORE_READWRITE, e, sizeof(e));
		if (err)
			return err;
		/* Reads only: a WAL reader waits for no writer (the busy
		 * handler covers a checkpoint's brief exclusive moments). */
		sqlite3_busy_timeout(t->chains_st->db, 5000);
		/* A pass reads its last window only: 16 MiB of page cache, not
		 * the store's 64 MiB (kept for the writer's insert stream). The
		 * cache keeps what each pass touched until it is full: at 64 MiB
		 * the agent's RSS climbed through a 30 min soak. */
		cw_exec(t->chains_st->db, "PRAGMA cache_size = -16384");
	}
	db = t->chains_st->db;
	memset(&r, 0, sizeof(r));
	err = cw_explain_run(db, &o, &r);
	if (err)
		goto out;
	/* The evidence ids read here, then the rows written on the writer's
	 * connection, inside its batch when one is open: no wait for its
	 * lock, and the writer waits only for the few statements of the
	 * write. A lock another process holds fails the pass after the writer
	 * connection's short busy timeout (retried). */
	err = cw_trace_chains_evidence(db, &r, &ids);
	if (err)
		goto out;
	cw_writer_db_lock(t->w);
	err = cw_trace_chains_store(t->st->db, (char *const *)ids, &r, cw_realtime_ns(), CW_TRACE_CHAIN_GAP_NS, &added, &extended);
	/* Rows in the writer's batch are stored once it commits: a batch
	 * that rolls back later (a full disk) takes them with it, and they
	 * count as lost then (under the lock: no commit in between). */
	if (!err) {
		cw_writer_counter_add_committed(t->w, "trace.chains.stored", "trace.chains.lost", (uint64_t)added);
		cw_writer_counter_add_committed(t->w, "trace.chains.extended", "trace.chains.lost", (uint64_t)extended);
	}
	cw_writer_db_unlock(t->w);
	cw_trace_chains_evidence_free(ids, r.count);
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
	/* A failed pass (the writer's lock not had in 5 s) leaves its
	 * stretch to the next one: moving on would lose the chains of an
	 * incident in it once its ordinary rows are pruned. A stretch that
	 * keeps failing is given up after 10 periods, so one bad stretch
	 * does not make every later pass longer. */
	if (run_pass(t, t->chains_from_wall, now_wall_ns)) {
		t->chains_failed++;
		if (now_wall_ns - t->chains_from_wall > 10 * CW_TRACE_CHAIN_PERIOD_NS)
			t->chains_from_wall = now_wall_ns;
	} else {
		t->chains_from_wall = now_wall_ns;
	}
	t->chains_last_mono = now;
	cw_consumer_lock(&t->cons);
	cw_writer_counter_set(t->w, "trace.chains.passes", t->chains_passes);
	cw_writer_counter_set(t->w, "trace.chains.failed", t->chains_failed);
	cw_consumer_unlock(&t->cons);
}

void trace_chains_close(struct trace *t)
{
	cw_store_close(t->chains_st);
	t->chains_st = NULL;
}
