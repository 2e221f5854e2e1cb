/* Slow inference requests (docs/rules.md "inference_latency"): the
 * requests a traced server answered in a window, each judged against its
 * route's own baseline, and the slow ones grouped into incidents in time.
 *
 * A route is (node, method, path). With at least CW_REQ_MIN_BASELINE
 * requests, a request is slow when its TTFT, its duration (an answer that
 * is not streamed) or its largest gap between tokens (a streamed one) is
 * at least CW_REQ_SLOW_FACTOR x the route's median of that measure and at
 * least CW_REQ_FLOOR_NS: a long answer is not a slow one, a stall in it
 * is. With fewer, the SLOs judge it: TTFT over CW_REQ_SLO_TTFT_NS, or an
 * unstreamed answer over CW_REQ_SLO_DURATION_NS. Pure but for the load. */
#ifndef CW_ANALYSIS_REQUESTS_H
#define CW_ANALYSIS_REQUESTS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#define CW_REQ_MIN_BASELINE 10
#define CW_REQ_SLOW_FACTOR 3.0
#define CW_REQ_FLOOR_NS 50000000ull           /* 50 ms */
#define CW_REQ_SLO_TTFT_NS 300000000ull       /* TTFT < 300 ms */
#define CW_REQ_SLO_DURATION_NS 2000000000ull  /* p99 < 2 s */
/* Slow requests less than this apart (one's end to the next's start) are
 * one incident. */
#define CW_REQ_INCIDENT_GAP_NS 10000000000ull /* 10 s */
/* Requests read per window and node at most (the newest are dropped). */
#define CW_REQ_MAX 200000

enum cw_req_slow {
	CW_REQ_SLOW_TTFT = 1 << 0,
	CW_REQ_SLOW_DURATION = 1 << 1,
	CW_REQ_SLOW_ITL = 1 << 2,
};

struct cw_req {
	int64_t id;
	uint64_t wall_ns, mono_ns;
	int64_t pid, tid, resp_tid; /* resp_tid 0: none */
	uint64_t cgroup_id;
	char comm[16];
	char method[16];
	char path[256];
	int status;
	uint64_t bytes_in;
	int64_t ttft_ns;   /* -1: no body */
	uint64_t dur_ns;
	int streamed;
	uint32_t body_events;
	int64_t itl_max_ns; /* -1: fewer than two body events */
	int route;         /* index into the routes */
	unsigned slow;     /* enum cw_req_slow */
	uint64_t excess_ns; /* beyond the route's normal, by its slowest measure */
};

struct cw_req_route {
	char method[16];
	char path[256];
	size_t first, n;          /* its requests: reqs[first .. first + n) */
	uint64_t dur_p50_ns, dur_p99_ns, ttft_p50_ns, itl_max_p50_ns; /* 0 none */
	int slo;                  /* too few requests: judged against the SLOs */
	size_t nslow;
};

/* The requests of one node in a window, grouped by route. */
struct cw_req_set {
	struct cw_req *reqs; /* by route, then start */
	size_t n;
	struct cw_req_route *routes;
	size_t nroutes;
	int capped;          /* CW_REQ_MAX reached */
};

/* Reads node's requests that began in wall [from, to] (pid > 0: of that
 * pid; npids > 0: of one of pids) and judges them. 0 or -errno. */
int cw_req_load(sqlite3 *db, const char *node, uint64_t from, uint64_t to, int64_t pid, const int64_t *pids,
		int npids, struct cw_req_set *out);
void cw_req_free(struct cw_req_set *s);
/* Groups s->reqs by route and start and judges every request against its
 * route (the baseline, slow flags and excess): the load's last step, for
 * sets built by hand. 0 or -ENOMEM. */
int cw_req_judge(struct cw_req_set *s);

/* The end of the part of r that was slow, mono ns: its first body for a
 * request slow only to its first token, else its end. */
uint64_t cw_req_slow_end(const struct cw_req *r);

/* An incident: slow requests of one route close in time. idx: indices
 * into reqs, in start order. */
struct cw_req_incident {
	int route;
	size_t *idx;
	size_t n;
	uint64_t excess_ns;
};

/* The incidents of route r (its slow requests, split where
 * CW_REQ_INCIDENT_GAP_NS passes without one). Returns how many (*out
 * allocated; free each idx and *out), or -ENOMEM. */
int cw_req_incidents(const struct cw_req_set *s, int r, struct cw_req_incident **out);
void cw_req_incidents_free(struct cw_req_incident *v, int n);

#endif
