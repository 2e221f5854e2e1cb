/* Error-code names and families (call_errors.h). Families are listed by
 * name rather than by number: the runtime and the driver number the same
 * failure differently, and a name says in review what it covers. */
#include <stdio.h>
#include <string.h>

#include "gpu/call_errors.h"
#include "gpu/call_errors_int.h"

struct family_names {
	enum cw_error_family family;
	const char *const *names;
};

/* Codes that report a state, not a failure. */
static const char *const not_failures[] = {
	"cudaErrorNotReady", "CUDA_ERROR_NOT_READY", "ncclInProgress",
	"cudaErrorPeerAccessAlreadyEnabled", "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	"cudaErrorCudartUnloading", "CUDA_ERROR_DEINITIALIZED", NULL,
};
static const char *const no_device[] = {
	"cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE", "cudaErrorInsufficientDriver",
	"cudaErrorStubLibrary", "CUDA_ERROR_STUB_LIBRARY", "cudaErrorInitializationError",
	"CUDA_ERROR_NOT_INITIALIZED", "cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE",
	"cudaErrorDevicesUnavailable", "CUDA_ERROR_DEVICE_UNAVAILABLE", "cudaErrorSystemDriverMismatch",
	"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "cudaErrorCompatNotSupportedOnDevice",
	"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "cudaErrorSystemNotReady", "CUDA_ERROR_SYSTEM_NOT_READY",
	"cudaErrorCallRequiresNewerDriver", "cudaErrorDeviceUninitialized", "CUDA_ERROR_INVALID_CONTEXT",
	"cudaErrorStartupFailure", "CUDA_ERROR_NOT_SUPPORTED", "cudaErrorNotSupported", NULL,
};
static const char *const out_of_memory[] = {
	"cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY", NULL,
};
static const char *const kernel_fault[] = {
	"cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorLaunchOutOfResources",
	"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "cudaErrorLaunchTimeout", "CUDA_ERROR_LAUNCH_TIMEOUT",
	"cudaErrorLaunchFailure", "CUDA_ERROR_LAUNCH_FAILED", "cudaErrorHardwareStackError",
	"CUDA_ERROR_HARDWARE_STACK_ERROR", "cudaErrorIllegalInstruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	"cudaErrorMisalignedAddress", "CUDA_ERROR_MISALIGNED_ADDRESS", "cudaErrorInvalidAddressSpace",
	"CUDA_ERROR_INVALID_ADDRESS_SPACE", "cudaErrorInvalidPc", "CUDA_ERROR_INVALID_PC", "cudaErrorAssert",
	"CUDA_ERROR_ASSERT", "cudaErrorNoKernelImageForDevice", "CUDA_ERROR_NO_BINARY_FOR_GPU",
	"cudaErrorInvalidDeviceFunction", "cudaErrorInvalidKernelImage", "CUDA_ERROR_INVALID_IMAGE",
	"cudaErrorUnsupportedPtxVersion", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "cudaErrorInvalidPtx",
	"CUDA_ERROR_INVALID_PTX", "cudaErrorInvalidConfiguration", "cudaErrorCooperativeLaunchTooLarge",
	"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "cudaErrorECCUncorrectable", "CUDA_ERROR_ECC_UNCORRECTABLE",
	"cudaErrorPriorLaunchFailure", "cudaErrorContained", "CUDA_ERROR_CONTAINED", "cudaErrorLaunchPendingCountExceeded",
	"CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", "cudaErrorLaunchIncompatibleTexturing", NULL,
};
static const char *const nccl_cuda[] = {"ncclUnhandledCudaError", NULL};
static const char *const nccl_system[] = {"ncclSystemError", NULL};
static const char *const nccl_internal[] = {"ncclInternalError", NULL};
static const char *const nccl_usage[] = {"ncclInvalidArgument", "ncclInvalidUsage", NULL};
static const char *const nccl_remote[] = {"ncclRemoteError", NULL};

static const struct family_names families[] = {
	{CW_ERRF_NONE, not_failures},
	{CW_ERRF_NO_DEVICE, no_device},
	{CW_ERRF_OUT_OF_MEMORY, out_of_memory},
	{CW_ERRF_KERNEL_FAULT, kernel_fault},
	{CW_ERRF_NCCL_CUDA, nccl_cuda},
	{CW_ERRF_NCCL_SYSTEM, nccl_system},
	{CW_ERRF_NCCL_INTERNAL, nccl_internal},
	{CW_ERRF_NCCL_USAGE, nccl_usage},
	{CW_ERRF_NCCL_REMOTE, nccl_remote},
};

enum cw_error_api cw_error_api_of_op(const char *op)
{
	if (!strncmp(op, "nccl", 4))
		return CW_ERR_API_NCCL;
	if (!strncmp(op, "cu", 2) && strncmp(op, "cuda", 4))
		return CW_ERR_API_DRIVER;
	return CW_ERR_API_RUNTIME;
}

const char *cw_call_error_name(enum cw_error_api api, int64_t code)
{
	const struct cw_call_error *t = api == CW_ERR_API_NCCL     ? cw_nccl_results
					: api == CW_ERR_API_DRIVER ? cw_cu_results
								   : cw_cudart_errors;
	size_t lo = 0, hi = api == CW_ERR_API_NCCL     ? cw_nccl_results_len
			    : api == CW_ERR_API_DRIVER ? cw_cu_results_len
						       : cw_cudart_errors_len;

	if (code < 0 || code > 0x7fffffff)
		return NULL;
	while (lo < hi) { /* the tables are sorted by code */
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid].code == code)
			return t[mid].name;
		if (t[mid].code < code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

enum cw_error_family cw_call_error_family(enum cw_error_api api, int64_t code)
{
	const char *name;

	if (!code)
		return CW_ERRF_NONE;
	if (!(name = cw_call_error_name(api, code)))
		return CW_ERRF_OTHER;
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		for (const char *const *n = families[f].names; *n; n++)
			if (!strcmp(*n, name))
				return families[f].family;
	return CW_ERRF_OTHER;
}

void cw_call_error_format(enum cw_error_api api, int64_t code, char *buf, unsigned len)
{
	const char *name = cw_call_error_name(api, code);

	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "%s error %lld",
			 api == CW_ERR_API_NCCL ? "NCCL" : api == CW_ERR_API_DRIVER ? "CUDA driver" : "CUDA", (long long)code);
}

const char *cw_error_family_text(enum cw_error_family f)
{
	static const char *const text[CW_ERRF_MAX] = {
		[CW_ERRF_NONE] = "no failure",
		[CW_ERRF_NO_DEVICE] = "no GPU or driver usable from the process",
		[CW_ERRF_OUT_OF_MEMORY] = "device memory exhausted",
		[CW_ERRF_KERNEL_FAULT] = "a kernel launch failed or a kernel faulted",
		[CW_ERRF_NCCL_CUDA] = "a CUDA call inside NCCL failed",
		[CW_ERRF_NCCL_SYSTEM] = "a system call or the network failed under NCCL",
		[CW_ERRF_NCCL_INTERNAL] = "NCCL hit an internal error (often a peer's failure)",
		[CW_ERRF_NCCL_USAGE] = "NCCL was called with an invalid argument or in an invalid order",
		[CW_ERRF_NCCL_REMOTE] = "a remote NCCL peer failed or went away",
		[CW_ERRF_OTHER] = "the call failed",
	};
	return (unsigned)f < CW_ERRF_MAX ? text[f] : text[CW_ERRF_OTHER];
}

const char *cw_error_family_name(enum cw_error_family f)
{
	static const char *const names[CW_ERRF_MAX] = {
		[CW_ERRF_NONE] = "none",
		[CW_ERRF_NO_DEVICE] = "no_device",
		[CW_ERRF_OUT_OF_MEMORY] = "out_of_memory",
		[CW_ERRF_KERNEL_FAULT] = "kernel_fault",
		[CW_ERRF_NCCL_CUDA] = "nccl_cuda",
		[CW_ERRF_NCCL_SYSTEM] = "nccl_system",
		[CW_ERRF_NCCL_INTERNAL] = "nccl_internal",
		[CW_ERRF_NCCL_USAGE] = "nccl_usage",
		[CW_ERRF_NCCL_REMOTE] = "nccl_remote",
		[CW_ERRF_OTHER] = "other",
	};
	return (unsigned)f < CW_ERRF_MAX ? names[f] : names[CW_ERRF_OTHER];
}

int cw_call_failed(const char *source, const char *op, int64_t ret)
{
	if (!ret || !source || !op)
		return 0;
	if (strcmp(source, "cuda") && strcmp(source, "driver") && strcmp(source, "graph") && strcmp(source, "nccl"))
		return 0;
	return cw_call_error_family(cw_error_api_of_op(op), ret) != CW_ERRF_NONE;
}
