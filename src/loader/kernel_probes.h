/* kernel_probes: the kernel-side probe families (sched, io, net, mem, proc)
 * as one unit: open, load, attach, tracked-process set, rings, counters.
 *
 * Families and what they record (docs/probes-kernel.md):
 *   sched  sched_switch/sched_wakeup -> struct cw_offcpu per off-CPU interval
 *          of a tracked thread (rings: sched)
 *   io     block_rq_issue/complete -> struct cw_block_io, system-wide, rate
 *          capped (ring: bulk)
 *   net    tcp_retransmit_skb (IPv4 and IPv6, system-wide) and socket
 *          send/recv volume of tracked threads -> struct cw_net (ring: bulk)
 *   mem    mm_page_alloc aggregated per tracked thread -> struct cw_mem
 *          (ring: bulk); oom mark_victim (ring: critical)
 *   proc   fork (auto-tracks children), exec, exit -> struct cw_proc
 *          (ring: critical)
 *
 * Only tracepoints are used (tp_btf, with raw_tp/classic tracepoint
 * fallbacks chosen at load time): kprobes may be compiled out.
 *
 * Not thread-safe except where noted; one thread owns a cw_kernel_probes.
 */
#ifndef CW_LOADER_KERNEL_PROBES_H
#define CW_LOADER_KERNEL_PROBES_H

#include <stddef.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "bpf/common.bpf.h" /* enum cw_drop_idx, enum cw_stat_idx */

struct cw_kernel_probes;

/* Families, as bits of cw_kernel_probes_opts.families. */
enum cw_kp_family {
	CW_KP_SCHED = 0,
	CW_KP_IO,
	CW_KP_NET,
	CW_KP_MEM,
	CW_KP_PROC,
	CW_KP_NFAMILIES
};
#define CW_KP_ALL ((1u << CW_KP_NFAMILIES) - 1)

/* Off-CPU intervals shorter than this are counted, not emitted: a busy
 * thread switches every few microseconds, and intervals that short explain
 * no slowdown worth a row. 20 us keeps a preempted or blocked thread's
 * real waits and drops the scheduler's bookkeeping noise. */
#define CW_KP_MIN_OFFCPU_DEFAULT_NS 20000ull
#define CW_KP_RING_KB_DEFAULT 4096u
#define CW_KP_CRITICAL_RING_KB_DEFAULT 256u
#define CW_KP_PAGE_ALLOC_FLUSH_MS_DEFAULT 100u
#define CW_KP_SOCK_FLUSH_MS_DEFAULT 100u
#define CW_KP_IO_MAX_PER_S_DEFAULT 20000u

/* Zero fields take the defaults above, except min_offcpu_ns where 0 means
 * "every interval": start from cw_kernel_probes_opts_init() to get 20 us. */
struct cw_kernel_probes_opts {
	unsigned ring_kb;             /* sched ring and bulk (io/net/mem) ring, each */
	unsigned critical_ring_kb;    /* lifecycle and OOM ring, never sampled */
	uint64_t min_offcpu_ns;       /* shortest off-CPU interval emitted */
	unsigned page_alloc_flush_ms; /* page-alloc aggregation interval per thread */
	unsigned sock_flush_ms;       /* socket volume aggregation interval per thread */
	unsigned io_max_per_s;        /* block I/O records per second per CPU (cap) */
	unsigned families;            /* bit set of 1 << CW_KP_*; 0 = all */
	int raw_tp_only;              /* skip tp_btf, load the raw_tp variants (tests
				       * the fallback; kernels without BTF-typed tracepoints) */
};

void cw_kernel_probes_opts_init(struct cw_kernel_probes_opts *o);

/* Checks privileges and BTF, then loads and attaches every selected family.
 * o may be NULL (defaults). On failure fills err with one lower-case line
 * and returns -EPERM (not root / no CAP_BPF), -ENOENT (no kernel BTF at
 * /sys/kernel/btf/vmlinux), or another -errno from loading/attaching. */
int cw_kernel_probes_open(struct cw_kernel_probes **out, const struct cw_kernel_probes_opts *o,
			  char *err, size_t errlen);
void cw_kernel_probes_close(struct cw_kernel_probes *kp);

/* Adds a process (thread group id) to the tracked set; its threads, and
 * the children it forks from then on, produce records. The map update is
 * atomic for the BPF side, so this may be called from any thread. */
int cw_kernel_probes_track(struct cw_kernel_probes *kp, uint32_t tgid);
int cw_kernel_probes_is_tracked(struct cw_kernel_probes *kp, uint32_t tgid);
/* A tracked process is (on) or is no longer (off: it exited) a server
 * trace --inference follows: its threads' sleeps under 1 ms are counted
 * (offcpu_filtered), not emitted (sched.bpf.c cw_servers). 0 or -errno
 * (-ENOENT: no sched family). */
int cw_kernel_probes_mark_server(struct cw_kernel_probes *kp, uint32_t tgid, int on);

/* The shared maps, for other skeletons (the CUDA side) to adopt with
 * bpf_map__reuse_fd() before their load: one tracked set, one drop array
 * (indexed by enum cw_drop_idx), one stats array (enum cw_stat_idx). */
int cw_kernel_probes_tracked_fd(struct cw_kernel_probes *kp);
int cw_kernel_probes_drops_fd(struct cw_kernel_probes *kp);
int cw_kernel_probes_stats_fd(struct cw_kernel_probes *kp);

/* Adds every ring (sched, bulk, critical) to *rb, creating it when *rb is
 * NULL. fn receives raw records (struct cw_hdr first). Returns the number of
 * rings added or -errno. The caller frees *rb (ring_buffer__free) before
 * cw_kernel_probes_close(). */
int cw_kernel_probes_add_rings(struct cw_kernel_probes *kp, struct ring_buffer **rb,
			       ring_buffer_sample_fn fn, void *ctx);

/* Emits, through the add_rings callback, the page-allocation and socket
 * volume windows of threads that went quiet: those older than their
 * interval, or all of them when all is set (call it once at stop). Returns
 * the number of records emitted, or -EINVAL before add_rings. */
int cw_kernel_probes_flush(struct cw_kernel_probes *kp, int all);

/* Counters summed over CPUs. drops[] counts failed ring reserves (records
 * lost); stats[] counts records deliberately not emitted (filters, caps)
 * and full maps. */
struct cw_kernel_drop_counts {
	uint64_t drops[CW_DROP_MAX];
	uint64_t stats[CW_STAT_MAX];
	uint64_t total_drops; /* sum of drops[] */
};
int cw_kernel_probes_drops(struct cw_kernel_probes *kp, struct cw_kernel_drop_counts *out);

/* What was attached, per family, and how long it took (the "attached
 * within a second" goal is measured from these). */
struct cw_kernel_family_info {
	const char *name;    /* "sched", "io", "net", "mem", "proc" */
	int enabled;         /* selected in opts */
	int attached;        /* programs attached (>0 when the family runs) */
	const char *variant; /* "tp_btf", "raw_tp" or "tracepoint" */
	uint64_t load_ns;    /* open + load (verifier) */
	uint64_t attach_ns;  /* attach of all its programs */
};
/* Returns CW_KP_NFAMILIES and points *out at an internal array. */
int cw_kernel_probes_families(struct cw_kernel_probes *kp, const struct cw_kernel_family_info **out);
/* Family idx's loaded object, NULL when it is not loaded. */
struct bpf_object *cw_kernel_probes_object(struct cw_kernel_probes *kp, int idx);
/* Wall time from the start of cw_kernel_probes_open() to the last attach. */
uint64_t cw_kernel_probes_startup_ns(struct cw_kernel_probes *kp);

/* Names for drop/stat indices ("sched", "offcpu_filtered", ...); NULL for
 * an unused index. */
const char *cw_kernel_drop_name(unsigned idx);
const char *cw_kernel_stat_name(unsigned idx);

#endif
