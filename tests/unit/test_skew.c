/* The clock-skew estimator's edge cases (src/fleet/skew.c): even sample
 * counts (the mean of the two middle values), samples whose round trip
 * runs backwards (t1 < t0: the client's clock stepped) or carry no server
 * time, the minimum count, negative offsets, and the spread. The common
 * case is in test_config.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>

#include "fleet/skew.h"

#define MS 1000000ULL
#define BASE 1700000000000000000ULL

/* A sample taken at BASE + at ms with round trip rtt ms, the server
 * off ms ahead (answering halfway). */
static struct cw_skew_sample smp(uint64_t at, uint64_t rtt, int64_t off)
{
	struct cw_skew_sample s = {BASE + at * MS, BASE + (at + rtt) * MS, 0};

	s.server_ns = (uint64_t)((int64_t)(s.t0_ns + (rtt * MS) / 2) + off * (int64_t)MS);
	return s;
}

static void test_even_count(void **state)
{
	/* four samples: round trips 2, 4, 6, 8 ms, offsets 10, 20, 30, 40 ms.
	 * rtt: the mean of the middle two, 5 ms. The faster half (2 samples)
	 * has offsets 10 and 20: their median is 15 ms, not either one. */
	struct cw_skew_sample s[4] = {smp(30, 6, 30), smp(0, 2, 10), smp(40, 8, 40), smp(10, 4, 20)};
	struct cw_skew k;

	(void)state;
	assert_int_equal(cw_skew_compute(s, 4, &k), 0);
	assert_true(k.valid);
	assert_int_equal(k.samples, 4);
	assert_int_equal(k.rtt_ns, 5 * MS);
	assert_int_equal(k.offset_ns, 15 * (int64_t)MS);
	assert_int_equal(k.spread_ns, 30 * MS);
	assert_true(cw_skew_to_local(&k, BASE + 15 * MS) == BASE);
	/* six samples: the faster half is three (odd), its median exact */
	{
		struct cw_skew_sample t[6] = {smp(0, 2, 7),   smp(10, 3, 8),  smp(20, 4, 9),
					      smp(30, 50, 90), smp(90, 60, 95), smp(200, 70, 99)};

		assert_int_equal(cw_skew_compute(t, 6, &k), 0);
		assert_int_equal(k.offset_ns, 8 * (int64_t)MS);
		assert_int_equal(k.rtt_ns, 27 * MS); /* (4 + 50) / 2 */
	}
	/* negative offsets with an even count: -11 and -20 ms -> -15.5 ms */
	{
		struct cw_skew_sample n[4] = {smp(0, 2, -11), smp(10, 2, -20), smp(20, 9, -50), smp(30, 9, -60)};

		assert_int_equal(cw_skew_compute(n, 4, &k), 0);
		assert_int_equal(k.offset_ns, -15500000);
		assert_int_equal(k.spread_ns, 49 * MS);
	}
}

static void test_backwards_and_empty_samples(void **state)
{
	/* a sample whose t1 < t0 (the clock stepped back mid-request) and one
	 * with no server time are ignored: they would otherwise be the
	 * "fastest" and win */
	struct cw_skew_sample s[5] = {smp(0, 2, 100), smp(10, 2, 100), smp(20, 2, 100), smp(30, 2, 100),
				      smp(40, 2, 100)};
	struct cw_skew k;

	(void)state;
	s[1].t1_ns = s[1].t0_ns - 1;
	s[1].server_ns = s[1].t0_ns + 900 * MS;
	s[3].server_ns = 0;
	assert_int_equal(cw_skew_compute(s, 5, &k), 0);
	assert_int_equal(k.samples, 3);
	assert_int_equal(k.offset_ns, 100 * (int64_t)MS);
	assert_int_equal(k.rtt_ns, 2 * MS);
	assert_int_equal(k.spread_ns, 0);
	/* a zero round trip (t1 == t0) is usable */
	s[0].t1_ns = s[0].t0_ns;
	s[0].server_ns = s[0].t0_ns + 100 * MS;
	assert_int_equal(cw_skew_compute(s, 5, &k), 0);
	assert_int_equal(k.samples, 3);
	assert_int_equal(k.offset_ns, 100 * (int64_t)MS);
	/* four of five unusable: one left, fewer than the minimum */
	s[0].t1_ns = s[0].t0_ns - 5;
	s[2].t1_ns = 0;
	s[4].t1_ns = s[4].t0_ns - 1000;
	s[3].server_ns = s[3].t0_ns + 101 * MS;
	assert_int_equal(cw_skew_compute(s, 5, &k), -EAGAIN);
	assert_false(k.valid);
	assert_int_equal(k.samples, 1);
	/* what there was is still reported */
	assert_int_equal(k.offset_ns, 100 * (int64_t)MS);
	assert_true(cw_skew_to_local(&k, BASE) == BASE); /* invalid: no correction */
}

static void test_minimum_count(void **state)
{
	struct cw_skew_sample s[3] = {smp(0, 2, 5), smp(10, 2, 5), smp(20, 2, 5)};
	struct cw_skew k;

	(void)state;
	assert_int_equal(cw_skew_compute(s, CW_SKEW_MIN_SAMPLES, &k), 0);
	assert_true(k.valid);
	assert_int_equal(cw_skew_compute(s, CW_SKEW_MIN_SAMPLES - 1, &k), -EAGAIN);
	assert_false(k.valid);
	assert_int_equal(k.samples, CW_SKEW_MIN_SAMPLES - 1);
	assert_int_equal(k.offset_ns, 5 * (int64_t)MS);
	assert_int_equal(cw_skew_compute(s, -1, &k), -EAGAIN);
	assert_int_equal(k.samples, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_even_count),
		cmocka_unit_test(test_backwards_and_empty_samples),
		cmocka_unit_test(test_minimum_count),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
