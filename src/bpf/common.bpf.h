/* common.bpf.h: helpers shared by every causeway BPF program.
 *
 * The first part (indices of the shared counter maps) is plain C so the
 * loader can include it too; the rest is BPF-only (clang -target bpf defines
 * __bpf__).
 *
 * Maps declared here exist once per skeleton that includes this header; the
 * loader creates them with the first skeleton and hands the same fds to the
 * others with bpf_map__reuse_fd(), so there is one tracked-tgid set, one drop
 * counter array and one stats array for the whole agent.
 */
#ifndef CW_COMMON_BPF_H
#define CW_COMMON_BPF_H

#if defined(__bpf__)
#include "vmlinux.h"
#else
#include <linux/types.h>
#endif

/* Index into cw_drops: one slot per ring or family whose ring reserve can
 * fail. The CUDA side uses the CW_DROP_CUDA.. slots. */
enum cw_drop_idx {
	CW_DROP_SCHED = 0,
	CW_DROP_IO = 1,
	CW_DROP_NET = 2,
	CW_DROP_MEM = 3,
	CW_DROP_PROC = 4,    /* critical ring: lifecycle */
	CW_DROP_OOM = 5,     /* critical ring: OOM */
	CW_DROP_CUDA = 6,
	CW_DROP_DRIVER = 7,
	CW_DROP_NCCL = 8,
	CW_DROP_PYSTACK = 9,
	CW_DROP_USTACK = 10,
	CW_DROP_KNAME = 11,
	CW_DROP_HTTP = 12,   /* a traced server's socket calls */
	CW_DROP_MAX = 16
};

/* Index into cw_stats: events deliberately not emitted, or map pressure.
 * These are not losses of recorded data but the user must see them. */
enum cw_stat_idx {
	CW_STAT_OFFCPU_FILTERED = 0, /* off-CPU intervals below cfg_min_offcpu_ns */
	CW_STAT_OFFCPU_NOSTART = 1,  /* switch-in without a recorded switch-out */
	CW_STAT_IO_CAPPED = 2,       /* block requests over the rate cap */
	CW_STAT_IO_MAPFULL = 3,      /* in-flight request map full at issue */
	CW_STAT_TRACK_FULL = 4,      /* unused: the tracked set is a bitmap, never full */
	CW_STAT_MEM_MAPFULL = 5,     /* page-alloc aggregation map full */
	CW_STAT_NET_MAPFULL = 6,     /* socket volume aggregation map full */
	CW_STAT_OFFCPU_SLOT_TAKEN = 7, /* switch-out into a slot another off-CPU thread held */
	CW_STAT_HTTP_CONNS_FULL = 8,   /* a server's accepted connection not followed: the map was full */
	CW_STAT_MAX = 16
};

/* Tracked processes: a bitmap over every possible tgid (the kernel's
 * PID_MAX_LIMIT is 2^22), bit tgid % 64 of word tgid / 64. A test is an
 * array access and a shift where a hash map lookup (the tgid hashed, a
 * bucket walked) cost tens of nanoseconds on every traced call and twice
 * on every context switch; it is never full. Set and cleared with atomic
 * operations on both sides (the map is mmapable; userspace maps it). */
#define CW_TRACKED_WORDS (1u << 16)

/* Aggregation map layouts the loader reads when it flushes idle windows
 * (mem.bpf.c page_agg keyed by tid; net.bpf.c sock_agg). */
struct cw_page_agg {
	__u64 start_ns;
	__u64 pages;
	__u64 cgroup_id;
	__u32 pid;
	__u32 pad;
	char comm[16];
};

struct cw_sock_key {
	__u32 tid;
	__u32 dir; /* 0 send, 1 recv */
};

struct cw_sock_agg {
	__u64 start_ns;
	__u64 bytes;
	__u64 cgroup_id;
	__u32 pid;
	__u16 family;
	__u16 sport;
	__u16 dport;
	__u16 state;
	__u32 pad;
	__u8 saddr[16];
	__u8 daddr[16];
	char comm[16];
};

#if defined(__bpf__)

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "args.bpf.h"
#include "events.h"

/* The tracked-process bitmap (CW_TRACKED_WORDS above): processes whose
 * threads produce records. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, CW_TRACKED_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} cw_tracked SEC(".maps");

/* Per-CPU so the hot path never contends on a shared cache line. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_DROP_MAX);
	__type(key, __u32);
	__type(value, __u64);
} cw_drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CW_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} cw_stats SEC(".maps");

/* A ring buffer map; the size is a default the loader overrides with
 * bpf_map__set_max_entries() before load (power of two pages). */
#define CW_DECLARE_RING(name, default_bytes)                                    \
	struct {                                                                \
		__uint(type, BPF_MAP_TYPE_RINGBUF);                             \
		__uint(max_entries, default_bytes);                             \
	} name SEC(".maps")

static __always_inline void cw_count(void *map, __u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(map, &idx);

	if (v)
		(*v)++;
}

static __always_inline void cw_drop(__u32 idx)
{
	cw_count(&cw_drops, idx);
}

static __always_inline void cw_stat(__u32 idx)
{
	cw_count(&cw_stats, idx);
}

/* Reserve a record on ring; a failure (ring full) is counted, never silent. */
static __always_inline void *cw_reserve(void *ring, __u32 size, __u32 drop_idx)
{
	void *p = bpf_ringbuf_reserve(ring, size, 0);

	if (!p)
		cw_drop(drop_idx);
	return p;
}

/* Submits rec (size bytes) on ring, waking the consumer only as the ring
 * fills past a quarter of its size; below and above that the consumer
 * polls (src/loader/ringbuf.c: every 5 ms, straight on with a backlog).
 * The default wakes a caught-up consumer on every record: an irq_work
 * each, which in a guest is a self-IPI and a VM exit, microseconds on the
 * traced thread's path (bench/RESULTS.md, "trace" and "probe run time").
 * The record just reserved is counted in AVAIL_DATA, so the record that
 * crossed is the one with avail in [quarter, quarter + size); producers on
 * other CPUs can hide the crossing, which costs one poll interval of
 * latency, never a record. Rings whose records must be seen at once (the
 * critical ring: exec, exit, OOM) keep the default. */
static __always_inline __u64 cw_wakeup_flag(__u64 avail, __u64 quarter, __u64 size)
{
	return avail >= quarter && avail < quarter + 2 * size ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline void cw_submit(void *ring, void *rec, __u64 size)
{
	__u64 avail = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA);
	__u64 quarter = bpf_ringbuf_query(ring, BPF_RB_RING_SIZE) / 4;

	bpf_ringbuf_submit(rec, cw_wakeup_flag(avail, quarter, size));
}

static __always_inline __u64 *cw_tracked_word(__u32 tgid)
{
	__u32 w = tgid >> 6;

	return bpf_map_lookup_elem(&cw_tracked, &w);
}

static __always_inline int cw_tgid_tracked(__u32 tgid)
{
	__u64 *w = cw_tracked_word(tgid);

	return w && ((*w >> (tgid & 63)) & 1);
}

static __always_inline void cw_track(__u32 tgid)
{
	__u64 *w = cw_tracked_word(tgid);

	if (w)
		__sync_fetch_and_or(w, 1ull << (tgid & 63));
}

static __always_inline void cw_untrack(__u32 tgid)
{
	__u64 *w = cw_tracked_word(tgid);

	if (w)
		__sync_fetch_and_and(w, ~(1ull << (tgid & 63)));
}

/* cgroup v2 id of any task: the kernfs node id of its default-hierarchy
 * cgroup, the same value bpf_get_current_cgroup_id() returns for current
 * (kernel >= 5.5 made kernfs_node.id a u64). */
static __always_inline __u64 cw_task_cgroup_id(struct task_struct *t)
{
	return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

/* Header of a record about the current task. */
static __always_inline void cw_hdr_current(struct cw_hdr *h, __u16 type, __u16 size,
					   __u8 source, __u16 op)
{
	__u64 id = bpf_get_current_pid_tgid();

	h->type = type;
	h->size = size;
	h->version = CW_EVENTS_VERSION;
	h->source = source;
	h->op = op;
	h->ts_ns = bpf_ktime_get_ns();
	h->pid = id >> 32;
	h->tid = (__u32)id;
	h->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(h->comm, sizeof(h->comm));
}

/* A task's fields, read by a body that serves a tp_btf program and its
 * raw_tp twin: btf is a constant in each (the compiler keeps one branch).
 * A tp_btf argument is a BTF-typed pointer, read with plain loads; a raw_tp
 * argument is an integer, read with CO-RE probe reads (a helper call each,
 * four for the cgroup). */
static __always_inline __u32 cw_task_tgid(struct task_struct *t, const bool btf)
{
	return btf ? t->tgid : BPF_CORE_READ(t, tgid);
}

static __always_inline __u32 cw_task_tid(struct task_struct *t, const bool btf)
{
	return btf ? t->pid : BPF_CORE_READ(t, pid);
}

static __always_inline __u64 cw_task_cgroup(struct task_struct *t, const bool btf)
{
	return btf ? t->cgroups->dfl_cgrp->kn->id : cw_task_cgroup_id(t);
}

/* The kernel NUL-pads comm (strscpy_pad), so 16 bytes copy as a string. */
static __always_inline void cw_task_comm(char *dst, struct task_struct *t, const bool btf)
{
	if (btf)
		__builtin_memcpy(dst, t->comm, CW_COMM_LEN);
	else
		bpf_probe_read_kernel_str(dst, CW_COMM_LEN, &t->comm);
}

/* Header of a record about task t (which need not be current, e.g. the
 * thread switched out in sched_switch); btf as for cw_task_tgid. */
static __always_inline void cw_hdr_task_from(struct cw_hdr *h, __u16 type, __u16 size, __u8 source, __u16 op,
					     struct task_struct *t, const bool btf)
{
	h->type = type;
	h->size = size;
	h->version = CW_EVENTS_VERSION;
	h->source = source;
	h->op = op;
	h->ts_ns = bpf_ktime_get_ns();
	h->pid = cw_task_tgid(t, btf);
	h->tid = cw_task_tid(t, btf);
	h->cgroup_id = cw_task_cgroup(t, btf);
	cw_task_comm(h->comm, t, btf);
}

/* The same through CO-RE reads, for bodies that serve both kinds without
 * telling them apart. */
static __always_inline void cw_hdr_task(struct cw_hdr *h, __u16 type, __u16 size,
					__u8 source, __u16 op, struct task_struct *t)
{
	cw_hdr_task_from(h, type, size, source, op, t, false);
}

#endif /* __bpf__ */
#endif
