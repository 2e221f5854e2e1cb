/* Each per-op and node-wide rule called directly on hand-built measures
 * (src/analysis/engine.h): the trigger condition just below and just above
 * its threshold, and what a chain says when it fires (explained share,
 * summary, fixes, evidence). test_rules.c runs the same rules end to end
 * on stores. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/rules/rules.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"


/* A chain as explain.c hands it to a rule (base_chain). */
static void base(struct cw_chain *c, const char *op, uint64_t p50, uint64_t p99)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->op, sizeof(c->op), "%s", op);
	snprintf(c->source, sizeof(c->source), "cuda");
	snprintf(c->node, sizeof(c->node), "n1");
	snprintf(c->comm, sizeof(c->comm), "python");
	c->pid = 100;
	c->tid = 101;
	c->rank = -1;
	c->culprit.cpu = -1;
	c->p50_ns = p50;
	c->p99_ns = p99;
	c->tail_ratio = (double)p99 / (double)p50;
}

/* --- cold_start ------------------------------------------------------- */

static int cold(double early_factor, int early_flag, struct cw_chain *c)
{
	struct cw_slowcall calls[5];
	struct cw_opstat st = {.count = 1000};
	struct cw_rule_ctx ctx = {.st = &st, .calls = calls, .ncalls = 5};

	base(c, "cudaLaunchKernel", MS, 30 * MS);
	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < 5; i++) {
		calls[i].wall_ns = T0 + (uint64_t)i * SEC;
		calls[i].early = i < 3 ? early_flag : 0;
		/* three early calls, two late ones that are slower still */
		calls[i].dur_ns = i < 3 ? (uint64_t)(early_factor * (double)MS) : 40 * MS;
		ctx.slow_time_ns += calls[i].dur_ns;
	}
	return cw_rule_cold_start(&ctx, c);
}

static void test_cold_start(void **state)
{
	struct cw_chain c;

	(void)state;
	/* 19.9x p50 is below the 20x threshold: no cold start */
	assert_int_equal(cold(19.9, 1, &c), 0);
	/* late calls never count, however slow */
	assert_int_equal(cold(25, 0, &c), 0);
	assert_int_equal(cold(20, 1, &c), 1);
	assert_int_equal(cold(25, 1, &c), 1);
	assert_int_equal(c.kind, CW_KIND_COLD_START);
	near(c.explained_share, 75.0 / 155.0);
	contains(c.summary, "the first 3 calls took 25.0ms on average (25x the steady-state p50)");
	contains(c.summary, "48 % of slow time is start-up cost");
	assert_true(has_fix(&c, "export CUDA_MODULE_LOADING=EAGER"));
	near(evidence(&c, "early_calls"), 3);
	near(evidence(&c, "late_slow_calls"), 2);
	near(evidence(&c, "early_time_ns"), 75.0 * MS);
}

/* --- cpu_preemption --------------------------------------------------- */

static void test_cpu_preemption(void **state)
{
	struct cw_slowcall calls[2];
	struct cw_culprit_acc hog = {.comm = "stress-ng", .pid = 977, .cgroup_id = 0, .cpu = 3, .ns = 30 * MS};
	struct cw_snap snap = {.mono_ns = T0, .wall_ns = T0, .cpu_pct = 99, .load1 = 9, .ncpu = 8};
	struct cw_sysctx sys = {.snaps = &snap, .nsnaps = 1};
	struct cw_opstat st = {.node = "n1", .count = 1000};
	struct cw_rule_ctx ctx = {.st = &st, .sys = &sys, .calls = calls, .ncalls = 2, .slow_time_ns = 100 * MS,
				  .culprits = &hog, .nculprits = 1, .blocked_ns = 70 * MS};
	struct cw_chain c;

	(void)state;
	memset(calls, 0, sizeof(calls));
	calls[0].mono_ns = calls[0].wall_ns = T0;
	calls[0].dur_ns = calls[1].dur_ns = 50 * MS;
	calls[1].mono_ns = calls[1].wall_ns = T0 + SEC;
	calls[0].preempted_ns = 10 * MS;
	calls[1].preempted_ns = 30 * MS;
	/* no preemption: not this rule, whatever else the thread did */
	base(&c, "cudaStreamSynchronize", MS, 50 * MS);
	assert_int_equal(cw_rule_cpu_preemption(&ctx, &c), 0);
	ctx.preempted_ns = 40 * MS;
	assert_int_equal(cw_rule_cpu_preemption(&ctx, &c), 1);
	assert_int_equal(c.kind, CW_KIND_CPU_PREEMPTION);
	near(c.explained_share, 0.4);
	contains(c.summary, "thread 101 (python) was preempted for 40 % of its slow calls' time, 75 % of that by stress-ng"
			    " (pid 977, cpu 3)");
	assert_true(c.culprit.known);
	assert_int_equal(c.culprit.pid, 977);
	assert_int_equal(c.culprit.cpu, 3);
	assert_true(has_fix(&c, "renice +19 -p 977"));
	assert_true(has_fix(&c, "taskset -acp 0-2,4-7 100"));
	assert_true(has_fix(&c, "taskset -acp 3 977"));
	near(evidence(&c, "culprit_share"), 0.75);
	/* the worst call's moment carries the culprit line */
	int found = 0;
	for (int i = 0; i < c.ntimeline; i++)
		if (strstr(c.timeline[i].text, "CPU 3 held by stress-ng"))
			found = c.timeline[i].t_ns == T0 + SEC;
	assert_true(found);
	/* the culprit on the first or last CPU */
	hog.cpu = 0;
	base(&c, "cudaStreamSynchronize", MS, 50 * MS);
	assert_int_equal(cw_rule_cpu_preemption(&ctx, &c), 1);
	assert_true(has_fix(&c, "taskset -acp 1-7 100"));
	hog.cpu = 7;
	base(&c, "cudaStreamSynchronize", MS, 50 * MS);
	assert_int_equal(cw_rule_cpu_preemption(&ctx, &c), 1);
	assert_true(has_fix(&c, "taskset -acp 0-6 100"));
}

/* --- io_contention ---------------------------------------------------- */

static void test_io_contention(void **state)
{
	struct cw_slowcall call = {.mono_ns = T0, .wall_ns = T0, .dur_ns = 80 * MS};
	struct cw_interval io[3] = {
		{T0 + 5 * MS, T0 + 15 * MS}, {T0 + 10 * MS, T0 + 70 * MS}, {T0 + 200 * MS, T0 + 900 * MS}};
	int64_t io_pid[3] = {100, 300, 500};
	struct cw_sysctx sys = {.io_raw = io, .io_pid = io_pid, .nio_raw = 3, .io_requests = 3};
	struct cw_opstat st = {.node = "n1", .count = 1000};
	struct cw_rule_ctx ctx = {.st = &st, .sys = &sys, .calls = &call, .ncalls = 1, .slow_time_ns = 80 * MS,
				  .blocked_ns = 70 * MS};
	struct cw_chain c;

	(void)state;
	base(&c, "cudaStreamSynchronize", MS, 80 * MS);
	assert_int_equal(cw_rule_io_contention(&ctx, &c), 0);
	ctx.blocked_io_ns = 60 * MS;
	assert_int_equal(cw_rule_io_contention(&ctx, &c), 1);
	assert_int_equal(c.kind, CW_KIND_IO_CONTENTION);
	near(c.explained_share, 0.75);
	/* pid 300's request overlaps 60 ms, pid 100's own 10 ms, pid 500's none */
	contains(c.summary, "was blocked while block I/O was in flight for 75 % of its slow calls' time,"
			    " mostly requests of pid 300");
	assert_null(strstr(c.summary, "its own process"));
	assert_true(has_fix(&c, "ionice -c3 -p 300"));
	assert_true(has_fix(&c, "ionice -c2 -n0 -p 100"));
	near(evidence(&c, "io_top_pid"), 300);
	/* its own writes */
	io_pid[1] = 100;
	base(&c, "cudaStreamSynchronize", MS, 80 * MS);
	assert_int_equal(cw_rule_io_contention(&ctx, &c), 1);
	contains(c.summary, "(its own process's writes)");
	assert_null(strstr(c.summary, "mostly requests"));
	assert_true(has_fix(&c, "write checkpoints asynchronously (torch.distributed.checkpoint.async_save) or from"
				" a background thread"));
	for (int i = 0; i < c.nfix; i++)
		assert_null(strstr(c.fix[i], "ionice -c3"));
}

/* --- memory_pressure -------------------------------------------------- */

static void test_memory_pressure(void **state)
{
	struct cw_slowcall calls[2] = {{.mono_ns = T0 + 2 * SEC, .wall_ns = T0 + 2 * SEC, .dur_ns = 50 * MS},
				       {.mono_ns = T0 + 4 * SEC, .wall_ns = T0 + 4 * SEC, .dur_ns = 50 * MS}};
	struct cw_snap snaps[8];
	struct cw_sysctx sys = {.snaps = snaps, .nsnaps = 8, .npressure = 2};
	struct cw_opstat st = {.node = "n1", .count = 1000};
	struct cw_rule_ctx ctx = {.st = &st, .sys = &sys, .calls = calls, .ncalls = 2, .slow_time_ns = 100 * MS,
				  .blocked_ns = 90 * MS};
	struct cw_chain c;

	(void)state;
	memset(snaps, 0, sizeof(snaps));
	for (int i = 0; i < 8; i++) {
		snaps[i].mono_ns = snaps[i].wall_ns = T0 + (uint64_t)i * SEC;
		snaps[i].mem_pct = 50;
		snaps[i].page_alloc_per_s = 1000;
		snaps[i].swap_used = (int64_t)i << 20; /* +1 MiB/s */
	}
	/* inside the slow calls' seconds: +200 MiB at 3 s, 60000 pages/s and
	 * 96 % at 4 s; outside (7 s): bigger still, not theirs */
	for (int i = 3; i < 8; i++)
		snaps[i].swap_used += 200LL << 20;
	snaps[4].page_alloc_per_s = 60000;
	snaps[4].mem_pct = 96;
	snaps[7].swap_used += 900LL << 20;
	snaps[7].page_alloc_per_s = 900000;
	snaps[7].mem_pct = 99;
	base(&c, "cudaStreamSynchronize", MS, 50 * MS);
	assert_int_equal(cw_rule_memory_pressure(&ctx, &c), 0);
	ctx.blocked_mem_ns = 80 * MS;
	assert_int_equal(cw_rule_memory_pressure(&ctx, &c), 1);
	assert_int_equal(c.kind, CW_KIND_MEMORY_PRESSURE);
	near(c.explained_share, 0.8);
	contains(c.summary, "was blocked under memory pressure for 80 % of its slow calls' time"
			    " (swap +201 MiB/s, 60000 pages/s allocated, memory 96 % used)");
	assert_true(has_fix(&c, "echo -1000 > /proc/100/oom_score_adj"));
	near(evidence(&c, "swap_growth_bytes_per_s_max"), (double)(201LL << 20));
	int swap_at = 0;
	for (int i = 0; i < c.ntimeline; i++)
		if (strstr(c.timeline[i].text, "swap grew 201 MiB"))
			swap_at = c.timeline[i].t_ns == T0 + 3 * SEC;
	assert_true(swap_at);
}

/* --- periodic_allocator ----------------------------------------------- */

/* Allocator spikes separated by gaps_s[] seconds: each spike is two slow
 * calls 45 ms apart (closer than 50 ms: one spike) of 5 ms each. */
static int spikes(const double *gaps_s, int ngaps, const char *op, struct cw_chain *c)
{
	static struct cw_slowcall calls[64];
	static struct cw_opstat st = {.node = "n1", .count = 2000, .nsecs = 20};
	static struct cw_sysctx sys = {.node = "n1"};
	struct cw_rule_ctx ctx = {.st = &st, .sys = &sys, .calls = calls};
	uint64_t t = T0;

	memset(calls, 0, sizeof(calls));
	for (int i = 0; i <= ngaps; i++) {
		calls[2 * i].mono_ns = t;
		calls[2 * i + 1].mono_ns = t + 45 * MS;
		calls[2 * i].dur_ns = calls[2 * i + 1].dur_ns = 5 * MS;
		if (i < ngaps)
			t += (uint64_t)(gaps_s[i] * 1e9);
	}
	ctx.ncalls = 2 * (size_t)ngaps + 2;
	ctx.slow_time_ns = ctx.ncalls * 5 * MS;
	base(c, op, 100000, 5 * MS);
	return cw_rule_periodic_allocator(&ctx, c);
}

static void test_periodic_allocator(void **state)
{
	/* gaps alternating 2 s x (1 -+ d): their coefficient of variation is d */
	const double cv29[8] = {1.42, 2.58, 1.42, 2.58, 1.42, 2.58, 1.42, 2.58};
	const double cv31[8] = {1.38, 2.62, 1.38, 2.62, 1.38, 2.62, 1.38, 2.62};
	/* eleven gaps of 2 s, then one of 2.8 s (cv 0.11): the last spike is
	 * off period (more than 30 % from the median) */
	const double late[12] = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2.8};
	const double three[3] = {2, 2, 2};
	struct cw_chain c;

	(void)state;
	assert_int_equal(spikes(cv31, 8, "cudaMalloc", &c), 0);
	assert_int_equal(spikes(cv29, 8, "cudaStreamSynchronize", &c), 0); /* not an allocator */
	assert_int_equal(spikes(cv29, 8, "cudaMalloc", &c), 1);
	assert_int_equal(c.kind, CW_KIND_PERIODIC_ALLOCATOR);
	near(evidence(&c, "spikes"), 9);
	assert_true(fabs(evidence(&c, "period_cv") - 0.29) < 1e-6);
	near(evidence(&c, "period_ns"), 2e9);
	contains(c.summary, "9 allocator spikes recur every 2.00s (~200 cudaMalloc calls, cv 0.29)");
	near(c.explained_share, 1.0);
	assert_true(has_fix(&c, "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
	assert_int_equal(spikes(late, 12, "cudaMalloc", &c), 1);
	near(evidence(&c, "spikes"), 13);
	near(c.explained_share, 12.0 / 13.0);
	/* three gaps make four spikes, the fewest that count */
	assert_int_equal(spikes(three, 2, "cudaMalloc", &c), 0);
	assert_int_equal(spikes(three, 3, "cudaMalloc", &c), 1);
	near(evidence(&c, "spikes"), 4);
}

/* --- throughput_drop -------------------------------------------------- */

/* 20 seconds of an op at 50 calls/s, 10 ms each, with a stretch of
 * `len` seconds from second 8 at `rate` calls/s and `lat` ms each, and
 * with `burst` a single second of 200 calls (second 2). */
static int drop_burst(uint64_t rate, int len, double lat, int burst, struct cw_chain *c)
{
	static struct cw_opsec secs[20];
	static struct cw_slowcall calls[3];
	static struct cw_opstat st;
	struct cw_rule_ctx ctx;
	size_t n = 0;

	memset(&st, 0, sizeof(st));
	memset(&ctx, 0, sizeof(ctx));
	for (int i = 0; i < 20; i++) {
		int in = i >= 8 && i < 8 + len;
		secs[n].second = 1000 + i;
		secs[n].count = in ? rate : burst && i == 2 ? 200 : 50;
		secs[n].sum_ns = (uint64_t)((double)secs[n].count * (in ? lat : 10.0) * 1e6);
		n++;
	}
	st.secs = secs;
	st.nsecs = n;
	snprintf(st.node, sizeof(st.node), "n1");
	memset(calls, 0, sizeof(calls));
	calls[0].wall_ns = 1008 * SEC + 5 * MS; /* in the stretch */
	calls[0].dur_ns = 60 * MS;
	calls[1].wall_ns = 1010 * SEC + 999 * MS; /* the stretch's last second */
	calls[1].dur_ns = 20 * MS;
	calls[2].wall_ns = 1015 * SEC; /* after it */
	calls[2].dur_ns = 20 * MS;
	ctx.st = &st;
	ctx.calls = calls;
	ctx.ncalls = 3;
	ctx.slow_time_ns = 100 * MS;
	base(c, "cudaStreamSynchronize", 10 * MS, 60 * MS);
	return cw_rule_throughput_drop(&ctx, c);
}

static int drop(uint64_t rate, int len, double lat, struct cw_chain *c)
{
	return drop_burst(rate, len, lat, 0, c);
}

static void test_throughput_drop(void **state)
{
	struct cw_chain c;

	(void)state;
	assert_int_equal(drop(31, 3, 20, &c), 0); /* 0.62 x peak: not a drop */
	assert_int_equal(drop(25, 2, 20, &c), 0); /* two seconds only */
	assert_int_equal(drop(25, 3, 14.9, &c), 0); /* latency 1.49x */
	assert_int_equal(drop(29, 3, 15.1, &c), 1);
	assert_int_equal(drop(25, 3, 20, &c), 1);
	assert_int_equal(c.kind, CW_KIND_THROUGHPUT_DROP);
	near(c.explained_share, 0.8);
	contains(c.summary, "the call rate fell to 50 % of its peak (50/s) for 3 s while mean latency rose 2.0x");
	assert_true(has_fix(&c, "causeway explain --from 1008 --to 1011 --per-process"));
	near(evidence(&c, "drop_seconds"), 3);
	near(evidence(&c, "peak_per_s"), 50);
	near(evidence(&c, "latency_ratio"), 2.0);
	/* one burst second does not raise the peak (its 90th percentile) */
	assert_int_equal(drop_burst(25, 3, 20, 1, &c), 1);
	near(evidence(&c, "peak_per_s"), 50);
	contains(c.summary, "fell to 50 % of its peak (50/s)");
	/* the longest stretch wins over a shorter one */
	assert_int_equal(drop(25, 6, 20, &c), 1);
	near(evidence(&c, "drop_seconds"), 6);
	assert_true(has_fix(&c, "causeway explain --from 1008 --to 1014 --per-process"));
}

/* --- memcpy_bound and gpu_time_slicing (need a store) ------------------ */

struct store {
	char path[64];
	struct cw_store *st;
};

static void store_open(struct store *s)
{
	char err[256];
	int fd;

	strcpy(s->path, "/tmp/cw-test-triggers-XXXXXX");
	fd = mkstemp(s->path);
	close(fd);
	unlink(s->path);
	assert_int_equal(cw_store_open(&s->st, s->path, CW_STORE_CREATE, err, sizeof(err)), 0);
}

static void store_close(struct store *s)
{
	cw_store_close(s->st);
	remove_store_files(s->path);
}

/* Ten seconds of GPU activity: a sync op, and a copy op taking `share`
 * of the ten seconds. */
static int memcpy_share(sqlite3 *db, double share, struct cw_chain *c)
{
	struct cw_opsec sync_secs[2] = {{.second = 1000, .count = 10}, {.second = 1009, .count = 10}};
	struct cw_opsec copy_secs[1] = {{.second = 1004, .count = 100}};
	struct cw_opstat ops[3] = {
		{.node = "n1", .source = "cuda", .op = "cudaStreamSynchronize", .count = 20, .sum_ns = 20 * MS,
		 .secs = sync_secs, .nsecs = 2},
		{.node = "n1", .source = "cuda", .op = "cudaMemcpy", .count = 100,
		 .sum_ns = (uint64_t)(share * 10e9), .p50_ns = 10 * MS, .p99_ns = 20 * MS,
		 .secs = copy_secs, .nsecs = 1},
		/* a copy on another node counts for that node only */
		{.node = "n2", .source = "cuda", .op = "cudaMemcpy", .count = 100, .sum_ns = 100 * SEC,
		 .secs = copy_secs, .nsecs = 1},
	};
	struct cw_sysctx sys = {.node = "n1"};
	struct cw_explain_opts o = {0};

	struct cw_rule_ctx ctx = {.db = db, .opts = &o, .sys = &sys, .ops = ops, .nops = 3,
				  .window_from_ns = 1000 * SEC, .window_to_ns = 1010 * SEC, .max_out = 1};

	return cw_rule_memcpy_bound(&ctx, c);
}

static void test_memcpy_bound(void **state)
{
	struct store s;
	struct cw_chain c;

	(void)state;
	store_open(&s);
	assert_int_equal(memcpy_share(s.st->db, 0.29, &c), 0);
	assert_int_equal(memcpy_share(s.st->db, 0.31, &c), 1);
	assert_int_equal(c.kind, CW_KIND_MEMCPY_BOUND);
	assert_string_equal(c.op, "cudaMemcpy");
	near(c.explained_share, 0.31);
	contains(c.summary, "100 memory copies took 3.10s, 31 % of the 10 s of GPU activity");
	assert_true(has_fix(&c, "DataLoader(..., pin_memory=True)"));
	near(evidence(&c, "active_seconds"), 10);
	assert_int_equal(memcpy_share(s.st->db, 2.0, &c), 1);
	near(c.explained_share, 1.0); /* capped */
	store_close(&s);
}

static void slice_event(struct cw_writer *w, uint64_t mono, uint64_t dur, uint32_t pid, const char *op, int dev)
{
	struct cw_event_row r = {
		.mono_ns = mono, .wall_ns = mono, .duration_ns = dur, .pid = pid, .tid = pid,
		.comm = pid == 100 ? "python" : "other-job", .source = "cuda", .op = op, .device = dev,
		.has_ret = 1,
	};
	assert_int_equal(cw_writer_event(w, &r), 0);
}

static void test_gpu_time_slicing(void **state)
{
	struct store s;
	struct cw_writer *w;
	struct cw_writer_opts wo = {.node = "n1", .session_id = 1};
	struct cw_slowcall calls[2];
	struct cw_opstat st = {.node = "n1", .source = "cuda", .op = "cudaStreamSynchronize", .count = 1000};
	struct cw_sysctx sys = {.node = "n1"};
	struct cw_rule_ctx ctx = {.st = &st, .sys = &sys, .calls = calls, .ncalls = 2, .slow_time_ns = 200 * MS};
	struct cw_chain c;

	(void)state;
	store_open(&s);
	assert_int_equal(cw_writer_new(&w, s.st, &wo), 0);
	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < 2; i++) {
		calls[i].mono_ns = calls[i].wall_ns = T0 + (uint64_t)i * SEC;
		calls[i].dur_ns = 100 * MS;
		calls[i].pid = 100;
		calls[i].device = 0;
		slice_event(w, calls[i].mono_ns, calls[i].dur_ns, 100, "cudaStreamSynchronize", 0);
		/* the calling process's own launches never count */
		slice_event(w, calls[i].mono_ns + 5 * MS, 30000, 100, "cudaLaunchKernel", 0);
	}
	/* another process launches on GPU 0 during the second call only, and
	 * on GPU 1 during the first */
	slice_event(w, T0 + SEC + 20 * MS, 30000, 400, "cudaLaunchKernel", 0);
	slice_event(w, T0 + 20 * MS, 30000, 500, "cudaLaunchKernel", 1);
	assert_int_equal(cw_writer_free(w), 0);
	ctx.db = s.st->db;
	calls[1].preempted_ns = 10 * MS;
	/* off-CPU 40 % of the slow time: not time slicing */
	ctx.preempted_ns = 40 * MS;
	ctx.blocked_ns = 40 * MS;
	base(&c, "cudaStreamSynchronize", 10 * MS, 100 * MS);
	assert_int_equal(cw_rule_gpu_time_slicing(&ctx, &c), 0);
	ctx.blocked_ns = 38 * MS;
	assert_int_equal(cw_rule_gpu_time_slicing(&ctx, &c), 1);
	assert_int_equal(c.kind, CW_KIND_GPU_TIME_SLICING);
	/* the second call's on-CPU time: 100 - 10 ms of 200 ms */
	near(c.explained_share, 0.45);
	assert_int_equal(c.culprit.pid, 400);
	contains(c.summary, "stayed on CPU (39 % off-CPU) while other-job (pid 400) ran CUDA work on GPU 0 during"
			    " 45 % of its slow calls' time");
	assert_true(has_fix(&c, "nvidia-smi -i 0 -c EXCLUSIVE_PROCESS"));
	assert_true(has_fix(&c, "move pid 400 to another GPU (CUDA_VISIBLE_DEVICES) or a MIG slice"));
	near(evidence(&c, "foreign_pids"), 1);
	store_close(&s);
}

/* The preemptor is causeway's own agent (trace stored its pid and CPU
 * time): the chain says so, with its CPU use, and never advises renicing
 * or pinning it onto the workload's CPU as if it were a neighbour. */
static void test_cpu_preemption_by_agent(void **state)
{
	struct store s;
	struct cw_slowcall calls[1];
	/* a copy of the binary under another name: known by its pid */
	struct cw_culprit_acc hog = {.comm = "gpu-agent", .pid = 555, .cpu = 3, .ns = 30 * MS};
	struct cw_snap snap = {.mono_ns = T0, .wall_ns = T0, .cpu_pct = 99, .load1 = 9, .ncpu = 8};
	struct cw_sysctx sys = {.snaps = &snap, .nsnaps = 1};
	struct cw_opstat st = {.node = "n1", .count = 1000};
	struct cw_rule_ctx ctx = {.st = &st, .sys = &sys, .calls = calls, .ncalls = 1, .slow_time_ns = 50 * MS,
				  .culprits = &hog, .nculprits = 1, .preempted_ns = 40 * MS};
	struct cw_chain c;

	(void)state;
	store_open(&s);
	assert_int_equal(sqlite3_exec(s.st->db,
				      "INSERT INTO sessions (id, node, kind, started_wall_ns, ended_wall_ns, mono_to_wall_ns)"
				      " VALUES (7, 'n1', 'trace', 0, 10000000000, 0);"
				      "INSERT INTO counters VALUES ('n1', 7, 'trace.agent.pid', 555);"
				      "INSERT INTO counters VALUES ('n1', 7, 'trace.agent.cpu_ns', 2500000000);",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	ctx.db = s.st->db;
	memset(calls, 0, sizeof(calls));
	calls[0].mono_ns = calls[0].wall_ns = T0;
	calls[0].dur_ns = 50 * MS;
	calls[0].preempted_ns = 40 * MS;
	base(&c, "cudaStreamSynchronize", MS, 50 * MS);
	assert_int_equal(cw_rule_cpu_preemption(&ctx, &c), 1);
	contains(c.summary, "by causeway's own tracing agent (pid 555, cpu 3, which used 25 % of a CPU while tracing)");
	assert_false(has_fix(&c, "renice +19 -p 555"));
	assert_false(has_fix(&c, "taskset -acp 3 555"));
	assert_true(has_fix(&c, "taskset -acp 0-2,4-7 555  # keep causeway off the workload's CPU"));
	near(evidence(&c, "agent_cpu_pct"), 25);
	/* a store without the counters (an older trace): known by its name */
	st.node[0] = 'x';
	hog.pid = 557;
	snprintf(hog.comm, sizeof(hog.comm), "causeway");
	base(&c, "cudaStreamSynchronize", MS, 50 * MS);
	assert_int_equal(cw_rule_cpu_preemption(&ctx, &c), 1);
	contains(c.summary, "by causeway's own tracing agent (pid 557, cpu 3): the observer");
	st.node[0] = 'n';
	/* another causeway process where the agent's pid is recorded: not it */
	hog.pid = 558;
	base(&c, "cudaStreamSynchronize", MS, 50 * MS);
	assert_int_equal(cw_rule_cpu_preemption(&ctx, &c), 1);
	contains(c.summary, "by causeway (pid 558, cpu 3)");
	/* any other process */
	hog.pid = 556;
	snprintf(hog.comm, sizeof(hog.comm), "stress-ng");
	base(&c, "cudaStreamSynchronize", MS, 50 * MS);
	assert_int_equal(cw_rule_cpu_preemption(&ctx, &c), 1);
	contains(c.summary, "by stress-ng (pid 556, cpu 3)");
	assert_true(has_fix(&c, "renice +19 -p 556"));
	store_close(&s);
}

/* A chain's slow calls can come from several processes (pid 100 and pid
 * 300 share GPU 0 and both wait): another process's slow call overlapping
 * the chain's own process's launches names pid 300's neighbour, never the
 * chain's own pid 100 as its culprit. */
static void test_gpu_time_slicing_not_self(void **state)
{
	struct store s;
	struct cw_writer *w;
	struct cw_writer_opts wo = {.node = "n1", .session_id = 1};
	struct cw_slowcall calls[2];
	struct cw_opstat st = {.node = "n1", .source = "cuda", .op = "cudaStreamSynchronize", .count = 1000};
	struct cw_sysctx sys = {.node = "n1"};
	struct cw_rule_ctx ctx = {.st = &st, .sys = &sys, .calls = calls, .ncalls = 2, .slow_time_ns = 200 * MS};
	struct cw_chain c;

	(void)state;
	store_open(&s);
	assert_int_equal(cw_writer_new(&w, s.st, &wo), 0);
	memset(calls, 0, sizeof(calls));
	for (int i = 0; i < 2; i++) {
		calls[i].mono_ns = calls[i].wall_ns = T0 + (uint64_t)i * SEC;
		calls[i].dur_ns = 100 * MS;
		calls[i].pid = i ? 300 : 100;
		calls[i].device = 0;
		slice_event(w, calls[i].mono_ns, calls[i].dur_ns, (uint32_t)calls[i].pid, "cudaStreamSynchronize", 0);
	}
	/* pid 100 launches during pid 300's slow call; pid 400 during pid 100's */
	slice_event(w, T0 + SEC + 20 * MS, 30000, 100, "cudaLaunchKernel", 0);
	slice_event(w, T0 + 20 * MS, 30000, 400, "cudaLaunchKernel", 0);
	assert_int_equal(cw_writer_free(w), 0);
	ctx.db = s.st->db;
	base(&c, "cudaStreamSynchronize", 10 * MS, 100 * MS);
	assert_int_equal(cw_rule_gpu_time_slicing(&ctx, &c), 1);
	assert_int_equal(c.culprit.pid, 400);
	near(evidence(&c, "foreign_pids"), 1);
	store_close(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cold_start),
		cmocka_unit_test(test_cpu_preemption),
		cmocka_unit_test(test_io_contention),
		cmocka_unit_test(test_memory_pressure),
		cmocka_unit_test(test_periodic_allocator),
		cmocka_unit_test(test_throughput_drop),
		cmocka_unit_test(test_memcpy_bound),
		cmocka_unit_test(test_gpu_time_slicing),
		cmocka_unit_test(test_gpu_time_slicing_not_self),
		cmocka_unit_test(test_cpu_preemption_by_agent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
