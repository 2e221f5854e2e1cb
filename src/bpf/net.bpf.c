// SPDX-License-Identifier: GPL-2.0
/* net: TCP retransmits (IPv4 and IPv6) and socket send/receive volume.
 *
 * Retransmits are recorded host-wide: they run from timers and softirqs, so
 * current is not the socket's owner. When a tracked thread has sent or
 * received on the socket before, the record is attributed to it (sock_owner
 * map); otherwise hdr.pid/tid are 0 and comm is empty.
 *
 * Volume: sock:sock_send_length / sock_recv_length (kernel >= 6.3) fire in
 * sock_sendmsg()/sock_recvmsg() with the byte count for every send/recv
 * family of syscalls, on any socket. Bytes on AF_INET/AF_INET6 sockets of
 * tracked threads are summed per (thread, direction) and one struct cw_net
 * (op sock_send / sock_recv, hdr.ts_ns = window start) is emitted when the
 * thread uses the socket layer again after cfg_flush_ns; idle threads'
 * partial windows are flushed from userspace (cw_kernel_probes_flush). The
 * addresses in a volume record are those of the last socket used.
 */
#include "common.bpf.h"

#define CW_AF_INET 2
#define CW_AF_INET6 10

const volatile __u64 cfg_flush_ns = 100000000;

CW_DECLARE_RING(rb_bulk, 4 << 20);

struct owner {
	__u64 cgroup_id;
	__u32 pid;
	__u32 tid;
	char comm[CW_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct cw_sock_key);
	__type(value, struct cw_sock_agg);
} sock_agg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct owner);
} sock_owner SEC(".maps");

/* Fills family, ports, state and addresses; returns the family. */
static __always_inline __u16 read_sock(const struct sock *sk, __u16 *sport, __u16 *dport,
				       __u16 *state, __u8 *saddr, __u8 *daddr)
{
	__u16 family = BPF_CORE_READ(sk, __sk_common.skc_family);

	*sport = BPF_CORE_READ(sk, __sk_common.skc_num);
	*dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	*state = BPF_CORE_READ(sk, __sk_common.skc_state);
	if (family == CW_AF_INET) {
		__u32 s = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 d = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memset(saddr, 0, 16);
		__builtin_memset(daddr, 0, 16);
		__builtin_memcpy(saddr, &s, 4);
		__builtin_memcpy(daddr, &d, 4);
	} else if (family == CW_AF_INET6) {
		bpf_probe_read_kernel(saddr, 16, &sk->__sk_common.skc_v6_rcv_saddr);
		bpf_probe_read_kernel(daddr, 16, &sk->__sk_common.skc_v6_daddr);
	}
	return family;
}

static __always_inline int on_retransmit(const struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct owner *ow = bpf_map_lookup_elem(&sock_owner, &key);
	struct cw_net *r;
	__u16 family;

	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != CW_AF_INET && family != CW_AF_INET6)
		return 0;
	r = cw_reserve(&rb_bulk, sizeof(*r), CW_DROP_NET);
	if (!r)
		return 0;
	__builtin_memset(r, 0, sizeof(*r));
	r->hdr.type = CW_REC_NET;
	r->hdr.size = sizeof(*r);
	r->hdr.version = CW_EVENTS_VERSION;
	r->hdr.source = CW_SRC_NET;
	r->hdr.op = CW_OP_tcp_retransmit;
	r->hdr.ts_ns = bpf_ktime_get_ns();
	if (ow) {
		r->hdr.pid = ow->pid;
		r->hdr.tid = ow->tid;
		r->hdr.cgroup_id = ow->cgroup_id;
		__builtin_memcpy(r->hdr.comm, ow->comm, sizeof(r->hdr.comm));
	}
	r->family = read_sock(sk, &r->sport, &r->dport, &r->state, r->saddr, r->daddr);
	cw_submit(&rb_bulk, r, sizeof(*r));
	return 0;
}

static __always_inline int on_length(struct sock *sk, int ret, __u32 dir)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct cw_sock_key k = { .tid = (__u32)id, .dir = dir };
	__u64 skey = (__u64)sk, now;
	struct cw_sock_agg *a;
	struct owner ow = {};
	struct cw_net *r;
	__u16 family;

	if (ret <= 0 || !cw_tgid_tracked(id >> 32))
		return 0;
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family != CW_AF_INET && family != CW_AF_INET6)
		return 0;
	now = bpf_ktime_get_ns();

	ow.pid = id >> 32;
	ow.tid = (__u32)id;
	ow.cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(ow.comm, sizeof(ow.comm));
	bpf_map_update_elem(&sock_owner, &skey, &ow, BPF_ANY);

	a = bpf_map_lookup_elem(&sock_agg, &k);
	if (!a) {
		struct cw_sock_agg fresh = {};

		fresh.start_ns = now;
		fresh.bytes = ret;
		fresh.pid = ow.pid;
		fresh.cgroup_id = ow.cgroup_id;
		__builtin_memcpy(fresh.comm, ow.comm, sizeof(fresh.comm));
		fresh.family = read_sock(sk, &fresh.sport, &fresh.dport, &fresh.state, fresh.saddr,
					 fresh.daddr);
		if (bpf_map_update_elem(&sock_agg, &k, &fresh, BPF_NOEXIST))
			cw_stat(CW_STAT_NET_MAPFULL);
		return 0;
	}
	__sync_fetch_and_add(&a->bytes, ret);
	a->family = read_sock(sk, &a->sport, &a->dport, &a->state, a->saddr, a->daddr);
	if (now - a->start_ns < cfg_flush_ns)
		return 0;
	r = cw_reserve(&rb_bulk, sizeof(*r), CW_DROP_NET);
	if (r) {
		cw_hdr_current(&r->hdr, CW_REC_NET, sizeof(*r), CW_SRC_NET,
			       dir ? CW_OP_sock_recv : CW_OP_sock_send);
		r->hdr.ts_ns = a->start_ns;
		r->family = a->family;
		r->sport = a->sport;
		r->dport = a->dport;
		r->state = a->state;
		__builtin_memcpy(r->saddr, a->saddr, 16);
		__builtin_memcpy(r->daddr, a->daddr, 16);
		r->bytes = a->bytes;
		cw_submit(&rb_bulk, r, sizeof(*r));
	}
	a->start_ns = now;
	a->bytes = 0;
	return 0;
}

/* The third argument (reason) was added in kernel 6.10; unused. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_btf, const struct sock *sk, const struct sk_buff *skb)
{
	return on_retransmit(sk);
}

SEC("raw_tp/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_raw, const struct sock *sk, const struct sk_buff *skb)
{
	return on_retransmit(sk);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(sock_send_btf, struct sock *sk, int ret, int flags)
{
	return on_length(sk, ret, 0);
}

SEC("raw_tp/sock_send_length")
int BPF_PROG(sock_send_raw, struct sock *sk, int ret, int flags)
{
	return on_length(sk, ret, 0);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(sock_recv_btf, struct sock *sk, int ret, int flags)
{
	return on_length(sk, ret, 1);
}

SEC("raw_tp/sock_recv_length")
int BPF_PROG(sock_recv_raw, struct sock *sk, int ret, int flags)
{
	return on_length(sk, ret, 1);
}

char LICENSE[] SEC("license") = "GPL";
