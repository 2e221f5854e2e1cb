// SPDX-License-Identifier: GPL-2.0
/* http: the bytes a traced server moves on the connections it accepts on
 * its listening ports (trace --inference), for src/inference/http_conn.c
 * to read HTTP/1.1 requests from.
 *
 * Hook: the raw tracepoint sys_exit (raw_syscalls), on every kernel since
 * long before 5.10 and needing no tracefs; the call's number and
 * arguments are read from the registers it was entered with
 * (PT_REGS_PARM*_CORE_SYSCALL, per architecture), and the syscall
 * numbers, which differ per architecture, come from the loader
 * (cfg_nr_*). kprobes on sock_recvmsg would see no
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
 *   dup*        of a connection   -> the copy is the same connection
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
const volatile long cfg_nr_dup = -1;
const volatile long cfg_nr_dup2 = -1;
const volatile long cfg_nr_dup3 = -1;

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

/* A followed connection: its port, and the descriptor it was accepted
 * as, which names it in the records even where the server reads and
 * writes through a duplicate (an inetd-style child serving it on its
 * stdin and stdout). */
struct http_conn {
	__u32 port;
	__s32 conn_fd;
};

/* Connections followed, by every descriptor that refers to one. A full
 * map leaves the newest connection out (counted: CW_STAT_HTTP_CONNS_FULL). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct http_fd);
	__type(value, struct http_conn);
} http_conns SEC(".maps");

/* The connection a process accepted last, for a server that forks a
 * child per connection (busybox httpd, inetd-style, pre-fork servers):
 * the child inherits it at the fork that follows, while the parent
 * closes its own copy. Keyed by tgid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct http_fd);
} http_last_accept SEC(".maps");

/* Where a call's bytes are: a plain buffer (buf_len ~0), or the first
 * buffer of a vectored call. */
struct http_buf {
	__u64 buf;
	__u64 buf_len;
};

static __always_inline void emit(__u16 op, __s32 fd, __u32 port, __s64 len, const struct http_buf *b)
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
	r->peer_port = 0;
	r->pad1 = 0;
	if (b && len > 0 && b->buf) {
		n = (__u64)len;
		if (n > b->buf_len)
			n = b->buf_len;
		if (n > CW_HTTP_IO_HEAD)
			n = CW_HTTP_IO_HEAD;
		/* Bounds the register the verifier sees (n <= 512 already). */
		n &= 2 * CW_HTTP_IO_HEAD - 1;
		if (n > CW_HTTP_IO_HEAD)
			n = CW_HTTP_IO_HEAD;
		if (n && bpf_probe_read_user(r->head, n, (const void *)b->buf) == 0)
			r->head_len = (__u16)n;
		/* The tail: only from one contiguous buffer holding it all. */
		if (r->head_len && (__u64)len > n && b->buf_len >= (__u64)len &&
		    bpf_probe_read_user(r->tail, CW_HTTP_IO_TAIL,
					(const void *)(b->buf + (__u64)len - CW_HTTP_IO_TAIL)) == 0)
			r->tail_len = CW_HTTP_IO_TAIL;
	}
	cw_submit(&rb_http, r, sizeof(*r));
}

/* The client's port of the connection fd of the current process: the
 * accepted socket's destination port (task->files->fdt->fd[fd] ->
 * socket -> sock). Read from the socket, not from the address buffer
 * the server passed to accept, which many servers leave NULL. 0 when
 * any read fails. */
static __always_inline __u16 peer_port_of(__s32 fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct file **fds = BPF_CORE_READ(task, files, fdt, fd);
	struct file *f = NULL;
	struct socket *sock;

	if (!fds || fd < 0 || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]) || !f)
		return 0;
	sock = BPF_CORE_READ(f, private_data);
	if (!sock)
		return 0;
	return __builtin_bswap16(BPF_CORE_READ(sock, sk, __sk_common.skc_dport));
}

/* An accepted connection, with its client's port. */
static __always_inline void emit_accept(__s32 fd, __u32 port)
{
	__u16 peer = peer_port_of(fd);
	struct cw_http_io *r = cw_reserve(&rb_http, sizeof(*r), CW_DROP_HTTP);

	if (!r)
		return;
	cw_hdr_current(&r->hdr, CW_REC_HTTP_IO, sizeof(*r), CW_SRC_NET, CW_OP_http_accept);
	r->len = 0;
	r->fd = fd;
	r->port = (__u16)port;
	r->head_len = 0;
	r->tail_len = 0;
	r->peer_port = peer;
	r->pad1 = 0;
	cw_submit(&rb_http, r, sizeof(*r));
}

/* The first buffer of an iovec array at uaddr. */
static __always_inline void first_iov(__u64 uaddr, __u64 count, struct http_buf *b)
{
	struct iovec v;

	b->buf = 0;
	if (!uaddr || count < 1 || bpf_probe_read_user(&v, sizeof(v), (const void *)uaddr))
		return;
	b->buf = (__u64)v.iov_base;
	b->buf_len = (__u64)v.iov_len;
}

#if defined(__TARGET_ARCH_arm64)
/* arm64's pt_regs, as much of it as is read here (the BPF objects of
 * every architecture are built against one vmlinux.h: CO-RE places the
 * field on the running kernel). */
struct pt_regs___cw_arm64 {
	int syscallno;
} __attribute__((preserve_access_index));
#endif

/* The syscall's number, from the registers it was entered with. */
static __always_inline long syscall_nr(struct pt_regs *regs)
{
#if defined(__TARGET_ARCH_arm64)
	return BPF_CORE_READ((struct pt_regs___cw_arm64 *)regs, syscallno);
#else
	return BPF_CORE_READ(regs, orig_ax);
#endif
}

/* Everything happens at the call's return: the registers still hold its
 * arguments (x86-64 keeps them all in pt_regs; arm64 keeps the first in
 * orig_x0, which PT_REGS_PARM1_CORE_SYSCALL reads), so no state is kept
 * between entry and return, one program runs per call instead of two,
 * and an accept that was already waiting when its listener was
 * registered (a server idle at start) is followed too. */
SEC("raw_tp/sys_exit")
int BPF_PROG(http_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct http_fd key;
	struct http_buf b;
	struct http_conn *cn;
	__u32 *port;
	long nr;

	if (!cw_tgid_tracked(id >> 32))
		return 0;
	nr = syscall_nr(regs);
	key.tgid = id >> 32;
	key.fd = (__s32)PT_REGS_PARM1_CORE_SYSCALL(regs);
	if (nr == cfg_nr_accept || nr == cfg_nr_accept4) {
		struct http_fd conn;
		struct http_conn v;

		if (ret < 0)
			return 0;
		port = bpf_map_lookup_elem(&http_listen, &key);
		/* A pre-fork server's child accepts on the listener it
		 * inherited: its parent's. */
		if (!port) {
			struct task_struct *task = (struct task_struct *)bpf_get_current_task();
			struct http_fd pkey = { .tgid = BPF_CORE_READ(task, real_parent, tgid), .fd = key.fd };

			port = bpf_map_lookup_elem(&http_listen, &pkey);
		}
		if (!port)
			return 0;
		conn.tgid = key.tgid;
		conn.fd = (__s32)ret;
		v.port = *port;
		v.conn_fd = conn.fd;
		if (bpf_map_update_elem(&http_conns, &conn, &v, BPF_ANY)) {
			cw_stat(CW_STAT_HTTP_CONNS_FULL);
			return 0;
		}
		emit_accept(conn.fd, v.port);
		bpf_map_update_elem(&http_last_accept, &key.tgid, &conn, BPF_ANY);
		return 0;
	}
	if (nr == cfg_nr_close) {
		/* A failed close (EBADF, EINTR after the release) changes nothing
		 * the server relies on; only a closed descriptor ends it. */
		if (ret || !(cn = bpf_map_lookup_elem(&http_conns, &key)))
			return 0;
		emit(CW_OP_http_close, cn->conn_fd, cn->port, 0, NULL);
		bpf_map_delete_elem(&http_conns, &key);
		return 0;
	}
	if (nr == cfg_nr_dup || nr == cfg_nr_dup2 || nr == cfg_nr_dup3) {
		struct http_conn v;
		struct http_fd dup;

		if (ret < 0 || ret == key.fd || !(cn = bpf_map_lookup_elem(&http_conns, &key)))
			return 0;
		v = *cn;
		dup.tgid = key.tgid;
		dup.fd = (__s32)ret;
		if (bpf_map_update_elem(&http_conns, &dup, &v, BPF_ANY))
			cw_stat(CW_STAT_HTTP_CONNS_FULL);
		return 0;
	}
	if (ret <= 0)
		return 0;
	if (nr != cfg_nr_read && nr != cfg_nr_recvfrom && nr != cfg_nr_write && nr != cfg_nr_sendto &&
	    nr != cfg_nr_readv && nr != cfg_nr_writev && nr != cfg_nr_recvmsg && nr != cfg_nr_sendmsg)
		return 0;
	if (!(cn = bpf_map_lookup_elem(&http_conns, &key)))
		return 0;
	if (nr == cfg_nr_readv || nr == cfg_nr_writev) {
		first_iov(PT_REGS_PARM2_CORE_SYSCALL(regs), PT_REGS_PARM3_CORE_SYSCALL(regs), &b);
	} else if (nr == cfg_nr_recvmsg || nr == cfg_nr_sendmsg) {
		struct user_msghdr m;
		__u64 a = PT_REGS_PARM2_CORE_SYSCALL(regs);

		b.buf = 0;
		if (a && !bpf_probe_read_user(&m, sizeof(m), (const void *)a))
			first_iov((__u64)m.msg_iov, m.msg_iovlen, &b);
	} else {
		b.buf = PT_REGS_PARM2_CORE_SYSCALL(regs);
		b.buf_len = ~0ull;
	}
	emit(nr == cfg_nr_read || nr == cfg_nr_recvfrom || nr == cfg_nr_readv || nr == cfg_nr_recvmsg
		     ? CW_OP_http_read
		     : CW_OP_http_write,
	     cn->conn_fd, cn->port, ret, &b);
	return 0;
}

/* A tracked server forks: the connection it accepted last is the child's
 * too (the child of a fork-per-connection server serves it). Raw
 * tracepoint: the BTF-typed one would need a second variant for kernels
 * without it, for a hook that runs once per fork. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(http_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	struct http_fd *last, conn;
	struct http_conn *cn;

	if (!cw_tgid_tracked(ptgid) || !(last = bpf_map_lookup_elem(&http_last_accept, &ptgid)))
		return 0;
	conn = *last;
	bpf_map_delete_elem(&http_last_accept, &ptgid);
	if (!(cn = bpf_map_lookup_elem(&http_conns, &conn)))
		return 0;
	conn.tgid = BPF_CORE_READ(child, tgid);
	{
		struct http_conn v = *cn;

		if (bpf_map_update_elem(&http_conns, &conn, &v, BPF_ANY))
			cw_stat(CW_STAT_HTTP_CONNS_FULL);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
