/* trace's chains passes over a store (trace/chains_store.h): the causal
 * engine run pass after pass over consecutive windows of a demo database,
 * each pass's chains stored as trace stores them. An incident that goes on
 * over several passes stays one row whose window and counts grow; incidents
 * separated by more than the gap get a row each; under a tiny size cap
 * the chains go last (store/retention.h), oldest first, counted. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo/build.h"
#include "demo/demo.h"
#include "store/retention.h"
#include "store/store.h"
#include "store/writer.h"
#include "trace/chains_store.h"
#include "rule_assert.h"

#define DEMO_T0 (1767225600ULL * SEC) /* the demo's fixed start, 2026-01-01 */
#define PASS (10 * SEC)

static char path[64];
/* the calls of the cudaStreamSynchronize chains every pass found, summed */
static int64_t sync_calls;

static struct cw_store *demo_store(const char *scenario)
{
	struct cw_demo_opts o = { .scenario = cw_demo_find(scenario), .seed = 1, .node = "n1" };
	struct cw_demo_result res;
	struct cw_explain_result ex;
	struct cw_store *st = NULL;
	char err[256];

	assert_non_null(o.scenario);
	snprintf(path, sizeof(path), "/tmp/cw-test-chains-store-%d.db", (int)getpid());
	remove_store_files(path);
	memset(&ex, 0, sizeof(ex));
	assert_int_equal(cw_demo_build(path, &o, 0, 1, &res, &ex, err, sizeof(err)), 0);
	cw_explain_result_free(&ex);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_READWRITE, err, sizeof(err)), 0);
	/* the demo's own whole-run chains: not trace's */
	assert_int_equal(sqlite3_exec(st->db, "DELETE FROM chains", NULL, NULL, NULL), SQLITE_OK);
	return st;
}

/* Passes of PASS over the demo's 92 s as trace runs them; returns the
 * passes that found a chain. */
static int passes(struct cw_store *st, uint64_t gap_ns, int *added, int *extended)
{
	int found = 0;

	*added = *extended = 0;
	sync_calls = 0;
	for (uint64_t from = DEMO_T0; from < DEMO_T0 + 100 * SEC; from += PASS) {
		struct cw_explain_opts o = { .from_wall_ns = from, .to_wall_ns = from + PASS };
		struct cw_explain_result r;
		int a, e;

		memset(&r, 0, sizeof(r));
		assert_int_equal(cw_explain_run(st->db, &o, &r), 0);
		found += r.count > 0;
		for (int i = 0; i < r.count; i++)
			if (!strcmp(r.chains[i].op, "cudaStreamSynchronize"))
				sync_calls += (int64_t)r.chains[i].count;
		assert_int_equal(cw_trace_chains_store(st->db, NULL, &r, from + PASS, gap_ns, &a, &e), 0);
		assert_int_equal(a + e, r.count);
		*added += a, *extended += e;
		cw_explain_result_free(&r);
	}
	return found;
}

static int64_t q(struct cw_store *st, const char *sql)
{
	return store_q1(st->db, sql);
}

/* incident: stress-ng preempts the trainer from t=30 s to t=45 s, found by
 * the passes [30, 40) and [40, 50): one row per chain, over both. */
static void test_continuing_incident(void **state)
{
	struct cw_store *st = demo_store("incident");
	int added, extended;

	(void)state;
	assert_int_equal(passes(st, 2 * PASS, &added, &extended), 2);
	printf("incident: %d rows added, %d extended\n", added, extended);
	assert_true(added >= 1);
	assert_int_equal(extended, added); /* the second pass continued every row */
	assert_int_equal(q(st, "SELECT count(*) FROM chains"), added);
	assert_int_equal(q(st, "SELECT count(*) FROM chains WHERE kind = 'cpu_preemption' AND op = "
			       "'cudaStreamSynchronize'"), 1);
	/* its window: from the first pass's start to the second's end */
	assert_int_equal(q(st, "SELECT from_wall_ns FROM chains WHERE op = 'cudaStreamSynchronize'"),
			 (int64_t)(DEMO_T0 + 30 * SEC));
	assert_int_equal(q(st, "SELECT to_wall_ns FROM chains WHERE op = 'cudaStreamSynchronize'"),
			 (int64_t)(DEMO_T0 + 50 * SEC));
	assert_int_equal(q(st, "SELECT json_extract(json, '$.last_seen_wall_ns') FROM chains WHERE op = "
			       "'cudaStreamSynchronize'"), (int64_t)(DEMO_T0 + 50 * SEC));
	assert_int_equal(q(st, "SELECT json_extract(json, '$.passes') FROM chains WHERE op = 'cudaStreamSynchronize'"), 2);
	assert_int_equal(q(st, "SELECT count(*) FROM chains WHERE json_extract(json, '$.stored_by') = 'trace'"
			       " AND json_array_length(json, '$.evidence_ids.calls') > 0"), added);
	/* the counts are both passes' calls */
	assert_true(sync_calls > 0);
	assert_int_equal(q(st, "SELECT count FROM chains WHERE op = 'cudaStreamSynchronize'"), sync_calls);
	assert_int_equal(q(st, "SELECT count = json_extract(json, '$.count') FROM chains WHERE op = "
			       "'cudaStreamSynchronize'"), 1);
	cw_store_close(st);
	remove_store_files(path);
}

/* io-contention: an rsync burst from t=10, 30, 50 and 70 s, each found by
 * one pass with an empty pass between: four incidents when the gap is
 * shorter than that pass, one going on when it is longer. */
static void test_separated_incidents(void **state)
{
	struct cw_store *st = demo_store("io-contention");
	int added, extended;

	(void)state;
	assert_int_equal(passes(st, PASS / 2, &added, &extended), 4);
	assert_int_equal(q(st, "SELECT count(*) FROM chains WHERE kind = 'io_contention'"), 4);
	assert_int_equal(extended, 0);
	assert_int_equal(q(st, "SELECT count(DISTINCT from_wall_ns) FROM chains WHERE kind = 'io_contention'"), 4);
	assert_int_equal(sqlite3_exec(st->db, "DELETE FROM chains", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(passes(st, 2 * PASS, &added, &extended), 4);
	assert_int_equal(q(st, "SELECT count(*) FROM chains WHERE kind = 'io_contention'"), 1);
	assert_int_equal(q(st, "SELECT to_wall_ns - from_wall_ns FROM chains WHERE kind = 'io_contention'"),
			 (int64_t)(70 * SEC));
	cw_store_close(st);
	remove_store_files(path);
}

/* Under a cap that the chains alone exceed, every event goes first, then
 * the oldest chains, every one counted. */
static void test_chains_pruned_last(void **state)
{
	struct cw_store *st = demo_store("io-contention");
	struct cw_retention_counts c = { 0 };
	int added, extended;
	int64_t rows, used, top;

	(void)state;
	passes(st, PASS / 2, &added, &extended);
	/* a long-running agent's history: 4 x 2^10 rows */
	for (int i = 0; i < 10; i++)
		assert_int_equal(sqlite3_exec(st->db,
					      "INSERT INTO chains (node, created_wall_ns, from_wall_ns, to_wall_ns,"
					      " severity, kind, op, count, slow_count, summary, json) SELECT node,"
					      " created_wall_ns, from_wall_ns, to_wall_ns, severity, kind, op, count,"
					      " slow_count, summary, json FROM chains",
					      NULL, NULL, NULL),
				 SQLITE_OK);
	rows = q(st, "SELECT count(*) FROM chains");
	top = q(st, "SELECT max(id) FROM chains");
	assert_int_equal(rows, 4096);
	used = cw_store_used_bytes(st);
	/* the cap leaves room for the aggregates and part of the chains */
	assert_int_equal(cw_retention_enforce_tiers(st, used / 4, 60 * (int64_t)SEC, &c), 0);
	printf("cap %lld of %lld bytes: %lld events, %lld chains pruned, %lld chains left\n",
	       (long long)(used / 4), (long long)used, (long long)c.events, (long long)c.chains,
	       (long long)q(st, "SELECT count(*) FROM chains"));
	assert_true(cw_store_used_bytes(st) <= used / 4);
	assert_int_equal(q(st, "SELECT count(*) FROM calls") + q(st, "SELECT count(*) FROM kevents"), 0);
	assert_true(c.chains > 0 && c.chains < rows);
	assert_int_equal(q(st, "SELECT count(*) FROM chains"), rows - c.chains);
	/* the newest are left */
	assert_int_equal(q(st, "SELECT min(id) FROM chains"), top - (rows - c.chains) + 1);
	cw_store_close(st);
	remove_store_files(path);
}

/* A cpu_preemption chain of train.py:18 (pid 4821) preempted by culprit
 * (comm, pid), over its pass's window or, inc_s > 0, an incident in time
 * of its own seconds [inc_s, inc_s + 3). */
static void victim_chain(struct cw_chain *c, const char *comm, int64_t pid, uint64_t inc_s)
{
	memset(c, 0, sizeof(*c));
	c->severity = CW_SEV_HIGH;
	c->kind = CW_KIND_CPU_PREEMPTION;
	strcpy(c->op, "cudaDeviceSynchronize");
	strcpy(c->source, "cuda");
	strcpy(c->node, "n1");
	c->count = 100, c->slow_count = 50, c->p50_ns = 1000000, c->p99_ns = 5000000, c->tail_ratio = 5;
	c->pid = c->tid = 4821;
	strcpy(c->comm, "python3");
	c->rank = -1;
	c->has_python = 1;
	strcpy(c->py_file, "train.py");
	c->py_line = 18;
	strcpy(c->summary, "preempted");
	c->culprit.known = 1;
	snprintf(c->culprit.comm, sizeof(c->culprit.comm), "%s", comm);
	c->culprit.pid = pid;
	c->culprit.cpu = 1;
	if (inc_s) {
		c->incident_from_ns = DEMO_T0 + inc_s * SEC;
		c->incident_to_ns = DEMO_T0 + (inc_s + 3) * SEC - 1;
		cw_chain_add_evidence(c, "incident_from_ns", (double)c->incident_from_ns, 1);
		cw_chain_add_evidence(c, "incident_to_ns", (double)c->incident_to_ns, 1);
	}
}

/* One pass [from_s, from_s + 60) storing n chains; returns rows added. */
static int pass_of(struct cw_store *st, uint64_t from_s, struct cw_chain *c, int n, int *extended)
{
	struct cw_explain_result r = { .chains = c, .count = n };
	int added;

	r.from_wall_ns = DEMO_T0 + from_s * SEC;
	r.to_wall_ns = r.from_wall_ns + 60 * SEC;
	assert_int_equal(cw_trace_chains_store(st->db, NULL, &r, r.to_wall_ns, CW_TRACE_CHAIN_GAP_NS, &added, extended),
			 0);
	return added;
}

/* A busy machine: the victim is preempted in every pass, by everyday
 * neighbours (rcu_preempt) between the incidents, and each incident is
 * its own hog. A stored row is one incident with its own culprit: a pass
 * whose chain names another culprit, or another incident in time of the
 * same culprit, adds a row; an incident across a pass boundary extends
 * its row, which then ends where the incident ended. */
static void test_incident_rows_keep_their_culprit(void **state)
{
	struct cw_chain *c = calloc(2, sizeof(*c));
	struct cw_store *st;
	char err[256];
	int ext;

	(void)state;
	assert_non_null(c);
	snprintf(path, sizeof(path), "/tmp/cw-test-chains-store-%d.db", (int)getpid());
	remove_store_files(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	/* +0: stress-ng's incident at +20 s */
	victim_chain(&c[0], "stress-ng", 9001, 20);
	assert_int_equal(pass_of(st, 0, c, 1, &ext), 1);
	/* +60: only the everyday preemption, over the pass's window */
	victim_chain(&c[0], "rcu_preempt", 16, 0);
	assert_int_equal(pass_of(st, 60, c, 1, &ext), 1);
	assert_int_equal(ext, 0);
	/* +120: a second incident of the same hog pid, 100 s after the first
	 * (inside the gap): an incident of its own, beside the everyday one,
	 * which goes on */
	victim_chain(&c[0], "stress-ng", 9001, 120);
	victim_chain(&c[1], "rcu_preempt", 16, 0);
	assert_int_equal(pass_of(st, 120, c, 2, &ext), 1);
	assert_int_equal(ext, 1);
	/* +180: ffmpeg's incident from +238 s, going on in the next pass */
	victim_chain(&c[0], "ffmpeg", 9002, 238);
	assert_int_equal(pass_of(st, 180, c, 1, &ext), 1);
	victim_chain(&c[0], "ffmpeg", 9002, 240);
	assert_int_equal(pass_of(st, 240, c, 1, &ext), 0);
	assert_int_equal(ext, 1);
	/* +300: another everyday neighbour over the pass's window, within the
	 * gap of rcu_preempt's row: a row of its own */
	victim_chain(&c[0], "python3", 5555, 0);
	assert_int_equal(pass_of(st, 300, c, 1, &ext), 1);
	assert_int_equal(ext, 0);
	assert_int_equal(q(st, "SELECT count(*) FROM chains"), 5);
	/* every row names one culprit; an incident's row, its own seconds */
	assert_int_equal(q(st, "SELECT count(*) FROM chains WHERE json_extract(json, '$.culprit.comm') = 'stress-ng'"),
			 2);
	assert_int_equal(q(st, "SELECT count(*) FROM chains WHERE json_extract(json, '$.culprit.pid') = 16"), 1);
	assert_int_equal(q(st, "SELECT json_extract(json, '$.passes') FROM chains WHERE"
			       " json_extract(json, '$.culprit.pid') = 16"), 2);
	assert_int_equal(q(st, "SELECT json_extract(json, '$.evidence.incident_from_ns') FROM chains WHERE"
			       " json_extract(json, '$.culprit.pid') = 9002"), (int64_t)(DEMO_T0 + 238 * SEC));
	assert_int_equal(q(st, "SELECT json_extract(json, '$.evidence.incident_to_ns') FROM chains WHERE"
			       " json_extract(json, '$.culprit.pid') = 9002"), (int64_t)(DEMO_T0 + 243 * SEC - 1));
	assert_int_equal(q(st, "SELECT max(json_extract(json, '$.evidence.incident_from_ns')) FROM chains WHERE"
			       " json_extract(json, '$.culprit.pid') = 9001"), (int64_t)(DEMO_T0 + 120 * SEC));
	cw_store_close(st);
	remove_store_files(path);
	free(c);
}

/* trace stores a pass's chains on its writer's connection, inside the
 * writer's open batch (trace/chains.c: a transaction of the pass's own
 * waited for the writer's lock, which the writer holds nearly always):
 * the rows go in without a transaction of their own, commit with the
 * batch, and a store outside any transaction commits by itself. */
static void test_store_inside_open_batch(void **state)
{
	struct cw_chain *c = calloc(1, sizeof(*c));
	struct cw_store *st, *reader;
	char err[256];
	int ext;

	(void)state;
	assert_non_null(c);
	snprintf(path, sizeof(path), "/tmp/cw-test-chains-store-%d.db", (int)getpid());
	remove_store_files(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_store_open(&reader, path, CW_STORE_READWRITE, err, sizeof(err)), 0);
	/* the writer's batch, holding the write lock */
	assert_int_equal(sqlite3_exec(st->db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	victim_chain(c, "stress-ng", 9001, 20);
	assert_int_equal(pass_of(st, 0, c, 1, &ext), 1);
	assert_int_equal(sqlite3_get_autocommit(st->db), 0); /* still the writer's batch */
	assert_int_equal(q(reader, "SELECT count(*) FROM chains"), 0);
	assert_int_equal(sqlite3_exec(st->db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(q(reader, "SELECT count(*) FROM chains"), 1);
	/* no batch open: committed at once */
	victim_chain(c, "ffmpeg", 9002, 0);
	assert_int_equal(pass_of(st, 60, c, 1, &ext), 1);
	assert_int_equal(sqlite3_get_autocommit(st->db), 1);
	assert_int_equal(q(reader, "SELECT count(*) FROM chains"), 2);
	cw_store_close(reader);
	cw_store_close(st);
	remove_store_files(path);
	free(c);
}

/* A pass's rows in the writer's batch count as stored only once the
 * batch commits (trace/chains.c): a COMMIT that fails takes them with the
 * batch, and they count as lost. The failure is injected as SQLite's own:
 * a deferred foreign key broken inside the batch fails its COMMIT. */
static void test_counted_once_the_batch_commits(void **state)
{
	struct cw_writer_opts wo = { .node = "n1", .session_id = 1 };
	struct cw_chain *c = calloc(1, sizeof(*c));
	struct cw_writer *w;
	struct cw_store *st;
	char err[256];
	int ext;

	(void)state;
	assert_non_null(c);
	snprintf(path, sizeof(path), "/tmp/cw-test-chains-store-%d.db", (int)getpid());
	remove_store_files(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(sqlite3_exec(st->db,
				      "PRAGMA foreign_keys = ON;"
				      " CREATE TEMP TABLE parent (id INTEGER PRIMARY KEY);"
				      " CREATE TEMP TABLE child (p REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	/* a batch whose COMMIT fails */
	assert_int_equal(cw_writer_try_begin(w), 0);
	victim_chain(c, "stress-ng", 9001, 20);
	cw_writer_db_lock(w);
	assert_int_equal(pass_of(st, 0, c, 1, &ext), 1);
	cw_writer_counter_add_committed(w, "trace.chains.stored", "trace.chains.lost", 1);
	assert_int_equal(sqlite3_exec(st->db, "INSERT INTO temp.child VALUES (1)", NULL, NULL, NULL), SQLITE_OK);
	cw_writer_db_unlock(w);
	assert_true(cw_writer_flush(w) < 0);
	assert_int_equal(q(st, "SELECT count(*) FROM chains"), 0);
	/* no batch open: committed at once */
	victim_chain(c, "ffmpeg", 9002, 0);
	assert_int_equal(pass_of(st, 60, c, 1, &ext), 1);
	cw_writer_counter_add_committed(w, "trace.chains.stored", "trace.chains.lost", 1);
	/* a batch that commits */
	assert_int_equal(cw_writer_try_begin(w), 0);
	victim_chain(c, "rsync", 9003, 0);
	assert_int_equal(pass_of(st, 120, c, 1, &ext), 1);
	cw_writer_counter_add_committed(w, "trace.chains.stored", "trace.chains.lost", 1);
	assert_int_equal(cw_writer_flush(w), 0);
	assert_int_equal(q(st, "SELECT count(*) FROM chains"), 2);
	assert_int_equal(q(st, "SELECT value FROM counters WHERE name = 'trace.chains.stored'"), 2);
	assert_int_equal(q(st, "SELECT value FROM counters WHERE name = 'trace.chains.lost'"), 1);
	assert_int_equal(cw_writer_free(w), 0);
	cw_store_close(st);
	remove_store_files(path);
	free(c);
}

/* A pass whose window chain names the hog of its incident stores the
 * incident's row only; a window chain of another culprit beside it is
 * stored. */
static void test_window_chain_of_the_incident(void **state)
{
	struct cw_chain *c = calloc(3, sizeof(*c));
	struct cw_store *st;
	char err[256];
	int ext;

	(void)state;
	assert_non_null(c);
	snprintf(path, sizeof(path), "/tmp/cw-test-chains-store-%d.db", (int)getpid());
	remove_store_files(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	victim_chain(&c[0], "stress-ng", 9001, 0);
	victim_chain(&c[1], "stress-ng", 9001, 20);
	victim_chain(&c[2], "rcu_preempt", 16, 0);
	c[2].op[0] = 'X'; /* another op: never covered */
	assert_int_equal(pass_of(st, 0, c, 3, &ext), 2);
	assert_int_equal(ext, 0);
	assert_int_equal(q(st, "SELECT count(*) FROM chains WHERE json_extract(json, '$.culprit.pid') = 9001"), 1);
	assert_int_equal(q(st, "SELECT json_extract(json, '$.evidence.incident_from_ns') FROM chains WHERE"
			       " json_extract(json, '$.culprit.pid') = 9001"), (int64_t)(DEMO_T0 + 20 * SEC));
	cw_store_close(st);
	remove_store_files(path);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_continuing_incident),
		cmocka_unit_test(test_separated_incidents),
		cmocka_unit_test(test_chains_pruned_last),
		cmocka_unit_test(test_incident_rows_keep_their_culprit),
		cmocka_unit_test(test_store_inside_open_batch),
		cmocka_unit_test(test_counted_once_the_batch_commits),
		cmocka_unit_test(test_window_chain_of_the_incident),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
