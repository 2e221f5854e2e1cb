/* The chain: one root cause as `causeway explain` reports it (the JSON
 * contract of docs/explain.md), the options the analysis reads, the helpers
 * rules use to fill a chain and the identity of the thread behind it.
 * Below both the engine (explain.c) and the rules (rules/), which fill it. */
#ifndef CW_ANALYSIS_CHAIN_H
#define CW_ANALYSIS_CHAIN_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/stack_render.h"

struct cw_explain_opts {
	const char *node_filter;            /* NULL = every node */
	uint64_t from_wall_ns, to_wall_ns;  /* 0 = open */
	int64_t pid;                        /* 0 = all */
	int per_process;                    /* split chains per pid */
	/* Tenant filter (--cgroup/--container/--pod/--slurm-job), resolved to
	 * the processes that ran in the tenant's cgroups: only their calls
	 * are explained, each against its own distribution. npids 0 = off;
	 * pids NULL with npids < 0: a filter matched nothing. */
	const int64_t *pids;
	int npids;
	int per_tenant;                     /* split chains per tenant */
	int store_chains;                   /* informational for callers; run never writes */
	uint64_t hang_min_ns;               /* nccl_hang floor; 0 = CW_NCCL_HANG_MIN_NS */
	uint64_t stall_min_ns;              /* training_stall floor; 0 = CW_STALL_FLOOR_NS */
};

enum cw_severity {
	CW_SEV_HIGH = 0,
	CW_SEV_MEDIUM = 1,
	CW_SEV_LOW = 2,
};

/* root_cause.kind; names by cw_kind_name(). */
enum cw_kind {
	CW_KIND_CPU_PREEMPTION = 0,
	CW_KIND_IO_CONTENTION,
	CW_KIND_MEMORY_PRESSURE,
	CW_KIND_COLD_START,
	CW_KIND_PERIODIC_ALLOCATOR,
	CW_KIND_MEMCPY_BOUND,
	CW_KIND_GPU_TIME_SLICING,
	CW_KIND_THROUGHPUT_DROP,
	CW_KIND_DATALOADER_STARVATION,
	CW_KIND_STRAGGLER,
	CW_KIND_NOISY_NEIGHBOUR,
	CW_KIND_CFS_THROTTLING,
	CW_KIND_OOM_KILL,
	CW_KIND_NETWORK,
	CW_KIND_GRAPH_CHURN,
	CW_KIND_GRAPH_LAUNCH_TAIL,
	CW_KIND_HOST_MEMORY,
	CW_KIND_XID_FAULT,
	CW_KIND_THERMAL_THROTTLING,
	CW_KIND_POWER_CAPPING,
	CW_KIND_GPU_MEMORY_PRESSURE,
	CW_KIND_TRAINING_STALL,
	CW_KIND_NCCL_STRAGGLER, /* rules/nccl_chains.c */
	CW_KIND_NCCL_HANG,
	CW_KIND_COMM_BOUND,
	CW_KIND_NCCL_WAIT,      /* a rank waiting for an nccl_straggler */
	CW_KIND_CUDA_ERROR,     /* rules/call_errors.c */
	CW_KIND_DEVICE_OOM,
	CW_KIND_NCCL_ERROR,
	CW_KIND_INFERENCE_LATENCY, /* rules/inference_latency.c: slow requests of a served route */
	CW_KIND_MAX
};

enum cw_layer {
	CW_LAYER_SYSTEM = 0,
	CW_LAYER_HOST,
	CW_LAYER_IO,
	CW_LAYER_NET,
	CW_LAYER_CUDA,
	CW_LAYER_DRIVER,
	CW_LAYER_NCCL,
	CW_LAYER_PYTHON,
	CW_LAYER_MAX
};

#define CW_CHAIN_MAX_TIMELINE 12
#define CW_CHAIN_MAX_FIX 6
#define CW_CHAIN_MAX_EVIDENCE 16
#define CW_CHAIN_MAX_MISSING 4
#define CW_CHAIN_MAX_FAILED_OPS 8
#define CW_CHAIN_MAX_THREADS 8
#define CW_CHAIN_MAX_WAVEFRONT 8
#define CW_CHAIN_RAS_MAX 32768
#define CW_CHAIN_RAS_STORED_MAX (1 << 20) /* a stored RAS row read at most */
#define CW_CHAIN_MAX_REQUESTS 4

/* One slow request an inference_latency chain names (its worst first). */
struct cw_chain_request {
	uint64_t wall_ns;  /* its first bytes were read */
	int64_t ttft_ns;   /* -1: no body */
	uint64_t dur_ns;
	int status;        /* 0 none seen */
	int64_t pid, tid;
	char why[12];      /* what was slow: "ttft", "duration", "itl" */
};

struct cw_timeline_entry {
	enum cw_layer layer;
	uint64_t t_ns; /* wall-clock ns */
	char text[200];
};

struct cw_evidence {
	char key[40];
	double value;
	int is_int; /* printed as an integer in JSON */
};

/* The tenant a thread ran in (docs/tenants.md): the chain's "container"
 * object. known 0: no cgroup row for it. */
struct cw_tenant_ref {
	int known;
	uint64_t cgroup_id;
	char cgroup[256]; /* the cgroup v2 path */
	char runtime[16];
	char id[72];      /* container id, or "slurm-job-N" */
	char pod[128];
	char pod_uid[40];
	char ns[64];
	char qos[12];
	char key[128];    /* tenant key: different keys are different tenants */
};

struct cw_culprit {
	int known;
	char comm[32];
	int64_t pid;
	uint64_t cgroup_id;
	int cpu; /* -1 unknown */
	uint64_t overlap_ns; /* preempted time attributed to it */
	struct cw_tenant_ref container;
};

/* One thread's state as trace stored it (analysis/thread_states.h): what
 * it was blocked in at the live stall or at the end of the trace. */
struct cw_chain_thread {
	int64_t tid;
	char comm[16];
	char state;          /* R S D T Z from /proc; 0 unknown */
	char blocked_in[24]; /* cw_blocked_kind(): pipe, socket, futex, disk, runnable_starved, ... */
	char syscall[24];    /* "" none */
	char target[96];     /* the fd's target: "pipe:[123]", "socket:[456]", a path */
	char wchan[48];
	char in_call[48];    /* a GPU call it was inside, not returned; "" none */
	uint64_t in_call_ns;
	char python[200];    /* "train.py:42 in step"; "" unknown */
};

/* One rank at an NCCL hang (rules/nccl_chains.c "wavefront"): the last
 * collective it entered, its last GPU call and its calling thread's state
 * at the end of the trace. */
struct cw_wavefront_rank {
	int rank;            /* -1 unknown */
	int64_t pid, tid;
	char node[64];
	int missing;         /* never entered the hang's collective */
	int64_t last_seq;    /* last collective it entered on the communicator */
	char last_call[48];  /* its newest GPU call; "" none */
	int last_call_open;  /* that call never returned */
	uint64_t last_call_ago_ns; /* from its end (or start, when open) to the end of the trace */
	char state_from[16]; /* "end_of_trace", "stall", "offcpu", "" unknown */
	char thread_state[16]; /* "blocked", "running", "preempted", "in_call", "" unknown */
	uint64_t off_cpu_ns; /* the last off-CPU interval reaching the end, when that is the source */
	char python[200];    /* "train.py:42 in step": the thread's line at the end, else its last call's */
	struct cw_chain_thread th; /* the calling thread as stored (tid 0: no stored state) */
};

struct cw_chain {
	enum cw_severity severity;
	enum cw_kind kind;
	char op[48];
	char source[16];
	uint64_t count, slow_count;
	uint64_t p50_ns, p95_ns, p99_ns, max_ns;
	double tail_ratio;      /* p99 / p50 */
	/* The op's normal latency the chain is judged against: its p50
	 * outside the window when there is data there (expected_outside 1,
	 * baseline.h), else the window's p50; 0 for chains without latency. */
	uint64_t expected_ns;
	int expected_outside;
	double explained_share; /* 0..1 of slow-call time explained by kind */
	uint64_t slow_time_ns;  /* total duration of the slow calls */
	uint64_t explained_ns;  /* slow_time_ns * explained_share */
	/* An incident in time (incident.h): the seconds the chain was found
	 * in, wall ns; 0 when the chain is about the whole window. */
	uint64_t incident_from_ns, incident_to_ns;
	char summary[512];      /* the root cause in one sentence */
	struct cw_timeline_entry timeline[CW_CHAIN_MAX_TIMELINE];
	int ntimeline;
	char fix[CW_CHAIN_MAX_FIX][400]; /* room for a pod cgroup path (~200 chars) in a command */
	unsigned char fix_kind[CW_CHAIN_MAX_FIX]; /* enum cw_fix_kind of each */
	int nfix;
	int64_t pid, tid; /* 0 unknown */
	char comm[32];
	char node[64];
	int rank; /* -1 unknown */
	int has_python;
	char py_file[256];
	int py_line;
	char py_function[128];
	int64_t py_via; /* > 0: the stack is attributed, taken from this waiting thread */
	/* The representative slow call's stack, native and Python spliced
	 * (stack_render.h), innermost first; 0 frames when none was recorded. */
	struct cw_stack_frame stack[CW_STACK_MAX_FRAMES];
	int nstack;
	struct cw_culprit culprit;
	struct cw_tenant_ref container; /* the affected thread's tenant */
	struct cw_evidence evidence[CW_CHAIN_MAX_EVIDENCE];
	int nevidence;
	/* NCCL chains: root_cause.because (the cause found on the late rank,
	 * a kind name or "compute"/"blocked"), the sequence number and
	 * communicator concerned, and the ranks that never arrived (nccl_hang). */
	char because[32];
	int64_t seq;     /* 0 none */
	int64_t comm_id; /* 0 none */
	int missing_ranks[16];
	int nmissing;
	char missing_state[CW_CHAIN_MAX_MISSING][400]; /* what the first missing ranks are doing */
	/* nccl_hang: every rank at the collective where they diverge (the
	 * missing ones first), nwavefront of nwavefront_total shown. */
	struct cw_wavefront_rank wavefront[CW_CHAIN_MAX_WAVEFRONT];
	int nwavefront, nwavefront_total;
	/* nccl_hang: what the job's NCCL RAS service answered when trace
	 * asked at the hang (trace/ras.h), its stored JSON; "" when trace
	 * never asked (shown as "not_asked"). Room for any answer trace
	 * stores (8 communicators of 16 + 16 listed ranks): a longer stored
	 * row is kept with its lists cut to fit ("listed_cut"), never dropped. */
	char ras[CW_CHAIN_RAS_MAX];
	/* training_stall: each thread of the stalled process (the silent one
	 * first) and where its states come from ("stall", "end_of_trace",
	 * "" none). */
	struct cw_chain_thread threads[CW_CHAIN_MAX_THREADS];
	int nthreads, nthreads_total;
	char threads_from[16];
	/* The chain this one is explained by (a waiting rank's sync points at
	 * the straggler): its kind, node, pid and rank; kind "" when none. */
	struct {
		char kind[32];
		char node[64];
		int64_t pid;
		int rank;
	} caused_by;
	/* Error chains (rules/call_errors.c): the dominant code, its name
	 * and family (gpu/call_errors.h); name "" for other chains. */
	int64_t error_code;
	char error_name[64];
	char error_family[24];
	struct {
		char op[48];
		uint64_t failing, calls; /* its own failing calls and all its calls */
		double share;            /* of its calls that failed */
	} failed_ops[CW_CHAIN_MAX_FAILED_OPS];
	int nfailed_ops;
	/* inference_latency (rules/inference_latency.c): the route, its
	 * baseline (from the route's own requests, or the SLO thresholds
	 * when it has too few) and the worst slow requests. */
	char route_method[16];
	char route_path[256];
	uint64_t route_dur_p50_ns, route_ttft_p50_ns; /* 0 unknown */
	int route_baseline_slo;                        /* judged against the SLOs */
	struct cw_chain_request requests[CW_CHAIN_MAX_REQUESTS];
	int nrequests;
};

const char *cw_kind_name(enum cw_kind k);
const char *cw_severity_name(enum cw_severity s);
const char *cw_layer_name(enum cw_layer l);

/* Helpers rules use to fill a chain (chain.c). */
/* Sets c->summary, cut to its size (a long device name or path must not
 * fail the build's truncation checks nor the chain). */
void cw_chain_summary(struct cw_chain *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A shell command that runs as printed on the chain's host. */
void cw_chain_add_fix(struct cw_chain *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Advice in words, for what no one command does. */
void cw_chain_add_advice(struct cw_chain *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* from's fix i, of its kind. */
void cw_chain_copy_fix(struct cw_chain *c, const struct cw_chain *from, int i);
/* A change to the program's code (Python). */
void cw_chain_add_code(struct cw_chain *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cw_chain_add_timeline(struct cw_chain *c, enum cw_layer layer, uint64_t t_ns, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void cw_chain_add_evidence(struct cw_chain *c, const char *key, double v, int is_int);
enum cw_layer cw_layer_of_source(const char *source);
struct cw_opstat;
/* A new chain about op st: its name, node and percentiles (analysis/stats.h);
 * rank and culprit CPU unknown, everything else zero. */
void cw_chain_from_opstat(struct cw_chain *c, const struct cw_opstat *st);
/* "cudaStreamSynchronize p99 142.0ms (8.5x p50)" */
/* What a fix is: a shell command that runs as printed on the chain's host
 * (printed after "$ "), advice in words, or code for the program (Python). */
enum cw_fix_kind {
	CW_FIX_COMMAND = 0,
	CW_FIX_ADVICE,
	CW_FIX_CODE,
};
const char *cw_fix_kind_name(enum cw_fix_kind k);
void cw_chain_headline(const struct cw_chain *c, char *buf, size_t len);
/* The chain in one line, where, what and why (the seed's form), for the
 * text report and JSON's "headline". */
void cw_chain_oneline(const struct cw_chain *c, char *buf, size_t len);
/* The value of evidence key, or dflt when the chain has none. */
double cw_chain_evidence_value(const struct cw_chain *c, const char *key, double dflt);
/* 1 when the chain's op has a latency distribution to show (p50, p99 and
 * their ratio); 0 for chains about events or waits (an Xid fault, an OOM
 * kill, a rank's wait, a stall, communication share), whose numbers are
 * counts and times. */
int cw_chain_has_latency(const struct cw_chain *c);
/* Fills pid, tid, comm, rank and python of c from the op's slowest calls
 * (through the op index, at most 256 rows). chain_identity.c. */
int cw_chain_identity(sqlite3 *db, struct cw_chain *c, const char *node, uint64_t from_wall,
		      uint64_t to_wall, int64_t pid);

/* A growing array of chains, as the engine collects them. */
struct cw_chain_list {
	struct cw_chain *v;
	int n, cap;
};
/* A new slot at the end (uninitialised), or NULL when out of memory. */
struct cw_chain *cw_chain_list_push(struct cw_chain_list *l);

#endif
