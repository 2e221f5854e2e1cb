/* Unit tests of the Chrome trace JSON writer and the slice-nesting helper
 * (src/export/trace_json.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/trace_json.h"

static struct cw_slice sl(int64_t a, int64_t b, uint64_t key)
{
	return (struct cw_slice){ .start = a, .end = b, .key = key };
}

static struct cw_slice *by_key(struct cw_slice *v, size_t n, uint64_t key)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].key == key)
			return &v[i];
	return NULL;
}

static void nesting_stays_on_one_lane(void **state)
{
	/* A call with a nested driver call and an off-CPU interval inside,
	 * then the next call after it. */
	struct cw_slice v[] = { sl(100, 200, 4), sl(0, 50, 1), sl(10, 20, 2), sl(30, 50, 3), sl(200, 200, 5) };
	int n = cw_slices_assign_lanes(v, 5, 64);

	(void)state;
	assert_int_equal(n, 1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(v[i].lane, 0);
	/* Sorted by start, the enclosing slice first. */
	assert_int_equal(v[0].key, 1);
	assert_int_equal(v[1].key, 2);
	assert_true(cw_slices_nest_ok(v, 5));
}

static void partial_overlap_moves_to_a_lane(void **state)
{
	/* I/O issued inside call 1 completes inside call 2. */
	struct cw_slice v[] = { sl(0, 100, 1), sl(80, 130, 2), sl(120, 200, 3), sl(125, 126, 4) };
	int n = cw_slices_assign_lanes(v, 4, 64);

	(void)state;
	assert_int_equal(n, 2);
	assert_int_equal(by_key(v, 4, 1)->lane, 0);
	assert_int_equal(by_key(v, 4, 2)->lane, 1);
	assert_int_equal(by_key(v, 4, 3)->lane, 0);
	/* Inside both the I/O (lane 1) and call 2: lane 0 is free for it. */
	assert_int_equal(by_key(v, 4, 4)->lane, 0);
	assert_true(cw_slices_nest_ok(v, 4));
}

static void identical_and_touching_slices(void **state)
{
	struct cw_slice v[] = { sl(10, 20, 2), sl(10, 20, 1), sl(20, 30, 3), sl(0, 0, 4), sl(0, 0, 5) };
	int n = cw_slices_assign_lanes(v, 5, 64);

	(void)state;
	/* Equal slices nest in each other; a slice starting at another's end
	 * does not overlap it. */
	assert_int_equal(n, 1);
	assert_true(cw_slices_nest_ok(v, 5));
	assert_int_equal(cw_slices_assign_lanes(v, 0, 64), 0);
}

static void slices_past_the_lane_cap_are_left_out(void **state)
{
	/* Five requests in flight at once (readahead), three lanes allowed:
	 * the two that would need a fourth and a fifth get lane -1, and what
	 * was placed still nests. */
	struct cw_slice v[] = { sl(0, 100, 1), sl(1, 101, 2), sl(2, 102, 3), sl(3, 103, 4), sl(4, 104, 5),
				sl(150, 160, 6) };
	int n = cw_slices_assign_lanes(v, 6, 3), left = 0;

	(void)state;
	assert_int_equal(n, 3);
	for (int i = 0; i < 6; i++)
		left += v[i].lane < 0;
	assert_int_equal(left, 2);
	assert_int_equal(by_key(v, 6, 4)->lane, -1);
	assert_int_equal(by_key(v, 6, 5)->lane, -1);
	assert_int_equal(by_key(v, 6, 6)->lane, 0);
	assert_true(cw_slices_nest_ok(v, 6));
}

static void validator_catches_partial_overlap(void **state)
{
	struct cw_slice v[] = { sl(0, 100, 1), sl(50, 150, 2) };

	(void)state;
	v[0].lane = v[1].lane = 0;
	assert_false(cw_slices_nest_ok(v, 2));
	v[1].lane = 1;
	assert_true(cw_slices_nest_ok(v, 2));
}

static void random_slices_always_nest(void **state)
{
	enum { N = 3000 };
	struct cw_slice *v = calloc(N, sizeof(*v));
	unsigned seed = 12345;
	int lanes;

	(void)state;
	assert_non_null(v);
	for (int i = 0; i < N; i++) {
		int64_t a = rand_r(&seed) % 100000, d = rand_r(&seed) % 500;
		v[i] = sl(a, a + d, (uint64_t)i + 1);
	}
	lanes = cw_slices_assign_lanes(v, N, 64);
	assert_true(lanes >= 1 && lanes < 64);
	assert_true(cw_slices_nest_ok(v, N));
	for (int i = 1; i < N; i++)
		assert_true(v[i - 1].start <= v[i].start);
	free(v);
}

static void writer_streams_valid_json(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct cw_tracew w;
	json_error_t jerr;
	json_t *doc, *evs;

	(void)state;
	assert_non_null(f);
	assert_int_equal(cw_tracew_begin(&w, f), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(cw_tracew_event(&w, json_pack("{s:s,s:s,s:i,s:i,s:o,s:o}", "ph", "X", "name", "op",
								"pid", 1, "tid", 7, "ts",
								cw_trace_us(1234567891LL + i), "dur", cw_trace_us(1000))),
				 0);
	assert_int_equal(w.nevents, 3);
	assert_int_equal(cw_tracew_end(&w, json_pack("{s:s}", "producer", "test")), 0);
	fclose(f);
	/* Nanosecond digits survive, without float noise. */
	assert_non_null(strstr(buf, "\"ts\":1234567.891,"));
	assert_non_null(strstr(buf, "\"ts\":1234567.893,"));
	assert_non_null(strstr(buf, "\"dur\":1.0}"));
	doc = json_loads(buf, 0, &jerr);
	assert_non_null(doc);
	evs = json_object_get(doc, "traceEvents");
	assert_int_equal(json_array_size(evs), 3);
	assert_string_equal(json_string_value(json_object_get(doc, "displayTimeUnit")), "ms");
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "otherData"), "producer")),
			    "test");
	json_decref(doc);
	free(buf);
}

static void writer_empty_trace_parses(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct cw_tracew w;
	json_t *doc;

	(void)state;
	assert_int_equal(cw_tracew_begin(&w, f), 0);
	assert_int_equal(cw_tracew_end(&w, NULL), 0);
	fclose(f);
	doc = json_loads(buf, 0, NULL);
	assert_non_null(doc);
	assert_int_equal(json_array_size(json_object_get(doc, "traceEvents")), 0);
	json_decref(doc);
	free(buf);
}

static void writer_reports_write_errors(void **state)
{
	FILE *f = fopen("/dev/full", "w");
	struct cw_tracew w;
	int ret = 0;

	(void)state;
	if (!f)
		skip();
	cw_tracew_begin(&w, f);
	for (int i = 0; i < 20000 && !ret; i++)
		ret = cw_tracew_event(&w, json_pack("{s:s,s:i}", "ph", "X", "pid", i));
	ret = cw_tracew_end(&w, NULL);
	assert_true(ret < 0);
	/* A NULL event (allocation failure upstream) is an error too. */
	assert_true(cw_tracew_event(&w, NULL) < 0);
	fclose(f);
}

static void strings_survive_invalid_utf8(void **state)
{
	json_t *j;

	(void)state;
	j = cw_trace_str("py\xffthon \xc3\xa9t\xc3");
	assert_non_null(j);
	assert_string_equal(json_string_value(j), "py\xef\xbf\xbdthon \xc3\xa9t\xef\xbf\xbd");
	json_decref(j);
	j = cw_trace_str(NULL);
	assert_string_equal(json_string_value(j), "");
	json_decref(j);
	j = cw_trace_strf("%s %d", "comm\x80", 42);
	assert_string_equal(json_string_value(j), "comm\xef\xbf\xbd 42");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nesting_stays_on_one_lane),
		cmocka_unit_test(partial_overlap_moves_to_a_lane),
		cmocka_unit_test(identical_and_touching_slices),
		cmocka_unit_test(slices_past_the_lane_cap_are_left_out),
		cmocka_unit_test(validator_catches_partial_overlap),
		cmocka_unit_test(random_slices_always_nest),
		cmocka_unit_test(writer_streams_valid_json),
		cmocka_unit_test(writer_empty_trace_parses),
		cmocka_unit_test(writer_reports_write_errors),
		cmocka_unit_test(strings_survive_invalid_utf8),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
