/* inference_latency (src/analysis/rules/inference_latency.c) end to end on
 * stores written through the writer: requests of a route with a handful
 * slow during CPU preemption (named with the culprit), slow requests
 * just below the factor and under the floor (no chain), queueing on a
 * one-slot server, a route judged against the SLOs, a small incident with
 * no cause (not named), and the judgement of streamed answers (a long
 * answer is not slow, a stall in it is). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/requests.h"
#include "store/store.h"
#include "store/writer.h"
#include "rule_assert.h"

#define OFF (1700000000ULL * SEC)
#define PID 4821

struct fx {
	char path[64];
	struct cw_store *st;
	struct cw_writer *w;
	uint64_t conn;
};

static void open_fx(struct fx *f)
{
	struct cw_session_info si = {.node = "n1", .kind = "test", .started_wall_ns = T0 + OFF,
				     .mono_to_wall_ns = OFF, .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_writer_opts wo = {.node = "n1"};
	struct cw_process_row pr = {.pid = PID, .comm = "llama-server", .rank = -1, .local_rank = -1, .world_size = -1};
	struct cw_snapshot_row sn = {.cpu_pct = 99, .mem_pct = 30, .load1 = 6, .ncpu = 4};
	char err[256];
	int64_t sid;
	int fd;

	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "/tmp/cw-test-inference-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_session_begin(f->st, &si, &sid), 0);
	wo.session_id = sid;
	assert_int_equal(cw_writer_new(&f->w, f->st, &wo), 0);
	assert_int_equal(cw_writer_process(f->w, &pr), 0);
	for (int i = 0; i < 70; i++) {
		sn.mono_ns = T0 + (uint64_t)i * SEC;
		sn.wall_ns = sn.mono_ns + OFF;
		assert_int_equal(cw_writer_snapshot(f->w, &sn), 0);
	}
}

/* A request read by thread tid at mono t: ttft (-1 none), duration. */
static void req(struct fx *f, const char *method, const char *path, uint32_t tid, uint64_t t, int64_t ttft,
		uint64_t dur, int streamed, int64_t itl_max)
{
	struct cw_request_row r = {
		.pid = PID, .tid = tid, .resp_tid = tid, .comm = "llama-server", .conn_id = ++f->conn, .port = 8080,
		.start_mono_ns = t, .wall_ns = t + OFF, .duration_ns = dur, .ttft_ns = ttft, .method = method,
		.path = path, .status = 200, .bytes_in = 200, .bytes_out = 900, .streamed = streamed,
		.body_events = streamed ? 20 : 1, .itl_max_ns = itl_max, .itl_mean_ns = itl_max, .end = "complete",
	};

	assert_int_equal(cw_writer_request(f->w, &r), 0);
}

static void preempt(struct fx *f, uint32_t tid, uint64_t s, uint64_t e)
{
	struct cw_offcpu_row r = {
		.pid = PID, .tid = tid, .comm = "llama-server", .start_mono_ns = s, .end_mono_ns = e, .wall_ns = s + OFF,
		.reason = "preempted", .cpu = 1, .by_pid = 977, .by_tid = 977, .by_comm = "stress-ng-cpu",
		.by_cgroup_id = 55,
	};

	assert_int_equal(cw_writer_offcpu(f->w, &r), 0);
}

static void run(struct fx *f, struct cw_explain_result *r)
{
	struct cw_explain_opts o = {0};

	assert_int_equal(cw_writer_free(f->w), 0);
	f->w = NULL;
	assert_int_equal(cw_explain_run(f->st->db, &o, r), 0);
}

static void close_fx(struct fx *f, struct cw_explain_result *r)
{
	cw_explain_result_free(r);
	cw_store_close(f->st);
	remove_store_files(f->path);
}

/* 40 requests of POST /v1/completions a second apart (TTFT 20 ms, 100 ms
 * total); three from t=20 s have TTFT slow_ttft, and the main thread
 * (tid = pid) is preempted through them when hog. */
static void route_with_slow(struct fx *f, uint64_t slow_ttft, int hog)
{
	for (int i = 0; i < 40; i++) {
		uint64_t t = T0 + (uint64_t)i * SEC + 100 * MS;
		int slow = i >= 20 && i < 23;
		uint64_t ttft = slow ? slow_ttft : 20 * MS;

		req(f, "POST", "/v1/completions", 4830, t, (int64_t)ttft, ttft + 80 * MS, 0, -1);
		if (slow && hog)
			preempt(f, PID, t + MS, t + ttft - MS);
	}
}

static void test_preemption_named(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	open_fx(&f);
	route_with_slow(&f, 900 * MS, 1);
	run(&f, &r);
	assert_int_equal(r.requests_analysed, 40);
	assert_non_null(c = find(&r, CW_KIND_INFERENCE_LATENCY));
	assert_string_equal(c->op, "POST /v1/completions");
	assert_string_equal(c->because, "cpu_preemption");
	assert_int_equal(c->count, 40);
	assert_int_equal(c->slow_count, 3);
	assert_int_equal(c->tid, PID);
	assert_true(c->culprit.known);
	assert_int_equal(c->culprit.pid, 977);
	assert_int_equal(c->culprit.cpu, 1);
	/* 898 ms of each 900 ms TTFT preempted */
	near(c->explained_share, 3.0 * 898 / 2940); /* the whole request was slow (TTFT and duration) */
	contains(c->summary, "POST /v1/completions: 3 requests slow (TTFT p50 900.0ms vs 20.0ms usual; worst at");
	contains(c->summary, "TTFT 900.0ms, 980.0ms total): llama-server's thread 4821 was preempted for 92 % of it,"
			     " 100 % of that by stress-ng-cpu (pid 977, cpu 1)");
	assert_true(has_fix(c, "renice +19 -p 977"));
	assert_true(has_fix(c, "taskset -acp 0,2-3 4821  # keep the server off cpu 1"));
	assert_int_equal(c->nrequests, 3);
	assert_int_equal(c->requests[0].ttft_ns, (int64_t)(900 * MS));
	assert_string_equal(c->requests[0].why, "ttft");
	assert_int_equal(c->severity, CW_SEV_HIGH); /* over the 300 ms TTFT objective, 92 % explained */
	near(evidence(c, "slo_breaches"), 3);
	assert_int_equal(c->incident_from_ns, T0 + 20 * SEC + 100 * MS + OFF);
	close_fx(&f, &r);
}

static void test_below_factor_or_floor(void **state)
{
	struct fx f;
	struct cw_explain_result r;

	(void)state;
	/* 2.9x the route's 20 ms median: not slow, whatever the CPU did */
	open_fx(&f);
	route_with_slow(&f, 58 * MS, 1);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_INFERENCE_LATENCY));
	close_fx(&f, &r);
	/* 3x, but under the 50 ms floor (a 10 ms route's 30-45 ms requests) */
	open_fx(&f);
	for (int i = 0; i < 40; i++)
		req(&f, "POST", "/v1/embeddings", 4830, T0 + (uint64_t)i * SEC, -1, i >= 20 && i < 23 ? 45 * MS : 10 * MS,
		    0, -1);
	preempt(&f, PID, T0 + 20 * SEC, T0 + 20 * SEC + 40 * MS);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_INFERENCE_LATENCY));
	close_fx(&f, &r);
}

/* A one-slot server: three requests arrive together; each waits for the
 * ones before it to be answered. No off-CPU time: queueing. */
static void test_queueing(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	open_fx(&f);
	for (int i = 0; i < 30; i++)
		req(&f, "POST", "/completion", 4830, T0 + (uint64_t)i * SEC, 30 * MS, 400 * MS, 0, -1);
	/* at 40 s: answered one after another, 400 ms each */
	for (int k = 0; k < 4; k++)
		req(&f, "POST", "/completion", 4831 + k, T0 + 40 * SEC + (uint64_t)k * MS,
		    (int64_t)((uint64_t)k * 400 * MS + 30 * MS), (uint64_t)(k + 1) * 400 * MS, 0, -1);
	run(&f, &r);
	assert_non_null(c = find(&r, CW_KIND_INFERENCE_LATENCY));
	assert_string_equal(c->because, "queueing");
	assert_int_equal(c->slow_count, 3);
	/* waited 399, 799 and 1199 ms of slow parts 430, 1200 and 1600 ms (the
	 * last two are 3x the route's 400 ms too: slow to their end) */
	near(c->explained_share, 2397.0 / 3230);
	contains(c->summary, "while earlier requests were answered (up to 4 in flight): the server answers one at a time");
	near(evidence(c, "max_in_flight"), 4);
	assert_true(has_fix_part(c, "--parallel"));
	close_fx(&f, &r);
}

/* Too few requests for a baseline: the objectives judge (TTFT 300 ms). */
static void test_slo_route(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	open_fx(&f);
	for (int i = 0; i < 5; i++) {
		uint64_t t = T0 + (uint64_t)i * 10 * SEC;
		uint64_t ttft = i == 3 ? 1500 * MS : i == 4 ? 250 * MS : 20 * MS;

		req(&f, "POST", "/v1/chat/completions", 4830, t, (int64_t)ttft, ttft + 50 * MS, 0, -1);
		if (i == 3)
			preempt(&f, PID, t, t + 1400 * MS);
	}
	run(&f, &r);
	assert_non_null(c = find(&r, CW_KIND_INFERENCE_LATENCY));
	assert_int_equal(c->slow_count, 1); /* 250 ms is within the objective */
	assert_true(c->route_baseline_slo);
	contains(c->summary, "TTFT p50 1.50s, over the 300.0ms objective");
	close_fx(&f, &r);
}

/* One slow request with nothing measured during it, less than a second
 * beyond normal: not worth a chain. Three of them are. */
static void test_unexplained(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;

	(void)state;
	open_fx(&f);
	route_with_slow(&f, 900 * MS, 0);
	run(&f, &r);
	assert_non_null(c = find(&r, CW_KIND_INFERENCE_LATENCY));
	assert_string_equal(c->because, "unknown");
	assert_int_equal(c->severity, CW_SEV_LOW);
	close_fx(&f, &r);
	open_fx(&f);
	for (int i = 0; i < 40; i++)
		req(&f, "POST", "/v1/completions", 4830, T0 + (uint64_t)i * SEC, 20 * MS, i == 20 ? 900 * MS : 100 * MS, 0,
		    -1);
	run(&f, &r);
	assert_null(find(&r, CW_KIND_INFERENCE_LATENCY));
	close_fx(&f, &r);
}

/* The engine thread (another thread of the server) sat in 1.45 s
 * synchronizations through the slow requests: the GPU call is named, with
 * its Python line. */
static void test_cuda_call(void **state)
{
	struct fx f;
	struct cw_explain_result r;
	const struct cw_chain *c;
	int64_t py;

	(void)state;
	open_fx(&f);
	py = cw_writer_intern_pystack(f.w, 77, 1, "[]", "/srv/engine.py", 120, "step", 0);
	assert_true(py > 0);
	route_with_slow(&f, 1500 * MS, 0);
	/* rows in time order: 5 ms syncs every 500 ms, 1.45 s ones in the slow requests */
	for (uint64_t t = T0; t < T0 + 40 * SEC; t += 500 * MS) {
		int k = (int)((t - T0) / SEC);
		int slow = k >= 20 && k < 23 && (t - T0) % SEC == 0;
		struct cw_event_row e = {
			.mono_ns = slow ? t + 120 * MS : t, .duration_ns = slow ? 1450 * MS : 5 * MS, .pid = PID, .tid = 4825,
			.comm = "llama-server", .source = "cuda", .op = "cudaStreamSynchronize", .device = 0,
			.py_stack_id = py, .has_ret = 1,
		};

		if (k >= 20 && k < 23 && !slow)
			continue;
		e.wall_ns = e.mono_ns + OFF;
		assert_int_equal(cw_writer_event(f.w, &e), 0);
	}
	run(&f, &r);
	assert_non_null(c = find(&r, CW_KIND_INFERENCE_LATENCY));
	assert_string_equal(c->because, "cuda_call");
	assert_int_equal(c->tid, 4825);
	assert_true(c->has_python);
	assert_int_equal(c->py_line, 120);
	/* the requests (1.58 s each, a second apart) cover 20.1-23.68 s, the
	 * syncs 20.12-23.57 s */
	near(c->explained_share, 3450.0 / 3580);
	contains(c->summary, "the server was inside slow GPU calls for 96 % of it, the longest cudaStreamSynchronize 1.45s"
			     " on thread 4825 at engine.py:120");
	assert_true(has_fix_part(c, "cudaStreamSynchronize waits for at engine.py:120"));
	close_fx(&f, &r);
}

/* Streamed answers are judged by TTFT and by their largest gap between
 * tokens, never by their length. */
static void test_streamed_judgement(void **state)
{
	struct cw_req v[30];
	struct cw_req_set s = {.reqs = v, .n = 30};

	(void)state;
	memset(v, 0, sizeof(v));
	for (int i = 0; i < 30; i++) {
		v[i].id = i + 1;
		v[i].mono_ns = (uint64_t)i * SEC;
		snprintf(v[i].method, sizeof(v[i].method), "POST");
		snprintf(v[i].path, sizeof(v[i].path), "/v1/chat/completions");
		v[i].streamed = 1;
		v[i].ttft_ns = 40 * MS;
		v[i].itl_max_ns = 15 * MS;
		v[i].dur_ns = 500 * MS;
	}
	v[10].dur_ns = 20 * SEC;           /* a long answer, normal gaps */
	v[11].itl_max_ns = 2 * SEC;        /* a 2 s stall mid-answer */
	v[11].dur_ns = 2500 * MS;
	v[12].itl_max_ns = 44 * MS;        /* 2.9x the usual gap: not slow */
	assert_int_equal(cw_req_judge(&s), 0);
	assert_int_equal(s.nroutes, 1);
	assert_int_equal(s.routes[0].itl_max_p50_ns, 15 * MS);
	assert_int_equal(v[10].slow, 0);
	assert_int_equal(v[11].slow, CW_REQ_SLOW_ITL);
	assert_int_equal(v[11].excess_ns, 2 * SEC - 15 * MS);
	assert_int_equal(v[12].slow, 0);
	assert_int_equal(s.routes[0].nslow, 1);
	free(s.routes);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_preemption_named),
		cmocka_unit_test(test_below_factor_or_floor),
		cmocka_unit_test(test_queueing),
		cmocka_unit_test(test_cuda_call),
		cmocka_unit_test(test_slo_route),
		cmocka_unit_test(test_unexplained),
		cmocka_unit_test(test_streamed_judgement),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
