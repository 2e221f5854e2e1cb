/* The GPU rules on hand-built stores: a 20 s training loop (one step
 * every 20 ms: launch, allocation, sync; every 50th sync or allocation
 * slow) with GPU samples every 10 ms, plus exactly the signature of one
 * cause, each threshold checked on both sides. */
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
#include "gpu/gpu.h"
#include "store/gpu_store.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

#define OFF 1700000000000000000LL
#define STEPS 1000
#define STEP_NS (20 * MS)
#define SLOW_NS (85 * MS)

struct spec {
	const char *throttle;  /* "thermal", "power" or NULL */
	double cover;          /* share of each slow call's span with throttled samples */
	int64_t throttled_mhz; /* SM clock while throttled */
	int slow_malloc;       /* slow allocations instead of slow syncs */
	int mem_pct;           /* device memory used around slow calls */
	int failed_mallocs;
	uint32_t xid;          /* an Xid event at 15 s, 0 none */
	int xid_pid;
	uint64_t stall_s;      /* pid 100 stops at 10 s and pid 200 runs this long after; 0 none */
	int stall_exit_s;      /* pid 100 exits this long after its last call; 0 never */
	int stall_live;        /* a live stall event with thread states */
	int healthy;           /* no slow calls at all */
	int regular_malloc;    /* slow allocations every 50th step (a periodic pattern too) */
	uint64_t full_from_ns; /* device memory full only from T0 + this */
	int summary;           /* syncs as summary capture keeps them: a row a second, 49 folded */
	int stall_folded;      /* during the stall, calls folded in the kernel: 1 pid 200's (a
				  neighbour's), 2 pid 100's own (so it was not silent), 3 pid
				  100's own in its first 3 s only (its silence starts after) */
};

struct fx {
	char path[64];
	struct cw_store *st;
	struct cw_writer *w;
	struct cw_gpu_store *gs;
};

static void ev(struct fx *f, const char *src, const char *op, uint64_t mono, uint64_t dur, uint32_t pid, int64_t ret,
	       int64_t arg0, const char *detail)
{
	struct cw_event_row r = {
		.mono_ns = mono, .wall_ns = mono + OFF, .duration_ns = dur, .pid = pid, .tid = pid, .comm = "python",
		.source = src, .op = op, .device = 0, .has_ret = 1, .ret = ret, .nargs = 1, .args = {arg0},
		.detail = detail,
	};
	assert_int_equal(cw_writer_event(f->w, &r), 0);
}

/* Slow syncs every 50th step; slow allocations at irregular steps (~2 %),
 * so that they do not look like a periodic allocator. */
static int is_slow(int i, const struct spec *s)
{
	if (s->healthy)
		return 0;
	static const int irregular[] = {12,  61,  98,  170, 211, 260, 333, 351, 420, 488,
					503, 577, 640, 662, 731, 790, 845, 870, 931, 985};
	if (s->slow_malloc && s->regular_malloc)
		return i % 50 == 25;
	if (s->slow_malloc) {
		for (size_t k = 0; k < sizeof(irregular) / sizeof(irregular[0]); k++)
			if (irregular[k] == i)
				return 1;
		return 0;
	}
	return i % 50 == 25;
}

static int in_slow(uint64_t t, const struct spec *s, double cover)
{
	/* Slow calls start at step i*20ms + 1ms + a few us. */
	for (int i = 0; i < STEPS; i++) {
		uint64_t s0 = T0 + (uint64_t)i * STEP_NS + MS;
		if (is_slow(i, s) && t >= s0 && t < s0 + (uint64_t)(cover * (double)SLOW_NS))
			return 1;
	}
	return 0;
}

static void sample(struct fx *f, uint64_t t, const struct spec *s)
{
	struct cw_gpu_sample x;
	int thr = s->throttle && in_slow(t, s, s->cover);
	int full = s->mem_pct && in_slow(t, s, 1.0);

	if (s->mem_pct && s->full_from_ns)
		full = t >= T0 + s->full_from_ns;

	cw_gpu_sample_clear(&x);
	x.device = 0;
	x.mono_ns = t;
	x.wall_ns = t + OFF;
	x.gpu_util = 95;
	x.mem_total = 80LL << 30;
	x.mem_used = full ? (80LL << 30) / 100 * s->mem_pct : 20LL << 30;
	x.temp_gpu = thr && !strcmp(s->throttle, "thermal") ? 91 : 60;
	x.power_mw = thr && !strcmp(s->throttle, "power") ? 700000 : 450000;
	x.sm_mhz = thr ? s->throttled_mhz : 1980;
	x.reasons = !thr ? 0
		    : !strcmp(s->throttle, "thermal") ? (int64_t)(CW_GPU_REASON_SW_THERMAL | CW_GPU_REASON_HW_THERMAL)
						      : (int64_t)CW_GPU_REASON_SW_POWER_CAP;
	assert_int_equal(cw_gpu_store_sample(f->gs, &x, "GPU-test"), 0);
}

static void build(struct fx *f, const struct spec *sp)
{
	struct spec copy = *sp, *s = &copy;
	struct cw_session_info si = {.node = "n1", .kind = "test", .started_wall_ns = T0 + OFF,
				     .mono_to_wall_ns = OFF, .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_writer_opts wo = {.node = "n1"};
	struct cw_process_row pr = {.pid = 100, .comm = "python", .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_gpu_device d = {.index = 0, .uuid = "GPU-test", .pci = "00000000:3B:00.0",
				  .name = "NVIDIA H100 80GB HBM3", .mem_total = 80LL << 30, .power_limit_mw = 700000,
				  .max_sm_mhz = 1980, .max_mem_mhz = 2619, .parent = -1};
	char err[256];
	int64_t sid;
	int fd, steps = s->stall_s ? 500 : STEPS;

	memset(f, 0, sizeof(*f));
	strcpy(f->path, "/tmp/cw-test-gpurules-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_session_begin(f->st, &si, &sid), 0);
	wo.session_id = sid;
	assert_int_equal(cw_writer_new(&f->w, f->st, &wo), 0);
	assert_int_equal(cw_gpu_store_new(&f->gs, f->st->db, "n1", sid), 0);
	assert_int_equal(cw_writer_process(f->w, &pr), 0);
	assert_int_equal(cw_gpu_store_device(f->gs, &d, "580.65.06", T0 + OFF), 0);
	for (uint64_t t = T0; t < T0 + (uint64_t)steps * STEP_NS; t += 10 * MS)
		sample(f, t, s);
	for (int i = 0; i < steps; i++) {
		uint64_t t = T0 + (uint64_t)i * STEP_NS + MS;
		int slow = is_slow(i, s);
		uint64_t sync = 8 * MS + (uint64_t)(i * 7919 % 2000) * 1000;
		uint64_t malloc_ns = 20000 + (uint64_t)(i * 31 % 4000);

		if (slow && s->slow_malloc)
			malloc_ns = SLOW_NS;
		else if (slow)
			sync = SLOW_NS;
		ev(f, "cuda", "cudaMalloc", t, malloc_ns, 100, 0, 0, NULL);
		ev(f, "cuda", "cudaLaunchKernel", t + malloc_ns + 10000, 20000, 100, 0, 0, NULL);
		if (!s->summary || i % 50 == 0)
			ev(f, "cuda", "cudaStreamSynchronize", t + malloc_ns + 40000, sync, 100, 0, 0, NULL);
		if (slow && s->failed_mallocs-- > 0)
			ev(f, "cuda", "cudaMalloc", t + malloc_ns + sync + 100000, 30000, 100, 2, 0, NULL);
	}
	for (int k = 0; s->summary && k < steps / 50; k++) {
		struct cw_hist h;

		cw_hist_reset(&h);
		for (int j = 0; j < 49; j++)
			cw_hist_add(&h, 8 * MS);
		assert_int_equal(cw_writer_folded(f->w, 100, "cuda", "cudaStreamSynchronize",
						  (int64_t)((T0 + OFF) / SEC) + k, &h), 0);
	}
	if (s->xid) {
		char detail[160];
		snprintf(detail, sizeof(detail),
			 "{\"pci\":\"0000:3b:00\",\"text\":\"GPU has fallen off the bus.\",\"from\":\"kmsg\"}");
		ev(f, "gpu", "xid", T0 + 15 * SEC + 5 * MS, 0, (uint32_t)s->xid_pid, 0, s->xid, detail);
	}
	if (s->stall_s) {
		uint64_t last = T0 + (uint64_t)steps * STEP_NS;
		/* pid 100 is silent; pid 200 keeps the node's data going. */
		for (uint64_t t = last; t < last + s->stall_s * SEC; t += 100 * MS)
			ev(f, "cuda", "cudaStreamSynchronize", t, MS, 200, 0, 0, NULL);
		for (uint64_t k = s->stall_folded == 3 ? 1 : 2;
		     s->stall_folded && k < (s->stall_folded == 3 ? 4 : s->stall_s - 2); k++) {
			struct cw_hist h;

			cw_hist_reset(&h);
			for (int j = 0; j < 40; j++)
				cw_hist_add(&h, MS);
			assert_int_equal(cw_writer_folded(f->w, s->stall_folded >= 2 ? 100 : 200, "cuda",
							  "cudaStreamSynchronize",
							  (int64_t)((last + OFF) / SEC + k), &h), 0);
		}
		if (s->stall_exit_s) {
			struct cw_event_row r = {
				.mono_ns = last + (uint64_t)s->stall_exit_s * SEC, .pid = 100, .tid = 100,
				.comm = "python", .source = "proc", .op = "exit", .device = -1,
			};
			r.wall_ns = r.mono_ns + OFF;
			assert_int_equal(cw_writer_event(f->w, &r), 0);
		}
		if (s->stall_live) {
			struct cw_event_row r = {
				.mono_ns = last, .wall_ns = last + OFF, .duration_ns = 31 * SEC, .pid = 100, .tid = 100,
				.source = "stall", .op = "training_stall", .device = -1,
				.detail = "{\"step_ns\":20000000,\"threshold_ns\":30000000000,\"silent_ns\":31000000000,"
					  "\"last_op\":\"cudaStreamSynchronize\",\"last_tid\":100,\"calls\":1500,\"threads\":["
					  "{\"tid\":100,\"comm\":\"python\",\"state\":\"S\",\"wait\":\"pipe\",\"syscall\":0,"
					  "\"syscall_name\":\"read\",\"target\":\"pipe:[4242]\",\"wchan\":\"pipe_read\","
					  "\"python\":\"train.py:42 in next_batch\"},"
					  "{\"tid\":101,\"comm\":\"pt_worker\",\"state\":\"S\",\"wait\":\"lock\",\"syscall\":202,"
					  "\"syscall_name\":\"futex\"}]}",
			};
			assert_int_equal(cw_writer_event(f->w, &r), 0);
		} else {
			struct cw_offcpu_row o = {
				.pid = 100, .tid = 100, .comm = "python", .start_mono_ns = last + MS,
				.end_mono_ns = last + (s->stall_s - 1) * SEC, .wall_ns = last + MS + OFF, .reason = "blocked",
				.cpu = 1, .waker_comm = NULL,
			};
			assert_int_equal(cw_writer_offcpu(f->w, &o), 0);
		}
	}
	cw_gpu_store_free(f->gs);
	assert_int_equal(cw_writer_free(f->w), 0);
}

static void destroy(struct fx *f)
{
	cw_store_close(f->st);
	remove_store_files(f->path);
}

static void explain(struct fx *f, const struct spec *s, struct cw_explain_result *r)
{
	struct cw_explain_opts o = {0};

	build(f, s);
	assert_int_equal(cw_explain_run(f->st->db, &o, r), 0);
	if (getenv("CW_TEST_SHOW"))
		cw_explain_print_text(stdout, r, 0);
}

static void test_healthy_gpu_no_chain(void **state)
{
	struct spec s = {.healthy = 1};
	struct cw_explain_result r;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_int_equal(r.count, 0);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_thermal_throttling(void **state)
{
	struct spec s = {.throttle = "thermal", .cover = 1.0, .throttled_mhz = 1110};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_true(r.count >= 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "thermal_throttling");
	assert_string_equal(c->op, "cudaStreamSynchronize");
	assert_int_equal(c->pid, 100);
	/* Samples every 10 ms: the first 10 ms of each 85 ms call predate
	 * the throttled sample. */
	assert_true(c->explained_share > 0.85);
	assert_non_null(strstr(c->summary, "SM clock 1980 -> 1110 MHz (-44 %)"));
	assert_non_null(strstr(c->summary, "at 91 C"));
	assert_non_null(strstr(c->summary, "00000000:3B:00.0"));
	assert_true(has_fix_part(c, "nvidia-smi -q -d TEMPERATURE,PERFORMANCE -i 0"));
	assert_int_equal((int)evidence(c, "device"), 0);
	assert_int_equal((int)evidence(c, "sm_clock_throttled_mhz"), 1110);
	assert_null(find(&r, CW_KIND_POWER_CAPPING));
	cw_explain_result_free(&r);
	destroy(&f);
}

/* Below the explained-share floor (25 %): throttling covers 15 % of the
 * slow calls' time and does not name the chain. */
static void test_thermal_share_below_threshold(void **state)
{
	struct spec s = {.throttle = "thermal", .cover = 0.15, .throttled_mhz = 1110};
	struct cw_explain_result r;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_null(find(&r, CW_KIND_THERMAL_THROTTLING));
	cw_explain_result_free(&r);
	destroy(&f);
	/* and just above it */
	s.cover = 0.40;
	explain(&f, &s, &r);
	assert_non_null(find(&r, CW_KIND_THERMAL_THROTTLING));
	assert_true(find(&r, CW_KIND_THERMAL_THROTTLING)->explained_share > 0.3);
	assert_true(find(&r, CW_KIND_THERMAL_THROTTLING)->explained_share < 0.5);
	cw_explain_result_free(&r);
	destroy(&f);
}

/* A reason bit without a measured clock drop (>= 5 %) explains nothing. */
static void test_thermal_without_clock_drop(void **state)
{
	struct spec s = {.throttle = "thermal", .cover = 1.0, .throttled_mhz = 1900}; /* -4 % */
	struct cw_explain_result r;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_null(find(&r, CW_KIND_THERMAL_THROTTLING));
	cw_explain_result_free(&r);
	destroy(&f);
	s.throttled_mhz = 1870; /* -5.6 % */
	explain(&f, &s, &r);
	assert_non_null(find(&r, CW_KIND_THERMAL_THROTTLING));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_power_capping(void **state)
{
	struct spec s = {.throttle = "power", .cover = 1.0, .throttled_mhz = 1350};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_true(r.count >= 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "power_capping");
	assert_true(c->explained_share > 0.85);
	assert_non_null(strstr(c->summary, "power capped (sw_power_cap at 700 W)"));
	assert_non_null(strstr(c->summary, "1980 -> 1350 MHz (-32 %)"));
	assert_true(has_fix_part(c, "nvidia-smi -q -d POWER -i 0"));
	assert_null(find(&r, CW_KIND_THERMAL_THROTTLING));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_gpu_memory_pressure(void **state)
{
	struct spec s = {.slow_malloc = 1, .mem_pct = 96, .failed_mallocs = 3};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_true(r.count >= 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "gpu_memory_pressure");
	assert_string_equal(c->op, "cudaMalloc");
	assert_true(c->explained_share > 0.85);
	assert_non_null(strstr(c->summary, "76.8 of 80.0 GiB in use (96 %)"));
	assert_non_null(strstr(c->summary, "3 allocation(s) failed"));
	assert_int_equal((int)evidence(c, "failed_allocations"), 3);
	assert_true(has_fix_part(c, "expandable_segments"));
	cw_explain_result_free(&r);
	destroy(&f);
	/* 85 % used is below the 90 % line. */
	s.mem_pct = 85;
	explain(&f, &s, &r);
	assert_null(find(&r, CW_KIND_GPU_MEMORY_PRESSURE));
	cw_explain_result_free(&r);
	destroy(&f);
	s.mem_pct = 91;
	explain(&f, &s, &r);
	assert_non_null(find(&r, CW_KIND_GPU_MEMORY_PRESSURE));
	cw_explain_result_free(&r);
	destroy(&f);
}

/* Regular slow allocations are also a periodic allocator (share 1.0);
 * the device near full explains 19 of the 20 (0.95): the device's
 * measured state wins within 0.10. */
static void test_gpu_memory_precedence(void **state)
{
	struct spec s = {.slow_malloc = 1, .regular_malloc = 1, .mem_pct = 96, .full_from_ns = 2500 * 1000000ULL};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_true(r.count >= 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "gpu_memory_pressure");
	assert_true(c->explained_share > 0.9 && c->explained_share < 0.99);
	cw_explain_result_free(&r);
	destroy(&f);
	/* Full only from 12.5 s: 8 of 20 (0.4), too far below: periodic. */
	s.full_from_ns = 12500 * 1000000ULL;
	explain(&f, &s, &r);
	assert_true(r.count >= 1);
	assert_string_equal(cw_kind_name(r.chains[0].kind), "periodic_allocator");
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_xid_fault(void **state)
{
	struct spec s = {.healthy = 1, .xid = 79, .xid_pid = 100};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_int_equal(r.count, 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "xid_fault");
	assert_int_equal(c->severity, CW_SEV_HIGH);
	assert_int_equal(c->pid, 100);
	assert_true(c->explained_share == 1.0);
	assert_int_equal((int)evidence(c, "xid"), 79);
	assert_int_equal((int)evidence(c, "device"), 0);
	assert_non_null(strstr(c->summary, "Xid 79 on 0000:3b:00"));
	assert_non_null(strstr(c->summary, "GPU has fallen off the bus"));
	assert_non_null(strstr(c->summary, "process 100 (python)"));
	assert_non_null(strstr(c->summary, "last CUDA call cudaStreamSynchronize"));
	assert_true(has_fix_part(c, "drain the node and reboot"));
	cw_explain_result_free(&r);
	destroy(&f);
}

/* An application Xid (13) is a low-severity chain; an Xid without a pid
 * names the busiest process on the device. */
static void test_xid_severity_and_busiest(void **state)
{
	struct spec s = {.healthy = 1, .xid = 13, .xid_pid = 0};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	assert_int_equal(r.count, 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "xid_fault");
	assert_int_equal(c->severity, CW_SEV_LOW);
	assert_int_equal(c->pid, 100);
	assert_non_null(strstr(c->summary, "was the busiest on the device"));
	assert_true(has_fix_part(c, "compute-sanitizer"));
	cw_explain_result_free(&r);
	destroy(&f);
	/* Outside the window: no chain. */
	{
		struct cw_explain_opts o = {.from_wall_ns = T0 + OFF, .to_wall_ns = T0 + OFF + 14 * SEC};
		build(&f, &s);
		assert_int_equal(cw_explain_run(f.st->db, &o, &r), 0);
		assert_null(find(&r, CW_KIND_XID_FAULT));
		cw_explain_result_free(&r);
		destroy(&f);
	}
}

static void test_training_stall(void **state)
{
	struct spec s = {.healthy = 1, .stall_s = 45};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	c = find(&r, CW_KIND_TRAINING_STALL);
	assert_non_null(c);
	if (!c)
		return;
	assert_int_equal(c->pid, 100);
	assert_int_equal(c->severity, CW_SEV_HIGH);
	assert_string_equal(r.chains[0].op, c->op);
	assert_non_null(strstr(c->summary, "process 100 (python) made no GPU call for"));
	assert_non_null(strstr(c->summary, "while alive"));
	assert_non_null(strstr(c->summary, "steady step 20.0ms"));
	assert_non_null(strstr(c->summary, "threshold 30.00s"));
	assert_non_null(strstr(c->summary, "blocked (off CPU, not runnable)"));
	assert_true(evidence(c, "silent_ns") > 44.0 * SEC);
	assert_true(has_fix_part(c, "causeway where 100"));
	cw_explain_result_free(&r);
	destroy(&f);
	/* 25 s of silence is under the 30 s floor. */
	s.stall_s = 25;
	explain(&f, &s, &r);
	assert_null(find(&r, CW_KIND_TRAINING_STALL));
	cw_explain_result_free(&r);
	destroy(&f);
	/* Exited 2 s after its last call: a crash, not a stall. */
	s.stall_s = 45;
	s.stall_exit_s = 2;
	explain(&f, &s, &r);
	assert_null(find(&r, CW_KIND_TRAINING_STALL));
	cw_explain_result_free(&r);
	destroy(&f);
}

/* Summary capture kept one sync row a second and folded the rest: the
 * step is still the 20 ms rhythm, read from the folded counts. */
static void test_training_stall_summary(void **state)
{
	struct spec s = {.healthy = 1, .stall_s = 45, .summary = 1};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	c = find(&r, CW_KIND_TRAINING_STALL);
	assert_non_null(c);
	if (c) {
		assert_int_equal(c->pid, 100);
		assert_non_null(strstr(c->summary, "steady step 20.0ms"));
	}
	cw_explain_result_free(&r);
	destroy(&f);
}

/* Summary capture folded a neighbour's calls during the stall: the
 * aggregates count more calls than the rows, but the folded table names
 * their pid, so pid 100's silence is still its own. When the folded calls
 * are pid 100's, it was not silent. */
static void test_training_stall_folded_neighbour(void **state)
{
	struct spec s = {.healthy = 1, .stall_s = 45, .stall_folded = 1};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	c = find(&r, CW_KIND_TRAINING_STALL);
	assert_non_null(c);
	if (c)
		assert_int_equal(c->pid, 100);
	cw_explain_result_free(&r);
	destroy(&f);
	s.stall_folded = 2;
	explain(&f, &s, &r);
	assert_null(find(&r, CW_KIND_TRAINING_STALL));
	cw_explain_result_free(&r);
	destroy(&f);
	/* Its last calls folded, then 41 s of silence: the silence starts at
	 * the last folded second, not at the last row. */
	s.stall_folded = 3;
	explain(&f, &s, &r);
	c = find(&r, CW_KIND_TRAINING_STALL);
	assert_non_null(c);
	if (c) {
		assert_int_equal(c->pid, 100);
		assert_true(evidence(c, "silent_ns") < 43.0 * SEC);
	}
	cw_explain_result_free(&r);
	destroy(&f);
}

/* Summary capture keeps a folded call's second, not its time: pid 100's
 * last calls were folded in the second [lf, lf + 1 s), then it was
 * silent. The silence is counted from that second's end, never
 * overstated, and the chain says so; an exit inside that second ends the
 * process, not a stall. */
static void test_training_stall_silence_from_folded_second_end(void **state)
{
	struct spec s = {.healthy = 1, .stall_s = 45, .stall_folded = 3};
	struct cw_explain_result r;
	const struct cw_chain *c;
	int64_t lf_end, end;
	int at_end = 0;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	c = find(&r, CW_KIND_TRAINING_STALL);
	assert_non_null(c);
	lf_end = store_q1(f.st->db, "SELECT (max(second) + 1) * 1000000000 FROM folded WHERE pid = 100");
	/* the end of the data: its last second's end, or the window's */
	end = store_q1(f.st->db, "SELECT (max(second) + 1) * 1000000000 FROM aggregates WHERE node = 'n1'");
	if ((int64_t)r.to_wall_ns < end)
		end = (int64_t)r.to_wall_ns;
	assert_true(lf_end > 0 && end > lf_end);
	if (c) {
		assert_int_equal(c->pid, 100);
		assert_int_equal((int64_t)evidence(c, "silent_ns"), end - lf_end);
		assert_int_equal(evidence(c, "silence_from_folded_second"), 1);
		for (int i = 0; i < c->ntimeline; i++)
			at_end |= (int64_t)c->timeline[i].t_ns == lf_end &&
				  strstr(c->timeline[i].text, "folded in the kernel") != NULL;
		assert_true(at_end);
	}
	cw_explain_result_free(&r);
	destroy(&f);
	/* exited as its last folded second began */
	s.stall_exit_s = 3;
	explain(&f, &s, &r);
	assert_int_equal(store_q1(f.st->db, "SELECT max(second) * 1000000000 FROM folded WHERE pid = 100"),
			 store_q1(f.st->db, "SELECT wall_ns FROM events WHERE source = 'proc' AND op = 'exit'"));
	assert_null(find(&r, CW_KIND_TRAINING_STALL));
	cw_explain_result_free(&r);
	destroy(&f);
	/* a neighbour's folded calls: the silence is counted from pid 100's
	 * last row */
	s.stall_exit_s = 0;
	s.stall_folded = 1;
	explain(&f, &s, &r);
	c = find(&r, CW_KIND_TRAINING_STALL);
	assert_non_null(c);
	if (c)
		assert_int_equal(evidence(c, "silence_from_folded_second"), 0);
	cw_explain_result_free(&r);
	destroy(&f);
}

/* A stall trace named live carries the threads' states. */
static void test_training_stall_live_threads(void **state)
{
	struct spec s = {.healthy = 1, .stall_s = 45, .stall_live = 1};
	struct cw_explain_result r;
	const struct cw_chain *c;
	struct fx f;

	(void)state;
	explain(&f, &s, &r);
	c = find(&r, CW_KIND_TRAINING_STALL);
	assert_non_null(c);
	if (!c)
		return;
	assert_non_null(strstr(c->summary, "thread 100 (python) blocked in read on a pipe (pipe:[4242])"));
	assert_non_null(strstr(c->summary, "at train.py:42 in next_batch"));
	assert_true(c->has_python);
	assert_string_equal(c->py_file, "train.py");
	assert_int_equal(c->py_line, 42);
	assert_int_equal((int)evidence(c, "detected_live"), 1);
	assert_true(has_fix_part(c, "check its producer"));
	{
		int lock = 0;
		for (int i = 0; i < c->ntimeline; i++)
			lock |= strstr(c->timeline[i].text, "thread 101 (pt_worker) waiting on a lock (futex)") != NULL;
		assert_true(lock);
	}
	cw_explain_result_free(&r);
	destroy(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_gpu_no_chain),
		cmocka_unit_test(test_thermal_throttling),
		cmocka_unit_test(test_thermal_share_below_threshold),
		cmocka_unit_test(test_thermal_without_clock_drop),
		cmocka_unit_test(test_power_capping),
		cmocka_unit_test(test_gpu_memory_pressure),
		cmocka_unit_test(test_gpu_memory_precedence),
		cmocka_unit_test(test_xid_fault),
		cmocka_unit_test(test_xid_severity_and_busiest),
		cmocka_unit_test(test_training_stall),
		cmocka_unit_test(test_training_stall_live_threads),
		cmocka_unit_test(test_training_stall_folded_neighbour),
		cmocka_unit_test(test_training_stall_silence_from_folded_second_end),
		cmocka_unit_test(test_training_stall_summary),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
