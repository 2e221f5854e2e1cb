/* The demo generator's common parts: a deterministic PRNG, a queue of raw
 * records built exactly as the BPF programs emit them (src/bpf/events.h),
 * and the delivery of that queue, in ring-buffer order, into the real
 * pipeline (src/pipeline/pipeline.h).
 *
 * A scenario never writes rows itself: it queues entry/return pairs,
 * Python stacks, off-CPU intervals, block I/O, memory, process and
 * snapshot records, and cw_demo_gen_feed() hands them to
 * cw_pipeline_feed() sorted by the time a ring buffer would deliver them
 * (an off-CPU interval when the thread is switched back in, a block
 * request when it completes, everything else at its timestamp). */
#ifndef CW_DEMO_GEN_H
#define CW_DEMO_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/events.h"
#include "pipeline/pipeline.h"

/* Synthetic clocks: monotonic time starts at 5000 s of "uptime", wall
 * time at 2026-01-01T00:00:00Z, so every run with the same seed writes the
 * same rows (docs/demo.md). */
#define CW_DEMO_MONO_BASE (5000ULL * 1000000000ULL)
#define CW_DEMO_WALL_BASE (1767225600ULL * 1000000000ULL)

/* xoshiro256** seeded through splitmix64: fast, and the same sequence on
 * every platform for a given seed. */
struct cw_demo_rng {
	uint64_t s[4];
};

void cw_demo_rng_seed(struct cw_demo_rng *r, uint64_t seed);
uint64_t cw_demo_rng_next(struct cw_demo_rng *r);
/* Uniform in [0, 1). */
double cw_demo_rng_unit(struct cw_demo_rng *r);
/* Uniform integer in [lo, hi]. */
uint64_t cw_demo_rng_range(struct cw_demo_rng *r, uint64_t lo, uint64_t hi);
/* x * exp(sigma * N(0,1)), clamped to [x / cap, x * cap]: a log-normal
 * jitter without the long tail that would look like an anomaly. */
uint64_t cw_demo_jitter(struct cw_demo_rng *r, uint64_t x, double sigma, double cap);

/* A thread as the kernel sees it. comm is at most 15 characters. */
struct cw_demo_task {
	uint32_t pid, tid;
	uint64_t cgroup_id;
	const char *comm;
	int cpu; /* the CPU it usually runs on */
};

struct cw_demo_qrec;

struct cw_demo_gen {
	struct cw_demo_rng rng;
	struct cw_demo_qrec *q;
	size_t n, cap;
	unsigned char *arena;
	size_t alen, acap;
	int err; /* first allocation failure; every later call is a no-op */
	uint64_t last_ns; /* the latest timestamp queued */
};

void cw_demo_gen_init(struct cw_demo_gen *g, uint64_t seed);
void cw_demo_gen_release(struct cw_demo_gen *g);

/* Queues a call: entry (with its Python stack when site > 0) at ts and
 * return at ts + dur. args as BPF captures them (docs/events.md). */
void cw_demo_call(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t dur, unsigned op,
		  const uint64_t args[4], int device, int site);
/* The same with all six argument slots (NCCL: stream, created comm). */
void cw_demo_call6(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t dur, unsigned op,
		   const uint64_t args[6], int device, int site);
/* A call that returns ret (a cudaError_t, CUresult or ncclResult_t). */
void cw_demo_call_ret(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t dur, unsigned op,
		      const uint64_t args[6], int device, int site, int64_t ret);
/* A call that never returns (a hang): only its entry, stored unfinished. */
void cw_demo_call_open(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, unsigned op,
		       const uint64_t args[6], int device, int site);
/* One off-CPU interval [start, end) of t. by: who took the CPU (NULL
 * unknown); waker: who woke it (blocked intervals; NULL unknown). */
void cw_demo_offcpu(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t start, uint64_t end, int reason,
		    const struct cw_demo_task *by, const struct cw_demo_task *waker);
/* A traced server's socket call (struct cw_http_io) returning at ts: op
 * CW_OP_http_accept/read/write/close on fd, bytes its first bytes (NUL-
 * terminated; NULL none), len the bytes moved (0: strlen(bytes)). */
void cw_demo_http(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, unsigned op, int fd,
		  uint16_t port, const char *bytes, uint64_t len);
void cw_demo_block_io(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t issue, uint64_t complete,
		      uint32_t bytes, uint64_t sector, int write);
void cw_demo_page_alloc(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t pages,
			uint64_t interval_ns);
/* An OOM kill as mem.bpf.c records it: t ran into the OOM, victim was
 * killed with rss_pages resident under a cgroup limit of limit_bytes. */
void cw_demo_oom_kill(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts,
		      const struct cw_demo_task *victim, uint64_t rss_pages, uint64_t limit_bytes, uint64_t total_vm);
/* A TCP retransmit of an IPv4 socket owned by owner. */
void cw_demo_retransmit(struct cw_demo_gen *g, const struct cw_demo_task *owner, uint64_t ts, const uint8_t saddr[4],
			uint16_t sport, const uint8_t daddr[4], uint16_t dport);
/* op is CW_OP_exec, CW_OP_fork or CW_OP_exit. */
void cw_demo_proc(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, unsigned op, uint32_t child,
		  int exit_code, const char *filename);
void cw_demo_kernel_name(struct cw_demo_gen *g, const struct cw_demo_task *t, uint64_t ts, uint64_t handle,
			 const char *name);

struct cw_demo_snap {
	double cpu_pct, mem_pct, load1, io_busy_pct;
	uint64_t swap_used_bytes, page_alloc_per_s, io_bytes_per_s;
	uint32_t ncpu;
};
void cw_demo_snapshot(struct cw_demo_gen *g, uint64_t ts, const struct cw_demo_snap *s);

/* Progress of a paced feed. */
struct cw_demo_feed_stats {
	uint64_t records, rejected;
	double elapsed_s;
};

/* Sorts the queue into delivery order and feeds every record to p.
 * speed 0: as fast as possible; speed > 0: paced at speed x real time,
 * with a progress line on stderr once the feed has run for a second (the
 * only output of this module, enabled by the command through progress).
 * Returns 0 or -errno (-ENOMEM from queueing, a pipeline rejection is
 * -EPROTO: the generator must only build valid records). */
int cw_demo_gen_feed(struct cw_demo_gen *g, struct cw_pipeline *p, double speed, int progress,
		     struct cw_demo_feed_stats *st);

/* ---- Python code registry (pycode.c) ----
 * Synthetic code objects at fixed addresses, each with a line table that
 * maps instruction offsets to lines, so the resolver does for the demo
 * what src/pyframe does for a live CPython. */
enum cw_demo_site {
	CW_SITE_NONE = 0,
	CW_SITE_INIT_ALLOC,  /* model.to(device) */
	CW_SITE_COPY,        /* batch upload in the prefetcher's __next__ */
	CW_SITE_PIN,         /* pin_memory() staging buffer */
	CW_SITE_FWD_CONV,
	CW_SITE_FWD_ATTN,
	CW_SITE_FWD_MLP,
	CW_SITE_ALLOC,       /* activation allocation inside forward */
	CW_SITE_LOSS,
	CW_SITE_BWD,
	CW_SITE_OPT,
	CW_SITE_FREE,
	CW_SITE_SYNC,        /* loss.item() */
	CW_SITE_SERVE_LAUNCH, /* the other tenant of gpu-steal */
	CW_SITE_SERVE_SYNC,
	CW_SITE_MAX
};

/* Fills the frames (innermost first) of site; returns the frame count. */
uint32_t cw_demo_site_frames(int site, struct cw_py_frame *frames, uint32_t max);
/* The resolver the demo hands to the pipeline. */
extern const struct cw_py_resolver cw_demo_py_resolver;

#endif
