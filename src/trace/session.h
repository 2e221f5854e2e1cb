/* The trace session's state and the steps that make it, shared by the
 * files of src/trace/: start (the start-up steps), attach (library copies
 * and processes), gate (the store's write lock), observe (rows and raw
 * records), loop, drain and report. Callers use trace/trace.h. */
#ifndef CW_TRACE_SESSION_H
#define CW_TRACE_SESSION_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "loader/discover.h"
#include "loader/kernel_probes.h"
#include "loader/live_discover.h"
#include "loader/ringbuf.h"
#include "loader/session.h"
#include "loader/sysinfo.h"
#include "loader/uprobe_attach.h"
#include "pipeline/pipeline.h"
#include "store/reserve.h"
#include "store/store.h"
#include "store/writer.h"
#include "trace/trace.h"

#define MAX_PIDS 4096

struct trace {
	struct cw_trace_opts o;
	const struct cw_trace_hooks *hooks;
	struct cw_store *st;
	struct cw_store_reserve reserve; /* room for the last batch on a full disk */
	struct cw_writer *w;
	struct cw_pipeline *pipe;
	int64_t session_id;
	struct cw_kernel_probes *kp;
	struct cw_cuda_probes *cp;
	struct cw_live_discover *live; /* NULL: the rescan alone finds copies */
	pthread_mutex_t attach_lock;   /* cp's attach: main and discovery threads */
	int started;                   /* the first rescan is done */
	uint64_t rescan_late;          /* copies the rescan found before discovery */
	int live_was_on;
	struct cw_live_stats live_last; /* at live_stop() */
	struct ring_buffer *rb;
	struct cw_consumer cons;
	struct cw_trace_view *view;
	struct cw_sysinfo *si;
	struct trace_python *py;
	struct trace_tenant *tenant;
	struct trace_gpu *gpu;
	struct trace_ras *ras; /* NCCL RAS at a hang (ras.h); NULL: off */
	struct trace_inference *inf; /* --inference (inference.h); NULL: off */
	/* Chains while tracing (chains.h): their own connection, the end of
	 * the last pass (wall ns; 0 none yet), what the passes did. */
	struct cw_store *chains_st;
	/* The size cap was trace's default (cap.h): its statvfs result and
	 * the free bytes it measured, said once started. */
	int cap_defaulted, cap_err;
	uint64_t cap_free;
	uint64_t chains_from_wall, chains_last_mono;
	uint64_t chains_passes, chains_failed;
	int serving;                     /* hooks.serve_start succeeded */
	struct cw_live_metrics *metrics; /* /metrics and OTLP figures of this session */
	struct cw_writer_lag *wlag;      /* --serve: /metrics' writer lag */
	struct cw_otlp *otlp;            /* --otlp or otlp.endpoint */
	int hook_exit;                   /* a failed hook's exit status */
	int stats_fd;                    /* --bpf-stats: BPF_ENABLE_STATS, -1 none */
	int view_on;
	/* Processes with a process row; guarded by the consumer lock. */
	uint32_t known[MAX_PIDS];
	int nknown;
	uint32_t pending[256];
	int npending;
	uint32_t rowless[256]; /* known, process row not written yet */
	int nrowless;
	uint64_t pending_lost;
	uint64_t entries; /* call entries received */
	uint64_t folded;    /* --capture summary: calls drained from the kernel's fold map */
	uint64_t fold_lost; /* ... that the store could not take (counted, not stored) */
	int64_t fold_off;   /* the monotonic -> wall offset last pushed into the probes */
	uint64_t json_write_errors;
	char cuda_version[64], driver_version[64], python_version[16];
	pid_t child;
	int gate_fd; /* the launched command waits on it; -1 none */
	int child_done, status;
	uint64_t start_ns, start_wall_ns;
	/* The traced span: from the "attached" line (trace_started) to the
	 * loop's end. --duration counts from its start, not from start_ns:
	 * loading the probes can take seconds. */
	uint64_t traced_from_ns, traced_to_ns;
	/* The session row, written with the first batch the store takes
	 * (late when another process holds the write lock at start). */
	struct cw_session_info sess;
	struct cw_host_facts hf;
	char command_line[1024];
	int store_err;        /* why the gate is closed: -EBUSY, -ENOSPC, ... */
	int lock_failed;      /* the store stayed locked past --lock-wait */
	int said_held, said_failing;
	uint64_t replayed_mark, dropped_mark; /* spool counts when the store locked */
};

/* One start-up step: 0, or -errno with err filled, or left empty for what
 * (followed by strerror when with_errno; NULL: the step said why). */
struct trace_step {
	int id; /* enum cw_trace_step */
	const char *what;
	int with_errno;
	int (*run)(struct trace *t, char *err, size_t errlen);
};

extern const struct trace_step trace_start_steps[];
extern const int trace_nstart_steps;

/* session.c */
struct trace *trace_session_new(const struct cw_trace_opts *o, const struct cw_trace_hooks *h);
/* Runs steps in order until one fails; says why once. Returns 0 or -1. */
int trace_steps_run(struct trace *t, const struct trace_step *steps, int n, struct cw_trace_result *res);
/* Releases everything the steps made, in the order that lets each part
 * finish its writes; fills res's end of run. Frees t. */
void trace_session_end(struct trace *t, struct cw_trace_result *res);

/* start.c: after the steps, the first rescan done; lets the command run. */
void trace_started(struct trace *t);

/* One line per kernel fallback in effect for this trace (trace/fallbacks.c). */
void trace_say_fallbacks(struct trace *t);

/* attach.c */
int trace_attach_path(struct trace *t, const char *path);
int trace_live_attach(void *ctx, const struct cw_lib_copy *lib);
void trace_attach_known_dirs(struct trace *t);
void trace_add_pending(struct trace *t, uint32_t pid);
void trace_rescan(struct trace *t);
void trace_live_stop(struct trace *t);

/* gate.c */
int64_t trace_measure_offset(void);
void trace_session_prepare(struct trace *t);
int trace_store_gate(void *ctx);
void trace_session_late_facts(struct trace *t);
const char *trace_store_problem(int err);
void trace_wait_for_store(struct trace *t);

/* observe.c */
void trace_tap(void *ctx, const void *data, size_t size);
void trace_observe(void *ctx, const struct cw_event_row *r);
void trace_observe_offcpu(void *ctx, const struct cw_offcpu_row *r);
uint64_t trace_writer_commits_locked(struct trace *t);
int trace_writer_commits(void *ctx, uint64_t *commits);
int trace_open_calls(void *ctx, uint32_t pid, uint32_t *tids, const char **ops, uint64_t *since, int max);
void trace_take_inflight(struct trace *t, uint64_t cutoff_mono_ns);

/* spawn.c */
int trace_spawn_command(struct trace *t);

/* loop.c */
/* SIGINT and SIGTERM stop the trace, SIGUSR1 asks for a chains pass:
 * installed before the probes load, so that a Ctrl-C while they attach
 * (seconds on a busy host) ends the trace as soon as they are attached,
 * with the stop line, instead of killing it halfway. */
void trace_signals_install(void);
void trace_loop(struct trace *t);

/* report.c */
struct loss_totals {
	uint64_t ring_drops, aggregated, pipeline;
	uint64_t open_at_end; /* calls still open at stop: stored unfinished, a hang's evidence, not lost */
	uint64_t folded, fold_lost, fold_full, kept_first, kept_sampled, kept_slow; /* --capture summary */
	uint64_t held, late; /* discovery: processes stopped, copies attached late */
	uint64_t store_failed; /* rows the store refused or lost with a failed batch */
	uint64_t held_dropped; /* records beyond --lock-buffer while the store was locked */
	int store_error;       /* the latest store failure, while it lasts; 0 none */
	int store_error_ever;  /* the latest store failure of the whole trace */
};
void trace_store_counters(struct trace *t, struct loss_totals *lt);
void trace_watch_store(struct trace *t, const struct loss_totals *lt);
void trace_report_end(struct trace *t, int store_failed, struct cw_trace_result *res);

/* drain.c */
void trace_drain(struct trace *t, struct cw_trace_result *res);
/* fold.c: thresholds and offset into the probes, closed seconds (every
 * second when final) of folded calls into the store. Consumer lock held. */
void trace_fold_tick(struct trace *t, int64_t mono_to_wall_ns, int final);
void trace_fold_thresholds(struct trace *t);

#endif
