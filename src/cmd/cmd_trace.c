/* causeway trace: attach the CUDA/NCCL uprobes and the kernel tracepoints,
 * record into the store, show a live view (docs/trace.md). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bpf/events.h"
#include "cmd/cmd.h"
#include "cmd/trace_gpu.h"
#include "cmd/trace_view.h"
#include "config/config.h"
#include "loader/discover.h"
#include "loader/kernel_probes.h"
#include "loader/live_discover.h"
#include "loader/ringbuf.h"
#include "loader/session.h"
#include "loader/sysinfo.h"
#include "loader/uprobe_attach.h"
#include "pipeline/ops.h"
#include "pipeline/pipeline.h"
#include "cmd/serve_setup.h"
#include "cmd/otlp_setup.h"
#include "loader/probe_features.h"
#include "loader/prog_stats.h"
#include "metrics/live_metrics.h"
#include "metrics/writer_lag.h"
#include "cmd/trace_python.h"
#include "cmd/trace_tenant.h"
#include "tenant/resolve.h"
#include "store/store.h"
#include "store/writer.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/timeutil.h"

#define MAX_PIDS 4096
#define MAX_LIBS 32

static const char usage_text[] =
	"usage: causeway trace [options] [-- COMMAND [ARGS...]]\n"
	"\n"
	"Traces the CUDA runtime, CUDA driver and NCCL (uprobes) and the scheduler,\n"
	"block I/O, memory, TCP and process lifecycle (tracepoints) of every CUDA\n"
	"process on the host, the processes named with --pid, or COMMAND, which it\n"
	"launches, traces from its first instruction, and whose exit status it\n"
	"returns. Needs root, or CAP_BPF and CAP_PERFMON (docs/deploy.md). Ctrl-C\n"
	"stops and flushes.\n"
	"\n"
	"options:\n"
	"  --pid P[,P...]     trace these processes (and their children) only\n"
	"  --cgroup PATH|ID   trace only the CUDA calls of this cgroup (v2 path or id)\n"
	"                     and its descendants; the kernel-side sources still name\n"
	"                     the neighbours that touch it (repeatable, as are these:)\n"
	"  --container ID     ... of the container whose id starts with ID\n"
	"  --pod NAME|UID     ... of a Kubernetes pod's containers\n"
	"  --slurm-job ID     ... of a Slurm job's steps\n"
	"  --cuda-lib PATH    attach to this library copy only (repeatable)\n"
	"  --db PATH          database to record into (default ./causeway.db)\n"
	"  --duration D       stop after D (\"30s\", \"5m\")\n"
	"  --node NAME        node name stored with every row (default: hostname)\n"
	"  --size-cap SIZE    prune the oldest rows above SIZE (\"2GiB\")\n"
	"  --lock-wait D      while another process holds the database's write lock,\n"
	"                     hold records in memory for up to D, then fail (default 30s)\n"
	"  --lock-buffer SIZE memory for records held meanwhile (default 256MiB); more\n"
	"                     are dropped and counted\n"
	"  --ring-kb N        size of each ring buffer in KiB (default 8192 calls, 4096 kernel)\n"
	"  --agg-pct N        above N % ring fill, count calls in the kernel instead of\n"
	"                     emitting them (default 75; 0 disables)\n"
	"  --py-stacks MODE   Python stacks of CPython 3.10-3.13 processes: slow (the\n"
	"                     default: calls slower than 3x their op's mean and 10 us,\n"
	"                     captured at return), all (every call), off\n"
	"  --native-stacks    also capture each call's native stack (frame pointers)\n"
	"  --hang-after D     the live view warns of an NCCL hang when a collective has\n"
	"                     waited for some processes max(20 steps, D) (default 10s)\n"
	"  --no-hold          never stop a process that loads a library copy not yet\n"
	"                     attached (by default it is stopped until its probes are\n"
	"                     in place, so its first calls are recorded)\n"
	"  --serve ADDR:PORT  while tracing, serve the read-only HTTPS API of `causeway\n"
	"                     serve` over the database being written (TLS, client CA\n"
	"                     and token from the config's server.* keys or $CW_TOKEN)\n"
	"  --bpf-stats        count the run time of causeway's BPF programs (shown on\n"
	"                     /metrics; adds ~20 ns per program run)\n"
	"  --otlp URL         export metrics and chains to an OpenTelemetry collector's\n"
	"                     OTLP/HTTP receiver (e.g. http://127.0.0.1:4318; config\n"
	"                     otlp.*; docs/otlp.md)\n"
	"  --gpu-interval DUR sample every GPU through NVML every DUR (default 1s)\n"
	"  --no-gpu           no GPU telemetry and no Xid faults (NVML, /dev/kmsg)\n"
	"  --stall-after DUR  name a training stall once a process that called CUDA\n"
	"                     steadily has made no call for max(10 steps, DUR)\n"
	"                     (default 30s)\n"
	"  --json             stream the recorded events as NDJSON on stdout\n"
	"  --no-view          no live view (default when stdout is not a terminal)\n"
	"  --kill-on-exit     SIGKILL the launched COMMAND if trace itself dies (even by\n"
	"                     SIGKILL); without it COMMAND runs on, untraced\n"
	"  -h, --help         this help\n"
	"\n"
	"exit status: the command's when one was launched; 3 no privilege, 4 no BTF,\n"
	"5 unknown pid or a library without the hooked symbols, 6 database error (also\n"
	"when rows could not be stored: a full disk, a lock held past --lock-wait).\n";

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

struct trace_opts {
	uint32_t pids[64];
	int npids;
	const char *libs[MAX_LIBS];
	int nlibs;
	const char *db;
	uint64_t duration_ns;
	uint64_t hang_after_ns;
	uint64_t size_cap;
	uint64_t lock_wait_ns, lock_buffer;
	unsigned ring_kb, agg_pct;
	int json, no_view;
	int kill_on_exit; /* PR_SET_PDEATHSIG in the launched command */
	int py_mode, native_stacks; /* enum cw_py_mode */
	int no_hold;
	uint64_t gpu_interval_ns, stall_after_ns;
	int no_gpu;
	const char *serve; /* --serve ADDR:PORT */
	const char *otlp;  /* --otlp URL */
	int bpf_stats;     /* --bpf-stats */
	char **command;
	struct cw_tenant_filter tenants[CW_TENANT_FILTERS_MAX];
	int ntenants;
};

struct trace {
	struct trace_opts o;
	struct cw_store *st;
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
	struct serve_setup ss;
	struct cw_server *srv;
	struct cw_live_metrics *metrics; /* /metrics and OTLP figures of this session */
	struct cw_writer_lag *wlag;      /* --serve: /metrics' writer lag */
	struct cw_otlp *otlp;         /* --otlp or otlp.endpoint */
	int stats_fd;                 /* --bpf-stats: BPF_ENABLE_STATS, -1 none */
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
	uint64_t json_write_errors;
	char cuda_version[64], driver_version[64], python_version[16];
	pid_t child;
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

static int is_known(const struct trace *t, uint32_t pid)
{
	int i;

	for (i = 0; i < t->nknown; i++)
		if (t->known[i] == pid)
			return 1;
	return 0;
}

static void add_pending(struct trace *t, uint32_t pid)
{
	int i;

	if (!pid || is_known(t, pid))
		return;
	for (i = 0; i < t->npending; i++)
		if (t->pending[i] == pid)
			return;
	if (t->npending < (int)(sizeof(t->pending) / sizeof(t->pending[0])))
		t->pending[t->npending++] = pid;
	else
		t->pending_lost++;
}

/* An exec of python3 -> python3.X (pyenv and distributions install the
 * versioned binary and symlink the short names to it). */
static void python_from_exec(struct trace *t, const struct cw_proc *p)
{
	char fn[CW_PATH_LEN + 1], real[PATH_MAX];
	const char *b;
	int minor;

	memcpy(fn, p->filename, CW_PATH_LEN);
	fn[CW_PATH_LEN] = '\0';
	if (!realpath(fn, real))
		return;
	b = strrchr(real, '/');
	b = b ? b + 1 : real;
	if (sscanf(b, "python3.%d", &minor) == 1)
		snprintf(t->python_version, sizeof(t->python_version), "3.%d", minor);
}

/* Consumer thread, lock held: lifecycle records of traced processes. A
 * forked Python child (multiprocessing, DataLoader workers) is Python at
 * once; an exec'd one after its interpreter starts: both are (re)tried. */
static void on_proc(struct trace *t, const struct cw_proc *p)
{
	switch (p->hdr.op) {
	case CW_OP_fork:
		add_pending(t, p->child_pid);
		if (t->py)
			trace_python_enroll(t->py, p->child_pid);
		break;
	case CW_OP_exec:
		if (!t->python_version[0])
			python_from_exec(t, p);
		if (t->py)
			trace_python_enroll(t->py, p->hdr.pid);
		break;
	case CW_OP_exit:
		if (t->py)
			trace_python_exited(t->py, p->child_pid);
		trace_gpu_exited(t->gpu, p->child_pid);
		break;
	default:
		break;
	}
}

/* Consumer thread, lock held: every raw record. */
static void tap(void *ctx, const void *data, size_t size)
{
	struct trace *t = ctx;
	const struct cw_hdr *h = data;

	if (size < sizeof(*h))
		return;
	if (t->view)
		cw_trace_view_record(t->view, data, size);
	trace_tenant_tap(t->tenant, data, size);
	if (h->type == CW_REC_CALL || h->type == CW_REC_CALL_ENTRY) {
		t->entries++;
		add_pending(t, h->pid);
	}
	else if (h->type == CW_REC_PROC && size >= sizeof(struct cw_proc))
		on_proc(t, (const struct cw_proc *)data);
}

/* The writer's commit count, the one figure writer lag needs from the
 * writer (metrics/writer_lag.h): the batches cw_writer_get_stats() counts.
 * Lock held. */
static uint64_t writer_commits_locked(struct trace *t)
{
	struct cw_writer_stats ws;

	cw_writer_get_stats(t->w, &ws);
	return ws.batches;
}

/* The same from another thread (a scrape). */
static int writer_commits(void *ctx, uint64_t *commits)
{
	struct trace *t = ctx;

	cw_consumer_lock(&t->cons);
	*commits = writer_commits_locked(t);
	cw_consumer_unlock(&t->cons);
	return 0;
}

/* Consumer thread, lock held: every stored off-CPU interval. */
static void observe_offcpu(void *ctx, const struct cw_offcpu_row *r)
{
	struct trace *t = ctx;

	if (t->metrics)
		cw_live_metrics_offcpu(t->metrics, r);
	if (t->wlag)
		cw_writer_lag_row(t->wlag, r->end_mono_ns, writer_commits_locked(t), cw_monotonic_ns());
}

/* Consumer thread, lock held: every stored row. */
static void observe(void *ctx, const struct cw_event_row *r)
{
	struct trace *t = ctx;

	if (t->view)
		cw_trace_view_observe(t->view, r);
	if (t->metrics)
		cw_live_metrics_event(t->metrics, r);
	if (t->wlag)
		cw_writer_lag_row(t->wlag, r->mono_ns + r->duration_ns, writer_commits_locked(t), cw_monotonic_ns());
	trace_gpu_observe(t->gpu, r);
	if (t->o.json) {
		json_t *o = json_pack("{s:I,s:I,s:I,s:i,s:i,s:s,s:s,s:s}", "wall_ns", (json_int_t)r->wall_ns,
				      "mono_ns", (json_int_t)r->mono_ns, "duration_ns", (json_int_t)r->duration_ns,
				      "pid", (int)r->pid, "tid", (int)r->tid, "comm", r->comm ? r->comm : "",
				      "source", r->source ? r->source : "", "op", r->op ? r->op : "");
		char *s;
		int i;

		if (!o)
			return;
		if (r->nargs > 0) {
			json_t *a = json_array();

			for (i = 0; i < r->nargs && i < 4; i++)
				json_array_append_new(a, json_integer(r->args[i]));
			json_object_set_new(o, "args", a);
		}
		if (r->has_ret)
			json_object_set_new(o, "ret", json_integer(r->ret));
		if (r->has_bytes)
			json_object_set_new(o, "bytes", json_integer(r->bytes));
		if (r->device >= 0)
			json_object_set_new(o, "device", json_integer(r->device));
		if (r->detail)
			json_object_set_new(o, "detail", json_string(r->detail));
		s = json_dumps(o, JSON_COMPACT);
		if (s) {
			/* One write() per line: a launched command shares stdout,
			 * and its output must not split an event line. */
			size_t len = strlen(s);
			char *line = realloc(s, len + 2);

			if (line) {
				s = line;
				s[len] = '\n';
				if (write(STDOUT_FILENO, s, len + 1) < 0)
					t->json_write_errors++;
			}
			free(s);
		}
		json_decref(o);
	}
}

static int parse_pids(struct trace_opts *o, const char *s)
{
	uint64_t v[64];
	int i, n = cw_parse_uint_list(s, 1, CW_PID_MAX, v, 64);

	if (n < 0)
		return n;
	for (i = 0; i < n; i++)
		o->pids[i] = (uint32_t)v[i];
	o->npids = n;
	return 0;
}

static int parse_args(struct trace_opts *o, int argc, char **argv, int *json_out)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->agg_pct = 75;
	o->lock_wait_ns = 30ull * NSEC_PER_SEC;
	o->lock_buffer = 256ull << 20;
	o->py_mode = CW_PY_SLOW;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--json"))
			*json_out = 1;
		else if (!strcmp(argv[i], "--"))
			break;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char shown[CW_SHOWN_BUF];
		int takes = !strcmp(a, "--pid") || !strcmp(a, "--cuda-lib") || !strcmp(a, "--db") ||
			    !strcmp(a, "--duration") || !strcmp(a, "--node") || !strcmp(a, "--size-cap") ||
			    !strcmp(a, "--ring-kb") || !strcmp(a, "--agg-pct") || !strcmp(a, "--py-stacks") ||
			    !strcmp(a, "--serve") || !strcmp(a, "--otlp") || !strcmp(a, "--lock-wait") ||
			    !strcmp(a, "--lock-buffer") || trace_tenant_is_flag(a) ||
			    !strcmp(a, "--gpu-interval") || !strcmp(a, "--stall-after") ||
			    !strcmp(a, "--hang-after");

		if (!strcmp(a, "--")) {
			if (i + 1 >= argc) {
				cw_report_error(*json_out, "trace: \"--\" must be followed by a command");
				return CW_EXIT_USAGE;
			}
			o->command = argv + i + 1;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage_text, stdout);
			return -1;
		}
		if (!strcmp(a, "--json")) {
			o->json = 1;
			continue;
		}
		if (!strcmp(a, "--no-view")) {
			o->no_view = 1;
			continue;
		}
		if (!strcmp(a, "--no-gpu")) {
			o->no_gpu = 1;
			continue;
		}
		if (!strcmp(a, "--native-stacks")) {
			o->native_stacks = 1;
			continue;
		}
		if (!strcmp(a, "--no-hold")) {
			o->no_hold = 1;
			continue;
		}
		if (!strcmp(a, "--bpf-stats")) {
			o->bpf_stats = 1;
			continue;
		}
		if (!strcmp(a, "--kill-on-exit")) {
			o->kill_on_exit = 1;
			continue;
		}
		if (!takes) {
			cw_report_error(*json_out, "trace: unknown option \"%s\"; see 'causeway trace --help'",
					cw_shown(a, shown));
			return CW_EXIT_USAGE;
		}
		if (!v) {
			cw_report_error(*json_out, "trace: %s needs a value", a);
			return CW_EXIT_USAGE;
		}
		i++;
		if (trace_tenant_is_flag(a)) {
			char err[256];

			if (trace_tenant_flag(o->tenants, &o->ntenants, a, v, err, sizeof(err))) {
				cw_report_error(*json_out, "trace: %s", err);
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--pid")) {
			int prc = parse_pids(o, v);

			if (prc) {
				cw_report_error(*json_out, "trace: bad --pid \"%s\" (%s)", cw_shown(v, shown),
						prc == -E2BIG ? "at most 64 pids"
							      : "want P[,P...], each pid from 1 to 4194304");
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--cuda-lib")) {
			if (o->nlibs == MAX_LIBS) {
				cw_report_error(*json_out, "trace: at most %d --cuda-lib", MAX_LIBS);
				return CW_EXIT_USAGE;
			}
			o->libs[o->nlibs++] = v;
		} else if (!strcmp(a, "--db")) {
			o->db = v;
		} else if (!strcmp(a, "--hang-after")) {
			if (cw_parse_duration(v, &o->hang_after_ns) || !o->hang_after_ns) {
				cw_report_error(*json_out, "trace: bad --hang-after \"%s\"", v);
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--duration")) {
			if (cw_parse_duration(v, &o->duration_ns) || !o->duration_ns) {
				cw_report_error(*json_out, "trace: bad --duration \"%s\" (e.g. 30s, 5m)",
						cw_shown(v, shown));
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--lock-wait")) {
			if (cw_parse_duration(v, &o->lock_wait_ns) || !o->lock_wait_ns) {
				cw_report_error(*json_out, "trace: bad --lock-wait \"%s\"", v);
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--lock-buffer")) {
			if (cw_parse_size(v, &o->lock_buffer) || o->lock_buffer < (1u << 20) ||
			    o->lock_buffer > (64ull << 30)) {
				cw_report_error(*json_out, "trace: bad --lock-buffer \"%s\" (1MiB to 64GiB)", v);
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--gpu-interval") || !strcmp(a, "--stall-after")) {
			uint64_t ns;
			if (cw_parse_duration(v, &ns) || ns < 10 * NSEC_PER_MSEC || ns > 3600 * NSEC_PER_SEC) {
				cw_report_error(*json_out, "trace: bad %s \"%s\" (10ms to 1h)", a, v);
				return CW_EXIT_USAGE;
			}
			if (a[2] == 'g')
				o->gpu_interval_ns = ns;
			else
				o->stall_after_ns = ns;
		} else if (!strcmp(a, "--node")) {
			if (!cw_node_name_valid(v)) {
				cw_report_error(*json_out, "trace: bad --node \"%s\" (" CW_NODE_NAME_RULE ")",
						cw_shown(v, shown));
				return CW_EXIT_USAGE;
			}
			cw_global_node = v;
		} else if (!strcmp(a, "--otlp")) {
			o->otlp = v;
		} else if (!strcmp(a, "--serve")) {
			o->serve = v;
		} else if (!strcmp(a, "--py-stacks")) {
			if (!strcmp(v, "slow"))
				o->py_mode = CW_PY_SLOW;
			else if (!strcmp(v, "all"))
				o->py_mode = CW_PY_ALL;
			else if (!strcmp(v, "off"))
				o->py_mode = CW_PY_OFF;
			else {
				cw_report_error(*json_out, "trace: bad --py-stacks \"%s\" (slow, all or off)",
						cw_shown(v, shown));
				return CW_EXIT_USAGE;
			}
		} else if (!strcmp(a, "--size-cap")) {
			if (cw_parse_size(v, &o->size_cap) || !o->size_cap) {
				cw_report_error(*json_out, "trace: bad --size-cap \"%s\" (e.g. 2GiB)",
						cw_shown(v, shown));
				return CW_EXIT_USAGE;
			}
		} else {
			int ring = !strcmp(a, "--ring-kb");
			uint64_t n;

			if (cw_parse_uint(v, ring ? 4 : 0, ring ? 1u << 20 : 100, &n)) {
				cw_report_error(*json_out, "trace: bad %s \"%s\" (%s)", a, cw_shown(v, shown),
						ring ? "4 to 1048576 KiB" : "a percentage, 0 to 100");
				return CW_EXIT_USAGE;
			}
			if (ring)
				o->ring_kb = (unsigned)n;
			else
				o->agg_pct = (unsigned)n;
		}
	}
	if (o->kill_on_exit && !o->command) {
		cw_report_error(*json_out, "trace: --kill-on-exit applies to a launched command (-- COMMAND)");
		return CW_EXIT_USAGE;
	}
	return 0;
}

/* Where CUDA libraries live when no process has mapped them yet: the
 * toolkit prefixes and the distribution's library directories (the
 * driver's libcuda.so.1). Attaching there first is what lets a launched
 * command be traced from its first call. */
static const char *const lib_dirs[] = {
	"/usr/local/cuda*/lib64", "/usr/local/cuda*/lib", "/usr/local/cuda*/lib/stubs",
	"/usr/local/cuda*/targets/*/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib/wsl/lib",
	NULL,
};

static void note_version(struct trace *t, const char *path)
{
	int k = cw_lib_kind_of(path);

	if (k == CW_LIB_CUDART && !t->cuda_version[0]) {
		char real[PATH_MAX];
		const char *p;

		cw_lib_version(path, t->cuda_version, sizeof(t->cuda_version));
		/* CUDA 13 ships libcudart.so.13 without the minor in the file
		 * name; the toolkit prefix (cuda-13.0) has it. */
		if (!strchr(t->cuda_version, '.') && realpath(path, real) && (p = strstr(real, "/cuda-")) &&
		    p[6] >= '0' && p[6] <= '9')
			snprintf(t->cuda_version, sizeof(t->cuda_version), "%.*s", (int)strcspn(p + 6, "/"), p + 6);
	}
	else if (k == CW_LIB_CUDA && !t->driver_version[0])
		cw_lib_version(path, t->driver_version, sizeof(t->driver_version));
}

/* Main thread (rescan) and discovery thread. */
static int attach_path(struct trace *t, const char *path)
{
	char err[512];
	struct cw_attach_report rep;
	int rc;

	pthread_mutex_lock(&t->attach_lock);
	rc = cw_cuda_probes_attach(t->cp, path, &rep, err, sizeof(err));
	if (rc >= 0)
		cw_live_mark_path(t->live, path);
	if (rc > 0) {
		note_version(t, path);
		cw_debug("attached %d probes in %.1f ms to \"%s\"", rc, rep.ns / 1e6, path);
	} else if (rc < 0 && rc != -ENOENT) {
		cw_debug("%s", err);
	}
	pthread_mutex_unlock(&t->attach_lock);
	return rc;
}

/* Discovery thread: a copy a process has just mapped. */
static int live_attach(void *ctx, const struct cw_lib_copy *lib)
{
	return attach_path(ctx, lib->path);
}

static void attach_known_dirs(struct trace *t)
{
	int i;

	for (i = 0; lib_dirs[i]; i++) {
		glob_t g;
		size_t j;

		if (glob(lib_dirs[i], GLOB_ONLYDIR, NULL, &g))
			continue;
		for (j = 0; j < g.gl_pathc; j++) {
			DIR *d = opendir(g.gl_pathv[j]);
			struct dirent *e;

			if (!d)
				continue;
			while ((e = readdir(d))) {
				char p[PATH_MAX];
				struct stat st;

				if (cw_lib_kind_of(e->d_name) < 0)
					continue;
				snprintf(p, sizeof(p), "%s/%s", g.gl_pathv[j], e->d_name);
				if (!stat(p, &st) && S_ISREG(st.st_mode))
					attach_path(t, p);
			}
			closedir(d);
		}
		globfree(&g);
	}
}

struct scan_ctx {
	struct trace *t;
	uint32_t pids[MAX_PIDS];
	int npids;
};

static int on_lib(void *ctx, const struct cw_lib_copy *lib)
{
	struct scan_ctx *sc = ctx;
	struct trace *t = sc->t;
	int i;

	/* A copy first attached here, after start, while its process runs:
	 * discovery did not see it load (no hook on its loader, --no-hold,
	 * or a lost report), so calls made before now are not recorded. */
	if (attach_path(t, lib->path) > 0 && t->started && !cw_live_is_held(t->live, lib->pid)) {
		cw_debug("\"%s\" of pid %u attached by the rescan, after it was mapped", lib->path, lib->pid);
		t->rescan_late++;
	}
	cw_live_mark(t->live, cw_kdev(lib->dev), lib->ino);
	for (i = 0; i < sc->npids; i++)
		if (sc->pids[i] == lib->pid)
			return 0;
	if (sc->npids < MAX_PIDS)
		sc->pids[sc->npids++] = lib->pid;
	return 0;
}

static void write_process(struct trace *t, uint32_t pid)
{
	struct cw_process_row row;
	char comm[64], cmdline[1024], py[16];

	memset(&row, 0, sizeof(row));
	if (cw_proc_identity(pid, comm, sizeof(comm), cmdline, sizeof(cmdline), &row.ppid))
		return;
	row.pid = pid;
	row.comm = comm;
	row.cmdline = cmdline;
	{
		char cg[CW_CGPATH_MAX + 1];

		if (!cw_pid_cgroup_path(pid, cg, sizeof(cg)))
			cw_cgroup_id_of(cw_cgroup2_root(), cg, &row.cgroup_id);
	}
	cw_proc_ranks(pid, &row.rank, &row.local_rank, &row.world_size);
	row.start_wall_ns = cw_realtime_ns();
	if (!t->python_version[0] && !cw_proc_python_version(pid, py, sizeof(py)))
		snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	cw_writer_process(t->w, &row);
}

/* Every second: find library copies and processes, enroll new pids. */
static void rescan(struct trace *t)
{
	struct scan_ctx *sc = calloc(1, sizeof(*sc));
	uint32_t fresh[MAX_PIDS];
	int nfresh = 0, i, ready;

	if (!sc)
		return;
	sc->t = t;
	if (t->o.nlibs == 0) {
		if (!t->o.npids && !t->o.command) {
			cw_discover_all(on_lib, sc);
		} else {
			/* Named processes and their (kernel-tracked) children:
			 * libraries they dlopen'ed since the last scan. The
			 * pending ones too: at start the named pids are only
			 * pending, and their libraries must be attached before
			 * trace says it is tracing. */
			cw_consumer_lock(&t->cons);
			for (i = 0; i < t->nknown && sc->npids < MAX_PIDS; i++)
				sc->pids[sc->npids++] = t->known[i];
			for (i = 0; i < t->npending && sc->npids < MAX_PIDS; i++)
				if (!is_known(t, t->pending[i]))
					sc->pids[sc->npids++] = t->pending[i];
			cw_consumer_unlock(&t->cons);
			for (i = 0; i < sc->npids; i++)
				cw_discover_pid(sc->pids[i], on_lib, sc);
		}
	}
	/* With a tenant filter, discovery enrolls only the tenant's processes
	 * (their sched, I/O and memory records); the checks read /proc, so
	 * they run before the lock. */
	if (!t->o.npids && !t->o.command)
		for (i = 0; i < sc->npids; i++)
			if (!trace_tenant_pid_allowed(t->tenant, sc->pids[i]))
				sc->pids[i] = 0;
	cw_consumer_lock(&t->cons);
	if (!t->o.npids && !t->o.command)
		for (i = 0; i < sc->npids; i++)
			add_pending(t, sc->pids[i]);
	for (i = 0; i < t->npending; i++)
		if (t->nknown < MAX_PIDS && !is_known(t, t->pending[i])) {
			t->known[t->nknown++] = t->pending[i];
			fresh[nfresh++] = t->pending[i];
		}
	t->npending = 0;
	/* A store that cannot take rows now (locked by another process):
	 * the process rows wait, the tracing does not. */
	ready = cw_consumer_store_ready(&t->cons);
	for (i = 0; ready && i < t->nrowless; i++)
		write_process(t, t->rowless[i]);
	if (ready)
		t->nrowless = 0;
	for (i = 0; i < nfresh; i++) {
		if (!cw_kernel_probes_is_tracked(t->kp, fresh[i]))
			cw_kernel_probes_track(t->kp, fresh[i]);
		if (ready)
			write_process(t, fresh[i]);
		else if (t->nrowless < (int)(sizeof(t->rowless) / sizeof(t->rowless[0])))
			t->rowless[t->nrowless++] = fresh[i];
		else
			t->pending_lost++;
		if (t->py)
			trace_python_enroll(t->py, fresh[i]);
	}
	nfresh = 0;
	for (i = 0; !t->python_version[0] && i < t->nknown && nfresh < 16; i++)
		fresh[nfresh++] = t->known[i];
	cw_consumer_unlock(&t->cons);
	/* A launched command runs python only after exec: look again until
	 * one traced process turns out to be CPython. */
	for (i = 0; i < nfresh && !t->python_version[0]; i++) {
		char py[16];

		if (!cw_proc_python_version(fresh[i], py, sizeof(py)))
			snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	}
	free(sc);
}

static int64_t measure_offset(void)
{
	uint64_t m0 = cw_monotonic_ns(), r = cw_realtime_ns(), m1 = cw_monotonic_ns();

	return (int64_t)r - (int64_t)(m0 + (m1 - m0) / 2);
}

struct loss_totals {
	uint64_t ring_drops, aggregated, pipeline;
	uint64_t held, late; /* discovery: processes stopped, copies attached late */
	uint64_t store_failed; /* rows the store refused or lost with a failed batch */
	uint64_t held_dropped; /* records beyond --lock-buffer while the store was locked */
	int store_error;       /* the latest store failure, while it lasts; 0 none */
	int store_error_ever;  /* the latest store failure of the whole trace */
};

/* Lock held. Library discovery (docs/trace.md, "Discovery"). */
static void store_discovery(struct trace *t, struct loss_totals *lt)
{
	struct cw_live_stats ls;

	if (t->live)
		cw_live_get_stats(t->live, &ls);
	else
		ls = t->live_last;
	cw_writer_counter_set(t->w, "trace.discovery.live", t->live || t->live_was_on);
	cw_writer_counter_set(t->w, "trace.discovery.loads", ls.loads);
	cw_writer_counter_set(t->w, "trace.discovery.execs", ls.execs);
	cw_writer_counter_set(t->w, "trace.discovery.reports", ls.events);
	cw_writer_counter_set(t->w, "trace.discovery.held", ls.held);
	cw_writer_counter_set(t->w, "trace.discovery.hold_map_full", ls.hold_full);
	cw_writer_counter_set(t->w, "trace.discovery.ring_dropped", ls.ring_dropped);
	cw_writer_counter_set(t->w, "trace.discovery.swept", ls.swept);
	cw_writer_counter_set(t->w, "trace.discovery.attached", ls.attached);
	cw_writer_counter_set(t->w, "trace.discovery.loaders", ls.loaders);
	cw_writer_counter_set(t->w, "trace.discovery.attach_us_p50", ls.lat_p50_us);
	cw_writer_counter_set(t->w, "trace.discovery.attach_us_max", ls.lat_max_us);
	cw_writer_counter_set(t->w, "trace.discovery.attach_n", ls.lat_n);
	/* Copies attached after their process had run on with them mapped:
	 * each is a window in which calls may have been missed. */
	cw_writer_counter_set(t->w, "trace.discovery.late", ls.late + t->rescan_late);
	lt->held = ls.held;
	lt->late = ls.late + t->rescan_late;
}

/* Lock held. Stores every loss counter of this session. */
static void store_counters(struct trace *t, struct loss_totals *lt)
{
	static const char *const cs_names[CW_CS_MAX] = {
		NULL, NULL, "trace.cuda.dropped", "trace.cuda.return_orphaned",
		"trace.cuda.aggregated", "trace.cuda.kernel_name_dropped", "trace.cuda.state_map_full", NULL,
	};
	struct cw_kernel_drop_counts kd;
	struct cw_pipeline_counters pc;
	uint64_t cs[CW_CS_MAX];
	char name[96];
	unsigned i;

	memset(lt, 0, sizeof(*lt));
	if (!cw_kernel_probes_drops(t->kp, &kd)) {
		for (i = 0; i < CW_DROP_MAX; i++)
			if (cw_kernel_drop_name(i)) {
				snprintf(name, sizeof(name), "trace.ring_drops.%s", cw_kernel_drop_name(i));
				cw_writer_counter_set(t->w, name, kd.drops[i]);
			}
		for (i = 0; i < CW_STAT_MAX; i++)
			if (cw_kernel_stat_name(i)) {
				snprintf(name, sizeof(name), "trace.kernel.%s", cw_kernel_stat_name(i));
				cw_writer_counter_set(t->w, name, kd.stats[i]);
			}
		lt->ring_drops = kd.total_drops;
	}
	if (!cw_cuda_probes_stats(t->cp, cs)) {
		for (i = 0; i < CW_CS_MAX; i++)
			if (cs_names[i])
				cw_writer_counter_set(t->w, cs_names[i], cs[i]);
		lt->aggregated = cs[CW_CS_AGGREGATED];
		/* Every call the probes saw: received here (returned, or still
		 * open and handed over by take_inflight), lost, or counted in
		 * the kernel. */
		cw_writer_counter_set(t->w, "trace.cuda.emitted", t->entries);
		cw_writer_counter_set(t->w, "trace.cuda.calls",
				      t->entries + cs[CW_CS_DROPPED] + cs[CW_CS_STATE_FULL] + cs[CW_CS_AGGREGATED]);
	}
	if (lt->aggregated)
		for (i = 1; i < CW_OP_MAX; i++) {
			struct cw_cuda_agg a;
			const char *op = cw_op_name(i);

			if (!op || cw_cuda_probes_agg(t->cp, i, &a) || !a.count)
				continue;
			snprintf(name, sizeof(name), "trace.aggregated.%s.count", op);
			cw_writer_counter_set(t->w, name, a.count);
			snprintf(name, sizeof(name), "trace.aggregated.%s.sum_ns", op);
			cw_writer_counter_set(t->w, name, a.sum_ns);
			snprintf(name, sizeof(name), "trace.aggregated.%s.max_ns", op);
			cw_writer_counter_set(t->w, name, a.max_ns);
			if (t->view)
				cw_trace_view_set_aggregated(t->view, cw_source_name(cw_op_source(i)), op, a.count);
		}
	cw_writer_counter_set(t->w, "trace.consumer.rejected", t->cons.rejected);
	cw_writer_counter_set(t->w, "trace.kernel_names_unresolved", t->cons.names_unresolved);
	cw_writer_counter_set(t->w, "trace.json_write_errors", t->json_write_errors);
	cw_writer_counter_set(t->w, "trace.pids_untracked", t->pending_lost);
	trace_tenant_counters(t->tenant, t->w);
	if (t->py) {
		struct trace_python_stats ps;

		trace_python_get_stats(t->py, &ps);
		cw_writer_counter_set(t->w, "trace.py_processes", ps.attached);
		cw_writer_counter_set(t->w, "trace.py_unsupported", ps.unsupported);
		cw_writer_counter_set(t->w, "trace.py_threads", ps.threads);
	}
	store_discovery(t, lt);
	if (t->otlp) {
		struct cw_otlp_stats os;

		cw_otlp_get_stats(t->otlp, &os);
		cw_writer_counter_set(t->w, "otlp.sent", os.sent);
		cw_writer_counter_set(t->w, "otlp.retries", os.retries);
		cw_writer_counter_set(t->w, "otlp.dropped", os.dropped_queue);
		cw_writer_counter_set(t->w, "otlp.refused", os.rejected);
	}
	trace_gpu_counters(t->gpu);
	cw_writer_counter_set(t->w, "trace.libraries", (uint64_t)cw_cuda_probes_nlibs(t->cp));
	cw_writer_counter_set(t->w, "trace.probes", (uint64_t)cw_cuda_probes_npairs(t->cp));
	cw_pipeline_get_counters(t->pipe, &pc);
	/* Write errors are not added: the rows behind them are counted, one
	 * by one, in store.failed_rows (a failed batch is many rows). */
	lt->pipeline = pc.rejected_size + pc.rejected_version + pc.rejected_type + pc.unpaired_returns +
		       pc.unfinished_entries + pc.overflow_entries;
	{
		struct cw_writer_stats ws;

		cw_writer_get_stats(t->w, &ws);
		lt->store_failed = ws.failed_rows;
		lt->store_error = ws.failing ? ws.last_error : 0;
		lt->store_error_ever = ws.last_error;
	}
	lt->held_dropped = t->cons.spool_dropped;
	cw_writer_counter_set(t->w, "trace.store_wait.held", t->cons.spooled);
	cw_writer_counter_set(t->w, "trace.store_wait.dropped", t->cons.spool_dropped);
	cw_writer_counter_set(t->w, "trace.store_wait.ms",
			      (t->cons.held_ns_total +
			       (t->cons.held ? cw_monotonic_ns() - t->cons.held_since_ns : 0)) / 1000000);
}

/* What stops the store, in words, or NULL. */
static const char *store_problem(int err)
{
	if (!err)
		return NULL;
	return err == -ENOSPC ? "disk full" : cw_store_strerror(err);
}

/* Lock held, once a second: says (once per episode, on stderr when there
 * is no live view) that the store is locked or failing, and ends the
 * trace when a lock outlasts --lock-wait. */
static void watch_store(struct trace *t, const struct loss_totals *lt)
{
	uint64_t held = t->cons.held ? cw_monotonic_ns() - t->cons.held_since_ns : 0;
	char lim[32];

	cw_format_duration(t->o.lock_wait_ns, lim, sizeof(lim));
	if (held && !t->said_held) {
		t->said_held = 1;
		t->replayed_mark = t->cons.spool_replayed;
		t->dropped_mark = t->cons.spool_dropped;
		if (!t->view_on && !t->o.json) {
			if (t->store_err == -EBUSY)
				fprintf(stderr, "causeway: database \"%s\" is locked by another process; holding records in "
						"memory (up to %llu MiB) for up to %s\n",
					t->o.db, (unsigned long long)(t->o.lock_buffer >> 20), lim);
			else
				fprintf(stderr, "causeway: database \"%s\" cannot take rows (%s); holding records in "
						"memory (up to %llu MiB) for up to %s\n",
					t->o.db, store_problem(t->store_err), (unsigned long long)(t->o.lock_buffer >> 20),
					lim);
		}
	} else if (!held && t->said_held && !cw_consumer_spool_records(&t->cons)) {
		t->said_held = 0;
		if (!t->view_on && !t->o.json)
			fprintf(stderr, "causeway: database \"%s\" writable again; %llu held records written, %llu dropped\n",
				t->o.db, (unsigned long long)(t->cons.spool_replayed - t->replayed_mark),
				(unsigned long long)(t->cons.spool_dropped - t->dropped_mark));
	}
	if (held > t->o.lock_wait_ns)
		t->lock_failed = 1;
	if (lt->store_error && !t->said_failing) {
		t->said_failing = 1;
		if (!t->view_on && !t->o.json)
			fprintf(stderr, "causeway: %s: rows cannot be stored in \"%s\" (%llu so far); still tracing\n",
				store_problem(lt->store_error), t->o.db, (unsigned long long)lt->store_failed);
	} else if (!lt->store_error && t->said_failing) {
		t->said_failing = 0;
		if (!t->view_on && !t->o.json)
			fprintf(stderr, "causeway: \"%s\" takes rows again; %llu rows were lost\n", t->o.db,
				(unsigned long long)lt->store_failed);
	}
}

static void feed_inflight(void *ctx, const struct cw_call_entry *e)
{
	struct trace *t = ctx;

	cw_consumer_feed(&t->cons, e, sizeof(*e));
}

/* Calls open in the kernel since before cutoff become entries in the
 * pipeline, which stores them as unfinished when they stay open past the
 * consumer's max_open_ns or at the end. */
static void take_inflight(struct trace *t, uint64_t cutoff_mono_ns)
{
	if (t->cp)
		cw_cuda_probes_take_inflight(t->cp, cutoff_mono_ns, feed_inflight, t);
}

struct open_calls {
	uint32_t *tids;
	const char **ops;
	uint64_t *since;
	int n, max;
};

static void open_call_seen(void *ctx, const struct cw_call_entry *e)
{
	struct open_calls *oc = ctx;

	if (oc->n == oc->max)
		return;
	oc->tids[oc->n] = e->hdr.tid;
	oc->ops[oc->n] = cw_op_name(e->hdr.op);
	oc->since[oc->n] = e->hdr.ts_ns;
	oc->n++;
}

/* trace_gpu's view of the calls a stalled process is inside. */
static int open_calls(void *ctx, uint32_t pid, uint32_t *tids, const char **ops, uint64_t *since, int max)
{
	struct trace *t = ctx;
	struct open_calls oc = {tids, ops, since, 0, max};

	if (!t->cp || cw_cuda_probes_peek_inflight(t->cp, pid, open_call_seen, &oc) < 0)
		return 0;
	return oc.n;
}

static void tick(struct trace *t, uint64_t start_ns)
{
	struct cw_snapshot snap;
	struct loss_totals lt;
	uint64_t now = cw_monotonic_ns();

	rescan(t);
	if (now > t->cons.max_open_ns)
		take_inflight(t, now - t->cons.max_open_ns);
	if (t->si && !cw_sysinfo_sample(t->si, &snap))
		cw_consumer_feed(&t->cons, &snap, sizeof(snap));
	cw_consumer_lock(&t->cons);
	cw_pipeline_set_clock(t->pipe, measure_offset());
	trace_python_forget_exited(t->py, cw_monotonic_ns());
	cw_kernel_probes_flush(t->kp, 0);
	{
		uint64_t cs[CW_CS_MAX];
		trace_gpu_tick(t->gpu, now, cw_cuda_probes_stats(t->cp, cs) ? 0 : cs[CW_CS_AGGREGATED]);
	}
	store_counters(t, &lt);
	watch_store(t, &lt);
	if (t->wlag)
		cw_writer_lag_commits(t->wlag, writer_commits_locked(t), cw_monotonic_ns());
	if (t->view_on) {
		struct cw_trace_view_status vs = {
			.elapsed_ns = cw_monotonic_ns() - start_ns,
			.nprocs = t->nknown,
			.nlibs = cw_cuda_probes_nlibs(t->cp),
			.nprobes = cw_cuda_probes_npairs(t->cp),
			.ring_drops = lt.ring_drops,
			.aggregated = lt.aggregated,
			.pipeline_losses = lt.pipeline,
			.store_failed = lt.store_failed,
			.held_dropped = lt.held_dropped,
			.store_problem = store_problem(lt.store_error),
			.held_ns = t->cons.held ? cw_monotonic_ns() - t->cons.held_since_ns : 0,
			.held_records = cw_consumer_spool_records(&t->cons),
			.held_limit_ns = t->o.lock_wait_ns,
			.db = t->o.db,
		};

		cw_trace_view_render(t->view, stdout, &vs, 1);
	}
	cw_consumer_unlock(&t->cons);
}

/* Forks the command stopped before exec: it waits on a pipe until the
 * probes are attached and its pid is tracked. Returns the write end. */
static int spawn_command(struct trace *t, char **cmd, int *gate)
{
	pid_t parent = getpid(), pid;
	int p[2];

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (pid == 0) {
		char c;

		close(p[1]);
		/* The death signal survives exec (not of a set-user-ID, set-group-ID
		 * or file-capability binary, which clears it). It fires when the
		 * thread that forked dies: this is the main thread, which lives as
		 * long as trace. trace may have died between fork and prctl, and
		 * then no signal comes: the child has been reparented already. */
		if (t->o.kill_on_exit &&
		    (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent))
			_exit(126);
		if (read(p[0], &c, 1) != 1)
			_exit(126);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(cmd[0], cmd);
		fprintf(stderr, "causeway: cannot run \"%s\": %s\n", cmd[0], strerror(errno));
		_exit(127);
	}
	close(p[0]);
	t->child = pid;
	*gate = p[1];
	return 0;
}

static int any_alive(const struct trace *t)
{
	int i;

	for (i = 0; i < t->o.npids; i++)
		if (cw_pid_exists(t->o.pids[i]))
			return 1;
	return 0;
}

/* The session row's facts, known at start; written by store_gate(). */
static void session_prepare(struct trace *t, uint64_t start_wall)
{
	struct cw_session_info *si = &t->sess;
	char *cmd = t->command_line;
	size_t len = sizeof(t->command_line);
	int i;

	cw_host_facts_read(&t->hf);
	cmd[0] = '\0';
	for (i = 0; t->o.command && t->o.command[i]; i++)
		snprintf(cmd + strlen(cmd), len - strlen(cmd), "%s%s", i ? " " : "", t->o.command[i]);
	memset(si, 0, sizeof(*si));
	si->node = cw_default_node();
	si->kind = "trace";
	si->started_wall_ns = start_wall;
	si->mono_to_wall_ns = measure_offset();
	si->host = t->hf.host;
	si->kernel = t->hf.kernel;
	si->gpu = t->hf.gpu[0] ? t->hf.gpu : NULL;
	si->driver = t->hf.driver[0] ? t->hf.driver : (t->driver_version[0] ? t->driver_version : NULL);
	si->cuda = t->cuda_version[0] ? t->cuda_version : NULL;
	si->command = cmd[0] ? cmd : NULL;
	si->rank = si->local_rank = si->world_size = -1;
	if (t->o.command == NULL && t->o.npids)
		cw_proc_ranks(t->o.pids[0], &si->rank, &si->local_rank, &si->world_size);
	if (t->o.npids && !t->python_version[0]) {
		char py[16];

		if (!cw_proc_python_version(t->o.pids[0], py, sizeof(py)))
			snprintf(t->python_version, sizeof(t->python_version), "%s", py);
	}
	si->python = t->python_version[0] ? t->python_version : NULL;
}

/* cw_consumer_gate, consumer lock held: can the store take rows now?
 * Opens the writer's batch, taking the write lock (never waiting for it:
 * the consumer must keep draining the rings), and writes the session row
 * first, so no row is ever stored without its session. */
static int store_gate(void *ctx)
{
	struct trace *t = ctx;
	int rc = cw_writer_try_begin(t->w);

	if (!rc && !cw_writer_session(t->w))
		rc = cw_writer_session_begin(t->w, &t->sess);
	t->store_err = rc;
	return rc == 0;
}

/* Facts learned after the session row was written: a launched command
 * maps libpython and its CUDA copies only after exec, and rescans find
 * them. Only empty columns are filled. */
static void session_late_facts(struct trace *t)
{
	sqlite3_stmt *s = NULL;

	if (!t->st || !t->w || (!t->python_version[0] && !t->cuda_version[0] && !t->driver_version[0]))
		return;
	/* The writer thread shares the connection. */
	cw_writer_db_lock(t->w);
	if (sqlite3_prepare_v2(t->st->db,
			       "UPDATE sessions SET python = coalesce(python, ?1), cuda = coalesce(cuda, ?2), "
			       "driver = coalesce(driver, ?3) WHERE id = ?4",
			       -1, &s, NULL) != SQLITE_OK) {
		cw_writer_db_unlock(t->w);
		return;
	}
	if (t->python_version[0])
		sqlite3_bind_text(s, 1, t->python_version, -1, SQLITE_STATIC);
	if (t->cuda_version[0])
		sqlite3_bind_text(s, 2, t->cuda_version, -1, SQLITE_STATIC);
	if (t->driver_version[0])
		sqlite3_bind_text(s, 3, t->driver_version, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 4, t->session_id);
	if (sqlite3_step(s) != SQLITE_DONE)
		cw_debug("session facts: %s", sqlite3_errmsg(t->st->db));
	sqlite3_finalize(s);
	cw_writer_db_unlock(t->w);
}

/* Ends discovery (resuming whatever it stopped), keeping its figures. */
static void live_stop(struct trace *t)
{
	if (!t->live)
		return;
	t->live_was_on = 1;
	cw_live_close(t->live, &t->live_last);
	t->live = NULL;
}

/* At the end of a trace whose store is locked: the held records are
 * written if the lock goes within what is left of --lock-wait. */
static void wait_for_store(struct trace *t)
{
	int said = 0;

	for (;;) {
		uint64_t held_ns;
		int busy;

		cw_consumer_lock(&t->cons);
		busy = !cw_consumer_store_ready(&t->cons);
		held_ns = t->cons.held ? cw_monotonic_ns() - t->cons.held_since_ns : 0;
		cw_consumer_unlock(&t->cons);
		if (!busy && said)
			fprintf(stderr, "causeway: database \"%s\" writable again; %llu held records written\n", t->o.db,
				(unsigned long long)(t->cons.spool_replayed - t->replayed_mark));
		if (!busy || held_ns > t->o.lock_wait_ns)
			return;
		if (!said && !t->o.json && held_ns) {
			fprintf(stderr, "causeway: waiting for the write lock on \"%s\" to store the held records\n",
				t->o.db);
			said = 1;
		}
		{
			struct timespec ts = { 0, 100 * 1000000L };

			nanosleep(&ts, NULL);
		}
	}
}

static int run(struct trace *t)
{
	struct cw_kernel_probes_opts ko;
	struct cw_cuda_probes_opts co;
	struct cw_pipeline_opts po;
	struct cw_writer_opts wo;
	char err[512];
	uint64_t start = cw_monotonic_ns(), start_wall = cw_realtime_ns(), last_tick, attach_ns;
	int rc, i, gate = -1, status = 0, exit_code = CW_EXIT_OK, child_done = 0, json = t->o.json;
	struct sigaction sa;

	if (!cw_may_trace()) {
		cw_report_error(json, "trace needs root (CAP_BPF and CAP_PERFMON to load and attach probes)");
		return CW_EXIT_NOPERM;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		cw_report_error(json, "the kernel has no BTF (\"/sys/kernel/btf/vmlinux\" is missing); "
				      "CONFIG_DEBUG_INFO_BTF=y is required");
		return CW_EXIT_NOFEATURE;
	}
	for (i = 0; i < t->o.npids; i++)
		if (!cw_pid_exists(t->o.pids[i])) {
			cw_report_error(json, "no process with pid %u", t->o.pids[i]);
			return CW_EXIT_NOTARGET;
		}
	for (i = 0; i < t->o.nlibs; i++) {
		int n = cw_hooks_in_file(t->o.libs[i], NULL);

		if (n <= 0) {
			if (n == 0 || n == -ENOEXEC)
				cw_report_error(json, "\"%s\" exports none of the hooked CUDA/NCCL functions",
						t->o.libs[i]);
			else
				cw_report_error(json, "cannot read \"%s\": %s", t->o.libs[i], strerror(-n));
			return CW_EXIT_NOTARGET;
		}
	}
	rc = cw_store_open(&t->st, t->o.db, CW_STORE_CREATE, err, sizeof(err));
	if (rc) {
		cw_report_error(json, "%s", err);
		return CW_EXIT_DB;
	}
	if (t->o.command && (rc = spawn_command(t, t->o.command, &gate))) {
		cw_report_error(json, "cannot start \"%s\": %s", t->o.command[0], strerror(-rc));
		return CW_EXIT_FAIL;
	}

	cw_kernel_probes_opts_init(&ko);
	if (t->o.ring_kb)
		ko.ring_kb = t->o.ring_kb;
	rc = cw_kernel_probes_open(&t->kp, &ko, err, sizeof(err));
	if (rc) {
		cw_report_error(json, "%s", err);
		exit_code = rc == -EPERM ? CW_EXIT_NOPERM : rc == -ENOENT ? CW_EXIT_NOFEATURE : CW_EXIT_FAIL;
		goto out;
	}
	memset(&co, 0, sizeof(co));
	co.ring_kb = t->o.ring_kb;
	co.agg_pct = t->o.agg_pct;
	co.filter_tracked = t->o.npids || t->o.command;
	co.filter_cgroup = t->o.ntenants > 0;
	co.py_mode = t->o.py_mode;
	co.native_stacks = t->o.native_stacks;
	co.tracked_fd = cw_kernel_probes_tracked_fd(t->kp);
	co.drops_fd = cw_kernel_probes_drops_fd(t->kp);
	co.stats_fd = cw_kernel_probes_stats_fd(t->kp);
	rc = cw_cuda_probes_open(&t->cp, &co, err, sizeof(err));
	if (rc) {
		cw_report_error(json, "%s", err);
		exit_code = rc == -EPERM ? CW_EXIT_NOPERM : CW_EXIT_NOFEATURE;
		goto out;
	}
	if (!t->o.nlibs) {
		struct cw_live_opts lo = {
			.filter_tracked = co.filter_tracked,
			.hold = !t->o.no_hold,
			.tracked_fd = co.tracked_fd,
			.drops_fd = co.drops_fd,
			.stats_fd = co.stats_fd,
			.attach = live_attach,
			.ctx = t,
		};

		/* Without it (Linux < 6.7) the one-second rescan finds copies. */
		if (cw_live_open(&t->live, &lo, err, sizeof(err)))
			cw_debug("%s; library copies are found by the rescan only", err);
	}
	rc = trace_tenant_new(&t->tenant, t->o.tenants, t->o.ntenants, t->cp, err, sizeof(err));
	if (rc) {
		cw_report_error(json, "%s", err);
		exit_code = CW_EXIT_NOFEATURE;
		goto out;
	}
	if (t->o.ntenants && !trace_tenant_allowed_now(t->tenant) && !t->o.json)
		fprintf(stderr, "causeway: no cgroup matches the tenant filter yet; its calls are traced once one appears\n");
	for (i = 0; i < t->o.nlibs; i++)
		if (attach_path(t, t->o.libs[i]) < 0) {
			cw_report_error(json, "cannot attach to \"%s\"", t->o.libs[i]);
			exit_code = CW_EXIT_NOTARGET;
			goto out;
		}
	if (!t->o.nlibs)
		attach_known_dirs(t);
	for (i = 0; i < t->o.npids; i++) {
		cw_kernel_probes_track(t->kp, t->o.pids[i]);
		add_pending(t, t->o.pids[i]);
	}
	if (t->child > 0) {
		cw_kernel_probes_track(t->kp, (uint32_t)t->child);
		add_pending(t, (uint32_t)t->child);
	}
	if (t->live && cw_live_start(t->live, err, sizeof(err))) {
		cw_debug("%s; library copies are found by the rescan only", err);
		cw_live_close(t->live, NULL);
		t->live = NULL;
	}

	session_prepare(t, start_wall);
	memset(&wo, 0, sizeof(wo));
	wo.node = cw_default_node();
	wo.size_cap_bytes = (int64_t)t->o.size_cap;
	/* Batches end at the consumer's flushes only, each begun through
	 * store_gate(): a lock another process takes between two batches
	 * holds records in memory instead of failing rows. */
	wo.immediate = 1;
	/* SQLite on a thread of its own: decoding goes on while it inserts. */
	wo.threaded = 1;
	wo.batch_rows = 1 << 30;
	rc = cw_writer_new(&t->w, t->st, &wo);
	if (rc) {
		cw_report_error(json, "cannot write to \"%s\": %s", t->o.db, cw_store_strerror(rc));
		exit_code = CW_EXIT_DB;
		goto out;
	}
	/* The consumer thread must never sleep in SQLite's busy handler while
	 * the rings fill: store_gate() retries a held lock itself. */
	sqlite3_busy_timeout(t->st->db, 20);
	t->view_on = !t->o.json && !t->o.no_view && isatty(STDOUT_FILENO);
	if ((t->view_on || !t->o.json) && cw_trace_view_new(&t->view))
		t->view = NULL;
	if (!t->view)
		t->view_on = 0;
	else
		cw_trace_view_set_hang_floor(t->view, t->o.hang_after_ns);
	memset(&po, 0, sizeof(po));
	po.writer = t->w;
	po.mono_to_wall_ns = measure_offset();
	po.observer = observe;
	po.offcpu_observer = observe_offcpu;
	po.observer_ctx = t;
	rc = trace_python_new(&t->py, t->cp, &t->cons, t->o.py_mode != CW_PY_OFF, json);
	if (rc) {
		cw_report_error(json, "cannot set up Python stack capture: %s", strerror(-rc));
		goto out;
	}
	po.py = trace_python_resolver(t->py);
	po.sym = trace_python_symbolizer(t->py);
	rc = cw_pipeline_new(&t->pipe, &po);
	if (rc) {
		cw_report_error(json, "cannot start the pipeline: %s", strerror(-rc));
		goto out;
	}
	cw_consumer_init(&t->cons, t->pipe);
	t->cons.tap = tap;
	t->cons.tap_ctx = t;
	t->cons.gate = store_gate;
	t->cons.gate_ctx = t;
	t->cons.spool_cap = (size_t)t->o.lock_buffer;
	/* The session row now, when the store takes it. */
	cw_consumer_lock(&t->cons);
	cw_consumer_store_ready(&t->cons);
	cw_consumer_unlock(&t->cons);
	if (cw_kernel_probes_add_rings(t->kp, &t->rb, cw_consumer_sample, &t->cons) < 0 ||
	    cw_cuda_probes_add_ring(t->cp, &t->rb, cw_consumer_sample, &t->cons) < 0 ||
	    cw_consumer_start(&t->cons, t->rb)) {
		cw_report_error(json, "cannot read the ring buffers");
		goto out;
	}
	if (cw_sysinfo_new(&t->si, NULL))
		t->si = NULL;
	if (t->o.bpf_stats && (t->stats_fd = cw_prog_stats_enable()) < 0) {
		cw_report_error(json, "trace: cannot enable BPF statistics: %s", strerror(-t->stats_fd));
		exit_code = CW_EXIT_NOFEATURE;
		goto out;
	}
	/* /metrics and OTLP read the session's live figures. */
	if (cw_live_metrics_new(&t->metrics, 0)) {
		cw_report_error(json, "out of memory");
		goto out;
	}
	if ((rc = otlp_setup_start(t->o.otlp, t->o.db, t->metrics, "trace", json, &t->otlp))) {
		exit_code = rc;
		goto out;
	}
	if (!t->otlp && !t->o.serve) { /* nobody reads them: no cost per row */
		cw_live_metrics_free(t->metrics);
		t->metrics = NULL;
	}
	{
		struct trace_gpu_opts go = {
			.interval_ns = t->o.gpu_interval_ns ? t->o.gpu_interval_ns : cw_default_gpu_interval(),
			.nvml_path = cw_default_nvml_lib(), .no_gpu = t->o.no_gpu,
			.stall_floor_ns = t->o.stall_after_ns ? t->o.stall_after_ns : cw_default_stall_after(),
			.quiet = t->view_on,
			.open_calls = open_calls, .open_calls_ctx = t,
		};
		rc = trace_gpu_start(&t->gpu, &go, &t->cons, t->w, t->st, cw_default_node(), t->session_id, t->view);
		if (rc) {
			cw_report_error(json, "cannot start GPU telemetry: %s", strerror(-rc));
			goto out;
		}
	}
	if (t->o.serve) {
		/* The API reads the file on its own read-only connections while
		 * the writer appends (WAL). */
		t->ss.o.listen = t->o.serve;
		t->ss.o.db_path = t->o.db;
		if ((rc = serve_setup_resolve(&t->ss, "trace")) || (rc = serve_setup_start(&t->ss, "trace", &t->srv))) {
			exit_code = rc;
			goto out;
		}
		cw_server_set_live_metrics(t->srv, t->metrics);
		if (cw_writer_lag_new(&t->wlag, writer_commits, t)) {
			cw_report_error(json, "out of memory");
			goto out;
		}
		cw_server_set_writer_lag(t->srv, t->wlag);
	}
	rescan(t);
	trace_tenant_set_metrics(t->tenant, t->metrics);
	if ((rc = trace_tenant_start(t->tenant, &t->cons, t->w))) {
		cw_report_error(json, "cannot start the cgroup resolver: %s", strerror(-rc));
		goto out;
	}
	t->started = 1;
	attach_ns = cw_monotonic_ns() - start;
	cw_consumer_lock(&t->cons);
	cw_writer_counter_set(t->w, "trace.startup_ms", attach_ns / 1000000);
	cw_consumer_unlock(&t->cons);
	if (!t->o.json)
		fprintf(stderr, "causeway: tracing %s: %d libraries, %d probes attached in %.0f ms; recording to \"%s\"\n",
			t->o.command ? t->o.command[0] : t->o.npids ? "the named processes" : "every CUDA process",
			cw_cuda_probes_nlibs(t->cp), cw_cuda_probes_npairs(t->cp), attach_ns / 1e6, t->o.db);
	if (gate >= 0) {
		if (write(gate, "g", 1) != 1)
			cw_debug("gate write failed");
		close(gate);
		gate = -1;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	last_tick = cw_monotonic_ns();
	while (!stop_signal) {
		struct timespec ts = { 0, 100 * 1000000L };
		uint64_t now;

		nanosleep(&ts, NULL);
		now = cw_monotonic_ns();
		trace_python_poll(t->py, now);
		if (t->child > 0 && waitpid(t->child, &status, WNOHANG) == t->child) {
			child_done = 1;
			break;
		}
		if (t->o.duration_ns && now - start >= t->o.duration_ns)
			break;
		if (now - last_tick >= NSEC_PER_SEC) {
			last_tick = now;
			tick(t, start);
			if (t->lock_failed)
				break;
			if (t->o.npids && !t->o.command && !any_alive(t))
				break;
		}
	}
	/* Nothing stays stopped past this point. */
	live_stop(t);
	if (t->child > 0 && !child_done) {
		kill(t->child, SIGTERM);
		waitpid(t->child, &status, 0);
		child_done = 1;
	}
	/* The telemetry thread writes under the consumer lock: halted before
	 * the drain so its last rows are in the final flush. */
	trace_gpu_halt(t->gpu);
	/* Let records of the last calls reach the rings before the drain. */
	{
		struct timespec ts = { 0, 50 * 1000000L };

		nanosleep(&ts, NULL);
	}
	cw_consumer_lock(&t->cons);
	cw_kernel_probes_flush(t->kp, 1);
	cw_consumer_unlock(&t->cons);
	if (!t->lock_failed)
		wait_for_store(t);
	if (cw_consumer_stop(&t->cons))
		exit_code = CW_EXIT_DB;
	cw_consumer_lock(&t->cons);
	if (t->cons.held || cw_consumer_spool_records(&t->cons)) {
		/* Still locked: what was held is lost, and counted. */
		t->lock_failed = 1;
		cw_consumer_spool_discard(&t->cons);
	}
	cw_consumer_unlock(&t->cons);
	/* Calls still open (a hung collective, a long synchronize) are stored
	 * as unfinished with how long they had run by now. */
	if (!t->lock_failed)
		take_inflight(t, UINT64_MAX);
	/* Cgroups first seen in the last second are named too. */
	trace_tenant_finish(t->tenant);
	cw_consumer_lock(&t->cons);
	if (!t->lock_failed && cw_pipeline_flush(t->pipe, cw_monotonic_ns(), 1) && exit_code == CW_EXIT_OK)
		exit_code = CW_EXIT_DB;
	cw_consumer_unlock(&t->cons);
	{
		struct loss_totals lt;
		const char *why;
		char lim[32];

		cw_consumer_lock(&t->cons);
		store_counters(t, &lt);
		cw_consumer_unlock(&t->cons);
		why = store_problem(lt.store_error_ever);
		if (!t->o.json)
			fprintf(stderr,
				"causeway: stopped; ring drops %llu, aggregated %llu, pipeline losses %llu, "
				"store losses %llu%s%s%s; discovery: %llu held, %llu late%s\n",
				(unsigned long long)lt.ring_drops, (unsigned long long)lt.aggregated,
				(unsigned long long)lt.pipeline, (unsigned long long)(lt.store_failed + lt.held_dropped),
				why && lt.store_failed ? " (" : "", why && lt.store_failed ? why : "",
				why && lt.store_failed ? ")" : "", (unsigned long long)lt.held,
				(unsigned long long)lt.late, lt.late ? " (calls before those attaches may be missing)" : "");
		cw_format_duration(t->o.lock_wait_ns, lim, sizeof(lim));
		if (t->lock_failed) {
			cw_report_error(json,
					"database \"%s\" stayed locked by another process past --lock-wait %s: "
					"%llu records were not stored; the trace is incomplete",
					t->o.db, lim, (unsigned long long)(lt.held_dropped + lt.store_failed));
			exit_code = CW_EXIT_DB;
		} else if (lt.store_failed || lt.held_dropped) {
			cw_report_error(json, "%s: %llu rows could not be stored in \"%s\"; the trace is incomplete",
					lt.store_failed ? (why ? why : "store error") : "records dropped while the store was locked",
					(unsigned long long)(lt.store_failed + lt.held_dropped), t->o.db);
			exit_code = CW_EXIT_DB;
		} else if (exit_code == CW_EXIT_DB) {
			cw_report_error(json, "writing \"%s\" failed: %s", t->o.db,
					cw_store_strerror(t->cons.last_error ? t->cons.last_error : -EIO));
		}
	}
	if (child_done && exit_code == CW_EXIT_OK)
		exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
out:
	live_stop(t);
	if (gate >= 0)
		close(gate); /* the child reads EOF and exits 126 */
	if (t->child > 0 && !child_done) {
		kill(t->child, SIGKILL);
		waitpid(t->child, NULL, 0);
	}
	/* The resolver writes through the writer: stopped before it goes. */
	trace_tenant_finish(t->tenant);
	if (t->cons.running)
		cw_consumer_stop(&t->cons);
	if (t->rb)
		ring_buffer__free(t->rb);
	cw_pipeline_free(t->pipe);
	trace_python_free(t->py); /* before the probes: it clears their maps */
	trace_gpu_stop(t->gpu); /* before the writer: it writes with it */
	if (t->w)
		t->session_id = cw_writer_session(t->w);
	if (t->w && cw_writer_free(t->w) && exit_code == CW_EXIT_OK && !t->lock_failed)
		exit_code = CW_EXIT_DB;
	if (t->session_id) {
		cw_session_end(t->st, t->session_id, cw_realtime_ns(), measure_offset());
		session_late_facts(t);
	}
	cw_server_stop(t->srv);
	cw_writer_lag_free(t->wlag);
	otlp_setup_stop(t->otlp, "trace", json);
	if (t->stats_fd >= 0)
		close(t->stats_fd);
	cw_live_metrics_free(t->metrics);
	serve_setup_release(&t->ss);
	cw_sysinfo_free(t->si);
	trace_tenant_free(t->tenant);
	cw_cuda_probes_close(t->cp);
	cw_kernel_probes_close(t->kp);
	cw_trace_view_free(t->view);
	cw_store_close(t->st);
	return exit_code;
}

int cmd_trace(int argc, char **argv)
{
	struct trace *t = calloc(1, sizeof(*t));
	int json = 0, rc;

	if (!t)
		return CW_EXIT_FAIL;
	pthread_mutex_init(&t->attach_lock, NULL);
	t->stats_fd = -1;
	rc = parse_args(&t->o, argc, argv, &json);
	if (rc) {
		free(t);
		return rc < 0 ? CW_EXIT_OK : rc;
	}
	if (!t->o.db)
		t->o.db = cw_default_db();
	if (!t->o.size_cap)
		t->o.size_cap = cw_default_size_cap();
	rc = run(t);
	free(t);
	return rc;
}
