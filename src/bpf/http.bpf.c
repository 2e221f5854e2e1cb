// SPDX-License-Identifier: GPL-2.0
/* http: the bytes a traced server moves on the connections it accepts on
 * its listening ports (trace --inference), for src/inference/http_conn.c
 * to read HTTP/1.1 requests from.
 *
 * Hooks: the raw tracepoints sys_enter/sys_exit (raw_syscalls), on every
 * kernel since long before 5.10 and needing no tracefs; the arguments are
 * read from the syscall's registers (PT_REGS_PARM*_CORE_SYSCALL, per
 * architecture) and the syscall numbers, which differ per architecture,
 * come from the loader (cfg_nr_*). kprobes on sock_recvmsg would see no
 * user buffer and may be compiled out; sock:sock_*_length (>= 6.3) sees
 * no bytes either.
 *
 * Only threads of tracked processes go past the first test (the shared
 * tracked bitmap), and only calls on a descriptor in http_listen (the
 * listening sockets userspace found for the port) or http_conns
 * (connections accepted from them, or found open at start) are kept:
 *   accept/accept4 on a listener  -> the new fd joins http_conns, a record
 *   read/recv*  on a connection   -> a record with the bytes read
 *   write/send* on a connection   -> a record with the bytes written
 *   close       on a connection   -> it leaves http_conns, a record
 * A record copies the call's first CW_HTTP_IO_HEAD bytes and, when it
 * moved more, its last CW_HTTP_IO_TAIL (a chunked answer's last chunk is
 * at its end). Vectored calls (readv, writev, sendmsg, recvmsg) copy from
 * their first buffer only.
 *
 * io_uring, sendfile and splice move bytes without these calls: a server
 * answering that way is seen accepting and closing only
 * (docs/inference.md). */
#include "common.bpf.h"

/* Syscall numbers of the running architecture; -1: none. */
const volatile long cfg_nr_read = -1;
const volatile long cfg_nr_write = -1;
const volatile long cfg_nr_readv = -1;
const volatile long cfg_nr_writev = -1;
const volatile long cfg_nr_recvfrom = -1;
const volatile long cfg_nr_sendto = -1;
const volatile long cfg_nr_recvmsg = -1;
const volatile long cfg_nr_sendmsg = -1;
const volatile long cfg_nr_accept = -1;
const volatile long cfg_nr_accept4 = -1;
const volatile long cfg_nr_close = -1;

CW_DECLARE_RING(rb_http, 4 << 20);

/* (tgid, fd) of a listening socket or an accepted connection. */
struct http_fd {
	__u32 tgid;
	__s32 fd;
};

/* Listening sockets on the traced ports: filled by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct http_fd);
	__type(value, __u32); /* port */
} http_listen SEC(".maps");

/* Connections followed. A full map leaves the newest connection out
 * (counted: CW_STAT_HTTP_CONNS_FULL). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct http_fd);
	__type(value, __u32); /* port */
} http_conns SEC(".maps");

enum http_kind { HK_ACCEPT = 1, HK_READ, HK_WRITE };

/* A call in flight on a followed descriptor, per thread. */
struct http_call {
	__u64 buf;      /* user buffer (the first one of a vectored call) */
	__u64 buf_len;  /* its length; ~0 for a plain buffer */
	__s32 fd;
	__u32 port;
	__u32 kind;     /* enum http_kind */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32); /* tid */
	__type(value, struct http_call);
} http_calls SEC(".maps");

static __always_inline void emit(__u16 op, __s32 fd, __u32 port, __s64 len, const struct http_call *c)
{
	struct cw_http_io *r = cw_reserve(&rb_http, sizeof(*r), CW_DROP_HTTP);
	__u64 n = 0;

	if (!r)
		return;
	cw_hdr_current(&r->hdr, CW_REC_HTTP_IO, sizeof(*r), CW_SRC_NET, op);
	r->len = len;
	r->fd = fd;
	r->port = (__u16)port;
	r->head_len = 0;
	r->tail_len = 0;
	r->pad0 = 0;
	r->pad1 = 0;
	if (c && len > 0 && c->buf) {
		n = (__u64)len;
		if (n > c->buf_len)
			n = c->buf_len;
		if (n > CW_HTTP_IO_HEAD)
			n = CW_HTTP_IO_HEAD;
		/* Bounds the register the verifier sees (n <= 512 already). */
		n &= 2 * CW_HTTP_IO_HEAD - 1;
		if (n > CW_HTTP_IO_HEAD)
			n = CW_HTTP_IO_HEAD;
		if (n && bpf_probe_read_user(r->head, n, (const void *)c->buf) == 0)
			r->head_len = (__u16)n;
		/* The tail: only from one contiguous buffer holding it all. */
		if (r->head_len && (__u64)len > n && c->buf_len >= (__u64)len &&
		    bpf_probe_read_user(r->tail, CW_HTTP_IO_TAIL,
					(const void *)(c->buf + (__u64)len - CW_HTTP_IO_TAIL)) == 0)
			r->tail_len = CW_HTTP_IO_TAIL;
	}
	cw_submit(&rb_http, r, sizeof(*r));
}

/* The first buffer of an iovec array at uaddr. */
static __always_inline int first_iov(__u64 uaddr, __u64 *base, __u64 *len)
{
	struct iovec v;

	if (!uaddr || bpf_probe_read_user(&v, sizeof(v), (const void *)uaddr))
		return -1;
	*base = (__u64)v.iov_base;
	*len = (__u64)v.iov_len;
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(http_sys_enter, struct pt_regs *regs, long nr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct http_fd key;
	struct http_call c = {};
	__u64 a1, a2;
	__u32 *port, tid;

	if (!cw_tgid_tracked(id >> 32))
		return 0;
	key.tgid = id >> 32;
	key.fd = (__s32)PT_REGS_PARM1_CORE_SYSCALL(regs);
	if (nr == cfg_nr_accept || nr == cfg_nr_accept4) {
		port = bpf_map_lookup_elem(&http_listen, &key);
		if (!port)
			return 0;
		c.kind = HK_ACCEPT;
	} else if (nr == cfg_nr_close) {
		port = bpf_map_lookup_elem(&http_conns, &key);
		if (!port)
			return 0;
		emit(CW_OP_http_close, key.fd, *port, 0, NULL);
		bpf_map_delete_elem(&http_conns, &key);
		return 0;
	} else if (nr == cfg_nr_read || nr == cfg_nr_recvfrom || nr == cfg_nr_write || nr == cfg_nr_sendto) {
		port = bpf_map_lookup_elem(&http_conns, &key);
		if (!port)
			return 0;
		c.kind = nr == cfg_nr_read || nr == cfg_nr_recvfrom ? HK_READ : HK_WRITE;
		c.buf = PT_REGS_PARM2_CORE_SYSCALL(regs);
		c.buf_len = ~0ull;
	} else if (nr == cfg_nr_readv || nr == cfg_nr_writev) {
		port = bpf_map_lookup_elem(&http_conns, &key);
		if (!port)
			return 0;
		c.kind = nr == cfg_nr_readv ? HK_READ : HK_WRITE;
		a1 = PT_REGS_PARM2_CORE_SYSCALL(regs);
		a2 = PT_REGS_PARM3_CORE_SYSCALL(regs);
		if (a2 < 1 || first_iov(a1, &c.buf, &c.buf_len))
			c.buf = 0;
	} else if (nr == cfg_nr_recvmsg || nr == cfg_nr_sendmsg) {
		struct user_msghdr m;

		port = bpf_map_lookup_elem(&http_conns, &key);
		if (!port)
			return 0;
		c.kind = nr == cfg_nr_recvmsg ? HK_READ : HK_WRITE;
		a1 = PT_REGS_PARM2_CORE_SYSCALL(regs);
		if (!a1 || bpf_probe_read_user(&m, sizeof(m), (const void *)a1) ||
		    m.msg_iovlen < 1 || first_iov((__u64)m.msg_iov, &c.buf, &c.buf_len))
			c.buf = 0;
	} else {
		return 0;
	}
	c.fd = key.fd;
	c.port = *port;
	tid = (__u32)id;
	bpf_map_update_elem(&http_calls, &tid, &c, BPF_ANY);
	return 0;
}

SEC("raw_tp/sys_exit")
int BPF_PROG(http_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	struct http_call *c;

	if (!cw_tgid_tracked(id >> 32))
		return 0;
	c = bpf_map_lookup_elem(&http_calls, &tid);
	if (!c)
		return 0;
	if (c->kind == HK_ACCEPT) {
		if (ret >= 0) {
			struct http_fd key = { .tgid = id >> 32, .fd = (__s32)ret };
			__u32 port = c->port;

			if (bpf_map_update_elem(&http_conns, &key, &port, BPF_ANY))
				cw_stat(CW_STAT_HTTP_CONNS_FULL);
			else
				emit(CW_OP_http_accept, key.fd, port, 0, NULL);
		}
	} else if (ret > 0) {
		emit(c->kind == HK_READ ? CW_OP_http_read : CW_OP_http_write, c->fd, c->port, ret, c);
	}
	bpf_map_delete_elem(&http_calls, &tid);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
