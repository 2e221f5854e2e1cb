/* The shared parsers of user-typed numbers and lists (util/parse.h), the
 * duration and size parsers built on them, and how user text is shown back. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "config/config.h"
#include "util/parse.h"
#include "util/timeutil.h"

static void test_uint(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(cw_parse_uint("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(cw_parse_uint("10", 0, 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(cw_parse_uint("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	v = 7;
	/* Not numbers: what strtoull would take in part or in another form. */
	static const char *const bad[] = { "", " 1", "1 ", "+1", "-1", "0x10", "1e3", "1.0",
					   "12abc", ",", "1,2", "\t5", NULL };
	for (int i = 0; bad[i]; i++) {
		assert_int_equal(cw_parse_uint(bad[i], 0, 100, &v), -EINVAL);
		assert_int_equal(v, 7); /* untouched on error */
	}
	assert_int_equal(cw_parse_uint(NULL, 0, 100, &v), -EINVAL);
	/* Numbers outside the range, including beyond 64 bits. */
	assert_int_equal(cw_parse_uint("11", 0, 10, &v), -ERANGE);
	assert_int_equal(cw_parse_uint("0", 1, 10, &v), -ERANGE);
	assert_int_equal(cw_parse_uint("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(v, 7);
}

static void test_real(void **state)
{
	double v = 7;

	(void)state;
	assert_int_equal(cw_parse_real("2", 0, 10, &v), 0);
	assert_true(v == 2.0);
	assert_int_equal(cw_parse_real("0.5", 0, 10, &v), 0);
	assert_true(v == 0.5);
	assert_int_equal(cw_parse_real(".25", 0, 10, &v), 0);
	assert_true(v == 0.25);
	assert_int_equal(cw_parse_real("5.", 0, 10, &v), 0);
	assert_true(v == 5.0);
	assert_int_equal(cw_parse_real("1e1", 0, 10, &v), 0);
	assert_true(v == 10.0);
	assert_int_equal(cw_parse_real("25E-1", 0, 10, &v), 0);
	assert_true(v == 2.5);
	v = 7;
	static const char *const bad[] = { "", ".", "e3", "1e", "1e+", " 1", "1 ", "-1", "+1",
					   "inf", "nan", "infinity", "0x1p3", "1.2.3", "1,5", "2x",
					   NULL };
	for (int i = 0; bad[i]; i++) {
		assert_int_equal(cw_parse_real(bad[i], 0, 1e9, &v), -EINVAL);
		assert_true(v == 7);
	}
	/* Underflow and overflow are out of range, not 0 or infinity; a tiny
	 * but representable number is the range's business. */
	assert_int_equal(cw_parse_real("1e-400", 0, 10, &v), -ERANGE);
	assert_int_equal(cw_parse_real("1e-300", 0.01, 10, &v), -ERANGE);
	assert_int_equal(cw_parse_real("1e400", 0, 1e308, &v), -ERANGE);
	assert_int_equal(cw_parse_real("10.5", 0, 10, &v), -ERANGE);
	assert_int_equal(cw_parse_real("0.001", 0.01, 10, &v), -ERANGE);
	assert_true(v == 7);
	assert_int_equal(cw_parse_real("1e-300", 0, 10, &v), 0);
	assert_true(v == 1e-300);
	assert_int_equal(cw_real_span("1.5GiB"), 3);
	assert_int_equal(cw_real_span("2e3ms"), 3);
	assert_int_equal(cw_real_span("2ems"), 1);
	assert_int_equal(cw_real_span("ms"), 0);
}

static void test_list(void **state)
{
	uint64_t v[4] = { 0 };

	(void)state;
	assert_int_equal(cw_parse_uint_list("5", 1, 100, v, 4), 1);
	assert_int_equal(v[0], 5);
	assert_int_equal(cw_parse_uint_list("1,2,30", 1, 100, v, 4), 3);
	assert_int_equal(v[0], 1);
	assert_int_equal(v[1], 2);
	assert_int_equal(v[2], 30);
	static const char *const bad[] = { "", ",", "1,,2", ",1", "1,", "1, 2", "1;2", "a", "1,x",
					   "1,-2", NULL };
	for (int i = 0; bad[i]; i++)
		assert_int_equal(cw_parse_uint_list(bad[i], 1, 100, v, 4), -EINVAL);
	assert_int_equal(cw_parse_uint_list("1,0", 1, 100, v, 4), -ERANGE);
	assert_int_equal(cw_parse_uint_list("1,101", 1, 100, v, 4), -ERANGE);
	assert_int_equal(cw_parse_uint_list("1,2,3,4", 1, 100, v, 4), 4);
	assert_int_equal(cw_parse_uint_list("1,2,3,4,5", 1, 100, v, 4), -E2BIG);
}

static void test_shown(void **state)
{
	char buf[CW_SHOWN_BUF], big[5001];

	(void)state;
	assert_string_equal(cw_shown("gpu-1", buf), "gpu-1");
	assert_string_equal(cw_shown("a\nb\x1b", buf), "a?b?");
	assert_string_equal(cw_shown(NULL, buf), "");
	memset(big, 'a', 5000);
	big[5000] = 0;
	cw_shown(big, buf);
	assert_int_equal(strlen(buf), CW_SHOWN_MAX + 3);
	assert_memory_equal(buf, big, CW_SHOWN_MAX);
	assert_string_equal(buf + CW_SHOWN_MAX, "...");
	big[CW_SHOWN_MAX] = 0; /* exactly the cap: shown whole */
	assert_string_equal(cw_shown(big, buf), big);
}

static void test_duration_and_size(void **state)
{
	uint64_t ns = 7, b = 7;

	(void)state;
	assert_int_equal(cw_parse_duration("250ms", &ns), 0);
	assert_true(ns == 250000000ULL);
	assert_int_equal(cw_parse_duration("1.5s", &ns), 0);
	assert_true(ns == 1500000000ULL);
	assert_int_equal(cw_parse_duration("2", &ns), 0);
	assert_true(ns == 2000000000ULL);
	ns = 7;
	static const char *const bad[] = { "", "s", "-1s", "+1s", " 1s", "1 s", "0x10s", "infs",
					   "nans", "1e-300s", "1e400s", "1sx", "1.2.3s", NULL };
	for (int i = 0; bad[i]; i++)
		assert_int_not_equal(cw_parse_duration(bad[i], &ns), 0);
	assert_true(ns == 7);
	assert_int_equal(cw_parse_size("2GiB", &b), 0);
	assert_true(b == (2ULL << 30));
	assert_int_equal(cw_parse_size("1.5 KiB", &b), 0);
	assert_true(b == 1536);
	b = 7;
	static const char *const badsz[] = { "", "GiB", "-1", "0x10", "inf", "1e-300", "1e400",
					     "2 GiBs", NULL };
	for (int i = 0; badsz[i]; i++)
		assert_int_not_equal(cw_parse_size(badsz[i], &b), 0);
	assert_true(b == 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uint),
		cmocka_unit_test(test_real),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_shown),
		cmocka_unit_test(test_duration_and_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
