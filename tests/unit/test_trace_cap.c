/* The default size cap (trace/cap.h): the smaller of 1 GiB and a quarter
 * of the free space, never 0 (0 means no cap to the writer). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "trace/cap.h"

static void test_default_cap(void **state)
{
	char buf[32];
	uint64_t cap, avail;

	(void)state;
	assert_int_equal(cw_trace_default_cap(48ULL << 20), 12ULL << 20);
	assert_int_equal(cw_trace_default_cap(4ULL << 30), 1ULL << 30);
	assert_int_equal(cw_trace_default_cap(100ULL << 30), 1ULL << 30);
	assert_int_equal(cw_trace_default_cap((4ULL << 30) - 4), (1ULL << 30) - 1);
	assert_int_equal(cw_trace_default_cap(3), 1);
	assert_int_equal(cw_trace_default_cap(0), 1);
	/* a real filesystem: a quarter of what it has free, at most 1 GiB */
	assert_int_equal(cw_trace_default_cap_for("/tmp", &cap, &avail), 0);
	assert_true(avail > 0);
	assert_int_equal(cap, cw_trace_default_cap(avail));
	assert_int_equal(cw_trace_default_cap_for("/nonexistent/dir/x.db", &cap, &avail), -ENOENT);
	assert_int_equal(cap, CW_TRACE_CAP_FIXED);
	cw_trace_format_bytes(12ULL << 20, buf, sizeof(buf));
	assert_string_equal(buf, "12.0 MiB");
	cw_trace_format_bytes(1ULL << 30, buf, sizeof(buf));
	assert_string_equal(buf, "1.0 GiB");
	cw_trace_format_bytes(512 << 10, buf, sizeof(buf));
	assert_string_equal(buf, "512 KiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_cap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
