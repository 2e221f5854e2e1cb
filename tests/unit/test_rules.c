/* Each explain rule on hand-built stores: a 20 s training loop (one step
 * every 20 ms: launch, sync) plus exactly the signature of one cause. */
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
#include "util/hist.h"
#include "rule_assert.h"

#define OFF 1700000000000000000LL
#define STEPS 1000
#define STEP_NS (20 * MS)

enum scen {
	S_HEALTHY, S_CPU, S_IO, S_MEM, S_COLD, S_PERIODIC, S_MEMCPY, S_STARVE, S_SLICE, S_DROP, S_TWO_PIDS,
	S_SLICE_FOLDED,
};

/* S_STARVE: how long the launching thread waits for each batch (of a
 * 30 ms step) and who wakes it. */
static uint64_t starve_wait_ns = 15 * MS;
static uint32_t starve_waker = 200;

struct fx {
	char path[64];
	struct cw_store *st;
	struct cw_writer *w;
	uint32_t rng;
};

static uint32_t rnd(struct fx *f)
{
	return lcg_next(&f->rng);
}

static void ev(struct fx *f, const char *src, const char *op, uint64_t mono, uint64_t dur, uint32_t pid,
	       uint32_t tid, const char *comm, int dev, int64_t py)
{
	struct cw_event_row r = {
		.mono_ns = mono, .wall_ns = mono + OFF, .duration_ns = dur, .pid = pid, .tid = tid,
		.comm = comm, .source = src, .op = op, .device = dev, .py_stack_id = py,
		.has_ret = 1,
	};
	assert_int_equal(cw_writer_event(f->w, &r), 0);
}

static void off(struct fx *f, uint32_t pid, uint32_t tid, uint64_t s, uint64_t e, const char *reason,
		int cpu, uint32_t by_pid, const char *by_comm, uint32_t waker, const char *waker_comm)
{
	struct cw_offcpu_row r = {
		.pid = pid, .tid = tid, .comm = "python", .start_mono_ns = s, .end_mono_ns = e,
		.wall_ns = s + OFF, .reason = reason, .cpu = cpu, .by_pid = by_pid, .by_tid = by_pid,
		.by_comm = by_comm, .by_cgroup_id = by_pid ? 55 : 0, .waker_pid = waker,
		.waker_comm = waker_comm,
	};
	assert_int_equal(cw_writer_offcpu(f->w, &r), 0);
}

static void snap(struct fx *f, uint64_t mono, int64_t swap, int64_t pages, double mem)
{
	struct cw_snapshot_row r = {
		.mono_ns = mono, .wall_ns = mono + OFF, .cpu_pct = 50, .mem_pct = mem, .load1 = 2,
		.ncpu = 8, .swap_used_bytes = swap, .page_alloc_per_s = pages, .io_bytes_per_s = 0,
	};
	assert_int_equal(cw_writer_snapshot(f->w, &r), 0);
}

static void build(struct fx *f, enum scen sc)
{
	struct cw_session_info si = {.node = "n1", .kind = "test", .started_wall_ns = T0 + OFF,
				     .mono_to_wall_ns = OFF, .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_writer_opts wo = {.node = "n1"};
	struct cw_process_row pr = {.pid = 100, .comm = "python", .rank = 3, .local_rank = 3, .world_size = 8};
	char err[256];
	int64_t sid, py;
	int fd;

	memset(f, 0, sizeof(*f));
	f->rng = 42;
	strcpy(f->path, "/tmp/cw-test-rules-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_session_begin(f->st, &si, &sid), 0);
	wo.session_id = sid;
	assert_int_equal(cw_writer_new(&f->w, f->st, &wo), 0);
	assert_int_equal(cw_writer_process(f->w, &pr), 0);
	py = cw_writer_intern_pystack(f->w, 77, 1, "[]", "train.py", 88, "step", 0);
	assert_true(py > 0);

	/* S_SLICE_FOLDED: S_SLICE's neighbour under summary capture: its
	 * first call a row (its thread's device 0), its launches during the
	 * slow syncs folded per second. A second job on GPU 1 folds launches
	 * every second and must not be named. */
	if (sc == S_SLICE_FOLDED) {
		ev(f, "cuda", "cudaLaunchKernel", T0, 30000, 400, 400, "other-job", 0, 0);
		ev(f, "cuda", "cudaLaunchKernel", T0, 30000, 500, 500, "gpu1-job", 1, 0);
	}

	uint64_t step = sc == S_STARVE ? 30 * MS : STEP_NS;
	for (int i = 0; i < 21; i++) {
		int64_t swap = sc == S_MEM ? (int64_t)i * (200LL << 20) : 0;
		snap(f, T0 + (uint64_t)i * SEC, swap, 20000, sc == S_MEM ? 90 : 40);
	}
	for (int i = 0; i < STEPS; i++) {
		uint64_t t = T0 + (uint64_t)i * step + MS;
		uint64_t launch = 20000 + rnd(f) % 4000;
		uint64_t sync = 8 * MS + (uint64_t)(rnd(f) % 2000) * 1000; /* 8-10 ms jitter */
		int slow = (i % 50) == 25;

		if (sc == S_COLD && i < 5)
			launch = 2 * MS + (uint64_t)i * 100000;
		if (sc == S_DROP && i >= 400 && i < 600)
			sync = 40 * MS;
		if (sc == S_DROP && i >= 400 && i < 600 && i % 2)
			continue; /* half the rate during the drop */
		if (sc == S_STARVE)
			off(f, 100, 100, t - MS - starve_wait_ns, t - MS, "blocked", 2, 0, NULL, starve_waker,
			    "pt_data_worker");
		ev(f, "cuda", "cudaLaunchKernel", t, launch, 100, 100, "python", 0, py);
		uint64_t s0 = t + launch + 10000;
		if (slow && (sc == S_CPU || sc == S_IO || sc == S_MEM || sc == S_SLICE || sc == S_TWO_PIDS ||
			     sc == S_SLICE_FOLDED))
			sync = 85 * MS;
		if (sc == S_MEMCPY) {
			ev(f, "cuda", "cudaMemcpy", s0, 8 * MS + rnd(f) % 100000, 100, 100, "python", 0, py);
			s0 += 8 * MS + 200000;
			sync = 2 * MS;
		}
		if (sc == S_PERIODIC) {
			uint64_t d = (i % 100) == 50 ? 5 * MS : 5000 + rnd(f) % 1000;
			ev(f, "cuda", "cudaMalloc", s0, d, 100, 100, "python", 0, py);
			s0 += d + 10000;
			sync = 2 * MS;
		}
		ev(f, "cuda", "cudaStreamSynchronize", s0, sync, 100, 100, "python", 0, py);
		if (sc == S_TWO_PIDS) {
			ev(f, "cuda", "cudaStreamSynchronize", s0 + 100000, slow ? 85 * MS : sync, 101, 101,
			   "python", 0, py);
			/* A third process with many short syncs and no tail drags
			 * the node-wide p50 down to ~1 ms. */
			for (int k = 0; k < 4; k++)
				ev(f, "cuda", "cudaStreamSynchronize", s0 + 200000 + (uint64_t)k * 2 * MS,
				   MS + rnd(f) % 100 * 1000, 102, 102, "python", 0, py);
		}
		/* Natural scheduler noise: short preemptions and blocks everywhere. */
		off(f, 100, 100, s0 + MS, s0 + MS + 30000, "preempted", 1, 9, "kworker/1:0", 0, NULL);
		if (slow && (sc == S_CPU || sc == S_TWO_PIDS)) {
			off(f, 100, 100, s0 + 10 * MS, s0 + 70 * MS, "preempted", 3, 977, "stress-ng", 0, NULL);
			if (sc == S_TWO_PIDS)
				off(f, 101, 101, s0 + 10 * MS, s0 + 70 * MS, "blocked", 3, 0, NULL, 0, NULL);
		}
		if (slow && (sc == S_IO || sc == S_MEM))
			off(f, 100, 100, s0 + 10 * MS, s0 + 70 * MS, "blocked", 3, 0, NULL, 0, NULL);
		if (slow && sc == S_IO)
			ev(f, "io", "block_write", s0 + 5 * MS, 70 * MS, 300, 300, "ckpt-writer", -1, 0);
		if (sc == S_SLICE_FOLDED && i % 50 == 0) {
			struct cw_hist h;

			cw_hist_reset(&h);
			for (int k = 0; k < 400; k++)
				cw_hist_add(&h, 30000);
			assert_int_equal(cw_writer_folded(f->w, 500, "cuda", "cudaLaunchKernel",
							  (int64_t)((t + OFF) / SEC), &h), 0);
		}
		if (slow && sc == S_SLICE_FOLDED) {
			struct cw_hist h;

			cw_hist_reset(&h);
			for (int k = 0; k < 8; k++)
				cw_hist_add(&h, 30000);
			assert_int_equal(cw_writer_folded(f->w, 400, "cuda", "cudaLaunchKernel",
							  (int64_t)((s0 + OFF) / SEC), &h), 0);
		}
		if (slow && sc == S_SLICE)
			for (int k = 0; k < 8; k++)
				ev(f, "cuda", "cudaLaunchKernel", s0 + (uint64_t)k * 10 * MS, 30000, 400, 400,
				   "other-job", 0, 0);
	}
	assert_int_equal(cw_writer_free(f->w), 0);
	f->w = NULL;
}

static void destroy(struct fx *f)
{
	cw_store_close(f->st);
	remove_store_files(f->path);
}

static void run(struct fx *f, struct cw_explain_result *r, int64_t pid, int per_process)
{
	struct cw_explain_opts o = {.pid = pid, .per_process = per_process};
	assert_int_equal(cw_explain_run(f->st->db, &o, r), 0);
}

static const struct cw_chain *expect_top(struct fx *f, enum scen sc, enum cw_kind kind, struct cw_explain_result *r)
{
	build(f, sc);
	run(f, r, 0, 0);
	if (r->count < 1 || r->chains[0].kind != kind) {
		for (int i = 0; i < r->count; i++)
			print_message("chain %d: %s %s share %.2f\n", i, cw_kind_name(r->chains[i].kind),
				      r->chains[i].op, r->chains[i].explained_share);
		for (int i = 0; i < r->nwarnings; i++)
			print_message("warning: %s\n", r->warnings[i]);
	}
	assert_true(r->count >= 1);
	assert_string_equal(cw_kind_name(r->chains[0].kind), cw_kind_name(kind));
	return &r->chains[0];
}

static void test_healthy_has_no_chain(void **state)
{
	struct fx f;
	struct cw_explain_result r;

	(void)state;
	build(&f, S_HEALTHY);
	run(&f, &r, 0, 0);
	assert_int_equal(r.count, 0);
	assert_int_equal(r.nwarnings, 0);
	assert_int_equal(r.ops_analysed, 2);
	assert_int_equal(r.calls_analysed, 2 * STEPS);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_cpu_preemption(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_CPU, CW_KIND_CPU_PREEMPTION, &r);
	if (getenv("CW_TEST_SHOW")) cw_explain_print_text(stdout, &r, 0);
	assert_string_equal(c->op, "cudaStreamSynchronize");
	assert_int_equal(c->slow_count, STEPS / 50);
	/* 60 of ~85 ms preempted in each slow call */
	assert_true(c->explained_share > 0.65 && c->explained_share < 0.75);
	assert_true(c->culprit.known);
	assert_int_equal(c->culprit.pid, 977);
	assert_int_equal(c->culprit.cpu, 3);
	assert_string_equal(c->culprit.comm, "stress-ng");
	assert_int_equal(c->pid, 100);
	assert_int_equal(c->tid, 100);
	assert_int_equal(c->rank, 3);
	assert_true(c->has_python);
	assert_string_equal(c->py_file, "train.py");
	assert_int_equal(c->py_line, 88);
	assert_int_equal(c->severity, CW_SEV_HIGH);
	assert_non_null(strstr(c->summary, "preempted for 7"));
	assert_non_null(strstr(c->summary, "by stress-ng (pid 977, cpu 3)"));
	int renice = 0;
	for (int i = 0; i < c->nfix; i++)
		renice |= !strcmp(c->fix[i], "renice +19 -p 977");
	assert_true(renice);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_io_contention(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_IO, CW_KIND_IO_CONTENTION, &r);
	if (getenv("CW_TEST_SHOW")) cw_explain_print_text(stdout, &r, 0);
	assert_true(c->explained_share > 0.6 && c->explained_share < 0.75);
	assert_int_equal(c->severity, CW_SEV_HIGH);
	assert_non_null(strstr(c->summary, "thread 100 (python) was blocked while block I/O was in flight for 71 % of"
					   " its slow calls' time, mostly requests of pid 300"));
	assert_true(has_fix(c, "ionice -c3 -p 300"));
	assert_true(has_fix(c, "ionice -c2 -n0 -p 100"));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_memory_pressure(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_MEM, CW_KIND_MEMORY_PRESSURE, &r);
	if (getenv("CW_TEST_SHOW")) cw_explain_print_text(stdout, &r, 0);
	assert_true(c->explained_share > 0.6 && c->explained_share < 0.75);
	assert_non_null(strstr(c->summary, "was blocked under memory pressure for 71 % of its slow calls' time"
					   " (swap +200 MiB/s, 20000 pages/s allocated, memory 90 % used)"));
	assert_true(has_fix(c, "echo -1000 > /proc/100/oom_score_adj"));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_cold_start(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_COLD, CW_KIND_COLD_START, &r);
	if (getenv("CW_TEST_SHOW")) cw_explain_print_text(stdout, &r, 0);
	assert_string_equal(c->op, "cudaLaunchKernel");
	assert_int_equal(r.count, 1);
	assert_true(c->explained_share > 0.99);
	assert_int_equal(c->slow_count, 5);
	/* no tail at p99 (5 cold calls of 1000): low */
	assert_int_equal(c->severity, CW_SEV_LOW);
	assert_non_null(strstr(c->summary, "the first 5 calls took 2.2ms on average (102x the steady-state p50)"));
	assert_true(has_fix(c, "export CUDA_MODULE_LOADING=EAGER"));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_periodic_allocator(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_PERIODIC, CW_KIND_PERIODIC_ALLOCATOR, &r);
	if (getenv("CW_TEST_SHOW")) cw_explain_print_text(stdout, &r, 0);
	assert_string_equal(c->op, "cudaMalloc");
	assert_true(c->explained_share > 0.99);
	assert_non_null(strstr(c->summary, "10 allocator spikes recur every 2.00s (~100 cudaMalloc calls, cv 0.00)"));
	assert_true(has_fix(c, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
	for (int i = 0; i < c->nevidence; i++)
		if (!strcmp(c->evidence[i].key, "period_ns"))
			assert_true(c->evidence[i].value > 1.9e9 && c->evidence[i].value < 2.1e9);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_memcpy_bound(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_MEMCPY, CW_KIND_MEMCPY_BOUND, &r);
	assert_string_equal(c->op, "cudaMemcpy");
	assert_true(c->explained_share > 0.35 && c->explained_share < 0.45);
	/* a node-wide share under 50 %: medium, whatever the tail */
	assert_int_equal(c->severity, CW_SEV_MEDIUM);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_dataloader_starvation(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_STARVE, CW_KIND_DATALOADER_STARVATION, &r);
	assert_string_equal(c->op, "cudaLaunchKernel");
	assert_int_equal(c->culprit.pid, 200);
	assert_true(c->explained_share > 0.4 && c->explained_share < 0.6);
	assert_int_equal(c->slow_count, STEPS - 1); /* the first wait starts before the window */
	assert_int_equal(c->severity, CW_SEV_MEDIUM); /* idle share under 50 % */
	assert_non_null(strstr(c->summary, "sat idle waiting for input for 50 % of its time (14.98s in 999 gaps,"
					   " woken by pt_data_worker pid 200)"));
	int pyspy = 0;
	for (int i = 0; i < c->nfix; i++)
		pyspy |= !strcmp(c->fix[i], "causeway where 200  # see what the input worker is doing");
	assert_true(pyspy);
	cw_explain_result_free(&r);
	destroy(&f);

	/* 9.1 ms of each 30 ms step idle (30.3 %): starved; 8 ms (27 %): not */
	starve_wait_ns = 9100000;
	c = expect_top(&f, S_STARVE, CW_KIND_DATALOADER_STARVATION, &r);
	assert_true(c->explained_share >= 0.3 && c->explained_share < 0.31);
	cw_explain_result_free(&r);
	destroy(&f);
	starve_wait_ns = 8 * MS;
	build(&f, S_STARVE);
	run(&f, &r, 0, 0);
	assert_int_equal(r.count, 0);
	cw_explain_result_free(&r);
	destroy(&f);
	/* woken by the kernel (an interrupt, not an input worker): not counted */
	starve_wait_ns = 15 * MS;
	starve_waker = 0;
	build(&f, S_STARVE);
	run(&f, &r, 0, 0);
	assert_int_equal(r.count, 0);
	cw_explain_result_free(&r);
	destroy(&f);
	starve_waker = 200;
}

static void test_gpu_time_slicing(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_SLICE, CW_KIND_GPU_TIME_SLICING, &r);
	if (getenv("CW_TEST_SHOW")) cw_explain_print_text(stdout, &r, 0);
	assert_int_equal(c->culprit.pid, 400);
	assert_true(c->explained_share > 0.9);
	assert_non_null(strstr(c->summary, "stayed on CPU (0 % off-CPU) while other-job (pid 400) ran CUDA work on GPU 0"));
	assert_true(has_fix(c, "nvidia-smi -i 0 -c EXCLUSIVE_PROCESS"));
	assert_true(has_fix(c, "move pid 400 to another GPU (CUDA_VISIBLE_DEVICES) or a MIG slice"));
	cw_explain_result_free(&r);
	destroy(&f);
}

/* The same neighbour when its launches were folded in the kernel: named
 * from the folded seconds on its thread's device, not the busier job on
 * GPU 1. */
static void test_gpu_time_slicing_folded(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	c = expect_top(&f, S_SLICE_FOLDED, CW_KIND_GPU_TIME_SLICING, &r);
	assert_int_equal(c->culprit.pid, 400);
	assert_string_equal(c->culprit.comm, "other-job");
	assert_true(c->explained_share > 0.9);
	assert_true(evidence(c, "foreign_pids") == 1);
	assert_true(evidence(c, "device") == 0);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_throughput_drop(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	/* steps 400-599 (seconds 8-11) at half the rate, each sync 40 ms */
	c = expect_top(&f, S_DROP, CW_KIND_THROUGHPUT_DROP, &r);
	if (getenv("CW_TEST_SHOW")) cw_explain_print_text(stdout, &r, 0);
	assert_int_equal(r.count, 1);
	assert_string_equal(c->op, "cudaStreamSynchronize");
	assert_int_equal(c->slow_count, 100);
	assert_true(c->explained_share > 0.99);
	assert_int_equal(c->severity, CW_SEV_MEDIUM);
	assert_non_null(strstr(c->summary, "the call rate fell to 50 % of its peak (50/s) for 4 s while mean latency"
					   " rose 4.5x"));
	assert_true(has_fix(c, "causeway explain --from 1700001008 --to 1700001012 --per-process"));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_per_process_and_pid(void **state)
{
	struct fx f;
	struct cw_explain_result r;

	(void)state;
	build(&f, S_TWO_PIDS);
	run(&f, &r, 0, 1);
	/* pid 100 preempted by stress-ng, pid 101 blocked with no I/O or
	 * pressure: one chain, one warning. */
	assert_int_equal(r.count, 1);
	assert_int_equal(r.chains[0].pid, 100);
	assert_int_equal(r.chains[0].kind, CW_KIND_CPU_PREEMPTION);
	assert_int_equal(r.chains[0].slow_count, STEPS / 50);
	/* Percentiles are pid 100's own (8-10 ms syncs), not the node's,
	 * where pid 102's 1 ms syncs are the majority. */
	assert_int_equal(r.chains[0].count, STEPS);
	assert_true(r.chains[0].p50_ns >= 7 * MS && r.chains[0].p50_ns <= 11 * MS);
	assert_true(r.chains[0].p99_ns >= 80 * MS);
	assert_int_equal(r.nwarnings, 1);
	cw_explain_result_free(&r);
	run(&f, &r, 101, 0);
	assert_int_equal(r.count, 0);
	cw_explain_result_free(&r);
	run(&f, &r, 100, 0);
	assert_int_equal(r.count, 1);
	assert_int_equal(r.chains[0].pid, 100);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_window_excludes_slow_calls(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	struct cw_explain_opts o = {0};

	(void)state;
	build(&f, S_CPU);
	/* The first slow call is step 25 at ~0.5 s: a window over the first
	 * 0.4 s sees no tail. */
	o.from_wall_ns = T0 + OFF;
	o.to_wall_ns = T0 + OFF + SEC - 1;
	assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
	assert_true(r.calls_analysed > 0 && r.calls_analysed < 2 * STEPS);
	assert_true(r.count <= 1);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_json_and_store(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	json_t *j, *c0;
	sqlite3_stmt *st;

	(void)state;
	build(&f, S_CPU);
	run(&f, &r, 0, 0);
	j = cw_explain_to_json(&r);
	assert_non_null(json_object_get(j, "window"));
	assert_true(json_is_array(json_object_get(j, "warnings")));
	c0 = json_array_get(json_object_get(j, "chains"), 0);
	assert_string_equal(json_string_value(json_object_get(c0, "severity")), "HIGH");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c0, "root_cause"), "kind")),
			    "cpu_preemption");
	assert_int_equal(json_integer_value(json_object_get(c0, "pid")), 100);
	assert_int_equal(json_integer_value(json_object_get(c0, "rank")), 3);
	assert_string_equal(json_string_value(json_object_get(json_object_get(c0, "python"), "function")), "step");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(c0, "culprit"), "pid")), 977);
	assert_true(json_array_size(json_object_get(c0, "timeline")) >= 3);
	assert_true(json_array_size(json_object_get(c0, "fix")) >= 2);
	json_decref(j);

	assert_int_equal(cw_explain_store_chains(f.st->db, &r, 123), r.count);
	assert_int_equal(cw_explain_store_chains(f.st->db, &r, 456), r.count);
	assert_int_equal(sqlite3_prepare_v2(f.st->db,
					    "SELECT count(*), min(created_wall_ns), max(kind) FROM chains", -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int(st, 0), 2 * r.count);
	assert_int_equal(sqlite3_column_int64(st, 1), 123);
	assert_string_equal((const char *)sqlite3_column_text(st, 2), "cpu_preemption");
	sqlite3_finalize(st);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_empty_store(void **state)
{
	struct cw_store *st;
	struct cw_explain_result r;
	struct cw_explain_opts o = {0};
	char path[64], err[256];
	int fd;

	(void)state;
	strcpy(path, "/tmp/cw-test-rules-XXXXXX");
	fd = mkstemp(path);
	close(fd);
	unlink(path);
	assert_int_equal(cw_store_open(&st, path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_explain_run(st->db, &o, &r), 0);
	assert_int_equal(r.count, 0);
	assert_int_equal(r.ops_analysed, 0);
	cw_explain_result_free(&r);
	cw_store_close(st);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_has_no_chain),
		cmocka_unit_test(test_cpu_preemption),
		cmocka_unit_test(test_io_contention),
		cmocka_unit_test(test_memory_pressure),
		cmocka_unit_test(test_cold_start),
		cmocka_unit_test(test_periodic_allocator),
		cmocka_unit_test(test_memcpy_bound),
		cmocka_unit_test(test_dataloader_starvation),
		cmocka_unit_test(test_gpu_time_slicing),
		cmocka_unit_test(test_gpu_time_slicing_folded),
		cmocka_unit_test(test_throughput_drop),
		cmocka_unit_test(test_per_process_and_pid),
		cmocka_unit_test(test_window_excludes_slow_calls),
		cmocka_unit_test(test_json_and_store),
		cmocka_unit_test(test_empty_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
