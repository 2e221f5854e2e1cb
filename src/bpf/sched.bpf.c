// SPDX-License-Identifier: GPL-2.0
/* sched: off-CPU intervals of tracked threads.
 *
 * At switch-out of a tracked thread we remember when, why (preempted while
 * runnable vs blocked), on which CPU and which task took the CPU; at its
 * next switch-in we emit one struct cw_offcpu. sched_wakeup tells us who
 * woke a blocked thread. Each hook exists twice, tp_btf (preferred) and
 * raw_tp (fallback); the loader autoloads one of the pair. One body serves
 * both: task reads are plain loads in the tp_btf program and CO-RE probe
 * reads in the raw_tp one (cw_task_tgid; sched_switch runs on every
 * context switch of the host, so the helper calls saved count).
 */
#include "common.bpf.h"

const volatile __u64 cfg_min_offcpu_ns = 20000;

CW_DECLARE_RING(rb_sched, 4 << 20);

/* Still-open interval of a switched-out thread. */
struct offcpu_start {
	__u64 ts;
	__u64 state;
	__u64 by_cgroup_id;
	__u32 reason;
	__u32 cpu;
	__u32 by_pid;
	__u32 by_tid;
	char by_comm[CW_COMM_LEN];
};

struct waker {
	__u32 pid;
	__u32 tid;
	char comm[CW_COMM_LEN];
};

/* LRU: a thread that exits while switched out never switches in again;
 * its entry ages out instead of leaking. Keyed by tid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct offcpu_start);
} offcpu_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct waker);
} wakers SEC(".maps");

/* TASK_RUNNING is 0 on every kernel; a task switched out in that state
 * (or with preempt set, kernel >= 4.x passes it) was still runnable. */
static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, __u64 prev_state, const bool btf)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_tgid = cw_task_tgid(prev, btf);
	__u32 next_tgid = cw_task_tgid(next, btf);

	if (prev_tgid && cw_tgid_tracked(prev_tgid)) {
		struct offcpu_start s = {};
		__u32 tid = cw_task_tid(prev, btf);

		s.ts = now;
		s.state = prev_state;
		s.reason = (preempt || prev_state == 0) ? CW_OFFCPU_PREEMPTED : CW_OFFCPU_BLOCKED;
		s.cpu = bpf_get_smp_processor_id();
		s.by_pid = next_tgid;
		s.by_tid = cw_task_tid(next, btf);
		s.by_cgroup_id = cw_task_cgroup(next, btf);
		cw_task_comm(s.by_comm, next, btf);
		bpf_map_update_elem(&offcpu_start, &tid, &s, BPF_ANY);
		/* A wakeup seen while it still ran belongs to no interval. */
		bpf_map_delete_elem(&wakers, &tid);
	}

	if (next_tgid && cw_tgid_tracked(next_tgid)) {
		__u32 tid = cw_task_tid(next, btf);
		struct offcpu_start *s = bpf_map_lookup_elem(&offcpu_start, &tid);
		struct cw_offcpu *o;
		struct waker *w;

		if (!s) {
			cw_stat(CW_STAT_OFFCPU_NOSTART);
			return 0;
		}
		if (now - s->ts < cfg_min_offcpu_ns) {
			cw_stat(CW_STAT_OFFCPU_FILTERED);
			bpf_map_delete_elem(&offcpu_start, &tid);
			bpf_map_delete_elem(&wakers, &tid);
			return 0;
		}
		o = cw_reserve(&rb_sched, sizeof(*o), CW_DROP_SCHED);
		if (o) {
			cw_hdr_task_from(&o->hdr, CW_REC_OFFCPU, sizeof(*o), CW_SRC_SCHED, CW_OP_offcpu, next, btf);
			o->hdr.ts_ns = s->ts;
			o->end_ns = now;
			o->reason = s->reason;
			o->cpu = s->cpu;
			o->by_pid = s->by_pid;
			o->by_tid = s->by_tid;
			o->by_cgroup_id = s->by_cgroup_id;
			__builtin_memcpy(o->by_comm, s->by_comm, sizeof(o->by_comm));
			o->state = s->state;
			w = bpf_map_lookup_elem(&wakers, &tid);
			if (w) {
				o->waker_pid = w->pid;
				o->waker_tid = w->tid;
				__builtin_memcpy(o->waker_comm, w->comm, sizeof(o->waker_comm));
			} else {
				o->waker_pid = 0;
				o->waker_tid = 0;
				__builtin_memset(o->waker_comm, 0, sizeof(o->waker_comm));
			}
			cw_submit(&rb_sched, o, sizeof(*o));
		}
		bpf_map_delete_elem(&offcpu_start, &tid);
		bpf_map_delete_elem(&wakers, &tid);
	}
	return 0;
}

/* The waker is current: the task running try_to_wake_up(), or whatever
 * an interrupt interrupted (then pid 0 / "swapper" is reported as is). */
static __always_inline int on_wakeup(struct task_struct *p, const bool btf)
{
	__u32 tgid = cw_task_tgid(p, btf);
	__u64 id;
	struct waker w = {};
	__u32 tid;

	if (!tgid || !cw_tgid_tracked(tgid))
		return 0;
	id = bpf_get_current_pid_tgid();
	w.pid = id >> 32;
	w.tid = (__u32)id;
	bpf_get_current_comm(w.comm, sizeof(w.comm));
	tid = cw_task_tid(p, btf);
	bpf_map_update_elem(&wakers, &tid, &w, BPF_ANY);
	return 0;
}

/* prev_state became the last argument in kernel 5.18. */
SEC("tp_btf/sched_switch")
int BPF_PROG(sched_switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(preempt, prev, next, prev_state, true);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(sched_switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	return on_switch(preempt, prev, next, prev_state, false);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(sched_wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p, true);
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(sched_wakeup_raw, struct task_struct *p)
{
	return on_wakeup(p, false);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(p, true);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(sched_wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(p, false);
}

char LICENSE[] SEC("license") = "GPL";
