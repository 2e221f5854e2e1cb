/* The Prometheus text parser (src/inference/prom_parse.c): sums of the
 * series asked for over any labels, and every line shape a hostile or
 * merely unusual exposition has (escaped quotes and commas in label
 * values, NaN and infinities, timestamps, exemplars, CRLF, no last
 * newline, long lines, binary junk); and an engine's figures from its
 * exposition (trace/engine_scrape.c: the newest series name, the
 * KV-cache ratio averaged over engine cores). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "inference/engines.h"
#include "inference/prom_parse.h"
#include "trace/engine_scrape.h"

static int sum(const char *text, size_t len, const char *name, double *v, size_t *samples)
{
	struct cw_prom_want w[2] = { { .name = "unrelated_total" }, { .name = name } };
	int n = cw_prom_sum(text, len, w, 2);

	*v = w[1].sum;
	*samples = w[1].samples;
	assert_int_equal(w[0].samples, 0);
	return n;
}

#define SUM(text, name, v, s) sum(text, strlen(text), name, v, s)

/* llama-server --metrics (Debian llama.cpp-tools 0.7.0), captured. */
static const char llama[] =
	"# HELP llamacpp:requests_processing Number of requests processing\n"
	"# TYPE llamacpp:requests_processing gauge\n"
	"llamacpp:requests_processing 1\n"
	"# HELP llamacpp:requests_deferred Number of requests deferred\n"
	"# TYPE llamacpp:requests_deferred gauge\n"
	"llamacpp:requests_deferred 3\n"
	"# HELP llamacpp:n_busy_slots_per_decode Average number of busy slots per llama_decode() call\n"
	"# TYPE llamacpp:n_busy_slots_per_decode gauge\n"
	"llamacpp:n_busy_slots_per_decode 1";

static void test_llama(void **state)
{
	struct cw_prom_want w[3] = {
		{ .name = "llamacpp:requests_deferred" },
		{ .name = "llamacpp:requests_processing" },
		{ .name = "llamacpp:kv_cache_usage_ratio" },
	};

	(void)state;
	assert_int_equal(cw_prom_sum(llama, strlen(llama), w, 3), 2);
	assert_true(w[0].sum == 3 && w[0].samples == 1);
	assert_true(w[1].sum == 1 && w[1].samples == 1);
	assert_true(w[2].sum == 0 && w[2].samples == 0);
	/* A second call starts from zero. */
	assert_int_equal(cw_prom_sum(llama, strlen(llama), w, 1), 1);
	assert_true(w[0].sum == 3);
}

/* vLLM V1 (prometheus_client): one sample per engine, summed; a name
 * that only starts like the one asked for is another series. */
static void test_labels_summed(void **state)
{
	const char *t = "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 2.0\n"
			"vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 5.0\n"
			"vllm:num_requests_waiting_by_reason{engine=\"1\"} 100.0\n"
			"vllm:num_requests_waitin 100\n"
			"xvllm:num_requests_waiting 100\n";
	double v;
	size_t s;

	(void)state;
	assert_int_equal(SUM(t, "vllm:num_requests_waiting", &v, &s), 2);
	assert_true(v == 7.0 && s == 2);
}

static void test_escaped_labels(void **state)
{
	/* A quote, a comma, a brace and a backslash inside values; a
	 * trailing comma; blanks around the parts. */
	const char *t = "q{path=\"a\\\"b,c}\",x=\"\\\\\"} 1\n"
			"q{ a = \"}\" , } 2\n"
			"q {a=\"1\"}\t4\n"
			"q{a=\"\\n\"} 8\n";
	double v;
	size_t s;

	(void)state;
	assert_int_equal(SUM(t, "q", &v, &s), 4);
	assert_true(v == 15 && s == 4);
}

static void test_malformed_labels(void **state)
{
	const char *t = "q{a=\"1} 1\n"	   /* unterminated value */
			"q{a=\"1\\\"} 2\n" /* its quote escaped */
			"q{a=1} 4\n"	   /* unquoted */
			"q{=\"1\"} 8\n"	   /* no label name */
			"q{a=\"1\" b=\"2\"} 16\n"
			"q{a=\"1\"}32\n" /* no blank before the value */
			"q{a=\"1\" 64\n"
			"q{a=\"x\\"; /* a backslash at the very end */
	double v;
	size_t s;

	(void)state;
	assert_int_equal(SUM(t, "q", &v, &s), 0);
	assert_true(v == 0 && s == 0);
}

static void test_values(void **state)
{
	double v;
	size_t s;

	(void)state;
	assert_int_equal(SUM("q 1e3\nq -2.5\nq 0x10\n", "q", &v, &s), 3);
	assert_true(v == 1000 - 2.5 + 16);
	/* NaN samples are not summed; infinities are. */
	assert_int_equal(SUM("q NaN\nq 1\nq nan\n", "q", &v, &s), 1);
	assert_true(v == 1 && s == 1);
	assert_int_equal(SUM("q +Inf\nq 1\n", "q", &v, &s), 2);
	assert_true(isinf(v) && v > 0);
	assert_int_equal(SUM("q -Inf\n", "q", &v, &s), 1);
	assert_true(isinf(v) && v < 0);
	/* Not numbers. */
	assert_int_equal(SUM("q\nq \nq 1x\nq one\nq 1,5\nq \"1\"\nq 1.2.3\nq --1\n", "q", &v, &s), 0);
}

static void test_value_too_long(void **state)
{
	char t[CW_PROM_VALUE_MAX + 8];
	double v;
	size_t s;

	(void)state;
	memset(t, '0', sizeof(t));
	t[0] = 'q';
	t[1] = ' ';
	/* "q " and exactly CW_PROM_VALUE_MAX digits: a number */
	assert_int_equal(sum(t, 2 + CW_PROM_VALUE_MAX, "q", &v, &s), 1);
	/* one more: none */
	assert_int_equal(sum(t, 3 + CW_PROM_VALUE_MAX, "q", &v, &s), 0);
}

static void test_timestamps_exemplars(void **state)
{
	const char *t = "q 1 1712345678901\n"
			"q 2 1712345678.5\n"
			"q 4 # {trace_id=\"abc\"} 1.0\n"
			"q 8 1712345678901 # {} 1\n"
			"q 16 12 13\n" /* two timestamps */
			"q 32 later\n" /* a word for a timestamp */
			"q 64 +Inf\n"; /* an infinite timestamp */
	double v;
	size_t s;

	(void)state;
	assert_int_equal(SUM(t, "q", &v, &s), 4);
	assert_true(v == 15);
}

static void test_line_ends(void **state)
{
	const char *crlf = "# HELP q x\r\n# TYPE q gauge\r\nq 1\r\nq{a=\"b\"} 2\r\n\r\nq 4";
	double v;
	size_t s;

	(void)state;
	assert_int_equal(SUM(crlf, "q", &v, &s), 3);
	assert_true(v == 7);
	/* Comments, indented comments and blank lines are no samples. */
	assert_int_equal(SUM("#q 1\n  # q 2\n\n\n   q 4\n", "q", &v, &s), 1);
	assert_true(v == 4);
	/* A lone CR ends nothing: "q 1\rq 2" is one malformed line. */
	assert_int_equal(SUM("q 1\rq 2\n", "q", &v, &s), 0);
	/* Empty input. */
	assert_int_equal(SUM("", "q", &v, &s), 0);
	assert_int_equal(cw_prom_sum(NULL, 0, NULL, 0), 0);
	assert_int_equal(cw_prom_sum(NULL, 1, NULL, 0), -EINVAL);
	assert_int_equal(cw_prom_sum("q 1", 3, NULL, 1), -EINVAL);
}

/* Bytes after len are not read: the buffer ends mid-line without a NUL. */
static void test_bounds(void **state)
{
	char *b = malloc(6);
	double v;
	size_t s;

	(void)state;
	assert_non_null(b);
	memcpy(b, "q 12", 4);
	memcpy(b + 4, "34", 2);
	assert_int_equal(sum(b, 4, "q", &v, &s), 1);
	assert_true(v == 12);
	memcpy(b, "q{a=\"", 5);
	assert_int_equal(sum(b, 5, "q", &v, &s), 0);
	free(b);
}

static void test_long_and_junk(void **state)
{
	size_t n = 1 << 20;
	char *b = malloc(n + 64);
	double v;
	size_t s;

	(void)state;
	assert_non_null(b);
	/* A megabyte-long label value, then a good line. */
	memcpy(b, "q{a=\"", 5);
	memset(b + 5, 'x', n);
	memcpy(b + 5 + n, "\"} 1\nq 2\n", 9);
	assert_int_equal(sum(b, n + 14, "q", &v, &s), 2);
	assert_true(v == 3);
	/* Binary junk with NULs and a sample in the middle of it. */
	for (size_t i = 0; i < n; i++)
		b[i] = (char)(i * 131 + 7);
	memcpy(b + 4096, "\nq 5\n", 5);
	memcpy(b + 8192, "\nq\0 5\n", 6);
	assert_int_equal(sum(b, n, "q", &v, &s), 1);
	assert_true(v == 5);
	free(b);
}

static void test_first_want_of_a_name(void **state)
{
	struct cw_prom_want w[2] = { { .name = "q" }, { .name = "q" } };

	(void)state;
	assert_int_equal(cw_prom_sum("q 1\nq 2\n", 8, w, 2), 2);
	assert_true(w[0].sum == 3 && w[1].samples == 0);
}

static const struct cw_engine *engine(const char *name)
{
	for (size_t i = 0; i < cw_nengines; i++)
		if (!strcmp(cw_engines[i].name, name))
			return &cw_engines[i];
	fail_msg("no engine %s", name);
	return NULL;
}

static void test_llama_figures(void **state)
{
	double v[CW_EF_N];
	int have[CW_EF_N];

	(void)state;
	assert_int_equal(trace_engine_figures(engine("llama.cpp"), llama, strlen(llama), v, have), 2);
	assert_true(have[CW_EF_QUEUE_DEPTH] && v[CW_EF_QUEUE_DEPTH] == 3);
	assert_true(have[CW_EF_RUNNING] && v[CW_EF_RUNNING] == 1);
	assert_false(have[CW_EF_KV_CACHE_USAGE] || have[CW_EF_PREEMPTIONS]);
	/* Nothing of its series: nothing. */
	assert_int_equal(trace_engine_figures(engine("llama.cpp"), "q 1\n", 4, v, have), 0);
}

static void test_vllm_figures(void **state)
{
	/* Two data-parallel engine cores; the older KV name too (which
	 * loses to the newer one), and a preemption counter only by its
	 * older name. */
	const char *t = "vllm:num_requests_waiting{engine=\"0\"} 2.0\n"
			"vllm:num_requests_waiting{engine=\"1\"} 5.0\n"
			"vllm:num_requests_running{engine=\"0\"} 1.0\n"
			"vllm:kv_cache_usage_perc{engine=\"0\"} 0.25\n"
			"vllm:kv_cache_usage_perc{engine=\"1\"} 0.75\n"
			"vllm:gpu_cache_usage_perc{engine=\"0\"} 0.9\n"
			"vllm:num_preemptions{engine=\"0\"} 4\n"
			"vllm:num_preemptions_created{engine=\"0\"} 1.76e9\n";
	double v[CW_EF_N];
	int have[CW_EF_N];

	(void)state;
	assert_int_equal(trace_engine_figures(engine("vllm"), t, strlen(t), v, have), 4);
	assert_true(v[CW_EF_QUEUE_DEPTH] == 7);
	assert_true(v[CW_EF_RUNNING] == 1);
	assert_true(v[CW_EF_KV_CACHE_USAGE] == 0.5);
	assert_true(v[CW_EF_PREEMPTIONS] == 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llama),
		cmocka_unit_test(test_labels_summed),
		cmocka_unit_test(test_escaped_labels),
		cmocka_unit_test(test_malformed_labels),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_value_too_long),
		cmocka_unit_test(test_timestamps_exemplars),
		cmocka_unit_test(test_line_ends),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_long_and_junk),
		cmocka_unit_test(test_first_want_of_a_name),
		cmocka_unit_test(test_llama_figures),
		cmocka_unit_test(test_vllm_figures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
