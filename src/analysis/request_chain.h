/* An inference_latency chain from one incident of slow requests and what
 * happened during it (request_causes.h): the cause named, its summary,
 * timeline, fixes and evidence. docs/rules.md "inference_latency". */
#ifndef CW_ANALYSIS_REQUEST_CHAIN_H
#define CW_ANALYSIS_REQUEST_CHAIN_H

#include "analysis/request_causes.h"

/* root_cause.because of an inference_latency chain. */
#define CW_REQ_BECAUSE_PREEMPTION "cpu_preemption"
#define CW_REQ_BECAUSE_CUDA "cuda_call"
#define CW_REQ_BECAUSE_MEMORY "memory_pressure"
#define CW_REQ_BECAUSE_IO "io"
#define CW_REQ_BECAUSE_QUEUEING "queueing"
#define CW_REQ_BECAUSE_UNKNOWN "unknown"

/* Fills c (zeroed first) for incident in of s on node; db and sys for
 * the Python line and the host's state. 1 when the chain is worth naming
 * (a cause was found, or the incident is large enough to name without
 * one), 0 when not. */
int cw_req_chain_fill(sqlite3 *db, const char *node, const struct cw_sysctx *sys, const struct cw_req_set *s,
		      const struct cw_req_incident *in, const struct cw_req_causes *m, struct cw_chain *c);

#endif
