/* The generated name tables behind call_errors.c (cuda_error_table.c,
 * scripts/gen-cuda-errors.sh), sorted by code. Not a public API. */
#ifndef CW_GPU_CALL_ERRORS_INT_H
#define CW_GPU_CALL_ERRORS_INT_H

#include <stddef.h>

struct cw_call_error {
	int code;
	const char *name;
};

extern const struct cw_call_error cw_cudart_errors[];
extern const size_t cw_cudart_errors_len;
extern const struct cw_call_error cw_cu_results[];
extern const size_t cw_cu_results_len;
extern const struct cw_call_error cw_nccl_results[];
extern const size_t cw_nccl_results_len;

#endif
