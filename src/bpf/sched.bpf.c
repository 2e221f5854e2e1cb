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
/* The servers trace --inference follows: their threads sleep between
 * the steps of every request (an HTTP thread waiting for the next token,
 * a pool waiting for work), thousands of times a second on a busy server.
 * Sleeps shorter than this that gave the CPU to the idle task or to a
 * tracked thread are counted, not emitted; preemptions, longer sleeps,
 * and a sleep that let another process take the CPU (a hog getting it
 * whenever the server's threads wait: how explain names it) still are. */
const volatile __u64 cfg_min_server_blocked_ns = 1000000;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);  /* tgid */
	__type(value, __u8);
} cw_servers SEC(".maps");

CW_DECLARE_RING(rb_sched, 4 << 20);

/* Per-thread state lives in direct-mapped tables: thread tid in slot
 * tid % SCHED_SLOTS, the slot's tid field saying whose it is (0: nobody's).
 * An array slot costs a few loads and stores where an LRU hash update,
 * lookup and three deletes per tracked switch were most of the program's
 * run time (bench/RESULTS.md, "probe run time"). Two tracked threads whose
 * tids collide and are off CPU at the same time share a slot: the later
 * switch-out takes it (counted as offcpu_slot_taken) and the earlier
 * thread's interval is lost (counted as offcpu_nostart at its switch-in). */
#define SCHED_SLOTS (1u << 16)

/* Still-open interval of a switched-out thread. */
struct offcpu_start {
	__u32 tid; /* whose; 0 free */
	__u32 reason;
	__u64 ts;
	__u64 state;
	__u64 by_cgroup_id;
	__u32 cpu;
	__u32 by_pid;
	__u32 by_tid;
	__u32 pad;
	char by_comm[CW_COMM_LEN];
};

/* Who last woke the slot's thread, since its last switch-out. */
struct waker {
	__u64 wakee; /* whose tid; 0 free; 64 bits for the compare-and-swap */
	__u32 pid;
	__u32 tid;
	char comm[CW_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SCHED_SLOTS);
	__type(key, __u32);
	__type(value, struct offcpu_start);
} offcpu_start SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SCHED_SLOTS);
	__type(key, __u32);
	__type(value, struct waker);
} wakers SEC(".maps");

static __always_inline struct offcpu_start *start_slot(__u32 tid)
{
	__u32 i = tid & (SCHED_SLOTS - 1);

	return bpf_map_lookup_elem(&offcpu_start, &i);
}

static __always_inline struct waker *waker_slot(__u32 tid)
{
	__u32 i = tid & (SCHED_SLOTS - 1);

	return bpf_map_lookup_elem(&wakers, &i);
}

/* A waker slot's wakee while a wakeup writes it (no tid is ~0). Wakeups
 * of one task are serialized by the kernel (its pi_lock), so only a
 * colliding tid's wakeup can write the slot at the same time: the busy
 * mark makes the second writer give up instead of mixing two entries, and
 * a reader that sees the wakee change under its copy drops what it read. */
#define WAKEE_BUSY (~0ull)

/* Forgets tid's waker, if the slot holds one. */
static __always_inline void drop_waker(struct waker *w, __u32 tid)
{
	if (w && w->wakee == tid)
		__sync_val_compare_and_swap(&w->wakee, (__u64)tid, 0);
}

#define READ_WAKEE(w) (*(volatile __u64 *)&(w)->wakee)

/* TASK_DEAD: a dying task's last switch-out, which no switch-in follows. */
#define CW_TASK_DEAD 0x80

/* TASK_RUNNING is 0 on every kernel; a task switched out in that state
 * (or with preempt set, kernel >= 4.x passes it) was still runnable. */
static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, __u64 prev_state, const bool btf)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 prev_tgid = cw_task_tgid(prev, btf);
	__u32 next_tgid = cw_task_tgid(next, btf);

	if (prev_tgid && cw_tgid_tracked(prev_tgid) && !(prev_state & CW_TASK_DEAD)) {
		__u32 tid = cw_task_tid(prev, btf);
		struct offcpu_start *s = start_slot(tid);

		if (s) {
			if (s->tid && s->tid != tid)
				cw_stat(CW_STAT_OFFCPU_SLOT_TAKEN);
			s->ts = now;
			s->state = prev_state;
			s->reason = (preempt || prev_state == 0) ? CW_OFFCPU_PREEMPTED : CW_OFFCPU_BLOCKED;
			s->cpu = bpf_get_smp_processor_id();
			s->by_pid = next_tgid;
			s->by_tid = cw_task_tid(next, btf);
			s->by_cgroup_id = cw_task_cgroup(next, btf);
			cw_task_comm(s->by_comm, next, btf);
			s->pad = 0;
			s->tid = tid;
		}
		/* A wakeup seen while it still ran belongs to no interval. */
		drop_waker(waker_slot(tid), tid);
	}

	if (next_tgid && cw_tgid_tracked(next_tgid)) {
		__u32 tid = cw_task_tid(next, btf);
		struct offcpu_start *s = start_slot(tid);
		struct waker *w = waker_slot(tid);
		struct cw_offcpu *o;

		if (!s || s->tid != tid) {
			cw_stat(CW_STAT_OFFCPU_NOSTART);
			return 0;
		}
		if (now - s->ts < cfg_min_offcpu_ns ||
		    (s->reason == CW_OFFCPU_BLOCKED && now - s->ts < cfg_min_server_blocked_ns &&
		     (!s->by_pid || cw_tgid_tracked(s->by_pid)) && bpf_map_lookup_elem(&cw_servers, &next_tgid))) {
			cw_stat(CW_STAT_OFFCPU_FILTERED);
			s->tid = 0;
			drop_waker(w, tid);
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
			if (w && w->wakee == tid) {
				o->waker_pid = w->pid;
				o->waker_tid = w->tid;
				__builtin_memcpy(o->waker_comm, w->comm, sizeof(o->waker_comm));
				barrier();
				if (READ_WAKEE(w) != tid) {
					o->waker_pid = 0;
					o->waker_tid = 0;
					__builtin_memset(o->waker_comm, 0, sizeof(o->waker_comm));
				}
			} else {
				o->waker_pid = 0;
				o->waker_tid = 0;
				__builtin_memset(o->waker_comm, 0, sizeof(o->waker_comm));
			}
			cw_submit(&rb_sched, o, sizeof(*o));
		}
		s->tid = 0;
		drop_waker(w, tid);
	}
	return 0;
}

/* The waker is current: the task running try_to_wake_up(), or whatever
 * an interrupt interrupted (then pid 0 / "swapper" is reported as is). */
static __always_inline int on_wakeup(struct task_struct *p, const bool btf)
{
	__u32 tgid = cw_task_tgid(p, btf), tid;
	struct waker *w;
	__u64 id, held;

	if (!tgid || !cw_tgid_tracked(tgid))
		return 0;
	tid = cw_task_tid(p, btf);
	w = waker_slot(tid);
	if (!w)
		return 0;
	held = w->wakee;
	if (held == WAKEE_BUSY || __sync_val_compare_and_swap(&w->wakee, held, WAKEE_BUSY) != held)
		return 0;
	id = bpf_get_current_pid_tgid();
	w->pid = id >> 32;
	w->tid = (__u32)id;
	bpf_get_current_comm(w->comm, sizeof(w->comm));
	barrier();
	w->wakee = tid;
	return 0;
}

/* sched_switch passes prev_state as its last argument from 5.18; the
 * loader sets cfg_switch_state from the kernel's BTF
 * (loader/kernel_features.c). Before, the program may not even read that
 * argument (tp_btf: the verifier refuses the context access; raw_tp: the
 * attach refuses a program that reads past the tracepoint's arguments),
 * so it reads the task's state instead, a dead branch the verifier skips
 * where the argument exists. */
const volatile __u8 cfg_switch_state = 0;

/* task_struct.state became __state in 5.14. */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline __u64 switch_prev_state(unsigned long long *ctx, struct task_struct *prev)
{
	if (cfg_switch_state)
		return (unsigned int)ctx[3];
	if (bpf_core_field_exists(prev->__state))
		return BPF_CORE_READ(prev, __state);
	return (__u64)BPF_CORE_READ((struct task_struct___pre514 *)prev, state);
}

SEC("tp_btf/sched_switch")
int sched_switch_btf(unsigned long long *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx[1];

	return on_switch((bool)ctx[0], prev, (struct task_struct *)ctx[2], switch_prev_state(ctx, prev), true);
}

SEC("raw_tp/sched_switch")
int sched_switch_raw(unsigned long long *ctx)
{
	struct task_struct *prev = (struct task_struct *)ctx[1];

	return on_switch((bool)ctx[0], prev, (struct task_struct *)ctx[2], switch_prev_state(ctx, prev), false);
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
