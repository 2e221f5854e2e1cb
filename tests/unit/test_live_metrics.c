/* Live /metrics registry: bucket bounds, per-process folding past the
 * top-N cap, merging of processes that share a name, error and off-CPU
 * accounting, and the stall gauge only for live processes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/otlp.h"
#include "metrics/live_metrics.h"

static void call(struct cw_live_metrics *m, uint32_t pid, const char *comm, const char *op,
		 uint64_t mono, uint64_t dur, int64_t ret)
{
	struct cw_event_row r;

	memset(&r, 0, sizeof(r));
	r.pid = r.tid = pid;
	r.comm = comm;
	r.source = "cuda";
	r.op = op;
	r.mono_ns = mono;
	r.duration_ns = dur;
	r.has_ret = 1;
	r.ret = ret;
	cw_live_metrics_event(m, &r);
}

static char *render(struct cw_live_metrics *m, uint64_t now)
{
	struct strbuf sb;

	strbuf_init(&sb, 0);
	assert_int_equal(cw_live_metrics_render(m, "n1", now, &sb), 0);
	return strbuf_detach(&sb);
}

/* Failing calls by code and family; states (cudaErrorNotReady) are not
 * failures; a fifth distinct code folds into "other"; equal label sets of
 * two pids folded into "other" merge their codes. */
static void test_failures_by_code(void **state)
{
	struct cw_live_metrics *m;
	char *t;

	(void)state;
	assert_int_equal(cw_live_metrics_new(&m, 1), 0);
	for (int i = 0; i < 3; i++)
		call(m, 100, "train", "cudaMalloc", 10 + i, 2000, 2);
	call(m, 100, "train", "cudaMalloc", 20, 2000, 100);
	call(m, 100, "train", "cudaStreamQuery", 21, 2000, 600);
	static const int codes[] = {700, 2, 701, 702, 719};

	for (int c = 0; c < 5; c++)
		call(m, 100, "train", "cudaMemcpy", 30 + c, 2000, codes[c]);
	call(m, 200, "serve", "cudaMalloc", 40, 2000, 2); /* folded: max_processes 1 */
	call(m, 300, "other", "cudaMalloc", 41, 2000, 2);
	call(m, 200, "serve", "cudaMalloc", 42, 2000, 0);
	call(m, 200, "serve", "cudaMalloc", 43, 2000, 0);
	call(m, 300, "other", "cudaMalloc", 44, 2000, 0);
	t = render(m, 1000);
	assert_non_null(strstr(t, "# TYPE causeway_op_failures_total counter\n"));
	assert_non_null(strstr(t, "causeway_op_failures_total{node=\"n1\",process=\"train\",source=\"cuda\","
				  "op=\"cudaMalloc\",error=\"cudaErrorMemoryAllocation\",family=\"out_of_memory\"} 3\n"));
	assert_non_null(strstr(t, "op=\"cudaMalloc\",error=\"cudaErrorNoDevice\",family=\"no_device\"} 1\n"));
	assert_null(strstr(t, "op=\"cudaStreamQuery\",error="));
	assert_non_null(strstr(t, "causeway_op_errors_total{node=\"n1\",process=\"train\",source=\"cuda\","
				  "op=\"cudaStreamQuery\"} 1\n"));
	assert_non_null(strstr(t, "op=\"cudaMemcpy\",error=\"other\",family=\"other\"} 1\n"));
	assert_non_null(strstr(t, "op=\"cudaMemcpy\",error=\"cudaErrorIllegalAddress\",family=\"kernel_fault\"} 1\n"));
	assert_non_null(strstr(t, "process=\"other\",source=\"cuda\",op=\"cudaMalloc\","
				  "error=\"cudaErrorMemoryAllocation\",family=\"out_of_memory\"} 2\n"));
	free(t);
	cw_live_metrics_free(m);
}

static void test_buckets(void **state)
{
	(void)state;
	assert_int_equal(cw_prom_bucket(0), 0);
	assert_int_equal(cw_prom_bucket(1023), 0);
	assert_int_equal(cw_prom_bucket(1024), 1); /* a bound itself goes up */
	assert_int_equal(cw_prom_bucket(2047), 1);
	assert_int_equal(cw_prom_bucket(1024ULL << 25), CW_PROM_BUCKETS);
	assert_int_equal(cw_prom_bucket((1024ULL << 25) - 1), CW_PROM_BUCKETS - 1);
	assert_true(cw_prom_bucket_le(0) == 1.024e-6);
}

/* Calls folded in the kernel (summary capture) render as the same calls
 * one by one would: every bucket, the count, the sum, the process's
 * calls. Durations on both sides of Prometheus bounds (2^k us); a pid
 * above any pid_max, so no idle gauge depends on a live process. */
static void test_folded_as_calls(void **state)
{
	static const uint64_t d[] = {7, 900, 1023, 1024, 1025, 2047, 2048, 3000, 4095, 4096, 1 << 20, (1 << 20) + 1,
				     5000000, 70000000000ULL};
	struct cw_live_metrics *a, *b;
	struct cw_hist h;
	char *ta, *tb;

	(void)state;
	assert_int_equal(cw_live_metrics_new(&a, 4), 0);
	assert_int_equal(cw_live_metrics_new(&b, 4), 0);
	cw_hist_reset(&h);
	call(a, 4194305, "train", "cudaMalloc", 1, 500, 0);
	call(b, 4194305, "train", "cudaMalloc", 1, 500, 0);
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		call(a, 4194305, "train", "cudaMalloc", 10 + i, d[i], 0);
		cw_hist_add(&h, d[i]);
	}
	cw_live_metrics_folded(b, 4194305, "cuda", "cudaMalloc", &h);
	ta = render(a, 1000);
	tb = render(b, 1000);
	assert_string_equal(ta, tb);
	assert_non_null(strstr(tb, "op=\"cudaMalloc\"} 15\n"));
	free(ta);
	free(tb);
	cw_live_metrics_free(a);
	cw_live_metrics_free(b);
}

static void test_histogram_lines(void **state)
{
	struct cw_live_metrics *m;
	char *t;

	(void)state;
	assert_int_equal(cw_live_metrics_new(&m, 4), 0);
	call(m, 100, "train", "cudaMalloc", 10, 1500, 0);      /* bucket 1 */
	call(m, 100, "train", "cudaMalloc", 20, 3000000, 2);   /* bucket 12, an error */
	t = render(m, 1000);
	assert_non_null(strstr(t, "causeway_op_duration_seconds_bucket{node=\"n1\",process=\"train\","
				  "source=\"cuda\",op=\"cudaMalloc\",le=\"1.024e-06\"} 0\n"));
	assert_non_null(strstr(t, "process=\"train\",source=\"cuda\",op=\"cudaMalloc\","
				  "le=\"2.048e-06\"} 1\n"));
	assert_non_null(strstr(t, "op=\"cudaMalloc\",le=\"0.004194304\"} 2\n"));
	assert_non_null(strstr(t, "op=\"cudaMalloc\",le=\"+Inf\"} 2\n"));
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"train\","
				  "source=\"cuda\",op=\"cudaMalloc\"} 2\n"));
	assert_non_null(strstr(t, "causeway_op_duration_seconds_sum{node=\"n1\",process=\"train\","
				  "source=\"cuda\",op=\"cudaMalloc\"} 0.0030015\n"));
	assert_non_null(strstr(t, "causeway_op_errors_total{node=\"n1\",process=\"train\","
				  "source=\"cuda\",op=\"cudaMalloc\"} 1\n"));
	free(t);
	cw_live_metrics_free(m);
}

static void test_top_n_and_same_name(void **state)
{
	struct cw_live_metrics *m;
	char *t;
	uint32_t pid;

	(void)state;
	assert_int_equal(cw_live_metrics_new(&m, 2), 0);
	/* Two busy processes named "w" (merged in the histograms), then five
	 * quiet ones folded into "other". */
	for (int i = 0; i < 10; i++) {
		call(m, 10, "w", "cudaFree", 1, 100, 0);
		call(m, 11, "w", "cudaFree", 1, 100, 0);
	}
	for (pid = 20; pid < 25; pid++)
		call(m, pid, "quiet", "cudaFree", 1, 100, 0);
	t = render(m, 0);
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"w\","
				  "source=\"cuda\",op=\"cudaFree\"} 20\n"));
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"other\","
				  "source=\"cuda\",op=\"cudaFree\"} 5\n"));
	assert_null(strstr(t, "process=\"quiet\""));
	free(t);
	cw_live_metrics_free(m);
}

static void test_offcpu_and_idle(void **state)
{
	struct cw_live_metrics *m;
	struct cw_offcpu_row o;
	uint32_t me = (uint32_t)getpid();
	char want[256], *t;

	(void)state;
	assert_int_equal(cw_live_metrics_new(&m, 0), 0);
	call(m, me, "self", "cudaMalloc", 1000000000ULL, 500000000ULL, 0);
	/* A dead pid: counted, but never reported as stalled. */
	call(m, 999999999u, "gone", "cudaMalloc", 1, 1, 0);
	memset(&o, 0, sizeof(o));
	o.pid = o.tid = me;
	o.comm = "self";
	o.start_mono_ns = 100;
	o.end_mono_ns = 100 + 250000000ULL;
	o.reason = "preempted";
	cw_live_metrics_offcpu(m, &o);
	o.reason = "blocked";
	o.end_mono_ns = 100 + 1000000000ULL;
	cw_live_metrics_offcpu(m, &o);
	t = render(m, 4000000000ULL);
	snprintf(want, sizeof(want),
		 "causeway_process_cuda_idle_seconds{node=\"n1\",pid=\"%u\",process=\"self\"} 2.500\n",
		 me);
	assert_non_null(strstr(t, want));
	assert_null(strstr(t, "causeway_process_cuda_idle_seconds{node=\"n1\",pid=\"999999999\""));
	snprintf(want, sizeof(want),
		 "causeway_offcpu_seconds_total{node=\"n1\",process=\"self\",pid=\"%u\","
		 "reason=\"preempted\"} 0.25\n", me);
	assert_non_null(strstr(t, want));
	snprintf(want, sizeof(want),
		 "causeway_offcpu_seconds_total{node=\"n1\",process=\"self\",pid=\"%u\","
		 "reason=\"blocked\"} 1\n", me);
	assert_non_null(strstr(t, want));
	free(t);
	cw_live_metrics_free(m);
}

/* Tenant labels: a named process whose cgroup trace identified carries
 * container (12 characters), pod and namespace on every per-process
 * family; two processes of one name in two tenants stay two series; a
 * process of an unnamed cgroup, and the "other" fold, carry none; past
 * CW_LIVE_MAX_TENANTS cgroups nothing more is remembered. */
static void test_tenant_labels(void **state)
{
	struct cw_live_metrics *m;
	struct cw_offcpu_row o;
	struct cw_event_row r;
	uint32_t me = (uint32_t)getpid();
	char want[512], *t;

	(void)state;
	assert_int_equal(cw_live_metrics_new(&m, 3), 0);
	memset(&r, 0, sizeof(r));
	r.source = "cuda";
	r.op = "cudaMalloc";
	r.duration_ns = 100;
	r.mono_ns = 1000000000ULL;
	r.comm = "python";
	for (int i = 0; i < 5; i++) {
		r.pid = r.tid = me;
		r.cgroup_id = 11;
		cw_live_metrics_event(m, &r);
		r.pid = r.tid = 4242;
		r.cgroup_id = 22;
		cw_live_metrics_event(m, &r);
	}
	r.pid = r.tid = 4343; /* no identity for cgroup 33 */
	r.cgroup_id = 33;
	cw_live_metrics_event(m, &r);
	cw_live_metrics_event(m, &r);
	r.pid = r.tid = 4444; /* folded into "other" */
	r.cgroup_id = 11;
	cw_live_metrics_event(m, &r);
	cw_live_metrics_tenant(m, 11, "3f2b9c0d1e4a5b6c7d8e9f00112233445566778899aabbccddeeff0011223344", "trainer-0",
			       "ml");
	cw_live_metrics_tenant(m, 22, "slurm-job-4242", "", NULL);
	cw_live_metrics_tenant(m, 33, "", "", ""); /* nothing known: ignored */
	memset(&o, 0, sizeof(o));
	o.pid = o.tid = me;
	o.comm = "python";
	o.start_mono_ns = 100;
	o.end_mono_ns = 100 + 250000000ULL;
	o.reason = "preempted";
	cw_live_metrics_offcpu(m, &o);
	t = render(m, 4000000000ULL);
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"python\","
				  "container=\"3f2b9c0d1e4a\",pod=\"trainer-0\",namespace=\"ml\","
				  "source=\"cuda\",op=\"cudaMalloc\"} 5\n"));
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"python\","
				  "container=\"slurm-job-4242\",source=\"cuda\",op=\"cudaMalloc\"} 5\n"));
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"python\","
				  "source=\"cuda\",op=\"cudaMalloc\"} 2\n"));
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"other\","
				  "source=\"cuda\",op=\"cudaMalloc\"} 1\n"));
	assert_non_null(strstr(t, "causeway_op_errors_total{node=\"n1\",process=\"python\","
				  "container=\"3f2b9c0d1e4a\",pod=\"trainer-0\",namespace=\"ml\","));
	snprintf(want, sizeof(want),
		 "causeway_process_cuda_idle_seconds{node=\"n1\",pid=\"%u\",process=\"python\","
		 "container=\"3f2b9c0d1e4a\",pod=\"trainer-0\",namespace=\"ml\"} 3.000\n", me);
	assert_non_null(strstr(t, want));
	snprintf(want, sizeof(want),
		 "causeway_offcpu_seconds_total{node=\"n1\",process=\"python\",container=\"3f2b9c0d1e4a\","
		 "pod=\"trainer-0\",namespace=\"ml\",pid=\"%u\",reason=\"preempted\"} 0.25\n", me);
	assert_non_null(strstr(t, want));
	free(t);
	/* OTLP data points carry the same labels as attributes. */
	t = cw_otlp_metrics_payload("/nonexistent/cw.db", "n1", m, 1, 2);
	assert_non_null(t);
	assert_non_null(strstr(t, "{\"key\":\"process\",\"value\":{\"stringValue\":\"python\"}},{\"key\":"
				  "\"container\",\"value\":{\"stringValue\":\"3f2b9c0d1e4a\"}},{\"key\":\"pod\","
				  "\"value\":{\"stringValue\":\"trainer-0\"}},{\"key\":\"namespace\",\"value\":"
				  "{\"stringValue\":\"ml\"}}"));
	free(t);
	/* Label values are escaped; the table is capped. */
	cw_live_metrics_tenant(m, 22, "", "a\"b", "x\\y"); /* a known cgroup is updated */
	for (uint64_t id = 1000; id < 1000 + CW_LIVE_MAX_TENANTS; id++)
		cw_live_metrics_tenant(m, id, "0123456789abcdef", "p", "n");
	r.pid = r.tid = 4545;
	r.cgroup_id = 99999;
	r.comm = "late";
	for (int i = 0; i < 10; i++)
		cw_live_metrics_event(m, &r);
	cw_live_metrics_tenant(m, 99999, "fedcba9876543210", "late-pod", "n");
	t = render(m, 4000000000ULL);
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"late\",source="));
	assert_null(strstr(t, "late-pod"));
	assert_non_null(strstr(t, "process=\"python\",pod=\"a\\\"b\",namespace=\"x\\\\y\",source="));
	assert_non_null(strstr(t, "container=\"3f2b9c0d1e4a\",pod=\"trainer-0\""));
	free(t);
	cw_live_metrics_free(m);
}

/* A launched command's first rows (fork, a page allocation) carry the
 * parent's name, and a kernel row can be read after the calls: the name of
 * the process's CUDA calls labels it. */
static void test_name_follows_exec(void **state)
{
	struct cw_live_metrics *m;
	struct cw_event_row r;
	char *t;

	(void)state;
	assert_int_equal(cw_live_metrics_new(&m, 0), 0);
	memset(&r, 0, sizeof(r));
	r.pid = r.tid = 77;
	r.comm = "causeway";
	r.source = "proc";
	r.op = "fork";
	cw_live_metrics_event(m, &r);
	call(m, 77, "python3", "cudaFree", 1, 100, 0);
	r.source = "mem";
	r.op = "page_alloc";
	cw_live_metrics_event(m, &r);
	t = render(m, 0);
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"python3\","
				  "source=\"cuda\",op=\"cudaFree\"} 1\n"));
	assert_null(strstr(t, "process=\"causeway\""));
	free(t);
	cw_live_metrics_free(m);
}

static void test_series_cap(void **state)
{
	struct cw_live_metrics *m;
	char op[32], *t;

	(void)state;
	assert_int_equal(cw_live_metrics_new(&m, 1), 0);
	for (int i = 0; i < CW_LIVE_MAX_SERIES + 50; i++) {
		snprintf(op, sizeof(op), "op%d", i);
		call(m, 1, "p", op, 1, 1, 0);
	}
	t = render(m, 0);
	/* The 50 past the cap are one series, not 50. */
	assert_non_null(strstr(t, "causeway_op_duration_seconds_count{node=\"n1\",process=\"other\","
				  "source=\"other\",op=\"other\"} 50\n"));
	free(t);
	cw_live_metrics_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_histogram_lines),
		cmocka_unit_test(test_folded_as_calls),
		cmocka_unit_test(test_top_n_and_same_name),
		cmocka_unit_test(test_offcpu_and_idle),
		cmocka_unit_test(test_series_cap),
		cmocka_unit_test(test_name_follows_exec),
		cmocka_unit_test(test_tenant_labels),
		cmocka_unit_test(test_failures_by_code),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
