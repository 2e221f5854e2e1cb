/* Error-code names and families (gpu/call_errors.c): the generated table
 * names the codes of all three APIs, the families say what a person does,
 * and codes that report a state are not failures. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "gpu/call_errors.h"

static void test_api_of_op(void **state)
{
	(void)state;
	assert_int_equal(cw_error_api_of_op("cudaMalloc"), CW_ERR_API_RUNTIME);
	assert_int_equal(cw_error_api_of_op("cudaGraphLaunch"), CW_ERR_API_RUNTIME);
	assert_int_equal(cw_error_api_of_op("cuMemAlloc_v2"), CW_ERR_API_DRIVER);
	assert_int_equal(cw_error_api_of_op("cuLaunchKernel"), CW_ERR_API_DRIVER);
	assert_int_equal(cw_error_api_of_op("ncclAllReduce"), CW_ERR_API_NCCL);
}

static void test_names(void **state)
{
	(void)state;
	/* The same number means different things per API. */
	assert_string_equal(cw_call_error_name(CW_ERR_API_RUNTIME, 35), "cudaErrorInsufficientDriver");
	assert_string_equal(cw_call_error_name(CW_ERR_API_RUNTIME, 100), "cudaErrorNoDevice");
	assert_string_equal(cw_call_error_name(CW_ERR_API_RUNTIME, 2), "cudaErrorMemoryAllocation");
	assert_string_equal(cw_call_error_name(CW_ERR_API_RUNTIME, 999), "cudaErrorUnknown");
	assert_string_equal(cw_call_error_name(CW_ERR_API_DRIVER, 2), "CUDA_ERROR_OUT_OF_MEMORY");
	assert_string_equal(cw_call_error_name(CW_ERR_API_DRIVER, 700), "CUDA_ERROR_ILLEGAL_ADDRESS");
	assert_string_equal(cw_call_error_name(CW_ERR_API_DRIVER, 34), "CUDA_ERROR_STUB_LIBRARY");
	assert_string_equal(cw_call_error_name(CW_ERR_API_NCCL, 2), "ncclSystemError");
	assert_string_equal(cw_call_error_name(CW_ERR_API_NCCL, 6), "ncclRemoteError");
	/* Codes no table has, and hostile values, are unknown, not a crash. */
	assert_null(cw_call_error_name(CW_ERR_API_NCCL, 8));
	assert_null(cw_call_error_name(CW_ERR_API_RUNTIME, 12345));
	assert_null(cw_call_error_name(CW_ERR_API_RUNTIME, -1));
	assert_null(cw_call_error_name(CW_ERR_API_DRIVER, INT64_MAX));
	assert_null(cw_call_error_name(CW_ERR_API_DRIVER, INT64_MIN));
}

static void test_format(void **state)
{
	char b[64];

	(void)state;
	cw_call_error_format(CW_ERR_API_RUNTIME, 100, b, sizeof(b));
	assert_string_equal(b, "cudaErrorNoDevice");
	cw_call_error_format(CW_ERR_API_NCCL, 42, b, sizeof(b));
	assert_string_equal(b, "NCCL error 42");
	cw_call_error_format(CW_ERR_API_DRIVER, -5, b, sizeof(b));
	assert_string_equal(b, "CUDA driver error -5");
}

static void test_families(void **state)
{
	(void)state;
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 0), CW_ERRF_NONE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 100), CW_ERRF_NO_DEVICE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 35), CW_ERRF_NO_DEVICE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 34), CW_ERRF_NO_DEVICE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_DRIVER, 100), CW_ERRF_NO_DEVICE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_DRIVER, 3), CW_ERRF_NO_DEVICE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 2), CW_ERRF_OUT_OF_MEMORY);
	assert_int_equal(cw_call_error_family(CW_ERR_API_DRIVER, 2), CW_ERRF_OUT_OF_MEMORY);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 700), CW_ERRF_KERNEL_FAULT);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 719), CW_ERRF_KERNEL_FAULT);
	assert_int_equal(cw_call_error_family(CW_ERR_API_DRIVER, 209), CW_ERRF_KERNEL_FAULT);
	assert_int_equal(cw_call_error_family(CW_ERR_API_NCCL, 1), CW_ERRF_NCCL_CUDA);
	assert_int_equal(cw_call_error_family(CW_ERR_API_NCCL, 2), CW_ERRF_NCCL_SYSTEM);
	assert_int_equal(cw_call_error_family(CW_ERR_API_NCCL, 3), CW_ERRF_NCCL_INTERNAL);
	assert_int_equal(cw_call_error_family(CW_ERR_API_NCCL, 5), CW_ERRF_NCCL_USAGE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_NCCL, 6), CW_ERRF_NCCL_REMOTE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 1), CW_ERRF_OTHER);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 4242), CW_ERRF_OTHER);
	assert_string_equal(cw_error_family_name(CW_ERRF_OUT_OF_MEMORY), "out_of_memory");
	assert_string_equal(cw_error_family_name((enum cw_error_family)77), "other");
}

/* States, not failures: a query that says "still running", a
 * non-blocking communicator still connecting, peer access enabled twice. */
static void test_not_failures(void **state)
{
	(void)state;
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 600), CW_ERRF_NONE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_DRIVER, 600), CW_ERRF_NONE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_NCCL, 7), CW_ERRF_NONE);
	assert_int_equal(cw_call_error_family(CW_ERR_API_RUNTIME, 704), CW_ERRF_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_api_of_op), cmocka_unit_test(test_names), cmocka_unit_test(test_format),
		cmocka_unit_test(test_families), cmocka_unit_test(test_not_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
