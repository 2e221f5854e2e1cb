// SPDX-License-Identifier: GPL-2.0
/* mem: page allocations of tracked threads, aggregated in the kernel, and
 * OOM kills anywhere on the host.
 *
 * mm_page_alloc can fire millions of times a second; one record per page
 * would swamp any ring. Pages are summed per thread and one struct cw_mem
 * (op page_alloc) is emitted when the thread allocates again after
 * cfg_flush_ns has passed since its window opened, so the record covers
 * [hdr.ts_ns, hdr.ts_ns + interval_ns]. A thread that stops allocating keeps
 * its last partial window in the map until userspace flushes it
 * (cw_kernel_probes_flush).
 *
 * An OOM victim is recorded whether tracked or not: the kill of a neighbour
 * explains memory pressure; it goes to the critical ring, never sampled.
 */
#include "common.bpf.h"

const volatile __u64 cfg_flush_ns = 100000000;
/* PAGE_SIZE, which the loader sets (sysconf): 4 KiB on x86-64, 4, 16 or 64 KiB on arm64. */
const volatile __u64 cfg_page_size = 4096;

CW_DECLARE_RING(rb_bulk, 4 << 20);
CW_DECLARE_RING(rb_critical, 256 << 10);


struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct cw_page_agg);
} page_agg SEC(".maps");

static __always_inline int on_page_alloc(unsigned int order)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	__u64 now, n = 1ull << (order & 31);
	struct cw_page_agg *a;
	struct cw_mem *r;

	if (!cw_tgid_tracked(id >> 32))
		return 0;
	now = bpf_ktime_get_ns();
	a = bpf_map_lookup_elem(&page_agg, &tid);
	if (!a) {
		struct cw_page_agg fresh = {};

		fresh.start_ns = now;
		fresh.pages = n;
		fresh.pid = id >> 32;
		fresh.cgroup_id = bpf_get_current_cgroup_id();
		bpf_get_current_comm(fresh.comm, sizeof(fresh.comm));
		if (bpf_map_update_elem(&page_agg, &tid, &fresh, BPF_NOEXIST))
			cw_stat(CW_STAT_MEM_MAPFULL);
		return 0;
	}
	__sync_fetch_and_add(&a->pages, n);
	if (now - a->start_ns < cfg_flush_ns)
		return 0;
	r = cw_reserve(&rb_bulk, sizeof(*r), CW_DROP_MEM);
	if (r) {
		cw_hdr_current(&r->hdr, CW_REC_MEM, sizeof(*r), CW_SRC_MEM, CW_OP_page_alloc);
		r->hdr.ts_ns = a->start_ns;
		r->pages = a->pages;
		r->interval_ns = now - a->start_ns;
		r->victim_pid = 0;
		r->pad = 0;
		__builtin_memset(r->victim_comm, 0, sizeof(r->victim_comm));
		r->bytes = a->pages * cfg_page_size;
		cw_submit(&rb_bulk, r, sizeof(*r));
	}
	/* A lost record loses its pages too; the drop counter says so. */
	a->start_ns = now;
	a->pages = 0;
	return 0;
}

/* RSS of mm in pages: file + anon + shmem (MM_SWAPENTS is not
 * resident). Kernel >= 6.2 keeps the counters as percpu_counters; their
 * count is the approximate sum the kernel itself shows in /proc/PID/status
 * between folds. Older layouts read 0. */
static __always_inline __u64 mm_rss_pages(struct mm_struct *mm)
{
	__s64 f = 0, a = 0, sh = 0;

	if (!mm || !bpf_core_field_exists(mm->rss_stat[0].count))
		return 0;
	f = BPF_CORE_READ(mm, rss_stat[0].count);
	a = BPF_CORE_READ(mm, rss_stat[1].count);
	sh = BPF_CORE_READ(mm, rss_stat[3].count);
	f = (f > 0 ? f : 0) + (a > 0 ? a : 0) + (sh > 0 ? sh : 0);
	return (__u64)f;
}

/* The limit of task's memory cgroup in bytes: the page counter behind
 * memory.max (v2) and memory.limit_in_bytes (v1) alike. 0 when memcg is
 * off or the cgroup is unlimited (PAGE_COUNTER_MAX). */
static __always_inline __u64 memcg_limit_bytes(struct task_struct *task)
{
	int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	struct cgroup_subsys_state *css;
	struct mem_cgroup *memcg;
	unsigned long max;

	if (id < 0 || id >= 16)
		return 0;
	css = BPF_CORE_READ(task, cgroups, subsys[id]);
	if (!css)
		return 0;
	/* css is mem_cgroup's first member. */
	memcg = (struct mem_cgroup *)css;
	max = BPF_CORE_READ(memcg, memory.max);
	if (!max || max >= (1UL << 50))
		return 0;
	return (__u64)max * cfg_page_size;
}

/* The header names the task that ran into the OOM (current, usually the
 * allocator); victim_* names the task the OOM killer chose, with its RSS
 * (pages) and its memory cgroup's limit (interval_ns, see events.h). */
static __always_inline int on_mark_victim(struct task_struct *victim)
{
	struct cw_mem *r = cw_reserve(&rb_critical, sizeof(*r), CW_DROP_OOM);
	struct mm_struct *mm;

	if (!r)
		return 0;
	cw_hdr_current(&r->hdr, CW_REC_MEM, sizeof(*r), CW_SRC_MEM, CW_OP_oom_kill);
	r->victim_pid = BPF_CORE_READ(victim, tgid);
	r->pad = 0;
	bpf_probe_read_kernel_str(r->victim_comm, sizeof(r->victim_comm), &victim->comm);
	/* total_vm of the victim, in bytes, as the kernel's OOM report shows. */
	mm = BPF_CORE_READ(victim, mm);
	r->bytes = mm ? BPF_CORE_READ(mm, total_vm) * cfg_page_size : 0;
	r->pages = mm_rss_pages(mm);
	r->interval_ns = memcg_limit_bytes(victim);
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("tp_btf/mm_page_alloc")
int BPF_PROG(page_alloc_btf, struct page *page, unsigned int order, gfp_t gfp, int migratetype)
{
	return on_page_alloc(order);
}

SEC("raw_tp/mm_page_alloc")
int BPF_PROG(page_alloc_raw, struct page *page, unsigned int order, gfp_t gfp, int migratetype)
{
	return on_page_alloc(order);
}

SEC("tp_btf/mark_victim")
int BPF_PROG(mark_victim_btf, struct task_struct *victim)
{
	return on_mark_victim(victim);
}

SEC("raw_tp/mark_victim")
int BPF_PROG(mark_victim_raw, struct task_struct *victim)
{
	return on_mark_victim(victim);
}

char LICENSE[] SEC("license") = "GPL";
