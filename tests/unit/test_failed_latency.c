/* Failing calls stay out of every latency figure (docs/rules.md "Failing
 * calls"): a store written through the real writer holds a 20 s loop of
 * cudaMalloc (one every 20 ms, ~200 us) whose calls in seconds 5-10 fail
 * one in three with cudaErrorMemoryAllocation after 40 ms (the failure
 * path: the caching allocator frees its cache and retries), and a
 * cudaStreamQuery that answers cudaErrorNotReady (a state, not a failure).
 * The failures are counted apart (aggregates.errors, the per-process
 * statistics, explain's calls_failed, query's summary), never flagged slow, never in a
 * percentile, a baseline or an incident: explain gives the device_oom
 * chain and no latency chain or warning about cudaMalloc. The same loop
 * under summary capture (trace's default: successes after a process's
 * first calls folded in the kernel into per-second histograms, no rows)
 * gives the device_oom chain the same failing share. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/baseline.h"
#include "analysis/explain.h"
#include "analysis/stats.h"
#include "analysis/summary.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

#define US 1000ULL
#define OFF 1700000000000000000LL
#define STEP_NS (20 * MS)
#define STEPS 1000
#define PID 100
#define CUDA_ERROR_MEMORY_ALLOCATION 2
#define CUDA_ERROR_NOT_READY 600

struct fx {
	char path[64];
	struct cw_store *st;
	uint64_t ok, failed, ok_max, queries;
	int fold; /* successes after the first FIRST_ROWS folded, as summary capture stores them */
};

#define FIRST_ROWS 50
#include "util/hist.h"

static void call(struct cw_writer *w, const char *op, uint64_t mono, uint64_t dur, int64_t ret)
{
	struct cw_event_row r = {
		.mono_ns = mono, .wall_ns = mono + OFF, .duration_ns = dur, .pid = PID, .tid = PID,
		.comm = "python", .source = "cuda", .op = op, .device = 0, .has_ret = 1, .ret = ret,
		.nargs = 1, .args = {1 << 20},
	};
	assert_int_equal(cw_writer_event(w, &r), 0);
}

static void build_mode(struct fx *f, int fold)
{
	struct cw_hist folded;
	int64_t folded_sec = -1;
	struct cw_session_info si = {.node = "n1", .kind = "test", .started_wall_ns = T0 + OFF,
				     .mono_to_wall_ns = OFF, .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_writer_opts wo = {.node = "n1"};
	struct cw_process_row pr = {.pid = PID, .comm = "python", .rank = -1, .local_rank = -1, .world_size = -1,
				    .start_wall_ns = T0 + OFF};
	struct cw_writer *w;
	uint32_t rng = 11;
	char err[256];
	int64_t sid;
	int fd;

	memset(f, 0, sizeof(*f));
	f->fold = fold;
	cw_hist_reset(&folded);
	strcpy(f->path, "/tmp/cw-test-failed-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_session_begin(f->st, &si, &sid), 0);
	wo.session_id = sid;
	assert_int_equal(cw_writer_new(&w, f->st, &wo), 0);
	assert_int_equal(cw_writer_process(w, &pr), 0);
	for (int i = 0; i < STEPS; i++) {
		uint64_t t = T0 + (uint64_t)i * STEP_NS, d = 180 * US + (lcg_next(&rng) % 40) * US;
		int failing = t >= T0 + 5 * SEC && t < T0 + 11 * SEC && i % 3 == 0;

		if (failing) {
			call(w, "cudaMalloc", t, 40 * MS, CUDA_ERROR_MEMORY_ALLOCATION);
			f->failed++;
		} else if (fold && i >= FIRST_ROWS) {
			int64_t sec = (int64_t)((t + OFF) / SEC);

			if (sec != folded_sec && folded_sec >= 0) {
				assert_int_equal(cw_writer_folded(w, PID, "cuda", "cudaMalloc", folded_sec, &folded), 0);
				cw_hist_reset(&folded);
			}
			folded_sec = sec;
			cw_hist_add(&folded, d);
			f->ok++;
			if (d > f->ok_max)
				f->ok_max = d;
		} else {
			call(w, "cudaMalloc", t, d, 0);
			f->ok++;
			if (d > f->ok_max)
				f->ok_max = d;
		}
		/* A query that finds the stream busy is an answer, not a failure. */
		call(w, "cudaStreamQuery", t + 5 * MS, 3 * US, i % 2 ? CUDA_ERROR_NOT_READY : 0);
		f->queries++;
	}
	if (folded_sec >= 0)
		assert_int_equal(cw_writer_folded(w, PID, "cuda", "cudaMalloc", folded_sec, &folded), 0);
	assert_int_equal(cw_writer_free(w), 0);
}

static void build(struct fx *f)
{
	build_mode(f, 0);
}

static void destroy(struct fx *f)
{
	cw_store_close(f->st);
	remove_store_files(f->path);
}

static const struct cw_opstat *op_of(const struct cw_opstat *v, int n, const char *op)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v[i].op, op))
			return &v[i];
	fail_msg("no op %s", op);
	return NULL;
}

static void test_counted_apart(void **state)
{
	struct fx f;
	struct cw_opstat *ops, pid;
	const struct cw_opstat *m, *q;
	char sql[160];
	int n;

	(void)state;
	build(&f);
	assert_true(f.failed > 90 && f.ok > 800);
	/* The aggregates: count, sum, max and histogram of the successes. */
	assert_int_equal(store_q1(f.st->db, "SELECT sum(count) FROM aggregates WHERE op = 'cudaMalloc'"), f.ok);
	assert_int_equal(store_q1(f.st->db, "SELECT sum(errors) FROM aggregates WHERE op = 'cudaMalloc'"), f.failed);
	assert_int_equal(store_q1(f.st->db, "SELECT max(max_ns) FROM aggregates WHERE op = 'cudaMalloc'"), f.ok_max);
	assert_int_equal(store_q1(f.st->db, "SELECT sum(count) FROM aggregates WHERE op = 'cudaStreamQuery'"),
			 f.queries);
	assert_int_equal(store_q1(f.st->db, "SELECT sum(errors) FROM aggregates WHERE op = 'cudaStreamQuery'"), 0);
	/* Every call is stored, the failures with their code, none slow. */
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM events WHERE op = 'cudaMalloc' AND ret = %d",
		 CUDA_ERROR_MEMORY_ALLOCATION);
	assert_int_equal(store_q1(f.st->db, sql), f.failed);
	assert_int_equal(store_q1(f.st->db, "SELECT count(*) FROM events WHERE anomalous = 1 AND ret != 0"
					    " AND op = 'cudaMalloc'"), 0);

	/* explain's per-op statistics. */
	n = cw_opstats_load(f.st->db, NULL, 0, INT64_MAX, &ops);
	assert_int_equal(n, 2);
	m = op_of(ops, n, "cudaMalloc");
	q = op_of(ops, n, "cudaStreamQuery");
	assert_int_equal(m->count, f.ok);
	assert_int_equal(m->errors, f.failed);
	assert_int_equal(m->max_ns, f.ok_max);
	assert_true(m->p99_ns < 1 * MS);
	assert_int_equal(q->count, f.queries);
	assert_int_equal(q->errors, 0);
	/* Per process (read from events): the same split. */
	assert_int_equal(cw_opstat_for_pid(f.st->db, m, PID, 0, UINT64_MAX / 2, &pid), 0);
	assert_int_equal(pid.count, f.ok);
	assert_int_equal(pid.errors, f.failed);
	assert_true(pid.p99_ns < 1 * MS);
	free(pid.secs);
	cw_opstats_free(ops, (size_t)n);
	destroy(&f);
}

static void test_baseline_of_successes(void **state)
{
	struct fx f;
	struct cw_opstat *ops;
	struct cw_baseline bl;
	int64_t s0 = (int64_t)((T0 + OFF) / SEC);
	int n;

	(void)state;
	build(&f);
	/* The failing seconds are the baseline's whole reference. */
	n = cw_opstats_load(f.st->db, NULL, s0 + 15, s0 + 19, &ops);
	assert_true(n > 0);
	assert_true(cw_baseline_load(f.st->db, op_of(ops, n, "cudaMalloc"), s0 + 15, s0 + 19, &bl) >= 0);
	assert_int_equal(bl.count, f.ok - 5 * 50);
	assert_true(bl.p50_ns > 0 && bl.p50_ns < 1 * MS);
	cw_opstats_free(ops, (size_t)n);
	destroy(&f);
}

static void test_explain_no_latency_chain(void **state)
{
	struct fx f;
	struct cw_explain_opts o = {0};
	struct cw_explain_result r;

	(void)state;
	build(&f);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	assert_int_equal(r.calls_failed, f.failed);
	assert_int_equal(r.calls_analysed, f.ok + f.failed + f.queries);
	assert_non_null(find(&r, CW_KIND_DEVICE_OOM));
	for (int i = 0; i < r.count; i++) {
		const struct cw_chain *c = &r.chains[i];

		if (c->kind == CW_KIND_DEVICE_OOM)
			continue;
		if (!strcmp(c->op, "cudaMalloc"))
			fail_msg("latency chain %s about cudaMalloc: %s", cw_kind_name(c->kind), c->summary);
	}
	for (int i = 0; i < r.nwarnings; i++)
		if (!strncmp(r.warnings[i], "cudaMalloc", 10))
			fail_msg("latency warning: %s", r.warnings[i]);
	cw_explain_result_free(&r);
	destroy(&f);
}

/* The device_oom chain's share of failing calls counts the folded
 * successes: read from the rows alone it is failed / (failed + 50 first
 * calls), ~70 %, which says the op mostly fails and would drop a latency
 * chain of it. The process recovered (folded successes after its last
 * failure). */
static void test_failing_share_folded(void **state)
{
	for (int fold = 0; fold < 2; fold++) {
		struct fx f;
		struct cw_explain_opts o = {0};
		struct cw_explain_result r;
		const struct cw_chain *c;

		(void)state;
		build_mode(&f, fold);
		if (fold)
			assert_int_equal(store_q1(f.st->db, "SELECT count(*) FROM events WHERE op = 'cudaMalloc' AND ret = 0"),
					 FIRST_ROWS);
		assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
		assert_non_null(c = find(&r, CW_KIND_DEVICE_OOM));
		near(evidence(c, "failing_share"), (double)f.failed / (double)(f.ok + f.failed));
		assert_true(evidence(c, "recovered") == 1);
		assert_int_equal(c->nfailed_ops, 1);
		near(c->failed_ops[0].share, (double)f.failed / (double)(f.ok + f.failed));
		cw_explain_result_free(&r);
		destroy(&f);
	}
}

/* query's summary, from the aggregates and (by line) from events. */
static void test_summary(void **state)
{
	struct fx f;

	(void)state;
	build(&f);
	for (int by_line = 0; by_line < 2; by_line++) {
		struct cw_summary_opts o = {.by_line = by_line};
		struct cw_summary *s;
		int seen = 0;

		assert_int_equal(cw_summary_build(f.st->db, &o, &s), 0);
		for (size_t i = 0; i < s->n; i++) {
			const struct cw_summary_row *r = &s->rows[i];

			if (!strcmp(r->op, "cudaMalloc")) {
				seen++;
				assert_int_equal(r->count, f.ok);
				assert_int_equal(r->failed, f.failed);
				assert_int_equal(r->max_ns, f.ok_max);
			} else if (!strcmp(r->op, "cudaStreamQuery")) {
				assert_int_equal(r->count, f.queries);
				assert_int_equal(r->failed, 0);
			}
		}
		assert_int_equal(seen, 1);
		cw_summary_free(s);
	}
	destroy(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counted_apart),
		cmocka_unit_test(test_baseline_of_successes),
		cmocka_unit_test(test_explain_no_latency_chain),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_failing_share_folded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
