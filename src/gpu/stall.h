/* Training-stall detection: a process that made CUDA calls at a steady
 * rhythm and has made none for longer than max(factor x its step, floor)
 * while alive. The step is the slowest steady rhythm among its ops: the
 * median gap between successive calls of each op that was called at
 * least min_calls times, the largest of those medians (a per-step
 * synchronize, not the launches inside a step). Pure logic with the
 * clock passed in, so the rule (after the fact) and trace (live) share
 * it. */
#ifndef CW_GPU_STALL_H
#define CW_GPU_STALL_H

#include <stddef.h>
#include <stdint.h>

#define CW_STALL_FACTOR 10
#define CW_STALL_FLOOR_NS (30ULL * 1000000000ULL)
#define CW_STALL_MIN_CALLS 8
#define CW_STALL_GAPS 32 /* recent gaps kept per op */
#define CW_STALL_OPS 8   /* ops tracked per process */

struct cw_stall_opts {
	uint64_t floor_ns; /* 0: CW_STALL_FLOOR_NS */
	unsigned factor;   /* 0: CW_STALL_FACTOR */
	unsigned min_calls; /* 0: CW_STALL_MIN_CALLS */
	/* Summary capture: calls after a second's first row may be folded in
	 * the kernel and seen only seconds later, so silence runs from the
	 * end of the latest row's wall second (cw_stall_row_second). */
	int summary;
};

/* One op's rhythm. */
/* Seconds of an op's calls kept per op for summary capture's rhythm. */
#define CW_STALL_SECS 8

struct cw_stall_op {
	char op[48];
	uint64_t last_start;
	uint64_t gaps[CW_STALL_GAPS];
	unsigned ngaps, next;
	/* Per wall second (slot second % CW_STALL_SECS): rows and calls
	 * folded in the kernel. Once a second has folded calls, the op's
	 * step is 1 s / (rows + folded) of such seconds (their median): the
	 * rows left (first, sampled, slow calls) overstate the step. */
	struct {
		int64_t sec;
		uint32_t rows;
		uint64_t folded;
	} secs[CW_STALL_SECS];
};

struct cw_stall_proc {
	uint32_t pid, last_tid;
	char last_op[48];
	uint64_t last_ns; /* start of the latest call */
	uint64_t last_sec_end_ns; /* monotonic end of the latest row's wall second */
	uint64_t calls;
	int reported;
	struct cw_stall_op ops[CW_STALL_OPS];
	int nops;
};

struct cw_stall_hit {
	uint32_t pid, last_tid;
	char last_op[48];
	uint64_t last_ns, step_ns, threshold_ns, silent_ns; /* last_ns: start of the last call */
	uint64_t calls;
};

struct cw_stall;

int cw_stall_new(struct cw_stall **out, const struct cw_stall_opts *o);
void cw_stall_free(struct cw_stall *s);
/* One finished GPU call (monotonic ns). */
void cw_stall_call(struct cw_stall *s, uint32_t pid, uint32_t tid, const char *op, uint64_t start_ns, uint64_t end_ns);
/* The process exited: forget it. */
void cw_stall_exited(struct cw_stall *s, uint32_t pid);
/* Processes newly stalled at now, each reported once until it calls
 * again. alive(pid, ctx) says whether the process still exists. Returns
 * how many hits were written (<= max). */
int cw_stall_check(struct cw_stall *s, uint64_t now, int (*alive)(uint32_t pid, void *ctx), void *ctx,
		   struct cw_stall_hit *out, int max);

/* The processes tracked now (seen calling, not exited): pids and the
 * thread of each one's latest call, at most max. Returns the count. */
int cw_stall_procs(const struct cw_stall *s, uint32_t *pids, uint32_t *last_tids, int max);

/* Shared with the after-the-fact rule. */
void cw_stall_proc_call(struct cw_stall_proc *p, uint32_t tid, const char *op, uint64_t start_ns, uint64_t end_ns);
/* Summary capture: a row of op started in wall second sec, and count
 * calls of op in sec that were folded in the kernel (any thread; a
 * second's folded calls may come in several parts). */
void cw_stall_proc_row_second(struct cw_stall_proc *p, const char *op, int64_t sec, uint32_t rows);
void cw_stall_proc_folded(struct cw_stall_proc *p, const char *op, int64_t sec, uint64_t count);
/* The same for a process already seen calling. */
void cw_stall_row_second(struct cw_stall *s, uint32_t pid, const char *op, uint64_t mono_ns, uint64_t wall_ns);
void cw_stall_folded(struct cw_stall *s, uint32_t pid, const char *op, int64_t sec, uint64_t count);
/* The process's step (0: no steady rhythm yet). */
uint64_t cw_stall_proc_step(const struct cw_stall_proc *p, unsigned min_calls);
uint64_t cw_stall_threshold(uint64_t step_ns, const struct cw_stall_opts *o);

#endif
