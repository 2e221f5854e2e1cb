/* events.h: the one ABI shared by the BPF programs and userspace.
 *
 * Rules (docs/events.md documents every field):
 *  - fixed-width fields only, explicit padding, no pointers-as-pointers;
 *  - every record starts with struct cw_hdr, whose size field is the record's
 *    full size so the decoder can reject truncated or foreign records;
 *  - every record size is pinned with _Static_assert; changing a layout
 *    means bumping CW_EVENTS_VERSION.
 * All timestamps are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns()).
 */
#ifndef CW_BPF_EVENTS_H
#define CW_BPF_EVENTS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define CW_EVENTS_VERSION 1
#define CW_COMM_LEN 16
#define CW_PATH_LEN 128
#define CW_NAME_LEN 128
#define CW_CALL_ARGS 6
#define CW_PY_MAX_FRAMES 32
#define CW_USTACK_MAX 32

/* Record types: what layout follows the header. */
enum cw_rec_type {
	CW_REC_CALL_ENTRY = 1,  /* struct cw_call_entry */
	CW_REC_CALL_RETURN = 2, /* struct cw_call_return */
	CW_REC_OFFCPU = 3,      /* struct cw_offcpu */
	CW_REC_BLOCK_IO = 4,    /* struct cw_block_io */
	CW_REC_NET = 5,         /* struct cw_net */
	CW_REC_MEM = 6,         /* struct cw_mem */
	CW_REC_PROC = 7,        /* struct cw_proc */
	CW_REC_PYSTACK = 8,     /* struct cw_pystack */
	CW_REC_KERNEL_NAME = 9, /* struct cw_kernel_name */
	CW_REC_SNAPSHOT = 10,   /* struct cw_snapshot (userspace sampler) */
	CW_REC_USTACK = 11,     /* struct cw_ustack */
	CW_REC_CALL = 12,       /* struct cw_call: a whole call, entry and return */
	CW_REC_HTTP_IO = 13,    /* struct cw_http_io */
	CW_REC_TYPE_MAX
};

/* Layers. The numeric values are stored nowhere; the store keeps names. */
enum cw_source {
	CW_SRC_CUDA = 1,   /* CUDA runtime, libcudart */
	CW_SRC_DRIVER = 2, /* CUDA driver, libcuda */
	CW_SRC_GRAPH = 3,  /* CUDA graphs (runtime or driver) */
	CW_SRC_NCCL = 4,   /* libnccl */
	CW_SRC_SCHED = 5,  /* scheduler: off-CPU intervals, wakeups */
	CW_SRC_MEM = 6,    /* page allocation, OOM */
	CW_SRC_IO = 7,     /* block I/O */
	CW_SRC_NET = 8,    /* TCP and sockets */
	CW_SRC_PROC = 9,   /* exec, fork, exit */
	CW_SRC_PYTHON = 10,
	CW_SRC_SYSTEM = 11, /* host snapshots */
	CW_SRC_MAX
};

/* Operations. One flat enum so an op identifies its source too; the names
 * live in src/pipeline/ops.c and are what the store and the CLI show. */
enum cw_op {
	CW_OP_NONE = 0,
	/* CUDA runtime */
	CW_OP_cudaMalloc = 1,
	CW_OP_cudaFree,
	CW_OP_cudaMallocAsync,
	CW_OP_cudaFreeAsync,
	CW_OP_cudaMallocManaged,
	CW_OP_cudaMallocHost,
	CW_OP_cudaHostAlloc,
	CW_OP_cudaLaunchKernel,
	CW_OP_cudaLaunchKernelExC,
	CW_OP_cudaMemcpy,
	CW_OP_cudaMemcpyAsync,
	CW_OP_cudaMemcpy2D,
	CW_OP_cudaMemcpy2DAsync,
	CW_OP_cudaMemcpyPeer,
	CW_OP_cudaMemcpyPeerAsync,
	CW_OP_cudaMemset,
	CW_OP_cudaMemsetAsync,
	CW_OP_cudaStreamSynchronize,
	CW_OP_cudaDeviceSynchronize,
	CW_OP_cudaEventSynchronize,
	CW_OP_cudaStreamWaitEvent,
	CW_OP_cudaSetDevice,
	CW_OP_cudaHostRegister,
	/* CUDA graphs */
	CW_OP_cudaStreamBeginCapture = 40,
	CW_OP_cudaStreamEndCapture,
	CW_OP_cudaGraphInstantiate,
	CW_OP_cudaGraphLaunch,
	CW_OP_cuGraphLaunch,
	CW_OP_cudaGraphInstantiateWithFlags,
	CW_OP_cudaGraphExecUpdate,
	CW_OP_cudaGraphUpload,
	CW_OP_cudaGraphExecDestroy,
	CW_OP_cudaGraphDestroy,
	CW_OP_cuGraphInstantiateWithFlags,
	CW_OP_cuGraphExecUpdate,
	CW_OP_cuGraphExecDestroy,
	/* CUDA driver */
	CW_OP_cuLaunchKernel = 60,
	CW_OP_cuLaunchKernelEx,
	CW_OP_cuMemAlloc,
	CW_OP_cuMemFree,
	CW_OP_cuMemAllocAsync,
	CW_OP_cuMemAllocManaged,
	CW_OP_cuMemcpy,
	CW_OP_cuMemcpyAsync,
	CW_OP_cuMemcpyHtoD,
	CW_OP_cuMemcpyHtoDAsync,
	CW_OP_cuMemcpyDtoH,
	CW_OP_cuMemcpyDtoHAsync,
	CW_OP_cuMemcpyDtoD,
	CW_OP_cuMemcpyDtoDAsync,
	CW_OP_cuCtxSynchronize,
	CW_OP_cuStreamSynchronize,
	CW_OP_cuEventSynchronize,
	CW_OP_cuMemCreate,
	CW_OP_cuMemMap,
	CW_OP_cuCtxSetCurrent,
	CW_OP_cuModuleGetFunction,
	CW_OP_cuLibraryGetKernel,
	CW_OP_cuMemHostAlloc,
	CW_OP_cuMemAllocHost,
	CW_OP_cuMemHostRegister,
	/* NCCL */
	CW_OP_ncclCommInitRank = 100,
	CW_OP_ncclCommInitRankConfig,
	CW_OP_ncclCommInitAll,
	CW_OP_ncclCommSplit,
	CW_OP_ncclCommDestroy,
	CW_OP_ncclAllReduce,
	CW_OP_ncclAllGather,
	CW_OP_ncclReduceScatter,
	CW_OP_ncclBroadcast,
	CW_OP_ncclBcast,
	CW_OP_ncclReduce,
	CW_OP_ncclSend,
	CW_OP_ncclRecv,
	CW_OP_ncclGroupStart,
	CW_OP_ncclGroupEnd,
	CW_OP_ncclAlltoAll,              /* NCCL >= 2.28 */
	CW_OP_ncclCommInitRankScalable,  /* NCCL >= 2.23 */
	CW_OP_ncclCommAbort,
	CW_OP_ncclCommFinalize,
	CW_OP_ncclCommGetAsyncError,
	/* scheduler */
	CW_OP_offcpu = 140,
	CW_OP_wakeup,
	/* memory */
	CW_OP_page_alloc = 150,
	CW_OP_oom_kill,
	CW_OP_rss,
	/* block I/O */
	CW_OP_block_read = 160,
	CW_OP_block_write,
	CW_OP_block_other,
	/* network */
	CW_OP_tcp_retransmit = 170,
	CW_OP_sock_send,
	CW_OP_sock_recv,
	/* a traced server's connections (http.bpf.c) */
	CW_OP_http_accept = 175,
	CW_OP_http_read,
	CW_OP_http_write,
	CW_OP_http_close,
	/* process lifecycle */
	CW_OP_exec = 180,
	CW_OP_fork,
	CW_OP_exit,
	/* Python and host */
	CW_OP_pystack = 190,
	CW_OP_snapshot = 200,
	CW_OP_kernel_name = 210,
	CW_OP_MAX = 256
};

struct cw_hdr {
	__u16 type;    /* enum cw_rec_type */
	__u16 size;    /* size of the whole record, header included */
	__u8 version;  /* CW_EVENTS_VERSION */
	__u8 source;   /* enum cw_source */
	__u16 op;      /* enum cw_op */
	__u64 ts_ns;   /* CLOCK_MONOTONIC */
	__u32 pid;     /* thread group id */
	__u32 tid;     /* kernel thread id */
	__u64 cgroup_id;
	char comm[CW_COMM_LEN];
};
_Static_assert(sizeof(struct cw_hdr) == 48, "cw_hdr layout");

/* Flags on call entries. */
#define CW_CALL_F_PYSTACK 0x1 /* a CW_REC_PYSTACK with the same tid and ts follows (precedes a cw_call) */
#define CW_CALL_F_USTACK 0x2  /* a CW_REC_USTACK with the same tid and ts follows (precedes a cw_call) */

/* Entry of a traced library call. args[] holds the call's arguments in
 * order, as the ABI passes them (pointers as addresses); the meaning per op
 * is tabulated in docs/events.md. For memcpy the decoded byte count is in
 * args[2] and the cudaMemcpyKind in args[3] as the API defines them. */
struct cw_call_entry {
	struct cw_hdr hdr;
	__u64 args[CW_CALL_ARGS];
	__s32 device; /* current CUDA device of the thread, -1 unknown */
	__u32 flags;  /* CW_CALL_F_* */
};
_Static_assert(sizeof(struct cw_call_entry) == 48 + 48 + 8, "cw_call_entry layout");

/* Return of a traced call. Paired in userspace with the innermost open
 * entry of the same tid, source and op. */
struct cw_call_return {
	struct cw_hdr hdr;
	__s64 retval; /* cudaError_t / CUresult / ncclResult_t */
};
_Static_assert(sizeof(struct cw_call_return) == 56, "cw_call_return layout");

/* A whole traced call in one record, emitted at its return: the entry as
 * it was taken (e.hdr.ts_ns is the entry time, e.hdr.type CW_REC_CALL) plus
 * the return. The CUDA probes emit this instead of an entry/return pair;
 * the state between the two lives in the kernel (cuda.bpf.h
 * cw_call_state), so a call costs one ring record. Stack records of the
 * call (CW_CALL_F_PYSTACK, CW_CALL_F_USTACK) precede it on the ring. */
struct cw_call {
	struct cw_call_entry e;
	__u64 end_ns; /* CLOCK_MONOTONIC at return */
	__s64 retval; /* as in cw_call_return */
};
_Static_assert(sizeof(struct cw_call) == 104 + 16, "cw_call layout");

enum cw_offcpu_reason {
	CW_OFFCPU_PREEMPTED = 1, /* switched out while runnable */
	CW_OFFCPU_BLOCKED = 2,   /* switched out sleeping (I/O, lock, futex) */
};

/* One off-CPU interval of a traced thread, emitted when it runs again.
 * hdr.tid is the thread that was off CPU; hdr.ts_ns is when it went off. */
struct cw_offcpu {
	struct cw_hdr hdr;
	__u64 end_ns;       /* when it was switched back in */
	__u32 reason;       /* enum cw_offcpu_reason */
	__u32 cpu;          /* CPU it was switched out from */
	__u32 by_pid;       /* task that took the CPU at switch-out */
	__u32 by_tid;
	__u64 by_cgroup_id; /* 0 when unknown */
	char by_comm[CW_COMM_LEN];
	__u32 waker_pid;    /* who woke it (blocked intervals), 0 unknown */
	__u32 waker_tid;
	char waker_comm[CW_COMM_LEN];
	__u64 state;        /* prev_state at switch-out */
};
_Static_assert(sizeof(struct cw_offcpu) == 48 + 80, "cw_offcpu layout");

/* A completed block request, attributed to the thread that issued it. */
struct cw_block_io {
	struct cw_hdr hdr; /* ts_ns = issue time */
	__u64 complete_ns;
	__u64 sector;
	__u32 bytes;
	__u32 dev;         /* MKDEV(major, minor) as the kernel encodes it */
	char rwbs[8];
	__s32 error;
	__u32 pad;
};
_Static_assert(sizeof(struct cw_block_io) == 48 + 40, "cw_block_io layout");

/* TCP retransmit or socket send/receive volume. */
struct cw_net {
	struct cw_hdr hdr;
	__u16 family; /* AF_INET or AF_INET6 */
	__u16 sport;
	__u16 dport;
	__u16 state;  /* TCP state for retransmits */
	__u8 saddr[16];
	__u8 daddr[16];
	__u64 bytes;  /* send/recv volume */
};
_Static_assert(sizeof(struct cw_net) == 48 + 48, "cw_net layout");

/* Page allocation (aggregated in the kernel per thread and interval), OOM
 * kill, or RSS. For oom_kill, pages is the victim's RSS (file, anon and
 * shmem pages) and interval_ns the limit of the victim's memory cgroup in
 * bytes (memory.max on v2, memory.limit_in_bytes on v1; 0 when none or
 * unknown): an OOM record has no interval, and the layout stays. */
struct cw_mem {
	struct cw_hdr hdr;
	__u64 pages;        /* pages allocated in the interval */
	__u64 interval_ns;  /* length of the aggregation interval */
	__u32 victim_pid;   /* OOM */
	__u32 pad;
	char victim_comm[CW_COMM_LEN];
	__u64 bytes;        /* RSS, or bytes allocated */
};
_Static_assert(sizeof(struct cw_mem) == 48 + 48, "cw_mem layout");

/* exec, fork (hdr.pid is the parent), exit. */
struct cw_proc {
	struct cw_hdr hdr;
	__u32 parent_pid;
	__u32 child_pid;
	__s32 exit_code;
	__u32 pad;
	char filename[CW_PATH_LEN];
};
_Static_assert(sizeof(struct cw_proc) == 48 + 16 + 128, "cw_proc layout");

/* The Python frame chain at a call, innermost first: the address of each
 * frame's code object and the instruction offset executing (in code units
 * of 2 bytes). hdr.ts_ns and hdr.tid equal those of the call entry. */
struct cw_py_frame {
	__u64 code;
	__u32 lasti;
	__u32 pad;
};
struct cw_pystack {
	struct cw_hdr hdr;
	__u32 nframes;
	__u32 truncated; /* 1 when the chain was deeper than CW_PY_MAX_FRAMES */
	__u32 py_version; /* PY_VERSION_HEX >> 16, e.g. 0x030c */
	__u32 pad;
	struct cw_py_frame frames[CW_PY_MAX_FRAMES];
};
_Static_assert(sizeof(struct cw_pystack) == 48 + 16 + 16 * CW_PY_MAX_FRAMES, "cw_pystack layout");

/* Native user stack (return addresses) of a call. */
struct cw_ustack {
	struct cw_hdr hdr;
	__u32 nips;
	__u32 pad;
	__u64 ips[CW_USTACK_MAX];
};
_Static_assert(sizeof(struct cw_ustack) == 48 + 8 + 8 * CW_USTACK_MAX, "cw_ustack layout");

/* Kernel name learned from __cudaRegisterFunction (handle = host stub) or
 * cuModuleGetFunction/cuLibraryGetKernel (handle = CUfunction/CUkernel). */
struct cw_kernel_name {
	struct cw_hdr hdr;
	__u64 handle;
	char name[CW_NAME_LEN];
};
_Static_assert(sizeof(struct cw_kernel_name) == 48 + 8 + 128, "cw_kernel_name layout");

/* Host snapshot, produced by the userspace sampler once a second. */
struct cw_snapshot {
	struct cw_hdr hdr;
	__u32 cpu_pct_x100;   /* busy CPU, all cores, 0..10000 */
	__u32 mem_pct_x100;   /* used memory share */
	__u64 swap_used_bytes;
	__u32 load1_x100;
	__u32 ncpu;
	__u64 page_alloc_per_s; /* pages per second */
	__u64 io_bytes_per_s;   /* block I/O throughput */
	__u32 io_busy_pct_x100; /* share of the second with I/O in flight */
	__u32 pad;
};
_Static_assert(sizeof(struct cw_snapshot) == 48 + 48, "cw_snapshot layout");

/* Bytes a server moved on one of its accepted connections (http.bpf.c):
 * one read/recv (op http_read) or write/send (http_write) system call, or
 * the connection's accept (http_accept, len 0) or close (http_close).
 * hdr.ts_ns is when the call returned. head holds the call's first
 * head_len bytes, tail its last tail_len when it moved more than head
 * holds (0 when the bytes were not one contiguous buffer). */
#define CW_HTTP_IO_HEAD 512
#define CW_HTTP_IO_TAIL 16
struct cw_http_io {
	struct cw_hdr hdr;
	__s64 len;      /* bytes the call moved */
	__s32 fd;
	__u16 port;     /* the server's listening port */
	__u16 head_len;
	__u16 tail_len;
	__u16 peer_port; /* http_accept: the client's port (of the accepted socket); 0 unknown */
	__u32 pad1;
	__u8 tail[CW_HTTP_IO_TAIL];
	__u8 head[CW_HTTP_IO_HEAD];
};
_Static_assert(sizeof(struct cw_http_io) == 48 + 24 + 16 + 512, "cw_http_io layout");

#define CW_MAX_RECORD_SIZE                                                                          \
	(sizeof(struct cw_http_io) > sizeof(struct cw_pystack) ? sizeof(struct cw_http_io)          \
								: sizeof(struct cw_pystack))

#endif
