/* cuda.bpf.h: what cuda.bpf.c (the CUDA runtime, graph, driver and NCCL
 * uprobes) shares with its loader (src/loader/uprobe_attach.c).
 *
 * One pair of BPF programs serves every hooked function: the attach cookie
 * (struct bpf_uprobe_opts.bpf_cookie, kernel >= 5.15) says which op, which
 * source and which argument layout a probe hit belongs to, so adding a
 * function is one table row in userspace and not one more program.
 *
 * The first part is plain C so userspace can include it. */
#ifndef CW_CUDA_BPF_H
#define CW_CUDA_BPF_H

#if defined(__bpf__)
#include "vmlinux.h"
#else
#include <linux/types.h>
#endif
#include "events.h"

/* Cookie layout: bits 0-15 op (enum cw_op, or a CW_HOOK_* below for
 * bookkeeping hooks that emit no call), 16-23 source (enum cw_source). */
#define CW_COOKIE(op, src) ((__u64)(op) | ((__u64)(src) << 16))
#define CW_COOKIE_OP(c) ((__u32)((c)&0xffff))
#define CW_COOKIE_SRC(c) ((__u32)(((c) >> 16) & 0xff))

/* Allowed cgroups of a tenant filter (cw_cgroup_allow in cuda.bpf.c):
 * a node's pods with their containers, or a Slurm job's steps, are tens;
 * this leaves room for a thousand tenants' trees. */
#define CW_CGROUP_ALLOW_MAX 16384

/* Python stack capture modes (cfg_py_mode in cuda.bpf.c). */
enum cw_py_mode {
	CW_PY_OFF = 0,
	CW_PY_SLOW = 1, /* at the return of slow calls only */
	CW_PY_ALL = 2,  /* at every call entry */
};

/* Bookkeeping hooks: above every enum cw_op value that is a call, below
 * CW_OP_MAX. They feed the kernel-name records and the context -> device
 * map; they never produce call records. */
enum cw_hook {
	CW_HOOK_REGISTER_FUNCTION = 240, /* __cudaRegisterFunction(handle, hostFun, deviceFun, ...) */
	CW_HOOK_PRIMARY_CTX_RETAIN,      /* cuDevicePrimaryCtxRetain(CUcontext *, CUdevice) */
	CW_HOOK_CTX_CREATE_V2,           /* cuCtxCreate/_v2(CUcontext *, flags, CUdevice) */
	CW_HOOK_CTX_CREATE_V3,           /* cuCtxCreate_v3(CUcontext *, params, n, flags, CUdevice) */
	CW_HOOK_CTX_CREATE_V4,           /* cuCtxCreate_v4(CUcontext *, params, flags, CUdevice) */
};

/* A CW_REC_KERNEL_NAME whose name[0] is 0 carries, in name[8..15], the
 * address of the name string in the process: the probe could not read it
 * (page not resident) and the consumer reads it from /proc/PID/mem. */
#define CW_KNAME_DEFERRED_OFF 8

/* In-flight calls: keyed by thread and op, so a runtime call and the
 * driver call it makes are both open. The entry is taken whole at the
 * call's start and becomes the CW_REC_CALL record at its return; userspace
 * reads the open calls (a hung collective, a thread that exited mid-call)
 * and stores them as unfinished.
 *
 * They live in call_slots, a direct-mapped table: (tid, op) hashes to one
 * slot, claimed at entry by a compare-and-swap of its owner word and freed
 * at return. An array slot costs a few instructions where a hash map
 * update, lookup and delete cost a lock and a free-list operation each
 * (about half of the probes' own run time, bench/RESULTS.md "probe run
 * time"). A call whose slot is held by another open call goes to the
 * call_state hash map instead. */
struct cw_call_key {
	__u32 tid;
	__u32 op;
};

struct cw_call_state {
	struct cw_call_entry e; /* e.hdr.type == CW_REC_CALL for calls; 0 for bookkeeping hooks */
	__u64 a, b;             /* op-specific work at return: output pointer, name pointer, device */
	__u32 work;             /* the op has return-side work */
	__u32 pad;
};

/* Slots of call_slots: a power of two. The map is mmapable; userspace
 * reads it in place. */
#define CW_CALL_SLOTS 65536

/* A slot's owner word while a call is open: nonzero (a traced thread's id
 * is never 0). Published with e.hdr.type: the entry clears the type before
 * filling the slot and sets it last; the return clears it before freeing
 * the slot, so a reader that sees the owner and type == CW_REC_CALL sees a
 * whole entry. */
struct cw_call_slot {
	__u64 owner; /* CW_CALL_OWNER(tid, op); 0 free */
	struct cw_call_state st;
};

#define CW_CALL_OWNER(tid, op) (((__u64)(tid) << 32) | (__u32)(op))

static inline __u32 cw_call_slot_index(__u32 tid, __u32 op)
{
	/* Multiplicative hashing: consecutive tids and ops spread apart. */
	return ((tid * 0x9E3779B1u) ^ (op * 0x85EBCA77u)) >> 16 & (CW_CALL_SLOTS - 1);
}

/* Per-CPU counters of the CUDA side (map cuda_stats), summed by userspace. */
enum cw_cuda_stat {
	/* Calls seen and entries emitted are not counted here: two per-CPU
	 * map updates per call measurably raised the per-call cost, and
	 * userspace knows both (entries received + the losses below). */
	CW_CS_CALLS = 0,      /* unused */
	CW_CS_EMITTED,        /* unused */
	CW_CS_DROPPED,        /* calls lost: the ring was full at return */
	CW_CS_RET_ORPHAN,     /* returns without an open entry (probe attached mid-call) */
	CW_CS_AGGREGATED,     /* calls counted into agg_hist instead of emitted */
	CW_CS_KNAME_DROPPED,  /* kernel-name records lost */
	CW_CS_STATE_FULL,     /* calls lost: per-call state map full at entry */
	CW_CS_FOLD_FULL = 7,  /* --capture summary: fold map full, a full record instead */
	CW_CS_KEPT_FIRST,     /* ... kept whole: among a process's first foldable calls of the op */
	CW_CS_KEPT_SAMPLED,   /* ... kept whole: the 1 in cfg_fold_sample sample */
	CW_CS_KEPT_SLOW,      /* ... kept whole: not under the op's fold threshold (or none yet) */
	CW_CS_MAX = 12
};

/* --capture summary (docs/trace.md "Capture"): a call that is fast for its
 * op, succeeded, is not NCCL, is not among its process's first
 * CW_FOLD_FIRST foldable calls of the op and is not the sample is folded
 * at return into fold_hist, keyed by (pid, tid, op, wall second), with
 * the store's log-linear buckets (util/hist.h: 8 per power of two); no
 * ring record. One thread updates a key, so the value needs no atomics;
 * userspace drains a second once it is CW_FOLD_CLOSE_S seconds old. */
#define CW_FOLD_MAX 4096
#define CW_FOLD_FIRST 16
#define CW_FOLD_HIST_SUB_BITS 3
#define CW_FOLD_BUCKETS (64 << CW_FOLD_HIST_SUB_BITS)
/* Only calls shorter than this fold: a folded call's key second is its
 * entry's, and it must have returned before its second is drained. */
#define CW_FOLD_MAX_NS 1000000000ULL
#define CW_FOLD_CLOSE_S 2
/* Entries of first_slots (direct-mapped by (pid, op), a power of two). */
#define CW_FOLD_FIRST_SLOTS 65536

struct cw_fold_key {
	__u32 pid, tid;
	__u32 op, pad;
	__s64 second; /* wall-clock second of the calls' entries */
};

struct cw_fold_val {
	__u64 count, sum_ns, max_ns, min_ns;
	__u64 seen; /* foldable calls, the samples included */
	__u32 buckets[CW_FOLD_BUCKETS];
};

/* The fold table's first tier, fold_slots: an mmapable array direct-mapped
 * by (tid, op, second) (cw_fold_slot_index), whose lookup the verifier
 * inlines, where fold_hist's costs a hash of the key (~50 ns a call,
 * bench/RESULTS.md "trace"). A slot is claimed FREE -> FILLING by the
 * folding thread's compare-and-swap, keyed, then published LIVE; only
 * that thread updates it (its tid is in the key). Userspace drains a LIVE
 * slot once its second is closed: copies it, zeroes key and value, and
 * stores FREE last, so a claimant always starts from zero. A key whose
 * slot holds another key goes to fold_hist. CW_FOLD_SLOTS entries, a power
 * of two (fewer with the testing knob, trace.md "Capture"). */
#define CW_FOLD_SLOTS 1024
enum { CW_FOLD_SLOT_FREE = 0, CW_FOLD_SLOT_FILLING = 1, CW_FOLD_SLOT_LIVE = 2 };

struct cw_fold_slot {
	__u64 state; /* CW_FOLD_SLOT_* */
	struct cw_fold_key key;
	struct cw_fold_val val;
};

static inline __u32 cw_fold_slot_index(__u32 tid, __u32 op, __s64 second, __u32 mask)
{
	return ((tid * 0x9E3779B1u) ^ (op * 0x85EBCA77u) ^ ((__u32)second * 0xC2B2AE3Du)) >> 8 & mask;
}

/* In-kernel histogram of calls aggregated instead of emitted because the
 * ring was over its fill threshold: log2 buckets of the duration (bucket
 * b counts durations in [2^b, 2^(b+1)) ns). One per op, per CPU. */
#define CW_AGG_BUCKETS 64
struct cw_cuda_agg {
	__u64 count;
	__u64 sum_ns;
	__u64 max_ns;
	__u64 buckets[CW_AGG_BUCKETS];
};

#endif
