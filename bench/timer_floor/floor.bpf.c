// SPDX-License-Identifier: GPL-2.0
/* The least a per-call timer costs: one uprobe session program on one
 * function, which reads the clock at entry into the session's own cookie
 * (kept by the kernel with the return instance: no map, no thread id, no
 * attach cookie) and at return adds the call's time and a count to a
 * per-CPU total. No filter, no op, no histogram, no record. Any tool that
 * times each call with bpf_ktime_get_ns pays at least this on top of the
 * uprobe pair (bench/trace_overhead.sh, the "floor" column). Loaded by
 * floor.c with expected attach type BPF_TRACE_UPROBE_SESSION (kernel
 * >= 6.12). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "GPL";

extern __u64 *bpf_session_cookie(void) __ksym;
extern bool bpf_session_is_return(void) __ksym;

struct floor_total {
	__u64 calls;
	__u64 ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct floor_total);
} floor_totals SEC(".maps");

SEC("uprobe")
int floor_timer(struct pt_regs *ctx)
{
	__u64 *cookie = bpf_session_cookie(), now = bpf_ktime_get_ns();
	struct floor_total *t;
	__u32 zero = 0;

	if (!bpf_session_is_return()) {
		*cookie = now;
		return 0; /* 0: run again at the return */
	}
	t = bpf_map_lookup_elem(&floor_totals, &zero);
	if (t) {
		t->calls++;
		t->ns += now - *cookie;
	}
	return 0;
}
