/* hook_table: the exported CUDA runtime, driver and NCCL functions trace
 * hooks, and the scan of a library file's symbols for them. */
#include "loader/hook_table.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/cuda.bpf.h"
#include "bpf/events.h"

#define H(n, o, s, l) { #n, CW_OP_##o, CW_SRC_##s, CW_LIB_##l }
#define HK(n, o, l) { #n, CW_HOOK_##o, CW_SRC_CUDA, CW_LIB_##l }

/* Names as exported by CUDA 13.0 / NCCL 2.2x. The driver's versioned names
 * are what cuda.h #defines the plain names to since CUDA 3.2 (cuMemAlloc
 * -> cuMemAlloc_v2), so those are the ones programs call. _ptsz/_ptds
 * variants are found by suffix at attach time. */
static const struct cw_hook_def hook_table[] = {
	/* runtime */
	H(cudaMalloc, cudaMalloc, CUDA, CUDART),
	H(cudaFree, cudaFree, CUDA, CUDART),
	H(cudaMallocAsync, cudaMallocAsync, CUDA, CUDART),
	H(cudaFreeAsync, cudaFreeAsync, CUDA, CUDART),
	H(cudaMallocManaged, cudaMallocManaged, CUDA, CUDART),
	H(cudaMallocHost, cudaMallocHost, CUDA, CUDART),
	H(cudaHostAlloc, cudaHostAlloc, CUDA, CUDART),
	H(cudaLaunchKernel, cudaLaunchKernel, CUDA, CUDART),
	H(cudaLaunchKernelExC, cudaLaunchKernelExC, CUDA, CUDART),
	H(cudaMemcpy, cudaMemcpy, CUDA, CUDART),
	H(cudaMemcpyAsync, cudaMemcpyAsync, CUDA, CUDART),
	H(cudaMemcpy2D, cudaMemcpy2D, CUDA, CUDART),
	H(cudaMemcpy2DAsync, cudaMemcpy2DAsync, CUDA, CUDART),
	H(cudaMemcpyPeer, cudaMemcpyPeer, CUDA, CUDART),
	H(cudaMemcpyPeerAsync, cudaMemcpyPeerAsync, CUDA, CUDART),
	H(cudaMemset, cudaMemset, CUDA, CUDART),
	H(cudaMemsetAsync, cudaMemsetAsync, CUDA, CUDART),
	H(cudaStreamSynchronize, cudaStreamSynchronize, CUDA, CUDART),
	H(cudaDeviceSynchronize, cudaDeviceSynchronize, CUDA, CUDART),
	H(cudaEventSynchronize, cudaEventSynchronize, CUDA, CUDART),
	H(cudaStreamWaitEvent, cudaStreamWaitEvent, CUDA, CUDART),
	H(cudaSetDevice, cudaSetDevice, CUDA, CUDART),
	H(cudaStreamBeginCapture, cudaStreamBeginCapture, GRAPH, CUDART),
	H(cudaStreamEndCapture, cudaStreamEndCapture, GRAPH, CUDART),
	H(cudaGraphInstantiate, cudaGraphInstantiate, GRAPH, CUDART),
	H(cudaGraphLaunch, cudaGraphLaunch, GRAPH, CUDART),
	H(cudaGraphInstantiateWithFlags, cudaGraphInstantiateWithFlags, GRAPH, CUDART),
	H(cudaGraphExecUpdate, cudaGraphExecUpdate, GRAPH, CUDART),
	H(cudaGraphUpload, cudaGraphUpload, GRAPH, CUDART),
	H(cudaGraphExecDestroy, cudaGraphExecDestroy, GRAPH, CUDART),
	H(cudaGraphDestroy, cudaGraphDestroy, GRAPH, CUDART),
	H(cudaHostRegister, cudaHostRegister, CUDA, CUDART),
	HK(__cudaRegisterFunction, REGISTER_FUNCTION, CUDART),
	/* driver */
	H(cuLaunchKernel, cuLaunchKernel, DRIVER, CUDA),
	H(cuLaunchKernelEx, cuLaunchKernelEx, DRIVER, CUDA),
	H(cuMemAlloc_v2, cuMemAlloc, DRIVER, CUDA),
	H(cuMemFree_v2, cuMemFree, DRIVER, CUDA),
	H(cuMemAllocAsync, cuMemAllocAsync, DRIVER, CUDA),
	H(cuMemAllocManaged, cuMemAllocManaged, DRIVER, CUDA),
	H(cuMemcpy, cuMemcpy, DRIVER, CUDA),
	H(cuMemcpyAsync, cuMemcpyAsync, DRIVER, CUDA),
	H(cuMemcpyHtoD_v2, cuMemcpyHtoD, DRIVER, CUDA),
	H(cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync, DRIVER, CUDA),
	H(cuMemcpyDtoH_v2, cuMemcpyDtoH, DRIVER, CUDA),
	H(cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync, DRIVER, CUDA),
	H(cuMemcpyDtoD_v2, cuMemcpyDtoD, DRIVER, CUDA),
	H(cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync, DRIVER, CUDA),
	H(cuCtxSynchronize, cuCtxSynchronize, DRIVER, CUDA),
	H(cuCtxSynchronize_v2, cuCtxSynchronize, DRIVER, CUDA), /* CUDA 13: (CUcontext) */
	H(cuStreamSynchronize, cuStreamSynchronize, DRIVER, CUDA),
	H(cuEventSynchronize, cuEventSynchronize, DRIVER, CUDA),
	H(cuMemCreate, cuMemCreate, DRIVER, CUDA),
	H(cuMemMap, cuMemMap, DRIVER, CUDA),
	H(cuCtxSetCurrent, cuCtxSetCurrent, DRIVER, CUDA),
	H(cuModuleGetFunction, cuModuleGetFunction, DRIVER, CUDA),
	H(cuLibraryGetKernel, cuLibraryGetKernel, DRIVER, CUDA),
	H(cuGraphLaunch, cuGraphLaunch, GRAPH, CUDA),
	H(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, GRAPH, CUDA),
	H(cuGraphExecUpdate_v2, cuGraphExecUpdate, GRAPH, CUDA),
	H(cuGraphExecDestroy, cuGraphExecDestroy, GRAPH, CUDA),
	H(cuMemHostAlloc, cuMemHostAlloc, DRIVER, CUDA),
	H(cuMemAllocHost_v2, cuMemAllocHost, DRIVER, CUDA),
	H(cuMemHostRegister_v2, cuMemHostRegister, DRIVER, CUDA),
	HK(cuDevicePrimaryCtxRetain, PRIMARY_CTX_RETAIN, CUDA),
	HK(cuCtxCreate, CTX_CREATE_V2, CUDA), /* the exported v1 has the v2 layout */
	HK(cuCtxCreate_v2, CTX_CREATE_V2, CUDA),
	HK(cuCtxCreate_v3, CTX_CREATE_V3, CUDA),
	HK(cuCtxCreate_v4, CTX_CREATE_V4, CUDA),
	/* NCCL */
	H(ncclCommInitRank, ncclCommInitRank, NCCL, NCCL),
	H(ncclCommInitRankConfig, ncclCommInitRankConfig, NCCL, NCCL),
	H(ncclCommInitAll, ncclCommInitAll, NCCL, NCCL),
	H(ncclCommSplit, ncclCommSplit, NCCL, NCCL),
	H(ncclCommDestroy, ncclCommDestroy, NCCL, NCCL),
	H(ncclAllReduce, ncclAllReduce, NCCL, NCCL),
	H(ncclAllGather, ncclAllGather, NCCL, NCCL),
	H(ncclReduceScatter, ncclReduceScatter, NCCL, NCCL),
	H(ncclBroadcast, ncclBroadcast, NCCL, NCCL),
	H(ncclBcast, ncclBcast, NCCL, NCCL),
	H(ncclReduce, ncclReduce, NCCL, NCCL),
	H(ncclSend, ncclSend, NCCL, NCCL),
	H(ncclRecv, ncclRecv, NCCL, NCCL),
	H(ncclGroupStart, ncclGroupStart, NCCL, NCCL),
	H(ncclGroupEnd, ncclGroupEnd, NCCL, NCCL),
	H(ncclAlltoAll, ncclAlltoAll, NCCL, NCCL), /* NCCL >= 2.28 */
	H(ncclCommInitRankScalable, ncclCommInitRankScalable, NCCL, NCCL),
	H(ncclCommAbort, ncclCommAbort, NCCL, NCCL),
	H(ncclCommFinalize, ncclCommFinalize, NCCL, NCCL),
	H(ncclCommGetAsyncError, ncclCommGetAsyncError, NCCL, NCCL),
	{ NULL, 0, 0, 0 },
};

const struct cw_hook_def *cw_hooks(void)
{
	return hook_table;
}

int cw_hooks_count(enum cw_lib_kind kind)
{
	const struct cw_hook_def *h;
	int n = 0;

	for (h = hook_table; h->name; h++)
		n += h->lib == kind;
	return n;
}

static const struct cw_hook_def *hook_for(const char *sym)
{
	size_t len = strlen(sym);
	const struct cw_hook_def *h;

	/* Per-thread default stream variants: cudaMemcpy_ptds (blocking ops)
	 * and cudaMemcpyAsync_ptsz (stream ops), same signature. */
	if (len > 5 && (!strcmp(sym + len - 5, "_ptsz") || !strcmp(sym + len - 5, "_ptds")))
		len -= 5;
	for (h = hook_table; h->name; h++)
		if (strlen(h->name) == len && !strncmp(h->name, sym, len))
			return h;
	return NULL;
}

static int scan_sym(const struct cw_elf_sym *s, void *arg)
{
	struct cw_hook_scan *sc = arg;
	const struct cw_hook_def *h;
	size_t i;

	if (s->type != STT_FUNC || !s->value)
		return 0;
	h = hook_for(s->name);
	if (!h)
		return 0;
	/* Aliases (pncclAllReduce = ncclAllReduce) share an address: one
	 * probe per address, or each call would be seen twice. */
	for (i = 0; i < sc->n; i++)
		if (sc->v[i].vaddr == s->value)
			return 0;
	if (sc->n == sc->alloc) {
		size_t na = sc->alloc ? sc->alloc * 2 : 64;
		struct cw_hook_found *nv = realloc(sc->v, na * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		sc->v = nv;
		sc->alloc = na;
	}
	sc->v[sc->n].hook = h;
	sc->v[sc->n].vaddr = s->value;
	sc->n++;
	return 0;
}

int cw_hook_scan_file(struct cw_elf *e, struct cw_hook_scan *sc)
{
	int rc = cw_elf_foreach_sym(e, 1, scan_sym, sc);

	return rc == -ENOENT ? 0 : rc;
}

int cw_hooks_in_file(const char *path, int *total_hooks)
{
	struct cw_hook_scan sc = { 0 };
	struct cw_elf *e;
	int rc;

	if (total_hooks) {
		const struct cw_hook_def *h;

		*total_hooks = 0;
		for (h = hook_table; h->name; h++)
			(*total_hooks)++;
	}
	rc = cw_elf_open(&e, path);
	if (rc)
		return rc;
	rc = cw_hook_scan_file(e, &sc);
	cw_elf_close(e);
	free(sc.v);
	return rc < 0 ? rc : (int)sc.n;
}

