/* Demo generator: PRNG, jitter bounds, Python code registry and resolver,
 * windows, the scenario table, and the queue's ring-buffer delivery order
 * through a real pipeline into a temporary store. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "demo/demo.h"
#include "demo/gen.h"
#include "demo/train.h"
#include "pipeline/pipeline.h"
#include "store/store.h"
#include "store/writer.h"
#include "util/timeutil.h"

static void test_rng_deterministic(void **state)
{
	struct cw_demo_rng a, b, c;
	int differ = 0;

	(void)state;
	cw_demo_rng_seed(&a, 42);
	cw_demo_rng_seed(&b, 42);
	cw_demo_rng_seed(&c, 43);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = cw_demo_rng_next(&a);

		assert_int_equal(x, cw_demo_rng_next(&b));
		differ |= x != cw_demo_rng_next(&c);
	}
	assert_true(differ);
}

static void test_rng_ranges(void **state)
{
	struct cw_demo_rng r;
	double sum = 0;

	(void)state;
	cw_demo_rng_seed(&r, 1);
	for (int i = 0; i < 20000; i++) {
		double u = cw_demo_rng_unit(&r);
		uint64_t k = cw_demo_rng_range(&r, 10, 20);
		uint64_t j = cw_demo_jitter(&r, 1000000, 0.5, 1.8);

		assert_true(u >= 0 && u < 1);
		assert_true(k >= 10 && k <= 20);
		/* The clamp is what keeps healthy free of tails. */
		assert_true(j >= 1000000 / 1.8 - 1 && j <= 1000000 * 1.8 + 1);
		sum += u;
	}
	assert_true(sum / 20000 > 0.48 && sum / 20000 < 0.52);
	assert_int_equal(cw_demo_rng_range(&r, 7, 7), 7);
}

static void resolve_site(int site, int frame, const char *file, int line, const char *func)
{
	struct cw_py_frame fr[CW_PY_MAX_FRAMES];
	struct cw_py_location loc;
	uint32_t n = cw_demo_site_frames(site, fr, CW_PY_MAX_FRAMES);

	assert_true(n > (uint32_t)frame);
	assert_int_equal(cw_demo_py_resolver.resolve(NULL, 4821, fr[frame].code, fr[frame].lasti, &loc), 0);
	assert_non_null(strstr(loc.file, file));
	assert_int_equal(loc.line, line);
	assert_string_equal(loc.function, func);
}

static void test_python_sites(void **state)
{
	struct cw_py_frame fr[CW_PY_MAX_FRAMES];
	struct cw_py_location loc;

	(void)state;
	resolve_site(CW_SITE_SYNC, 0, "/workspace/train.py", 95, "train_step");
	resolve_site(CW_SITE_COPY, 0, "/workspace/data.py", 51, "__next__");
	resolve_site(CW_SITE_FWD_ATTN, 2, "/workspace/model.py", 142, "forward");
	resolve_site(CW_SITE_FWD_ATTN, 0, "torch/nn/modules/linear.py", 125, "forward");
	resolve_site(CW_SITE_BWD, 2, "/workspace/train.py", 90, "train_step");
	resolve_site(CW_SITE_FWD_MLP, 5, "/workspace/train.py", 203, "main");
	/* Outermost frame last. */
	assert_int_equal(cw_demo_site_frames(CW_SITE_SYNC, fr, CW_PY_MAX_FRAMES), 3);
	resolve_site(CW_SITE_SYNC, 2, "/workspace/train.py", 231, "<module>");
	/* A bounded capture keeps the innermost frames. */
	assert_int_equal(cw_demo_site_frames(CW_SITE_FWD_ATTN, fr, 2), 2);
	assert_int_equal(cw_demo_site_frames(CW_SITE_NONE, fr, CW_PY_MAX_FRAMES), 0);
	assert_int_equal(cw_demo_site_frames(CW_SITE_MAX, fr, CW_PY_MAX_FRAMES), 0);

	/* Unknown code objects and offsets past the line table fail. */
	cw_demo_site_frames(CW_SITE_SYNC, fr, CW_PY_MAX_FRAMES);
	assert_int_not_equal(cw_demo_py_resolver.resolve(NULL, 4821, 0xdeadbeef, 0, &loc), 0);
	assert_int_not_equal(cw_demo_py_resolver.resolve(NULL, 4821, fr[0].code, 100000, &loc), 0);
	/* Offset 0 is the first line of the table, not the executing one. */
	assert_int_equal(cw_demo_py_resolver.resolve(NULL, 4821, fr[0].code, 0, &loc), 0);
	assert_int_equal(loc.line, 84);
}

static void test_windows(void **state)
{
	struct cw_demo_train tr = { .t0 = 1000 * NSEC_PER_SEC };
	const uint64_t s = NSEC_PER_SEC;

	(void)state;
	assert_false(cw_demo_in_window(&tr, tr.t0 + 9 * s, 10 * s, 20 * s, 5 * s));
	assert_true(cw_demo_in_window(&tr, tr.t0 + 10 * s, 10 * s, 20 * s, 5 * s));
	assert_true(cw_demo_in_window(&tr, tr.t0 + 34 * s, 10 * s, 20 * s, 5 * s));
	assert_false(cw_demo_in_window(&tr, tr.t0 + 35 * s, 10 * s, 20 * s, 5 * s));
	/* Once only when period is 0. */
	assert_true(cw_demo_in_window(&tr, tr.t0 + 31 * s, 30 * s, 0, 15 * s));
	assert_false(cw_demo_in_window(&tr, tr.t0 + 75 * s, 30 * s, 0, 15 * s));
	assert_int_equal(cw_demo_window_overlap(&tr, tr.t0, tr.t0 + 90 * s, 10 * s, 20 * s, 5 * s), 20 * s);
	assert_int_equal(cw_demo_window_overlap(&tr, tr.t0 + 12 * s, tr.t0 + 13 * s, 10 * s, 20 * s, 5 * s), s);
	assert_int_equal(cw_demo_window_overlap(&tr, tr.t0 + 14 * s + s / 2, tr.t0 + 15 * s + s / 2, 10 * s,
						 20 * s, 5 * s),
			 s / 2);
	assert_int_equal(cw_demo_window_overlap(&tr, tr.t0, tr.t0 + 100 * s, 30 * s, 0, 15 * s), 15 * s);
}

static void test_scenario_table(void **state)
{
	static const char *const names[] = { "incident", "cold-start", "memcpy-bottleneck", "periodic-spike",
					     "cpu-contention", "gpu-steal", "io-contention", "memory-pressure",
					     "dataloader-starvation", "throttle", "oom-kill", "network", "graph-churn",
					     "graph-launch-tail", "host-memory", "healthy", "noisy-neighbour",
					     /* GPU telemetry */
					     "xid-fault", "thermal-throttling", "power-capping", "gpu-memory-pressure",
					     "training-stall", "nccl-straggler", "nccl-straggler-io",
					     "nccl-straggler-input", "nccl-straggler-compute", "nccl-hang", "nccl-hang-start",
					     "comm-bound",
					     /* failing calls */
					     "cuda-no-device", "cuda-oom", "nccl-error",
					     /* inference serving */
					     "inference-ttft" };
	size_t n;
	const struct cw_demo_scenario *const *t = cw_demo_scenarios(&n);

	(void)state;
	assert_int_equal(n, sizeof(names) / sizeof(names[0]));
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(t[i]->name, names[i]);
		assert_ptr_equal(cw_demo_find(names[i]), t[i]);
		assert_non_null(t[i]->setup);
		assert_true(!strcmp(names[i], "healthy") == (t[i]->expect == NULL));
	}
	assert_null(cw_demo_find("Incident"));
	assert_null(cw_demo_find(""));
	assert_null(cw_demo_find(NULL));
	assert_non_null(cw_demo_find(CW_DEMO_DEFAULT_SCENARIO));
}

/* Off-CPU records are queued after a call's return in program order but
 * delivered when the thread runs again, before the return; a stack record
 * follows its entry. The pipeline must pair and store all of it. */
static void test_delivery_order(void **state)
{
	static const struct cw_demo_task t = { 77, 78, 5, "python", 2 };
	char path[64] = "/tmp/cw-test-demo-XXXXXX", err[256];
	struct cw_store *st = NULL;
	struct cw_writer *w = NULL;
	struct cw_pipeline *p = NULL;
	struct cw_writer_opts wo = { .node = "n1", .session_id = 1 };
	struct cw_pipeline_opts po = { .py = &cw_demo_py_resolver };
	struct cw_pipeline_counters c;
	struct cw_demo_feed_stats fs;
	struct cw_demo_gen g;
	sqlite3_stmt *s;
	const uint64_t T = CW_DEMO_MONO_BASE;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_writer_new(&w, st, &wo), 0);
	po.writer = w;
	assert_int_equal(cw_pipeline_new(&p, &po), 0);

	cw_demo_gen_init(&g, 1);
	/* Queued out of delivery order on purpose. */
	cw_demo_call(&g, &t, T + 1000, 9000, CW_OP_cudaStreamSynchronize, NULL, 0, CW_SITE_SYNC);
	cw_demo_offcpu(&g, &t, T + 2000, T + 6000, CW_OFFCPU_PREEMPTED, &t, NULL);
	cw_demo_call(&g, &t, T + 100, 200, CW_OP_cudaLaunchKernel, NULL, 0, CW_SITE_FWD_CONV);
	cw_demo_block_io(&g, &t, T + 50, T + 20000, 4096, 8, 1);
	assert_int_equal(cw_demo_gen_feed(&g, p, 0, 0, &fs), 0);
	/* Per call its Python stack and the whole-call record; the interval
	 * and the block request. */
	assert_int_equal(fs.records, 6);
	assert_int_equal(fs.rejected, 0);
	cw_pipeline_get_counters(p, &c);
	assert_int_equal(c.calls, 2);
	assert_int_equal(c.offcpu, 1);
	assert_int_equal(c.unpaired_returns + c.orphan_stacks + c.py_unresolved + c.rejected_size + c.rejected_type, 0);
	assert_int_equal(cw_pipeline_flush(p, T + 30000, 0), 0);
	cw_pipeline_free(p);
	assert_int_equal(cw_writer_free(w), 0);

	assert_int_equal(sqlite3_prepare_v2(st->db,
					    "SELECT op, duration_ns, (SELECT user_line FROM py_stacks WHERE id = py_stack_id)"
					    " FROM events ORDER BY mono_ns", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(s, 0), "block_write");
	assert_int_equal(sqlite3_column_int64(s, 1), 19950);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(s, 0), "cudaLaunchKernel");
	assert_int_equal(sqlite3_column_int(s, 2), 138);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(s, 0), "cudaStreamSynchronize");
	assert_int_equal(sqlite3_column_int64(s, 1), 9000);
	assert_int_equal(sqlite3_column_int(s, 2), 95);
	assert_int_equal(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
	cw_demo_gen_release(&g);
	cw_store_close(st);
	unlink(path);
	{
		char side[96];

		snprintf(side, sizeof(side), "%s-wal", path);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", path);
		unlink(side);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rng_deterministic), cmocka_unit_test(test_rng_ranges),
		cmocka_unit_test(test_python_sites),      cmocka_unit_test(test_windows),
		cmocka_unit_test(test_scenario_table),    cmocka_unit_test(test_delivery_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
