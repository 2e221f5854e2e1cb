/* C++ demangling (symbol/demangle.c): Itanium names become readable, other
 * names and malformed ones pass through unchanged, output is truncated to
 * the buffer. The release builds link libsupc++'s demangler statically
 * (scripts/release.mk): the aarch64 unit run checks it there. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "symbol/demangle.h"

static void test_demangle(void **state)
{
	char buf[256];

	assert_int_equal(cw_demangle("_ZN2at6native10add_kernelERNS_18TensorIteratorBaseE", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "at::native::add_kernel(at::TensorIteratorBase&)");
	assert_int_equal(cw_demangle("_Z9vectorAddPKfS0_Pfi", buf, sizeof(buf)), 1);
	assert_string_equal(buf, "vectorAdd(float const*, float const*, float*, int)");
	assert_int_equal(cw_demangle("cudaMalloc", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "cudaMalloc");
	assert_int_equal(cw_demangle("_Z_not_a_name", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "_Z_not_a_name");
	assert_int_equal(cw_demangle("_Z9vectorAddPKfS0_Pfi", buf, 10), 1);
	assert_string_equal(buf, "vectorAdd");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demangle),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
