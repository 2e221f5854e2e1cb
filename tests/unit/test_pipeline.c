/* Pipeline: decode checks, per-thread pairing, nesting, loss counters. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/events.h"
#include "pipeline/decode.h"
#include "pipeline/pipeline.h"
#include "store/store.h"
#include "store/writer.h"

struct fixture {
	char path[64];
	struct cw_store *st;
	struct cw_writer *w;
	struct cw_pipeline *p;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct cw_writer_opts wo = { .node = "n1", .session_id = 1 };
	struct cw_pipeline_opts po = { 0 };
	char err[256];
	int fd;

	strcpy(f->path, "/tmp/cw-test-pipeline-XXXXXX");
	fd = mkstemp(f->path);
	close(fd);
	unlink(f->path);
	assert_int_equal(cw_store_open(&f->st, f->path, CW_STORE_CREATE, err, sizeof(err)), 0);
	assert_int_equal(cw_writer_new(&f->w, f->st, &wo), 0);
	po.writer = f->w;
	po.mono_to_wall_ns = 1000;
	assert_int_equal(cw_pipeline_new(&f->p, &po), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char wal[80];

	cw_pipeline_free(f->p);
	cw_writer_free(f->w);
	cw_store_close(f->st);
	unlink(f->path);
	snprintf(wal, sizeof(wal), "%s-wal", f->path);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", f->path);
	unlink(wal);
	free(f);
	return 0;
}

static void hdr(struct cw_hdr *h, unsigned type, size_t size, unsigned source, unsigned op, uint64_t ts,
		uint32_t tid)
{
	memset(h, 0, sizeof(*h));
	h->type = (uint16_t)type;
	h->size = (uint16_t)size;
	h->version = CW_EVENTS_VERSION;
	h->source = (uint8_t)source;
	h->op = (uint16_t)op;
	h->ts_ns = ts;
	h->pid = 100;
	h->tid = tid;
	strcpy(h->comm, "python");
}

static int entry(struct cw_pipeline *p, unsigned src, unsigned op, uint64_t ts, uint32_t tid, uint64_t a1)
{
	struct cw_call_entry e;

	memset(&e, 0, sizeof(e));
	hdr(&e.hdr, CW_REC_CALL_ENTRY, sizeof(e), src, op, ts, tid);
	e.args[1] = a1;
	e.device = 2;
	return cw_pipeline_feed(p, &e, sizeof(e));
}

static int ret(struct cw_pipeline *p, unsigned src, unsigned op, uint64_t ts, uint32_t tid, int64_t rv)
{
	struct cw_call_return r;

	memset(&r, 0, sizeof(r));
	hdr(&r.hdr, CW_REC_CALL_RETURN, sizeof(r), src, op, ts, tid);
	r.retval = rv;
	return cw_pipeline_feed(p, &r, sizeof(r));
}

static int64_t scalar(struct fixture *f, const char *sql)
{
	sqlite3_stmt *s;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(f->st->db, sql, -1, &s, NULL), SQLITE_OK);
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static void test_pairs_nested_calls(void **state)
{
	struct fixture *f = *state;
	struct cw_pipeline_counters c;

	/* cudaMalloc -> cuMemAlloc_v2 nested on one thread, another thread
	 * interleaved. */
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaMalloc, 1000, 7, 4096), 0);
	assert_int_equal(entry(f->p, CW_SRC_DRIVER, CW_OP_cuMemAlloc, 1100, 7, 4096), 0);
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaStreamSynchronize, 1150, 8, 0), 0);
	assert_int_equal(ret(f->p, CW_SRC_DRIVER, CW_OP_cuMemAlloc, 1900, 7, 0), 0);
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaMalloc, 2000, 7, 2), 0);
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaStreamSynchronize, 5150, 8, 0), 0);
	assert_int_equal(cw_pipeline_flush(f->p, 6000, 0), 0);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaMalloc'"), 1000);
	assert_int_equal(scalar(f, "SELECT ret FROM events WHERE op='cudaMalloc'"), 2);
	assert_int_equal(scalar(f, "SELECT bytes FROM events WHERE op='cudaMalloc'"), 4096);
	assert_int_equal(scalar(f, "SELECT device FROM events WHERE op='cudaMalloc'"), 2);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cuMemAlloc'"), 800);
	assert_int_equal(scalar(f, "SELECT tid FROM events WHERE op='cudaStreamSynchronize'"), 8);
	assert_int_equal(scalar(f, "SELECT wall_ns FROM events WHERE op='cudaStreamSynchronize'"), 2150);
	assert_int_equal(scalar(f, "SELECT count(*) FROM aggregates"), 3);
	assert_int_equal(scalar(f, "SELECT count(DISTINCT seq) FROM events"), 3);
	cw_pipeline_get_counters(f->p, &c);
	assert_int_equal(c.calls, 3);
	assert_int_equal(c.unpaired_returns, 0);
}

static void test_counts_losses(void **state)
{
	struct fixture *f = *state;
	struct cw_pipeline_counters c;
	struct cw_call_entry e;
	unsigned char junk[8] = { 0 };

	/* A return without entry, a short record, a wrong version, a lost
	 * inner return. */
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaFree, 10, 9, 0), 0);
	assert_int_equal(cw_pipeline_feed(f->p, junk, sizeof(junk)), -EINVAL);
	memset(&e, 0, sizeof(e));
	hdr(&e.hdr, CW_REC_CALL_ENTRY, sizeof(e), CW_SRC_CUDA, CW_OP_cudaFree, 10, 9);
	e.hdr.version = 99;
	assert_int_equal(cw_pipeline_feed(f->p, &e, sizeof(e)), -EINVAL);
	e.hdr.version = CW_EVENTS_VERSION;
	assert_int_equal(cw_pipeline_feed(f->p, &e, sizeof(e) - 8), -EINVAL);
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaMemcpy, 100, 9, 0), 0);
	assert_int_equal(entry(f->p, CW_SRC_DRIVER, CW_OP_cuMemcpyHtoD, 110, 9, 0), 0);
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaMemcpy, 300, 9, 0), 0);
	/* An entry still open when the thread died. */
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaDeviceSynchronize, 400, 10, 0), 0);
	assert_int_equal(cw_pipeline_flush(f->p, 10000, 5000), 0);
	cw_pipeline_get_counters(f->p, &c);
	assert_int_equal(c.unpaired_returns, 1);
	assert_int_equal(c.rejected_size, 2);
	assert_int_equal(c.rejected_version, 1);
	assert_int_equal(c.unfinished_entries, 2);
	assert_int_equal(scalar(f, "SELECT count(*) FROM events WHERE detail LIKE '%unfinished'"), 2);
	assert_int_equal(scalar(f, "SELECT value FROM counters WHERE name='pipeline.unpaired_returns'"), 1);
}

/* Calls still open when the recording ends (a hang) are stored unfinished
 * up to the end, and counted apart from the losses. */
static void test_finish_keeps_open_calls(void **state)
{
	struct fixture *f = *state;
	struct cw_pipeline_counters c;

	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaStreamSynchronize, 1000, 7, 0), 0);
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaStreamSynchronize, 2000, 8, 0), 0);
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaMalloc, 3000, 9, 64), 0);
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaMalloc, 3500, 9, 0), 0);
	assert_int_equal(cw_pipeline_finish(f->p, 9000), 0);
	cw_pipeline_get_counters(f->p, &c);
	assert_int_equal(c.open_at_end, 2);
	assert_int_equal(c.unfinished_entries, 0);
	assert_int_equal(scalar(f, "SELECT count(*) FROM events WHERE detail = 'unfinished' AND ret IS NULL"), 2);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE tid = 7"), 8000);
	assert_int_equal(scalar(f, "SELECT value FROM counters WHERE name = 'pipeline.open_at_end'"), 2);
	assert_int_equal(scalar(f, "SELECT value FROM counters WHERE name = 'pipeline.unfinished_entries'"), 0);
}

static int call(struct cw_pipeline *p, unsigned src, unsigned op, uint64_t ts, uint64_t end, uint32_t tid,
		int64_t rv, uint32_t flags)
{
	struct cw_call c;

	memset(&c, 0, sizeof(c));
	hdr(&c.e.hdr, CW_REC_CALL, sizeof(c), src, op, ts, tid);
	c.e.args[1] = 4096;
	c.e.device = 1;
	c.e.flags = flags;
	c.end_ns = end;
	c.retval = rv;
	return cw_pipeline_feed(p, &c, sizeof(c));
}

static int ustack(struct cw_pipeline *p, uint64_t ts, uint32_t tid, uint64_t ip)
{
	struct cw_ustack u;

	memset(&u, 0, sizeof(u));
	hdr(&u.hdr, CW_REC_USTACK, sizeof(u), CW_SRC_CUDA, CW_OP_NONE, ts, tid);
	u.nips = 2;
	u.ips[0] = ip;
	u.ips[1] = ip + 0x100;
	return cw_pipeline_feed(p, &u, sizeof(u));
}

/* Whole-call records (what the CUDA probes emit): the inner driver call
 * arrives before the runtime call that made it, each call's stack arrives
 * before its call record and is matched by entry time, a stack whose call
 * never comes is an orphan, an open call handed over as an entry is
 * stored unfinished. */
static void test_whole_call_records(void **state)
{
	struct fixture *f = *state;
	struct cw_pipeline_counters c;
	struct cw_call bad;
	int i;

	assert_int_equal(ustack(f->p, 1000, 7, 0x401000), 0);
	assert_int_equal(ustack(f->p, 1100, 7, 0x402000), 0);
	assert_int_equal(call(f->p, CW_SRC_DRIVER, CW_OP_cuMemAlloc, 1100, 1900, 7, 0, CW_CALL_F_USTACK), 0);
	assert_int_equal(call(f->p, CW_SRC_CUDA, CW_OP_cudaMalloc, 1000, 3000, 7, 2, CW_CALL_F_USTACK), 0);
	assert_int_equal(call(f->p, CW_SRC_CUDA, CW_OP_cudaStreamSynchronize, 1200, 5200, 8, 0, 0), 0);
	/* Truncated and oversized whole-call records are rejected. */
	memset(&bad, 0, sizeof(bad));
	hdr(&bad.e.hdr, CW_REC_CALL, sizeof(bad), CW_SRC_CUDA, CW_OP_cudaFree, 10, 9);
	assert_int_equal(cw_pipeline_feed(f->p, &bad, sizeof(bad) - 16), -EINVAL);
	/* Five stacks whose calls never come: the oldest is given up. */
	for (i = 0; i < 5; i++)
		assert_int_equal(ustack(f->p, 10000 + (uint64_t)i, 9, 0x500000 + (uint64_t)i * 0x1000), 0);
	/* Still open in the kernel at the end: handed over as an entry. */
	assert_int_equal(entry(f->p, CW_SRC_NCCL, CW_OP_ncclAllReduce, 6000, 8, 0), 0);
	assert_int_equal(cw_pipeline_flush(f->p, 70000, 50000), 0);

	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaMalloc'"), 2000);
	assert_int_equal(scalar(f, "SELECT ret FROM events WHERE op='cudaMalloc'"), 2);
	assert_int_equal(scalar(f, "SELECT bytes FROM events WHERE op='cudaMalloc'"), 4096);
	assert_int_equal(scalar(f, "SELECT device FROM events WHERE op='cudaMalloc'"), 1);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cuMemAlloc'"), 800);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaStreamSynchronize'"), 4000);
	/* Each call got its own stack: different ids, each the right frames. */
	assert_int_equal(scalar(f, "SELECT count(DISTINCT stack_id) FROM events WHERE op IN ('cudaMalloc','cuMemAlloc')"),
			 2);
	assert_int_equal(scalar(f, "SELECT s.frames LIKE '0x401000%' FROM events e JOIN stacks s ON s.id = e.stack_id "
				   "WHERE e.op='cudaMalloc'"),
			 1);
	assert_int_equal(scalar(f, "SELECT s.frames LIKE '0x402000%' FROM events e JOIN stacks s ON s.id = e.stack_id "
				   "WHERE e.op='cuMemAlloc'"),
			 1);
	assert_int_equal(scalar(f, "SELECT stack_id IS NULL FROM events WHERE op='cudaStreamSynchronize'"), 1);
	assert_int_equal(scalar(f, "SELECT count(*) FROM events WHERE op='ncclAllReduce' AND detail = 'unfinished'"), 1);
	cw_pipeline_get_counters(f->p, &c);
	assert_int_equal(c.calls, 4);
	assert_int_equal(c.orphan_stacks, 1);
	assert_int_equal(c.rejected_size, 1);
	assert_int_equal(c.unfinished_entries, 1);
	assert_int_equal(c.unpaired_returns, 0);
}

static void test_offcpu_and_snapshot(void **state)
{
	struct fixture *f = *state;
	struct cw_offcpu o;
	struct cw_snapshot s;

	memset(&o, 0, sizeof(o));
	hdr(&o.hdr, CW_REC_OFFCPU, sizeof(o), CW_SRC_SCHED, CW_OP_offcpu, 500, 7);
	o.end_ns = 900;
	o.reason = CW_OFFCPU_PREEMPTED;
	o.by_pid = 42;
	strcpy(o.by_comm, "stress-ng");
	assert_int_equal(cw_pipeline_feed(f->p, &o, sizeof(o)), 0);
	memset(&s, 0, sizeof(s));
	hdr(&s.hdr, CW_REC_SNAPSHOT, sizeof(s), CW_SRC_SYSTEM, CW_OP_snapshot, 1000, 0);
	s.cpu_pct_x100 = 9850;
	assert_int_equal(cw_pipeline_feed(f->p, &s, sizeof(s)), 0);
	assert_int_equal(cw_pipeline_flush(f->p, 2000, 0), 0);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM offcpu WHERE by_comm='stress-ng' AND reason='preempted'"),
			 400);
	assert_int_equal(scalar(f, "SELECT cast(cpu_pct * 100 AS INTEGER) FROM snapshots"), 9850);
}

/* decode's rejection paths, each on its own: the verdict of cw_decode and
 * the counter the pipeline keeps for it. */
static void test_decode_rejections(void **state)
{
	struct fixture *f = *state;
	struct cw_pipeline_counters c;
	const struct cw_hdr *out = NULL;
	unsigned char big[sizeof(struct cw_call) + 64];
	struct cw_call_entry e;
	struct cw_offcpu o;
	struct cw_pystack ps;

	/* no data, shorter than a header */
	assert_int_equal(cw_decode(NULL, 64, &out), CW_DECODE_SHORT);
	memset(&e, 0, sizeof(e));
	hdr(&e.hdr, CW_REC_CALL_ENTRY, sizeof(e), CW_SRC_CUDA, CW_OP_cudaMalloc, 10, 9);
	assert_int_equal(cw_decode(&e, sizeof(e.hdr) - 1, &out), CW_DECODE_SHORT);
	/* well formed: accepted, pointing at the record */
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_OK);
	assert_ptr_equal(out, &e.hdr);
	/* oversized: the sample is longer than its header says */
	memset(big, 0, sizeof(big));
	memcpy(big, &e, sizeof(e));
	assert_int_equal(cw_decode(big, sizeof(e) + 8, &out), CW_DECODE_SHORT);
	/* the header claims more than the sample holds */
	((struct cw_hdr *)big)->size = (uint16_t)(sizeof(e) + 8);
	assert_int_equal(cw_decode(big, sizeof(e), &out), CW_DECODE_SHORT);
	/* header and sample agree but are shorter than the type's layout */
	((struct cw_hdr *)big)->size = (uint16_t)(sizeof(e) - 8);
	assert_int_equal(cw_decode(big, sizeof(e) - 8, &out), CW_DECODE_SHORT);
	/* header and sample agree on a longer record (a newer producer
	 * appending fields): accepted */
	((struct cw_hdr *)big)->size = (uint16_t)(sizeof(e) + 8);
	assert_int_equal(cw_decode(big, sizeof(e) + 8, &out), CW_DECODE_OK);
	/* another ABI version */
	e.hdr.version = CW_EVENTS_VERSION + 1;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_VERSION);
	e.hdr.version = CW_EVENTS_VERSION;
	/* unknown record types */
	e.hdr.type = CW_REC_TYPE_MAX;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	e.hdr.type = 0;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	e.hdr.type = CW_REC_CALL_ENTRY;
	/* unknown source, unknown op */
	e.hdr.source = CW_SRC_MAX;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	e.hdr.source = 0;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	e.hdr.source = CW_SRC_CUDA;
	e.hdr.op = CW_OP_MAX;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	/* a call without an op, a call under another library's source */
	e.hdr.op = 0;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	e.hdr.op = CW_OP_cudaMalloc;
	e.hdr.source = CW_SRC_NCCL;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	e.hdr.source = CW_SRC_DRIVER;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	/* graph calls: under the graph source, the runtime's or the driver's;
	 * never under NCCL's */
	e.hdr.op = CW_OP_cudaGraphLaunch;
	e.hdr.source = CW_SRC_GRAPH;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_OK);
	e.hdr.source = CW_SRC_CUDA;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_OK);
	e.hdr.source = CW_SRC_DRIVER;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_OK);
	e.hdr.source = CW_SRC_NCCL;
	assert_int_equal(cw_decode(&e, sizeof(e), &out), CW_DECODE_TYPE);
	/* a kernel-side record must carry its own op under its own source */
	memset(&o, 0, sizeof(o));
	hdr(&o.hdr, CW_REC_OFFCPU, sizeof(o), CW_SRC_SCHED, CW_OP_offcpu, 10, 9);
	assert_int_equal(cw_decode(&o, sizeof(o), &out), CW_DECODE_OK);
	o.hdr.op = 0;
	assert_int_equal(cw_decode(&o, sizeof(o), &out), CW_DECODE_TYPE);
	o.hdr.op = CW_OP_block_read;
	assert_int_equal(cw_decode(&o, sizeof(o), &out), CW_DECODE_TYPE);
	o.hdr.op = CW_OP_offcpu;
	o.hdr.source = CW_SRC_IO;
	assert_int_equal(cw_decode(&o, sizeof(o), &out), CW_DECODE_TYPE);
	/* header and sample agree on less than an off-CPU record */
	o.hdr.source = CW_SRC_SCHED;
	o.hdr.size = (uint16_t)(sizeof(o) - 4);
	assert_int_equal(cw_decode(&o, sizeof(o) - 4, &out), CW_DECODE_SHORT);
	/* every type: one byte less than its layout, header agreeing, is short;
	 * the sizes are the events.h structs' */
	assert_int_equal(cw_record_size(CW_REC_USTACK), sizeof(struct cw_ustack));
	assert_int_equal(cw_record_size(CW_REC_PYSTACK), sizeof(struct cw_pystack));
	assert_int_equal(cw_record_size(CW_REC_OFFCPU), sizeof(struct cw_offcpu));
	assert_int_equal(cw_record_size(CW_REC_SNAPSHOT), sizeof(struct cw_snapshot));
	assert_int_equal(cw_record_size(CW_REC_KERNEL_NAME), sizeof(struct cw_kernel_name));
	assert_int_equal(cw_record_size(CW_REC_BLOCK_IO), sizeof(struct cw_block_io));
	assert_int_equal(cw_record_size(CW_REC_NET), sizeof(struct cw_net));
	assert_int_equal(cw_record_size(CW_REC_MEM), sizeof(struct cw_mem));
	assert_int_equal(cw_record_size(CW_REC_PROC), sizeof(struct cw_proc));
	assert_int_equal(cw_record_size(CW_REC_CALL_RETURN), sizeof(struct cw_call_return));
	for (unsigned t = 1; t < CW_REC_TYPE_MAX; t++) {
		size_t need = cw_record_size(t);
		unsigned char *r = calloc(1, need);

		assert_true(need >= sizeof(struct cw_hdr));
		hdr((struct cw_hdr *)r, t, need - 1, CW_SRC_CUDA, CW_OP_cudaFree, 10, 9);
		assert_int_equal(cw_decode(r, need - 1, &out), CW_DECODE_SHORT);
		free(r);
	}
	/* a whole-call record cut to an entry's length, header agreeing */
	{
		struct cw_call wc;

		memset(&wc, 0, sizeof(wc));
		hdr(&wc.e.hdr, CW_REC_CALL, sizeof(struct cw_call_entry), CW_SRC_CUDA, CW_OP_cudaFree, 10, 9);
		assert_int_equal(cw_decode(&wc, sizeof(struct cw_call_entry), &out), CW_DECODE_SHORT);
		wc.e.hdr.size = sizeof(wc);
		assert_int_equal(cw_decode(&wc, sizeof(wc), &out), CW_DECODE_OK);
	}
	/* stacks are tied to a call, not an op; their source and op, when
	 * set, must still be known */
	memset(&ps, 0, sizeof(ps));
	hdr(&ps.hdr, CW_REC_PYSTACK, sizeof(ps), CW_SRC_PYTHON, 0, 10, 9);
	assert_int_equal(cw_decode(&ps, sizeof(ps), &out), CW_DECODE_OK);
	ps.hdr.source = CW_SRC_MAX;
	assert_int_equal(cw_decode(&ps, sizeof(ps), &out), CW_DECODE_TYPE);
	ps.hdr.source = CW_SRC_PYTHON;
	ps.hdr.op = CW_OP_MAX;
	assert_int_equal(cw_decode(&ps, sizeof(ps), &out), CW_DECODE_TYPE);
	ps.hdr.op = 0;

	/* through the pipeline: each rejection counted under its reason */
	e.hdr.source = CW_SRC_CUDA;
	e.hdr.op = CW_OP_cudaMalloc;
	assert_int_equal(cw_pipeline_feed(f->p, big, sizeof(big)), -EINVAL);       /* oversized */
	e.hdr.type = 99;
	assert_int_equal(cw_pipeline_feed(f->p, &e, sizeof(e)), -EINVAL);          /* unknown type */
	e.hdr.type = CW_REC_CALL_ENTRY;
	e.hdr.source = CW_SRC_NCCL;
	assert_int_equal(cw_pipeline_feed(f->p, &e, sizeof(e)), -EINVAL);          /* source/op */
	o.hdr.size = sizeof(o);
	o.hdr.op = CW_OP_block_read;
	assert_int_equal(cw_pipeline_feed(f->p, &o, sizeof(o)), -EINVAL);          /* source/op */
	e.hdr.version = 0;
	assert_int_equal(cw_pipeline_feed(f->p, &e, sizeof(e)), -EINVAL);          /* version */
	cw_pipeline_get_counters(f->p, &c);
	assert_int_equal(c.records, 5);
	assert_int_equal(c.rejected_size, 1);
	assert_int_equal(c.rejected_type, 3);
	assert_int_equal(c.rejected_version, 1);
	assert_int_equal(c.calls, 0);
	assert_int_equal(cw_pipeline_flush(f->p, 100, 0), 0);
	assert_int_equal(scalar(f, "SELECT count(*) FROM events"), 0);
	assert_int_equal(scalar(f, "SELECT value FROM counters WHERE name='pipeline.rejected_type'"), 3);
	assert_int_equal(scalar(f, "SELECT value FROM counters WHERE name='pipeline.rejected_size'"), 1);
	assert_int_equal(scalar(f, "SELECT value FROM counters WHERE name='pipeline.rejected_version'"), 1);
}

/* Pairing: a return closes the innermost open entry of its own op and
 * source on its own thread; entries opened after it are given up as
 * unfinished; a return earlier than its entry (clocks of two CPUs) has
 * duration 0; nesting deeper than 16 gives up the oldest entry. */
static void test_pairing_rules(void **state)
{
	struct fixture *f = *state;
	struct cw_pipeline_counters c;
	int i;

	/* a launch whose callback's cudaMalloc never returned */
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaLaunchKernel, 1000, 7, 0), 0);
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaMalloc, 1100, 7, 64), 0);
	/* the same op on another thread is not this thread's */
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaLaunchKernel, 1200, 8, 0), 0);
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaLaunchKernel, 1500, 7, 0), 0);
	/* a graph launch reported under two sources: a return closes the
	 * entry of its own source (the driver's, inner, is given up) */
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaGraphLaunch, 2000, 9, 0), 0);
	assert_int_equal(entry(f->p, CW_SRC_DRIVER, CW_OP_cudaGraphLaunch, 2100, 9, 0), 0);
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaGraphLaunch, 2600, 9, 0), 0);
	assert_int_equal(ret(f->p, CW_SRC_DRIVER, CW_OP_cudaGraphLaunch, 2700, 9, 0), 0);
	/* a return stamped before its entry */
	assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaFree, 3000, 10, 0), 0);
	assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaFree, 2990, 10, 0), 0);
	/* 17 nested entries on one thread: the first is given up */
	for (i = 0; i < 17; i++)
		assert_int_equal(entry(f->p, CW_SRC_CUDA, CW_OP_cudaMemset, 4000 + (uint64_t)i * 10, 11, (uint64_t)i),
				 0);
	for (i = 16; i >= 0; i--)
		assert_int_equal(ret(f->p, CW_SRC_CUDA, CW_OP_cudaMemset, 5000 + (uint64_t)(16 - i) * 10, 11, 0), 0);
	assert_int_equal(cw_pipeline_flush(f->p, 9000, 0), 0);
	cw_pipeline_get_counters(f->p, &c);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaLaunchKernel'"), 500);
	assert_int_equal(scalar(f, "SELECT ret IS NULL FROM events WHERE op='cudaLaunchKernel'"), 0);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaMalloc'"), 400);
	assert_int_equal(scalar(f, "SELECT count(*) FROM events WHERE op='cudaMalloc' AND detail = 'unfinished'"), 1);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaGraphLaunch' AND source='driver'"
				   " AND detail = 'unfinished'"), 500);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaGraphLaunch' AND source='cuda'"), 600);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaFree'"), 0);
	/* the 16 kept memsets pair innermost first; the first entry's return
	 * finds nothing open */
	assert_int_equal(scalar(f, "SELECT count(*) FROM events WHERE op='cudaMemset'"), 16);
	assert_int_equal(scalar(f, "SELECT min(arg1) FROM events WHERE op='cudaMemset'"), 1);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaMemset' AND arg1 = 16"), 840);
	assert_int_equal(scalar(f, "SELECT duration_ns FROM events WHERE op='cudaMemset' AND arg1 = 1"), 1140);
	assert_int_equal(c.overflow_entries, 1);
	assert_int_equal(c.unpaired_returns, 3);
	assert_int_equal(c.unfinished_entries, 2);
	assert_int_equal(c.calls, 21);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_pairs_nested_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counts_losses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_finish_keeps_open_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whole_call_records, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offcpu_and_snapshot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_decode_rejections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pairing_rules, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
