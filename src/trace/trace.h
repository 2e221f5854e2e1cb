/* The trace session (docs/trace.md): attach the CUDA/NCCL uprobes and the
 * kernel tracepoints, record into the store, feed the live view, until a
 * stop signal, --duration, or the traced processes end.
 *
 * A library: it prints nothing itself. Progress lines and the one error
 * line of a failure go through the caller's sink; the caller maps the
 * result (the failed step and its -errno, or how the run ended) to an exit
 * status. Serving the API and OTLP export are the caller's, through hooks. */
#ifndef CW_TRACE_TRACE_H
#define CW_TRACE_TRACE_H

#include <stdint.h>
#include <stdio.h>

#include "tenant/allow.h"

#define CW_TRACE_MAX_PIDS 64
#define CW_TRACE_MAX_LIBS 32

/* Where the session's words go: progress lines (each complete, with its
 * "causeway: " prefix and newline) and at most one error line per run
 * (without prefix or newline). */
struct cw_trace_sink {
	void (*line)(void *ctx, const char *text);
	void (*error)(void *ctx, const char *text);
	void *ctx;
};

void cw_trace_say(const struct cw_trace_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cw_trace_fail(const struct cw_trace_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

struct cw_trace_opts {
	uint32_t pids[CW_TRACE_MAX_PIDS];
	int npids;
	const char *libs[CW_TRACE_MAX_LIBS];
	int nlibs;
	const char *db;
	const char *node; /* stored with every row */
	uint64_t duration_ns;
	uint64_t hang_after_ns;
	const char *nccl_ras; /* --nccl-ras: "PORT", "HOST:PORT" or "off"; NULL: 127.0.0.1:28028 */
	uint64_t size_cap;
	uint64_t lock_wait_ns, lock_buffer;
	unsigned ring_kb, agg_pct;
	int json, no_view;
	int kill_on_exit; /* PR_SET_PDEATHSIG in the launched command */
	int py_mode, native_stacks; /* enum cw_py_mode */
	int capture_summary;        /* --capture summary (trace's default): fast calls folded in the kernel */
	unsigned fold_map_entries;  /* $CW_FOLD_MAP_ENTRIES, a testing knob: the fold tables' entries; 0: 1024 + 4096 */
	int no_hold;
	int no_uprobe_multi; /* per-function perf-event uprobes */
	int no_uprobe_session; /* uprobe_multi entry and return pairs, no sessions */
	uint64_t gpu_interval_ns, stall_after_ns;
	int no_gpu;
	const char *nvml_path;   /* NULL: $CW_NVML_LIB or libnvidia-ml.so.1 */
	const char *kubelet_url; /* NULL: pods are not looked up */
	const char *serve;       /* --serve ADDR:PORT: hooks.serve_start is called */
	const char *otlp;        /* --otlp URL, for hooks.otlp_start */
	const char *inference;   /* --inference PORT[,PORT...]|auto; NULL: off */
	int bpf_stats;           /* --bpf-stats */
	char **command;
	struct cw_tenant_filter tenants[CW_TENANT_FILTERS_MAX];
	int ntenants;
	int json_fd;    /* --json: where event lines go */
	FILE *view_out; /* the live view's terminal */
	struct cw_trace_sink say;
};

/* The start-up steps, in order; CW_TRACE_RAN: none failed. */
enum cw_trace_step {
	CW_TRACE_RAN,
	CW_TRACE_SESSION,       /* the session's own memory */
	CW_TRACE_PRIVILEGE,     /* root, or CAP_BPF and CAP_PERFMON */
	CW_TRACE_BTF,           /* kernel BTF */
	CW_TRACE_PIDS,          /* every --pid exists */
	CW_TRACE_LIBS,          /* every --cuda-lib exports hooked symbols */
	CW_TRACE_STORE,         /* the database opens */
	CW_TRACE_SPAWN,         /* the launched command forks */
	CW_TRACE_KERNEL_PROBES, /* the tracepoints load */
	CW_TRACE_CUDA_PROBES,   /* the uprobe programs load */
	CW_TRACE_TENANT,        /* the tenant filter's cgroup tree */
	CW_TRACE_ATTACH,        /* every --cuda-lib attaches */
	CW_TRACE_WRITER,        /* the store takes a writer */
	CW_TRACE_PYTHON,        /* Python stack capture */
	CW_TRACE_PIPELINE,      /* the decoding pipeline */
	CW_TRACE_RINGS,         /* the ring buffers and their consumer */
	CW_TRACE_BPF_STATS,     /* --bpf-stats */
	CW_TRACE_METRICS,       /* the live metrics */
	CW_TRACE_OTLP,          /* hooks.otlp_start */
	CW_TRACE_GPU,           /* GPU telemetry */
	CW_TRACE_SERVE,         /* hooks.serve_start */
	CW_TRACE_WRITER_LAG,    /* --serve's writer lag */
	CW_TRACE_RESOLVER,      /* the cgroup resolver */
	CW_TRACE_INFERENCE,     /* --inference: the server probes */
};

struct cw_trace_result {
	int step;      /* enum cw_trace_step that failed */
	int err;       /* its -errno */
	int hook_exit; /* a hook's exit status (it said why) */
	/* When the run ran: */
	int store_failed;  /* rows were lost or the store failed (said once) */
	int writer_failed; /* the writer's last batch failed at its close */
	int lock_failed;   /* the store stayed locked past --lock-wait */
	int child_done, child_status; /* the launched command's wait status */
};

/* Serving the API and OTLP export, started and stopped in their places
 * in the session. A start returns 0 or an exit status after saying why. */
struct cw_live_metrics;
struct cw_writer_lag;
struct cw_otlp;
struct cw_trace_hooks {
	int (*otlp_start)(void *ctx, struct cw_live_metrics *m, struct cw_otlp **out);
	void (*otlp_stop)(void *ctx, struct cw_otlp *x);
	int (*serve_start)(void *ctx, struct cw_live_metrics *m);
	void (*serve_lag)(void *ctx, struct cw_writer_lag *lag);
	void (*serve_stop)(void *ctx);
	void *ctx;
};

/* Runs one trace session. Returns 0 when it ran (how it ended in res), or
 * -1 when a start-up step failed (res->step, res->err; said once). */
int cw_trace_run(const struct cw_trace_opts *o, const struct cw_trace_hooks *h, struct cw_trace_result *res);

#endif
