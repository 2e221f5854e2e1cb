/* The rules for the OOM killer, the network, CUDA graphs and host memory
 * on hand-built stores: a 20 s loop (one step every 20 ms) of one op of
 * interest plus a sync, and the signature of one cause. Each rule is
 * checked for its kind, explained share, summary and fixes, and its
 * trigger threshold from both sides. */
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
#define STEPS 1000
#define STEP_NS (20 * MS)
#define PID 100
#define CGROUP 4242

struct fx {
	char path[64];
	struct cw_store *st;
	struct cw_writer *w;
	uint32_t rng;
	int64_t py;
};

static uint32_t rnd(struct fx *f)
{
	return lcg_next(&f->rng);
}

static void ev(struct fx *f, const char *src, const char *op, uint64_t mono, uint64_t dur, uint32_t pid,
	       uint32_t tid, int64_t a0, int64_t a1, int64_t a2, const char *detail)
{
	struct cw_event_row r = {
		.mono_ns = mono, .wall_ns = mono + OFF, .duration_ns = dur, .pid = pid, .tid = tid,
		.comm = "python", .source = src, .op = op, .device = 0, .py_stack_id = f->py,
		.has_ret = 1, .nargs = 3, .args = {a0, a1, a2, 0}, .detail = detail,
	};
	assert_int_equal(cw_writer_event(f->w, &r), 0);
}

static void off(struct fx *f, uint64_t s, uint64_t e, const char *reason, uint32_t by_pid, const char *by_comm)
{
	struct cw_offcpu_row r = {
		.pid = PID, .tid = PID, .comm = "python", .start_mono_ns = s, .end_mono_ns = e,
		.wall_ns = s + OFF, .reason = reason, .cpu = 1, .by_pid = by_pid, .by_tid = by_pid,
		.by_comm = by_comm,
	};
	assert_int_equal(cw_writer_offcpu(f->w, &r), 0);
}

static void open_fx(struct fx *f)
{
	struct cw_session_info si = {.node = "n1", .kind = "test", .started_wall_ns = T0 + OFF,
				     .mono_to_wall_ns = OFF, .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_writer_opts wo = {.node = "n1"};
	struct cw_process_row pr = {.pid = PID, .comm = "python", .cgroup_id = CGROUP, .rank = 0, .local_rank = 0,
				    .world_size = 1, .start_wall_ns = T0 + OFF};
	char err[256];
	int64_t sid;
	int fd;

	memset(f, 0, sizeof(*f));
	f->rng = 7;
	strcpy(f->path, "/tmp/cw-test-layers-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_session_begin(f->st, &si, &sid), 0);
	wo.session_id = sid;
	assert_int_equal(cw_writer_new(&f->w, f->st, &wo), 0);
	assert_int_equal(cw_writer_process(f->w, &pr), 0);
	f->py = cw_writer_intern_pystack(f->w, 91, 1, "[]", "train.py", 88, "step", 0);
	assert_true(f->py > 0);
	for (int i = 0; i < 21; i++) {
		struct cw_snapshot_row s = {.mono_ns = T0 + (uint64_t)i * SEC, .wall_ns = T0 + (uint64_t)i * SEC + OFF,
					    .cpu_pct = 40, .mem_pct = 50, .load1 = 2, .ncpu = 8,
					    .page_alloc_per_s = 20000};
		assert_int_equal(cw_writer_snapshot(f->w, &s), 0);
	}
}

static void close_fx(struct fx *f)
{
	assert_int_equal(cw_writer_free(f->w), 0);
	f->w = NULL;
}

static void destroy(struct fx *f)
{
	cw_store_close(f->st);
	remove_store_files(f->path);
}

static void run(struct fx *f, struct cw_explain_result *r)
{
	struct cw_explain_opts o = {0};
	assert_int_equal(cw_explain_run(f->st->db, &o, r), 0);
}

/* A v2 file (opened read-only) has none of schema v3's partial indexes:
 * the rules must find the same events through the aggregates and rowid
 * ranges. */
static void drop_v3_indexes(struct fx *f)
{
	assert_int_equal(sqlite3_exec(f->st->db,
				      "DROP INDEX events_retx; DROP INDEX events_oom; DROP INDEX events_pagealloc;",
				      NULL, NULL, NULL),
			 SQLITE_OK);
}

/* The chain of kind, or NULL. */
/* ---- network ---- */

/* 20 slow syncs (85 ms, blocked); the first `hit` of them last hit_ns
 * (85 ms when 0) and overlap `per` retransmits of the process's socket
 * each. */
static void build_net_long(struct fx *f, int hit, int per, uint32_t retx_pid, uint64_t hit_ns)
{
	int nslow = 0;

	open_fx(f);
	for (int i = 0; i < STEPS; i++) {
		uint64_t t = T0 + (uint64_t)i * STEP_NS + MS;
		int slow = i % 50 == 25;
		uint64_t d = slow ? 85 * MS : 8 * MS + (uint64_t)(rnd(f) % 2000) * US;

		if (slow && hit_ns && nslow < hit)
			d = hit_ns;
		ev(f, "cuda", "cudaLaunchKernel", t, 20 * US, PID, PID, 0, 0, 0, NULL);
		ev(f, "cuda", "cudaStreamSynchronize", t + 30 * US, d, PID, PID, 0, 0, 0, NULL);
		if (!slow)
			continue;
		off(f, t + 5 * MS, t + d - 5 * MS, "blocked", 0, NULL);
		if (nslow++ < hit)
			for (int k = 0; k < per; k++)
				ev(f, "net", "tcp_retransmit", t + (uint64_t)(10 + 20 * k) * MS, 0, retx_pid, PID + 7, 10, 1, 0,
				   "[fd00::5]:41822 -> [fd00::7]:29500");
	}
	close_fx(f);
}

static void build_net(struct fx *f, int hit, int per, uint32_t retx_pid)
{
	build_net_long(f, hit, per, retx_pid, 0);
}

static void test_network(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	build_net(&f, 20, 3, PID);
	run(&f, &r);
	assert_true(r.count >= 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "network");
	assert_string_equal(c->op, "cudaStreamSynchronize");
	assert_int_equal(c->pid, PID);
	assert_true(c->explained_share > 0.95);
	assert_non_null(strstr(c->summary, "20 of its 20 slow calls overlapped 60 TCP retransmits"));
	assert_non_null(strstr(c->summary, "mostly to [fd00::7]:29500 (60 retransmits"));
	assert_true(has_fix_part(c, "ss -tin dst [fd00::7]:29500"));
	assert_true(has_fix_part(c, "NCCL_SOCKET_IFNAME"));
	assert_true(has_fix_part(c, "mtu"));
	assert_int_equal((int)evidence(c, "retransmits"), 60);
	/* 60 ms apart, never after a timeout (>= 200 ms). */
	assert_int_equal((int)evidence(c, "rto_retransmits"), 0);
	cw_explain_result_free(&r);
	drop_v3_indexes(&f);
	run(&f, &r);
	c = find(&r, CW_KIND_NETWORK);
	assert_non_null(c);
	assert_int_equal((int)evidence(c, "retransmits"), 60);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_network_thresholds(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	/* 6 of 20 slow calls (30 %, above 25 %) are explained. */
	build_net(&f, 6, 1, PID);
	run(&f, &r);
	c = find(&r, CW_KIND_NETWORK);
	assert_non_null(c);
	assert_true(c->explained_share > 0.27 && c->explained_share < 0.33);
	cw_explain_result_free(&r);
	destroy(&f);
	/* 4 of 20 (20 %): below the share every per-op cause needs. */
	build_net(&f, 4, 1, PID);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_NETWORK));
	cw_explain_result_free(&r);
	destroy(&f);
	/* 2 retransmits in 2 calls of 500 ms (40 % of the slow time): below
	 * the 3 retransmits the rule needs; 3 such calls (54 %): enough. */
	build_net_long(&f, 2, 1, PID, 500 * MS);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_NETWORK));
	cw_explain_result_free(&r);
	destroy(&f);
	build_net_long(&f, 3, 1, PID, 500 * MS);
	run(&f, &r);
	c = find(&r, CW_KIND_NETWORK);
	assert_non_null(c);
	assert_true(c->explained_share > 0.5);
	cw_explain_result_free(&r);
	destroy(&f);
	/* Another process's retransmits explain nothing. */
	build_net(&f, 20, 3, 555);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_NETWORK));
	cw_explain_result_free(&r);
	destroy(&f);
}

/* ---- CUDA graphs ---- */

/* `steps` steps of one graph launch each (50 us; every 50th `slow_ns`,
 * preempted for `pre_ns` of it) and an instantiation every `every` steps
 * (0 never) after the first. */
static void build_graph(struct fx *f, int every, int steps, uint64_t slow_ns, uint64_t pre_ns)
{
	open_fx(f);
	ev(f, "graph", "cudaStreamBeginCapture", T0, 5 * US, PID, PID, 0x10, 1 /* thread_local */, 0, NULL);
	ev(f, "graph", "cudaStreamEndCapture", T0 + 10 * US, 300 * US, PID, PID, 0x10, 0, 0, NULL);
	ev(f, "graph", "cudaGraphInstantiate", T0 + 400 * US, 2 * MS, PID, PID, 0xe000, 0xa000, 0, NULL);
	for (int i = 0; i < steps; i++) {
		uint64_t t = T0 + 3 * MS + (uint64_t)i * STEP_NS;
		int slow = i % 50 == 25;
		uint64_t d = slow ? slow_ns : 50 * US + (uint64_t)(rnd(f) % 10) * US;

		if (every && i && i % every == 0) {
			ev(f, "graph", "cudaGraphInstantiate", t, 2 * MS, PID, PID, 0xe000 + i, 0xa000, 0, NULL);
			t += 2100 * US;
		}
		ev(f, "graph", "cudaGraphLaunch", t, d, PID, PID, 0xe000, 0x10, 0, NULL);
		if (slow && pre_ns)
			off(f, t + 100 * US, t + 100 * US + pre_ns, "preempted", 977, "stress-ng");
		ev(f, "cuda", "cudaStreamSynchronize", t + d + 20 * US, 8 * MS + (uint64_t)(rnd(f) % 2000) * US, PID,
		   PID, 0x10, 0, 0, NULL);
	}
	close_fx(f);
}

static void test_graph_churn(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	build_graph(&f, 1, STEPS, 60 * US, 0);
	run(&f, &r);
	assert_true(r.count >= 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "graph_churn");
	assert_string_equal(c->op, "cudaGraphInstantiate");
	assert_int_equal(c->severity, CW_SEV_HIGH);
	assert_true(c->explained_share > 0.99);
	assert_int_equal(c->pid, PID);
	assert_true(c->has_python);
	assert_int_equal(c->py_line, 88);
	assert_non_null(strstr(c->summary, "CUDA graphs are rebuilt in the steady state"));
	assert_non_null(strstr(c->summary, "capture mode thread_local"));
	assert_true(has_fix_part(c, "torch.cuda.CUDAGraph"));
	assert_true(has_fix_part(c, "cudaGraphExecUpdate"));
	assert_int_equal((int)evidence(c, "capture_mode"), 1);
	assert_null(find(&r, CW_KIND_GRAPH_LAUNCH_TAIL));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_graph_churn_thresholds(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	/* One build per 4 launches (0.25 >= 0.2): MEDIUM. */
	build_graph(&f, 4, STEPS, 60 * US, 0);
	run(&f, &r);
	c = find(&r, CW_KIND_GRAPH_CHURN);
	assert_non_null(c);
	assert_true(c->explained_share > 0.23 && c->explained_share < 0.27);
	assert_int_equal(c->severity, CW_SEV_MEDIUM);
	cw_explain_result_free(&r);
	destroy(&f);
	/* One per 6 (0.17 < 0.2): replayed often enough. */
	build_graph(&f, 6, STEPS, 60 * US, 0);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_GRAPH_CHURN));
	cw_explain_result_free(&r);
	destroy(&f);
	/* Every launch rebuilt, but 9 builds in the steady state: too few;
	 * 10: enough. The first 2 s (100 steps) are warm-up. */
	build_graph(&f, 1, 100 + 9, 60 * US, 0);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_GRAPH_CHURN));
	cw_explain_result_free(&r);
	destroy(&f);
	build_graph(&f, 1, 100 + 10, 60 * US, 0);
	run(&f, &r);
	c = find(&r, CW_KIND_GRAPH_CHURN);
	assert_non_null(c);
	assert_int_equal((int)evidence(c, "steady_builds"), 10);
	cw_explain_result_free(&r);
	destroy(&f);
	/* Captured once: no churn. */
	build_graph(&f, 0, STEPS, 60 * US, 0);
	run(&f, &r);
	assert_int_equal(r.count, 0);
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_graph_launch_tail(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	build_graph(&f, 0, STEPS, 4 * MS, 0);
	run(&f, &r);
	assert_int_equal(r.count, 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "graph_launch_tail");
	assert_string_equal(c->op, "cudaGraphLaunch");
	assert_int_equal(c->slow_count, STEPS / 50);
	assert_true(c->explained_share > 0.99);
	assert_non_null(strstr(c->summary, "the graph launches themselves carry the tail"));
	assert_true(has_fix_part(c, "cudaGraphUpload"));
	cw_explain_result_free(&r);
	destroy(&f);
	/* 3.2 of 4 ms preempted: the launch's own share is 20 % < 25 %, and
	 * cpu_preemption names the chain instead. */
	build_graph(&f, 0, STEPS, 4 * MS, 3200 * US);
	run(&f, &r);
	assert_int_equal(r.count, 1);
	assert_string_equal(cw_kind_name(r.chains[0].kind), "cpu_preemption");
	cw_explain_result_free(&r);
	destroy(&f);
	/* 2.8 of 4 ms preempted: 30 % own, still below preemption's 70 %;
	 * the launch rule's own share is what is compared. */
	build_graph(&f, 0, STEPS, 4 * MS, 2800 * US);
	run(&f, &r);
	assert_string_equal(cw_kind_name(r.chains[0].kind), "cpu_preemption");
	cw_explain_result_free(&r);
	destroy(&f);
	/* 0.8 of 4 ms preempted: 80 % own time, graph_launch_tail wins. */
	build_graph(&f, 0, STEPS, 4 * MS, 800 * US);
	run(&f, &r);
	c = find(&r, CW_KIND_GRAPH_LAUNCH_TAIL);
	assert_non_null(c);
	assert_true(c->explained_share > 0.77 && c->explained_share < 0.83);
	cw_explain_result_free(&r);
	destroy(&f);
}

/* ---- host memory ---- */

/* cudaHostAlloc every step (1 ms); every 50th takes 30 ms, with the
 * thread's own page-allocation record over it at `rate` pages/s. */
static void build_host(struct fx *f, uint64_t rate)
{
	open_fx(f);
	for (int i = 0; i < STEPS; i++) {
		uint64_t t = T0 + MS + (uint64_t)i * STEP_NS;
		int slow = i % 50 == 25;
		uint64_t d = slow ? 30 * MS : MS + (uint64_t)(rnd(f) % 100) * US;

		ev(f, "cuda", "cudaHostAlloc", t, d, PID, PID, 0x7ffd0000, 64 << 20, 0, NULL);
		if (slow) {
			struct cw_event_row pa = {
				.mono_ns = t, .wall_ns = t + OFF, .pid = PID, .tid = PID, .comm = "python",
				.source = "mem", .op = "page_alloc", .device = -1, .nargs = 3,
				.args = {(int64_t)(rate * 30 / 1000), 30 * MS, 0},
			};
			assert_int_equal(cw_writer_event(f->w, &pa), 0);
		}
		ev(f, "cuda", "cudaStreamSynchronize", t + d + 20 * US, 8 * MS + (uint64_t)(rnd(f) % 2000) * US, PID,
		   PID, 0, 0, 0, NULL);
	}
	close_fx(f);
}

static void test_host_memory(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	build_host(&f, 400000);
	run(&f, &r);
	assert_int_equal(r.count, 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "host_memory");
	assert_string_equal(c->op, "cudaHostAlloc");
	assert_true(c->explained_share > 0.99);
	assert_non_null(strstr(c->summary, "pinned host allocations by thread 100 (python)"));
	assert_non_null(strstr(c->summary, "20 while the thread itself allocated up to 400000 pages/s"));
	assert_true(has_fix_part(c, "pinned pool"));
	assert_true(has_fix_part(c, "memory.max"));
	cw_explain_result_free(&r);
	drop_v3_indexes(&f);
	run(&f, &r);
	c = find(&r, CW_KIND_HOST_MEMORY);
	assert_non_null(c);
	assert_true(c->explained_share > 0.99);
	cw_explain_result_free(&r);
	destroy(&f);
	/* 26,000 pages/s: above the 25,000 threshold. */
	build_host(&f, 26000);
	run(&f, &r);
	assert_non_null(find(&r, CW_KIND_HOST_MEMORY));
	cw_explain_result_free(&r);
	destroy(&f);
	/* 24,000 pages/s and no pressure second: not host memory. */
	build_host(&f, 24000);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_HOST_MEMORY));
	cw_explain_result_free(&r);
	destroy(&f);
}

/* ---- OOM kill ---- */

static void build_oom(struct fx *f, uint32_t victim, uint32_t trigger, uint64_t trigger_cgroup)
{
	open_fx(f);
	for (int i = 0; i < STEPS; i++) {
		uint64_t t = T0 + MS + (uint64_t)i * STEP_NS;

		ev(f, "cuda", "cudaStreamSynchronize", t, 8 * MS + (uint64_t)(rnd(f) % 2000) * US, PID, PID, 0, 0, 0,
		   NULL);
		if (i == 900) {
			struct cw_event_row m = {
				.mono_ns = t + 10 * MS, .wall_ns = t + 10 * MS + OFF, .pid = PID, .tid = PID,
				.comm = "python", .source = "cuda", .op = "cudaHostAlloc", .device = 0,
				.py_stack_id = f->py, .has_ret = 1, .has_bytes = 1, .bytes = 512 << 20,
			};
			assert_int_equal(cw_writer_event(f->w, &m), 0);
		}
		if (i == 950) {
			/* Device memory: never part of a host OOM's trend. */
			struct cw_event_row d = {
				.mono_ns = t + 10 * MS, .wall_ns = t + 10 * MS + OFF, .pid = PID, .tid = PID,
				.comm = "python", .source = "cuda", .op = "cudaMalloc", .device = 0,
				.has_ret = 1, .has_bytes = 1, .bytes = 1024 << 20,
			};
			assert_int_equal(cw_writer_event(f->w, &d), 0);
		}
		if (i % 50 == 0) {
			/* 10 MiB/s, then 40 MiB/s over the last 10 s. */
			uint64_t mib = i >= 500 ? 40 : 10;
			struct cw_event_row pa = {
				.mono_ns = t, .wall_ns = t + OFF, .pid = PID, .tid = PID, .comm = "python",
				.source = "mem", .op = "page_alloc", .device = -1, .nargs = 2,
				.args = {(int64_t)((mib << 20) / 4096), SEC},
			};
			assert_int_equal(cw_writer_event(f->w, &pa), 0);
		}
		if (i == 990) {
			struct cw_event_row k = {
				.mono_ns = t + 12 * MS, .wall_ns = t + 12 * MS + OFF, .pid = trigger, .tid = trigger,
				.cgroup_id = trigger_cgroup, .comm = "python", .source = "mem", .op = "oom_kill",
				.device = -1, .nargs = 3, .detail = victim == PID ? "python" : "stress-ng",
				.args = {(int64_t)((7904ULL << 20) / 4096), 8LL << 30, victim},
				.has_bytes = 1, .bytes = 21LL << 30,
			};
			assert_int_equal(cw_writer_event(f->w, &k), 0);
		}
	}
	close_fx(f);
}

static void test_oom_kill(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	build_oom(&f, PID, PID, CGROUP);
	run(&f, &r);
	assert_int_equal(r.count, 1);
	c = &r.chains[0];
	assert_string_equal(cw_kind_name(c->kind), "oom_kill");
	assert_int_equal(c->severity, CW_SEV_HIGH);
	assert_int_equal(c->pid, PID);
	assert_string_equal(c->comm, "python");
	assert_true(c->explained_share == 1);
	assert_non_null(strstr(c->summary, "killed pid 100 (python) with RSS 7904 MiB, its cgroup's limit 8192 MiB"));
	/* 10 records of 40 MiB in the last 10 s, 10 of 10 MiB in the 20 s before. */
	assert_non_null(strstr(c->summary, "the victim allocated 400 MiB of host pages (100 MiB in the 20 s before)"));
	assert_non_null(strstr(c->summary, "and 512 MiB through 1 pinned or managed host allocation calls"));
	assert_true(c->has_python);
	assert_string_equal(c->py_file, "train.py");
	assert_true(has_fix_part(c, "memory.max"));
	assert_true(has_fix_part(c, "above 11856 MiB"));
	assert_true(has_fix_part(c, "loss.item()"));
	assert_int_equal((int)evidence(c, "neighbour"), 0);
	cw_explain_result_free(&r);
	drop_v3_indexes(&f);
	run(&f, &r);
	assert_int_equal(r.count, 1);
	c = &r.chains[0];
	assert_non_null(strstr(c->summary, "the victim allocated 400 MiB of host pages (100 MiB in the 20 s before)"));
	cw_explain_result_free(&r);
	destroy(&f);
}

static void test_oom_kill_scope(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	/* A stranger killed by a stranger's allocation: not ours. */
	build_oom(&f, 999, 998, 77);
	run(&f, &r);
	assert_int_equal(r.count, 0);
	cw_explain_result_free(&r);
	destroy(&f);
	/* A stranger killed while a task of the trainer's cgroup allocated:
	 * a neighbour. */
	build_oom(&f, 999, 998, CGROUP);
	run(&f, &r);
	c = find(&r, CW_KIND_OOM_KILL);
	assert_non_null(c);
	assert_int_equal(c->pid, 999);
	assert_non_null(strstr(c->summary, "a neighbour of the traced processes"));
	assert_int_equal((int)evidence(c, "neighbour"), 1);
	cw_explain_result_free(&r);
	destroy(&f);
	/* A stranger killed by the trainer's allocation. */
	build_oom(&f, 999, PID, 0);
	run(&f, &r);
	assert_non_null(find(&r, CW_KIND_OOM_KILL));
	cw_explain_result_free(&r);
	destroy(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_network),
		cmocka_unit_test(test_network_thresholds),
		cmocka_unit_test(test_graph_churn),
		cmocka_unit_test(test_graph_churn_thresholds),
		cmocka_unit_test(test_graph_launch_tail),
		cmocka_unit_test(test_host_memory),
		cmocka_unit_test(test_oom_kill),
		cmocka_unit_test(test_oom_kill_scope),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
