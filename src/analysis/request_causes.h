/* What happened during an incident of slow requests (requests.h): measured
 * over the union of the requests' slow parts (to the first token for a
 * request slow only to it, else to its end), on every thread of the
 * server's processes: the processes that answered, their children and the
 * processes of the same container (vLLM's engine core is another process
 * of the API server's container). docs/rules.md "inference_latency". */
#ifndef CW_ANALYSIS_REQUEST_CAUSES_H
#define CW_ANALYSIS_REQUEST_CAUSES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/engine.h"
#include "analysis/requests.h"

#define CW_REQ_MAX_PIDS 16
#define CW_REQ_MAX_TIDS 256

struct cw_req_causes {
	struct cw_interval *win; /* the slow parts, merged (mono) */
	size_t nwin;
	uint64_t window_ns;      /* their total length */
	int64_t pids[CW_REQ_MAX_PIDS];
	int npids;
	int nthreads;            /* threads measured */
	/* (a) the most preempted thread and who held its CPU */
	int64_t pre_pid, pre_tid;
	char pre_comm[16];
	uint64_t pre_ns;
	int threads_preempted;   /* threads preempted at all in the window */
	/* Who held the CPUs: the process that took them most often from any
	 * of the server's threads, another process's when other processes
	 * took them at all (the server's own threads aside: one waking up
	 * takes the CPU first, then the hog takes it from that thread);
	 * hog.ns 0: none. hog_of_ns: the preempted time hog.ns is a share
	 * of (all of it, or the part other processes took). */
	struct cw_culprit_acc hog;
	uint64_t hog_of_ns;
	int hog_own_aside;       /* the server's own threads' part was set aside */
	/* (c) a working thread blocked under memory pressure or while its
	 * own process's block I/O was in flight (the most such time) */
	int64_t mem_tid, io_tid;
	uint64_t mem_ns, io_ns;
	/* (b) the slowest CUDA/driver call of those processes in the window
	 * (at least CW_REQ_FLOOR_NS) and the time such calls covered */
	char cuda_op[48];
	uint64_t cuda_ns, cuda_max_ns, cuda_wall_ns;
	int64_t cuda_tid, cuda_pid, cuda_py_stack;
	/* (d) time the slow requests waited while earlier requests of the
	 * same server were answered, the answers that ended before theirs
	 * began (one slot), and the most requests in flight at once */
	uint64_t queued_ns, slow_part_ns;
	int max_inflight;
};

/* Measures in.idx of s on node (sys: its context, pressure and block I/O
 * loaded on demand). 0 or -errno; free with cw_req_causes_free. */
int cw_req_causes_measure(sqlite3 *db, const char *node, struct cw_sysctx *sys, const struct cw_req_set *s,
			  const struct cw_req_incident *in, struct cw_req_causes *out);
void cw_req_causes_free(struct cw_req_causes *c);

/* Queueing alone (d), from the requests: pure, for the rule's tests. */
void cw_req_queueing(const struct cw_req_set *s, const struct cw_req_incident *in, uint64_t *queued_ns,
		     uint64_t *slow_part_ns, int *max_inflight);

#endif
