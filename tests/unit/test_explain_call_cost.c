/* What explain costs per call of its window (an always-on agent's store
 * holds an hour of millions: bench/RESULTS.md "A 3 s incident in a
 * recorded hour"). A store written through the real writer holds a 20 s
 * sync loop (20,000 cudaStreamSynchronize, all succeeding) and a
 * cudaStreamQuery polling every 10 ms that answers cudaErrorNotReady half
 * the time (a state, not a failure). explain over it, counted in SQLite VM
 * steps (every statement, through the connection's profile hook), stays
 * under a bound per call: a statement that runs every call through the
 * events view's joins and a grouping (call_errors did: ~120 steps a call)
 * breaks it; the newest-first scan and the grouping of the non-zero
 * returns cost ~10. With failures the counts stay those of every call:
 * cudaMalloc failing with cudaErrorMemoryAllocation is one device_oom
 * chain over every cudaMalloc, none over the other ops. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/explain.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

#define US 1000ULL
#define OFF 1700000000000000000LL
#define SYNCS 20000
#define PID 100
#define CUDA_ERROR_MEMORY_ALLOCATION 2
#define CUDA_ERROR_NOT_READY 600
#define CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES 701
/* VM steps per call of the window, every statement of explain together. */
#define MAX_STEPS_PER_CALL 40

struct fx {
	char path[64];
	struct cw_store *st;
	uint64_t calls, mallocs, failed, launches;
};

static void call(struct cw_writer *w, const char *op, uint64_t mono, uint64_t dur, int64_t ret)
{
	struct cw_event_row r = {
		.mono_ns = mono, .wall_ns = mono + OFF, .duration_ns = dur, .pid = PID, .tid = PID,
		.comm = "python", .source = "cuda", .op = op, .device = 0, .has_ret = 1, .ret = ret,
		.nargs = 1, .args = {1 << 20},
	};
	assert_int_equal(cw_writer_event(w, &r), 0);
}

/* With failing: every 50th ms a cudaMalloc, one in four of them in
 * seconds 5-10 failing. With hot: a cudaLaunchKernel beside every sync,
 * five of them (one in 4,000) failing with cudaErrorLaunchOutOfResources:
 * the failing op is the hottest. */
static void build_hot(struct fx *f, int failing, int hot)
{
	struct cw_session_info si = {.node = "n1", .kind = "test", .started_wall_ns = T0 + OFF,
				     .mono_to_wall_ns = OFF, .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_writer_opts wo = {.node = "n1"};
	struct cw_process_row pr = {.pid = PID, .comm = "python", .rank = -1, .local_rank = -1, .world_size = -1,
				    .start_wall_ns = T0 + OFF};
	struct cw_writer *w;
	uint32_t rng = 7;
	char err[256];
	int64_t sid;
	int fd;

	memset(f, 0, sizeof(*f));
	strcpy(f->path, "/tmp/cw-test-callcost-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_session_begin(f->st, &si, &sid), 0);
	wo.session_id = sid;
	assert_int_equal(cw_writer_new(&w, f->st, &wo), 0);
	assert_int_equal(cw_writer_process(w, &pr), 0);
	for (int i = 0; i < SYNCS; i++) {
		uint64_t t = T0 + (uint64_t)i * MS;

		call(w, "cudaStreamSynchronize", t, 400 * US + (lcg_next(&rng) % 100) * US, 0);
		f->calls++;
		if (i % 10 == 0) {
			call(w, "cudaStreamQuery", t + 500 * US, 3 * US, i % 20 ? CUDA_ERROR_NOT_READY : 0);
			f->calls++;
		}
		if (hot) {
			int bad = i % 4000 == 1999;

			call(w, "cudaLaunchKernel", t + 100 * US, 5 * US, bad ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES : 0);
			f->calls++;
			f->launches++;
			f->failed += bad;
		}
		if (failing && i % 50 == 0) {
			int bad = t >= T0 + 5 * SEC && t < T0 + 11 * SEC && i % 200 == 0;

			call(w, "cudaMalloc", t + 600 * US, bad ? 40 * MS : 200 * US,
			     bad ? CUDA_ERROR_MEMORY_ALLOCATION : 0);
			f->calls++;
			f->mallocs++;
			f->failed += bad;
		}
	}
	assert_int_equal(cw_writer_free(w), 0);
}

static void build(struct fx *f, int failing)
{
	build_hot(f, failing, 0);
}

static void destroy(struct fx *f)
{
	cw_store_close(f->st);
	remove_store_files(f->path);
}

/* Each statement's steps since the last reading (a reused statement's
 * counter runs on across resets). */
static int count_steps(unsigned type, void *arg, void *p, void *x)
{
	(void)x;
	if (type == SQLITE_TRACE_PROFILE)
		*(uint64_t *)arg += (uint64_t)sqlite3_stmt_status(p, SQLITE_STMTSTATUS_VM_STEP, 1);
	return 0;
}

static void test_steps_per_call(void **state)
{
	struct fx f;
	struct cw_explain_opts o = {0};
	struct cw_explain_result r;
	uint64_t steps = 0;

	(void)state;
	build(&f, 0);
	assert_int_equal(sqlite3_trace_v2(f.st->db, SQLITE_TRACE_PROFILE, count_steps, &steps), SQLITE_OK);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	sqlite3_trace_v2(f.st->db, 0, NULL, NULL);
	assert_int_equal(r.calls_analysed, f.calls);
	assert_int_equal(r.calls_failed, 0);
	assert_null(find(&r, CW_KIND_CUDA_ERROR));
	print_message("explain: %llu VM steps for %llu calls (%.1f a call)\n", (unsigned long long)steps,
		      (unsigned long long)f.calls, (double)steps / (double)f.calls);
	assert_true(steps > f.calls); /* the hook counted the scan */
	if (steps > MAX_STEPS_PER_CALL * f.calls)
		fail_msg("explain ran %llu VM steps over %llu calls, more than %d a call", (unsigned long long)steps,
			 (unsigned long long)f.calls, MAX_STEPS_PER_CALL);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_failures_count_every_call(void **state)
{
	struct fx f;
	struct cw_explain_opts o = {0};
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	build(&f, 1);
	assert_true(f.failed > 0);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	assert_int_equal(r.calls_failed, f.failed);
	assert_non_null(c = find(&r, CW_KIND_DEVICE_OOM));
	assert_string_equal(c->op, "cudaMalloc");
	assert_int_equal(c->slow_count, f.failed);
	assert_int_equal(c->count, f.mallocs);
	assert_int_equal(c->nfailed_ops, 1);
	assert_string_equal(c->failed_ops[0].op, "cudaMalloc");
	assert_true(fabs(c->failed_ops[0].share - (double)f.failed / (double)f.mallocs) < 1e-9);
	assert_null(find(&r, CW_KIND_CUDA_ERROR)); /* cudaErrorNotReady is a state */
	cw_explain_result_free(&r);
	destroy(&f);
}

/* The failing op is the hottest (a few failures among every call's
 * launches): counting its calls costs what the other statements do, not
 * a grouping of every launch through the events view, and the counts are
 * every launch's. */
static void test_hot_failing_op(void **state)
{
	struct fx f;
	struct cw_explain_opts o = {0};
	struct cw_explain_result r;
	const struct cw_chain *c;
	uint64_t steps = 0;

	(void)state;
	build_hot(&f, 0, 1);
	assert_int_equal(f.failed, 5);
	assert_int_equal(sqlite3_trace_v2(f.st->db, SQLITE_TRACE_PROFILE, count_steps, &steps), SQLITE_OK);
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	sqlite3_trace_v2(f.st->db, 0, NULL, NULL);
	assert_int_equal(r.calls_failed, f.failed);
	assert_non_null(c = find(&r, CW_KIND_CUDA_ERROR));
	assert_string_equal(c->op, "cudaLaunchKernel");
	assert_int_equal(c->slow_count, f.failed);
	assert_int_equal(c->count, f.launches);
	assert_int_equal(evidence(c, "recovered"), 1);
	print_message("explain: %llu VM steps for %llu calls (%.1f a call)\n", (unsigned long long)steps,
		      (unsigned long long)f.calls, (double)steps / (double)f.calls);
	if (steps > MAX_STEPS_PER_CALL * f.calls)
		fail_msg("explain ran %llu VM steps over %llu calls, more than %d a call", (unsigned long long)steps,
			 (unsigned long long)f.calls, MAX_STEPS_PER_CALL);
	cw_explain_result_free(&r);
	destroy(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steps_per_call),
		cmocka_unit_test(test_failures_count_every_call),
		cmocka_unit_test(test_hot_failing_op),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
