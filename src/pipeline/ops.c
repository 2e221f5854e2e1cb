/* Names of the codes in events.h. The names are part of the store's
 * contract: queries and docs say op = 'cudaMalloc', source = 'cuda'. */
#include "pipeline/ops.h"

#include <stddef.h>
#include <string.h>

#include "bpf/events.h"

static const char *const source_names[CW_SRC_MAX] = {
	[CW_SRC_CUDA] = "cuda",     [CW_SRC_DRIVER] = "driver", [CW_SRC_GRAPH] = "graph",
	[CW_SRC_NCCL] = "nccl",     [CW_SRC_SCHED] = "sched",   [CW_SRC_MEM] = "mem",
	[CW_SRC_IO] = "io",         [CW_SRC_NET] = "net",       [CW_SRC_PROC] = "proc",
	[CW_SRC_PYTHON] = "python", [CW_SRC_SYSTEM] = "system",
};

struct op_info {
	const char *name;
	unsigned char source;
};

#define OP(n, s) [CW_OP_##n] = { #n, s }
static const struct op_info op_table[CW_OP_MAX] = {
	OP(cudaMalloc, CW_SRC_CUDA),
	OP(cudaFree, CW_SRC_CUDA),
	OP(cudaMallocAsync, CW_SRC_CUDA),
	OP(cudaFreeAsync, CW_SRC_CUDA),
	OP(cudaMallocManaged, CW_SRC_CUDA),
	OP(cudaMallocHost, CW_SRC_CUDA),
	OP(cudaHostAlloc, CW_SRC_CUDA),
	OP(cudaLaunchKernel, CW_SRC_CUDA),
	OP(cudaLaunchKernelExC, CW_SRC_CUDA),
	OP(cudaMemcpy, CW_SRC_CUDA),
	OP(cudaMemcpyAsync, CW_SRC_CUDA),
	OP(cudaMemcpy2D, CW_SRC_CUDA),
	OP(cudaMemcpy2DAsync, CW_SRC_CUDA),
	OP(cudaMemcpyPeer, CW_SRC_CUDA),
	OP(cudaMemcpyPeerAsync, CW_SRC_CUDA),
	OP(cudaMemset, CW_SRC_CUDA),
	OP(cudaMemsetAsync, CW_SRC_CUDA),
	OP(cudaStreamSynchronize, CW_SRC_CUDA),
	OP(cudaDeviceSynchronize, CW_SRC_CUDA),
	OP(cudaEventSynchronize, CW_SRC_CUDA),
	OP(cudaStreamWaitEvent, CW_SRC_CUDA),
	OP(cudaSetDevice, CW_SRC_CUDA),
	OP(cudaStreamBeginCapture, CW_SRC_GRAPH),
	OP(cudaStreamEndCapture, CW_SRC_GRAPH),
	OP(cudaGraphInstantiate, CW_SRC_GRAPH),
	OP(cudaGraphLaunch, CW_SRC_GRAPH),
	OP(cuGraphLaunch, CW_SRC_GRAPH),
	OP(cudaHostRegister, CW_SRC_CUDA),
	OP(cudaGraphInstantiateWithFlags, CW_SRC_GRAPH),
	OP(cudaGraphExecUpdate, CW_SRC_GRAPH),
	OP(cudaGraphUpload, CW_SRC_GRAPH),
	OP(cudaGraphExecDestroy, CW_SRC_GRAPH),
	OP(cudaGraphDestroy, CW_SRC_GRAPH),
	OP(cuGraphInstantiateWithFlags, CW_SRC_GRAPH),
	OP(cuGraphExecUpdate, CW_SRC_GRAPH),
	OP(cuGraphExecDestroy, CW_SRC_GRAPH),
	OP(cuMemHostAlloc, CW_SRC_DRIVER),
	OP(cuMemAllocHost, CW_SRC_DRIVER),
	OP(cuMemHostRegister, CW_SRC_DRIVER),
	OP(cuLaunchKernel, CW_SRC_DRIVER),
	OP(cuLaunchKernelEx, CW_SRC_DRIVER),
	OP(cuMemAlloc, CW_SRC_DRIVER),
	OP(cuMemFree, CW_SRC_DRIVER),
	OP(cuMemAllocAsync, CW_SRC_DRIVER),
	OP(cuMemAllocManaged, CW_SRC_DRIVER),
	OP(cuMemcpy, CW_SRC_DRIVER),
	OP(cuMemcpyAsync, CW_SRC_DRIVER),
	OP(cuMemcpyHtoD, CW_SRC_DRIVER),
	OP(cuMemcpyHtoDAsync, CW_SRC_DRIVER),
	OP(cuMemcpyDtoH, CW_SRC_DRIVER),
	OP(cuMemcpyDtoHAsync, CW_SRC_DRIVER),
	OP(cuMemcpyDtoD, CW_SRC_DRIVER),
	OP(cuMemcpyDtoDAsync, CW_SRC_DRIVER),
	OP(cuCtxSynchronize, CW_SRC_DRIVER),
	OP(cuStreamSynchronize, CW_SRC_DRIVER),
	OP(cuEventSynchronize, CW_SRC_DRIVER),
	OP(cuMemCreate, CW_SRC_DRIVER),
	OP(cuMemMap, CW_SRC_DRIVER),
	OP(cuCtxSetCurrent, CW_SRC_DRIVER),
	OP(cuModuleGetFunction, CW_SRC_DRIVER),
	OP(cuLibraryGetKernel, CW_SRC_DRIVER),
	OP(ncclCommInitRank, CW_SRC_NCCL),
	OP(ncclCommInitRankConfig, CW_SRC_NCCL),
	OP(ncclCommInitAll, CW_SRC_NCCL),
	OP(ncclCommSplit, CW_SRC_NCCL),
	OP(ncclCommDestroy, CW_SRC_NCCL),
	OP(ncclAllReduce, CW_SRC_NCCL),
	OP(ncclAllGather, CW_SRC_NCCL),
	OP(ncclReduceScatter, CW_SRC_NCCL),
	OP(ncclBroadcast, CW_SRC_NCCL),
	OP(ncclBcast, CW_SRC_NCCL),
	OP(ncclReduce, CW_SRC_NCCL),
	OP(ncclSend, CW_SRC_NCCL),
	OP(ncclRecv, CW_SRC_NCCL),
	OP(ncclGroupStart, CW_SRC_NCCL),
	OP(ncclGroupEnd, CW_SRC_NCCL),
	OP(ncclAlltoAll, CW_SRC_NCCL),
	OP(ncclCommInitRankScalable, CW_SRC_NCCL),
	OP(ncclCommAbort, CW_SRC_NCCL),
	OP(ncclCommFinalize, CW_SRC_NCCL),
	OP(ncclCommGetAsyncError, CW_SRC_NCCL),
	OP(offcpu, CW_SRC_SCHED),
	OP(wakeup, CW_SRC_SCHED),
	OP(page_alloc, CW_SRC_MEM),
	OP(oom_kill, CW_SRC_MEM),
	OP(rss, CW_SRC_MEM),
	OP(block_read, CW_SRC_IO),
	OP(block_write, CW_SRC_IO),
	OP(block_other, CW_SRC_IO),
	OP(tcp_retransmit, CW_SRC_NET),
	OP(sock_send, CW_SRC_NET),
	OP(sock_recv, CW_SRC_NET),
	OP(http_accept, CW_SRC_NET),
	OP(http_read, CW_SRC_NET),
	OP(http_write, CW_SRC_NET),
	OP(http_close, CW_SRC_NET),
	OP(exec, CW_SRC_PROC),
	OP(fork, CW_SRC_PROC),
	OP(exit, CW_SRC_PROC),
	OP(pystack, CW_SRC_PYTHON),
	OP(snapshot, CW_SRC_SYSTEM),
	OP(kernel_name, CW_SRC_CUDA),
};
#undef OP

const char *cw_source_name(unsigned source)
{
	return source < CW_SRC_MAX ? source_names[source] : NULL;
}

const char *cw_op_name(unsigned op)
{
	return op < CW_OP_MAX ? op_table[op].name : NULL;
}

unsigned cw_op_source(unsigned op)
{
	return op < CW_OP_MAX && op_table[op].name ? op_table[op].source : 0;
}

unsigned cw_op_lookup(const char *name)
{
	unsigned i;

	for (i = 1; i < CW_OP_MAX; i++)
		if (op_table[i].name && strcmp(op_table[i].name, name) == 0)
			return i;
	return 0;
}
