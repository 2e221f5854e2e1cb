/* Names and families of the codes CUDA runtime, driver and NCCL calls
 * return (cudaError_t, CUresult, ncclResult_t). The names come from a
 * table generated from the CUDA 13 and NCCL headers
 * (scripts/gen-cuda-errors.sh); the families say what a person does about
 * a failure, and are what the error chains of explain group by
 * (docs/rules.md "Failing calls"). */
#ifndef CW_GPU_CALL_ERRORS_H
#define CW_GPU_CALL_ERRORS_H

#include <stdint.h>

enum cw_error_api {
	CW_ERR_API_RUNTIME = 0, /* cudaError_t: cuda* entry points */
	CW_ERR_API_DRIVER,      /* CUresult: cu* entry points */
	CW_ERR_API_NCCL,        /* ncclResult_t: nccl* entry points */
};

enum cw_error_family {
	/* Success, or a code that reports a state rather than a failure
	 * (cudaErrorNotReady from a query, ncclInProgress from a
	 * non-blocking communicator, peer access already enabled, the
	 * runtime unloading at exit). */
	CW_ERRF_NONE = 0,
	CW_ERRF_NO_DEVICE,     /* no device or driver usable from this process */
	CW_ERRF_OUT_OF_MEMORY, /* device memory exhausted */
	CW_ERRF_KERNEL_FAULT,  /* a launch failed or a kernel faulted (sticky) */
	CW_ERRF_NCCL_CUDA,     /* NCCL: a CUDA call inside NCCL failed */
	CW_ERRF_NCCL_SYSTEM,   /* NCCL: a system call or the network failed */
	CW_ERRF_NCCL_INTERNAL, /* NCCL: an internal error (often a peer's failure) */
	CW_ERRF_NCCL_USAGE,    /* NCCL: invalid argument or usage */
	CW_ERRF_NCCL_REMOTE,   /* NCCL: a remote peer failed or went away */
	CW_ERRF_OTHER,         /* any other failing code */
	CW_ERRF_MAX
};

/* The API whose codes op returns, from its name: nccl*, cu* (driver),
 * else cuda* (runtime). */
enum cw_error_api cw_error_api_of_op(const char *op);
/* The enumerator's name ("cudaErrorNoDevice", "CUDA_ERROR_OUT_OF_MEMORY",
 * "ncclSystemError"), or NULL for a code the table does not have. */
const char *cw_call_error_name(enum cw_error_api api, int64_t code);
/* The family of a code op returned; CW_ERRF_NONE for success and the
 * non-failures above, CW_ERRF_OTHER for codes the table does not know. */
enum cw_error_family cw_call_error_family(enum cw_error_api api, int64_t code);
/* 1 when a traced call of source ("cuda", "driver", "graph", "nccl")
 * returned a code that is a failure of its API: such a call's latency is
 * the failure path's, kept out of the op's latency statistics and counted
 * apart (docs/rules.md "Failing calls"). */
int cw_call_failed(const char *source, const char *op, int64_t ret);
/* Writes the code's name, or "<api> error <code>" when the table lacks
 * it, to buf. */
void cw_call_error_format(enum cw_error_api api, int64_t code, char *buf, unsigned len);
/* "no device or driver usable from the process", ... */
const char *cw_error_family_text(enum cw_error_family f);
/* "no_device", "out_of_memory", ... (JSON, docs). */
const char *cw_error_family_name(enum cw_error_family f);

#endif
