/* bigdb_bench: builds a large trace database through the real pipeline for
 * the explain/query latency benchmarks: N calls of a training loop on four
 * threads (launches, async copies, syncs, allocations), an off-CPU interval
 * around every sync, a 20-second CPU storm that preempts the syncs, a
 * data-loader thread reading from disk (one block read and the blocked
 * interval around it per 100 calls), and host snapshots once a second.
 * With "layers", it adds what the OOM, network and CUDA-graph rules read:
 * a 20-second lossy stretch at three quarters of the run where a third of
 * the syncs wait 30 us with a TCP retransmit of the process's socket
 * inside, a graph capture + instantiation + launch every 240 calls, page
 * allocation records every 100 ms and an OOM kill of the process near the
 * end.
 *   usage: bigdb_bench PATH [CALLS [layers]]   (default 10,000,000 calls) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/events.h"
#include "pipeline/pipeline.h"
#include "store/store.h"
#include "store/writer.h"
#include "util/timeutil.h"

static void fill(struct cw_hdr *h, unsigned type, size_t size, unsigned src, unsigned op, uint64_t ts, uint32_t tid)
{
	memset(h, 0, sizeof(*h));
	h->type = (uint16_t)type;
	h->size = (uint16_t)size;
	h->version = CW_EVENTS_VERSION;
	h->source = (uint8_t)src;
	h->op = (uint16_t)op;
	h->ts_ns = ts;
	h->pid = 4821;
	h->tid = tid;
	h->cgroup_id = 77;
	memcpy(h->comm, "python", 7);
}

int main(int argc, char **argv)
{
	static const unsigned loop[] = { CW_OP_cudaLaunchKernel, CW_OP_cudaLaunchKernel, CW_OP_cudaMemcpyAsync,
					 CW_OP_cudaLaunchKernel, CW_OP_cudaStreamSynchronize, CW_OP_cudaMalloc };
	const uint64_t base = 1000 * NSEC_PER_SEC, step = 4000;
	long calls = argc > 2 ? atol(argv[2]) : 10000000, i;
	struct cw_writer_opts wo = { .node = "bench-node" };
	struct cw_session_info si = { .node = "bench-node", .kind = "bench", .rank = -1, .local_rank = -1 };
	struct cw_pipeline_opts po = { 0 };
	struct cw_pipeline_counters c;
	struct cw_pipeline *p;
	struct cw_writer *w;
	struct cw_store *st;
	uint64_t t0 = cw_monotonic_ns(), storm_from, storm_to, next_snap = base, lossy_from, lossy_to;
	int layers = argc > 3 && !strcmp(argv[3], "layers");
	unsigned rng = 12345;
	char err[256];

	if (argc < 2 || calls <= 0) {
		fprintf(stderr, "usage: bigdb_bench PATH [CALLS]\n");
		return 2;
	}
	if (cw_store_open(&st, argv[1], CW_STORE_CREATE, err, sizeof(err))) {
		fprintf(stderr, "bigdb_bench: %s\n", err);
		return 1;
	}
	si.started_wall_ns = 1767225600ULL * NSEC_PER_SEC;
	si.mono_to_wall_ns = (int64_t)si.started_wall_ns - (int64_t)base;
	cw_session_begin(st, &si, &wo.session_id);
	cw_writer_new(&w, st, &wo);
	po.writer = w;
	po.mono_to_wall_ns = si.mono_to_wall_ns;
	cw_pipeline_new(&p, &po);
	storm_from = base + (uint64_t)calls * step / 2;
	storm_to = storm_from + 20 * NSEC_PER_SEC;
	lossy_from = base + (uint64_t)calls * step / 4 * 3;
	lossy_to = lossy_from + 20 * NSEC_PER_SEC;
	for (i = 0; i < calls; i++) {
		uint64_t ts = base + (uint64_t)i * step;
		uint32_t tid = 4821 + (uint32_t)(i % 4);
		unsigned op = loop[(i / 4) % 6];
		uint64_t dur = 1500 + (rng = rng * 1103515245 + 12345) % 800;
		struct cw_call_entry e;
		struct cw_call_return r;

		if (op == CW_OP_cudaStreamSynchronize) {
			struct cw_offcpu o;
			int storm = ts >= storm_from && ts < storm_to && i % 3 == 0;
			int lossy = layers && ts >= lossy_from && ts < lossy_to && i % 3 == 1;

			dur = storm || lossy ? 30000 + rng % 5000 : 3000 + rng % 500;
			if (lossy) {
				struct cw_net n;

				memset(&n, 0, sizeof(n));
				fill(&n.hdr, CW_REC_NET, sizeof(n), CW_SRC_NET, CW_OP_tcp_retransmit, ts + dur / 2, 4830);
				n.family = 2;
				n.sport = 41822;
				n.dport = 29500;
				n.state = 1;
				memcpy(n.saddr, "\x0a\x00\x03\x05", 4);
				memcpy(n.daddr, "\x0a\x00\x03\x07", 4);
				cw_pipeline_feed(p, &n, sizeof(n));
			}
			memset(&o, 0, sizeof(o));
			fill(&o.hdr, CW_REC_OFFCPU, sizeof(o), CW_SRC_SCHED, CW_OP_offcpu, ts + 200, tid);
			o.end_ns = ts + dur - 200;
			o.reason = storm ? CW_OFFCPU_PREEMPTED : CW_OFFCPU_BLOCKED;
			o.by_pid = storm ? 9000 : 0;
			memcpy(o.by_comm, storm ? "stress-ng" : "swapper/1", 10);
			cw_pipeline_feed(p, &o, sizeof(o));
		}
		memset(&e, 0, sizeof(e));
		fill(&e.hdr, CW_REC_CALL_ENTRY, sizeof(e), CW_SRC_CUDA, op, ts, tid);
		e.args[1] = 1 << 20;
		e.args[2] = 1 << 20;
		e.args[3] = 1;
		e.device = 0;
		cw_pipeline_feed(p, &e, sizeof(e));
		memset(&r, 0, sizeof(r));
		fill(&r.hdr, CW_REC_CALL_RETURN, sizeof(r), CW_SRC_CUDA, op, ts + dur, tid);
		cw_pipeline_feed(p, &r, sizeof(r));
		if (layers && i % 240 == 7) {
			static const unsigned gops[] = { CW_OP_cudaStreamEndCapture, CW_OP_cudaGraphInstantiate,
							 CW_OP_cudaGraphLaunch };
			for (unsigned g = 0; g < 3; g++) {
				memset(&e, 0, sizeof(e));
				fill(&e.hdr, CW_REC_CALL_ENTRY, sizeof(e), CW_SRC_GRAPH, gops[g], ts + dur + 10 + g * 300, 4821);
				e.args[3] = 0x6a000000 + (uint64_t)i;
				cw_pipeline_feed(p, &e, sizeof(e));
				memset(&r, 0, sizeof(r));
				fill(&r.hdr, CW_REC_CALL_RETURN, sizeof(r), CW_SRC_GRAPH, gops[g], ts + dur + 10 + g * 300 + 250,
				     4821);
				cw_pipeline_feed(p, &r, sizeof(r));
			}
		}
		if (layers && i % 25000 == 3) {
			struct cw_mem m;

			memset(&m, 0, sizeof(m));
			fill(&m.hdr, CW_REC_MEM, sizeof(m), CW_SRC_MEM, CW_OP_page_alloc, ts, 4821);
			m.pages = 2000 + (uint64_t)i / 10000;
			m.interval_ns = 100000000;
			cw_pipeline_feed(p, &m, sizeof(m));
		}
		if (layers && i == calls - 1000) {
			struct cw_mem m;

			memset(&m, 0, sizeof(m));
			fill(&m.hdr, CW_REC_MEM, sizeof(m), CW_SRC_MEM, CW_OP_oom_kill, ts, 4821);
			m.victim_pid = 4821;
			memcpy(m.victim_comm, "python", 7);
			m.pages = (30ULL << 30) / 4096;
			m.interval_ns = 32ULL << 30;
			m.bytes = 64ULL << 30;
			cw_pipeline_feed(p, &m, sizeof(m));
		}
		if (i % 100 == 50) {
			/* The data loader (its own thread) sleeps on a 128 KiB read. */
			uint64_t io_dur = 100000 + rng % 200000;
			struct cw_block_io b;
			struct cw_offcpu o;

			memset(&o, 0, sizeof(o));
			fill(&o.hdr, CW_REC_OFFCPU, sizeof(o), CW_SRC_SCHED, CW_OP_offcpu, ts, 4840);
			o.end_ns = ts + io_dur + 5000;
			o.reason = CW_OFFCPU_BLOCKED;
			memcpy(o.by_comm, "swapper/2", 10);
			cw_pipeline_feed(p, &o, sizeof(o));
			memset(&b, 0, sizeof(b));
			fill(&b.hdr, CW_REC_BLOCK_IO, sizeof(b), CW_SRC_IO, CW_OP_block_read, ts + 1000, 4840);
			b.complete_ns = ts + 1000 + io_dur;
			b.sector = (uint64_t)i * 256;
			b.bytes = 128 << 10;
			b.dev = 259u << 20;
			memcpy(b.rwbs, "RA", 3);
			cw_pipeline_feed(p, &b, sizeof(b));
		}
		if (ts >= next_snap) {
			struct cw_snapshot s;
			int storm = ts >= storm_from && ts < storm_to;

			memset(&s, 0, sizeof(s));
			fill(&s.hdr, CW_REC_SNAPSHOT, sizeof(s), CW_SRC_SYSTEM, CW_OP_snapshot, ts, 0);
			s.cpu_pct_x100 = storm ? 9900 : 3500;
			s.mem_pct_x100 = 4000;
			s.ncpu = 8;
			s.load1_x100 = storm ? 1600 : 300;
			cw_pipeline_feed(p, &s, sizeof(s));
			next_snap += NSEC_PER_SEC;
		}
		if (i % 1000000 == 999999)
			fprintf(stderr, "bigdb_bench: %ld calls\n", i + 1);
	}
	cw_pipeline_flush(p, 0, 0);
	cw_pipeline_get_counters(p, &c);
	cw_pipeline_free(p);
	cw_writer_free(w);
	cw_store_close(st);
	printf("%llu calls, %llu off-CPU intervals written to %s in %.1f s\n", (unsigned long long)c.calls,
	       (unsigned long long)c.offcpu, argv[1], (double)(cw_monotonic_ns() - t0) / 1e9);
	return c.calls == (uint64_t)calls ? 0 : 1;
}
