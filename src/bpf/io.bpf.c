// SPDX-License-Identifier: GPL-2.0
/* io: block requests, system-wide, attributed to the submitting thread.
 *
 * Block I/O is recorded for every process, not only tracked ones: the I/O
 * that slows a traced workload is usually someone else's (a checkpoint
 * writer, rsync, a log shipper). To bound the volume a per-CPU token window
 * caps records at cfg_io_max_per_s per CPU; capped requests are counted
 * (CW_STAT_IO_CAPPED).
 *
 * Attribution: block_io_start (kernel >= 6.5) fires in the submitter's
 * context when the request is accounted; block_rq_issue may run later from
 * a kblockd worker. So the submitter is taken at block_io_start when that
 * tracepoint exists and at block_rq_issue otherwise. The record is emitted
 * at block_rq_complete with the latency from issue.
 */
#include "common.bpf.h"

const volatile __u32 cfg_io_max_per_s = 20000;

CW_DECLARE_RING(rb_bulk, 4 << 20);

struct inflight {
	__u64 start_ns; /* submit (block_io_start) time, replaced by issue time */
	__u64 cgroup_id;
	__u32 pid;
	__u32 tid;
	__u32 issued;
	__u32 bytes; /* at issue: completion may be reported in parts */
	char comm[CW_COMM_LEN];
};

/* Keyed by the struct request address; LRU so requeued or aborted
 * requests that never complete age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct inflight);
} inflight SEC(".maps");

struct rate_window {
	__u64 start_ns;
	__u64 count;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rate_window);
} io_rate SEC(".maps");

static __always_inline int rate_ok(void)
{
	__u32 zero = 0;
	struct rate_window *w = bpf_map_lookup_elem(&io_rate, &zero);
	__u64 now;

	if (!w || !cfg_io_max_per_s)
		return 1;
	now = bpf_ktime_get_ns();
	if (now - w->start_ns >= 1000000000ull) {
		w->start_ns = now;
		w->count = 0;
	}
	if (w->count >= cfg_io_max_per_s) {
		cw_stat(CW_STAT_IO_CAPPED);
		return 0;
	}
	w->count++;
	return 1;
}

static __always_inline void note_submitter(struct inflight *f)
{
	__u64 id = bpf_get_current_pid_tgid();

	f->pid = id >> 32;
	f->tid = (__u32)id;
	f->cgroup_id = bpf_get_current_cgroup_id();
	bpf_get_current_comm(f->comm, sizeof(f->comm));
}

static __always_inline int on_start(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct inflight f = {};

	if (!rate_ok())
		return 0;
	f.start_ns = bpf_ktime_get_ns();
	note_submitter(&f);
	if (bpf_map_update_elem(&inflight, &key, &f, BPF_ANY))
		cw_stat(CW_STAT_IO_MAPFULL);
	return 0;
}

static __always_inline int on_issue(struct request *rq)
{
	__u64 key = (__u64)rq;
	struct inflight *f = bpf_map_lookup_elem(&inflight, &key);
	struct inflight n = {};

	if (f) {
		/* Latency is device time: from issue to the device. */
		f->start_ns = bpf_ktime_get_ns();
		f->issued = 1;
		f->bytes = BPF_CORE_READ(rq, __data_len);
		return 0;
	}
	/* No block_io_start seen (older kernel, accounting off, or the request
	 * started before we attached): the issuer is the best we know. */
	if (!rate_ok())
		return 0;
	n.start_ns = bpf_ktime_get_ns();
	n.issued = 1;
	n.bytes = BPF_CORE_READ(rq, __data_len);
	note_submitter(&n);
	if (bpf_map_update_elem(&inflight, &key, &n, BPF_ANY))
		cw_stat(CW_STAT_IO_MAPFULL);
	return 0;
}

static __always_inline int on_complete(struct request *rq, int error, __u32 nr_bytes)
{
	__u64 key = (__u64)rq;
	struct inflight *f = bpf_map_lookup_elem(&inflight, &key);
	struct cw_block_io *r;
	__u32 flags, op;
	__u16 cwop;
	int i = 0;

	if (!f)
		return 0;
	if (!f->issued) /* completed without issue (merged or failed early) */
		goto out;
	r = cw_reserve(&rb_bulk, sizeof(*r), CW_DROP_IO);
	if (!r)
		goto out;
	flags = BPF_CORE_READ(rq, cmd_flags);
	/* REQ_OP_BITS is 8 since kernel 4.10. */
	op = flags & 0xff;
	cwop = op == REQ_OP_READ ? CW_OP_block_read : op == REQ_OP_WRITE ? CW_OP_block_write : CW_OP_block_other;
	r->hdr.type = CW_REC_BLOCK_IO;
	r->hdr.size = sizeof(*r);
	r->hdr.version = CW_EVENTS_VERSION;
	r->hdr.source = CW_SRC_IO;
	r->hdr.op = cwop;
	r->hdr.ts_ns = f->start_ns;
	r->hdr.pid = f->pid;
	r->hdr.tid = f->tid;
	r->hdr.cgroup_id = f->cgroup_id;
	__builtin_memcpy(r->hdr.comm, f->comm, sizeof(r->hdr.comm));
	r->complete_ns = bpf_ktime_get_ns();
	r->sector = BPF_CORE_READ(rq, __sector);
	r->bytes = f->bytes ? f->bytes : nr_bytes;
	r->dev = BPF_CORE_READ(rq, part, bd_dev);
	if (!r->dev) {
		struct gendisk *d = BPF_CORE_READ(rq, q, disk);

		if (d)
			r->dev = (BPF_CORE_READ(d, major) << 20) | BPF_CORE_READ(d, first_minor);
	}
	/* rwbs as blktrace spells it: F(lush) W R D N, then F(ua) S(ync) M(eta). */
	__builtin_memset(r->rwbs, 0, sizeof(r->rwbs));
	if (flags & (1u << __REQ_PREFLUSH))
		r->rwbs[i++] = 'F';
	r->rwbs[i++] = op == REQ_OP_WRITE ? 'W' : op == REQ_OP_READ ? 'R' : op == REQ_OP_DISCARD ? 'D' : op == REQ_OP_FLUSH ? 'F' : 'N';
	if (flags & (1u << __REQ_FUA))
		r->rwbs[i++] = 'F';
	if (flags & (1u << __REQ_SYNC))
		r->rwbs[i++] = 'S';
	if (flags & (1u << __REQ_META))
		r->rwbs[i++] = 'M';
	r->error = error;
	r->pad = 0;
	cw_submit(&rb_bulk, r, sizeof(*r));
out:
	bpf_map_delete_elem(&inflight, &key);
	return 0;
}

SEC("tp_btf/block_io_start")
int BPF_PROG(io_start_btf, struct request *rq)
{
	return on_start(rq);
}

SEC("raw_tp/block_io_start")
int BPF_PROG(io_start_raw, struct request *rq)
{
	return on_start(rq);
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(io_issue_btf, struct request *rq)
{
	return on_issue(rq);
}

SEC("raw_tp/block_rq_issue")
int BPF_PROG(io_issue_raw, struct request *rq)
{
	return on_issue(rq);
}

/* blk_status_t is a u8 status code, not an errno. */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(io_complete_btf, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return on_complete(rq, error, nr_bytes);
}

SEC("raw_tp/block_rq_complete")
int BPF_PROG(io_complete_raw, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	return on_complete(rq, error, nr_bytes);
}

char LICENSE[] SEC("license") = "GPL";
