/* Histogram: bucket bounds, quantile accuracy, encode/decode round trip
 * and rejection of malformed encodings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>

#include "util/hist.h"

static void test_quantiles_within_error(void **state)
{
	struct cw_hist h;
	uint64_t i, p50, p99;

	(void)state;
	cw_hist_reset(&h);
	for (i = 1; i <= 10000; i++)
		cw_hist_add(&h, i * 1000);
	p50 = cw_hist_quantile(&h, 0.5);
	p99 = cw_hist_quantile(&h, 0.99);
	assert_true(p50 > 5000000 * 0.95 && p50 < 5000000 * 1.05);
	assert_true(p99 > 9900000 * 0.95 && p99 < 9900000 * 1.05);
	assert_int_equal(cw_hist_quantile(&h, 1.0), 10000000);
	assert_int_equal(cw_hist_quantile(&h, 0.0), 1000);
}

static void test_bucket_monotonic(void **state)
{
	unsigned b, prev = 0;
	uint64_t v;

	(void)state;
	for (v = 1; v < (1ULL << 40); v = v * 3 / 2 + 1) {
		b = cw_hist_bucket(v);
		assert_true(b >= prev);
		assert_true(cw_hist_bucket_low(b) <= v);
		assert_true(b + 1 >= CW_HIST_BUCKETS || cw_hist_bucket_low(b + 1) > v);
		prev = b;
	}
}

static void test_encode_roundtrip(void **state)
{
	struct cw_hist a, b;
	uint8_t buf[CW_HIST_ENCODED_MAX];
	int n, i;

	(void)state;
	cw_hist_reset(&a);
	for (i = 0; i < 500; i++)
		cw_hist_add(&a, (uint64_t)(rand() % 1000000) + 1);
	n = cw_hist_encode(&a, buf, sizeof(buf));
	assert_true(n > 0);
	cw_hist_reset(&b);
	assert_int_equal(cw_hist_decode_merge(&b, buf, (size_t)n, a.count, a.sum_ns, a.max_ns), 0);
	assert_memory_equal(a.buckets, b.buckets, sizeof(a.buckets));
	assert_int_equal(cw_hist_quantile(&a, 0.9), cw_hist_quantile(&b, 0.9));
	/* Wrong count, truncated varint, bucket overflow. */
	assert_int_equal(cw_hist_decode_merge(&b, buf, (size_t)n, a.count + 1, 0, 0), -EINVAL);
	buf[n - 1] |= 0x80;
	assert_int_equal(cw_hist_decode_merge(&b, buf, (size_t)n, a.count, 0, 0), -EINVAL);
	buf[0] = 0xff;
	buf[1] = 0x7f;
	assert_int_equal(cw_hist_decode_merge(&b, buf, 4, 1, 0, 0), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantiles_within_error),
		cmocka_unit_test(test_bucket_monotonic),
		cmocka_unit_test(test_encode_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
