/* causeway trace: flags to the trace session's options (src/trace/), the
 * API server and OTLP export it starts, its words on stderr, and its
 * result as an exit status (docs/trace.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/cmd_trace.h"
#include "cmd/opt_error.h"
#include "cmd/otlp_setup.h"
#include "cmd/serve_setup.h"
#include "config/config.h"
#include "inference/listeners.h"
#include "trace/inference.h"
#include "trace/ras.h"
#include "trace/tenant.h"
#include "trace/trace.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/timeutil.h"

#define MAX_LIBS CW_TRACE_MAX_LIBS

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
	"  --size-cap SIZE    prune by tiers above SIZE (\"2GiB\"; default: the smaller of\n"
	"                     1GiB and a quarter of the free space at start)\n"
	"  --lock-wait D      while another process holds the database's write lock,\n"
	"                     hold records in memory for up to D, then fail (default 30s)\n"
	"  --lock-buffer SIZE memory for records held meanwhile (default 256MiB); more\n"
	"                     are dropped and counted\n"
	"  --ring-kb N        size of each ring buffer in KiB (default 8192 calls, 4096 kernel)\n"
	"  --agg-pct N        above N % ring fill, count calls in the kernel instead of\n"
	"                     emitting them (default 75; 0 disables)\n"
	"  --py-stacks MODE   Python stacks of CPython 3.10-3.15 processes: slow (the\n"
	"                     default: calls slower than 3x their op's mean and 10 us,\n"
	"                     captured at return), all (every call), off\n"
	"  --capture MODE     summary (the default): calls fast for their op,\n"
	"                     succeeding, not NCCL, not among a process's first 16 of\n"
	"                     the op and not the 1-in-128 sample are counted in the\n"
	"                     kernel into per-second histograms, with no row; full:\n"
	"                     one row per call, for per-line accounting and exact rows\n"
	"                     (--py-stacks all implies full)\n"
	"  --native-stacks    also capture each call's native stack (frame pointers)\n"
	"  --hang-after D     the live view warns of an NCCL hang when a collective has\n"
	"                     waited for some processes max(20 steps, D) (default 10s)\n"
	"  --nccl-ras ADDR    at such a hang, ask the job's NCCL RAS service once\n"
	"                     (NCCL >= 2.24) and store its answer for explain: PORT,\n"
	"                     HOST:PORT (numeric; default: the ranks' NCCL_RAS_ADDR,\n"
	"                     else 127.0.0.1:28028) or off\n"
	"  --inference PORT[,PORT...]|auto\n"
	"                     also follow the HTTP/1.1 requests of the servers listening\n"
	"                     on these TCP ports, or (auto) of the inference engines\n"
	"                     running (vLLM, SGLang, TGI, llama.cpp, Triton, Ollama):\n"
	"                     one row each in requests (TTFT, duration, status), with\n"
	"                     their threads' scheduling; plain HTTP only (docs/inference.md)\n"
	"  --no-hold          never stop a process that loads a library copy not yet\n"
	"                     attached (by default it is stopped until its probes are\n"
	"                     in place, so its first calls are recorded)\n"
	"  --no-uprobe-multi  one perf-event uprobe per function instead of one\n"
	"                     uprobe_multi link per library copy (slower to stop)\n"
	"  --no-uprobe-session an entry and a return probe per function instead of\n"
	"                     one uprobe session (kernel >= 6.12; slower per call)\n"
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
	"  --json             stream the recorded events as NDJSON on stdout; a launched\n"
	"                     COMMAND's own stdout goes to stderr\n"
	"  --no-view          no live view (default when stdout is not a terminal)\n"
	"  --kill-on-exit     SIGKILL the launched COMMAND if trace itself dies (even by\n"
	"                     SIGKILL); without it COMMAND runs on, untraced\n"
	"  -h, --help         this help\n"
	"\n"
	"examples:\n"
	"  sudo causeway trace -- python train.py\n"
	"  sudo causeway trace --pid 4821 --duration 5m --db /var/lib/causeway/causeway.db\n"
	"  sudo causeway trace --node gpu-node-01 --serve 0.0.0.0:8443\n"
	"  sudo causeway trace --inference auto --duration 10m\n"
	"\n"
	"exit status: the command's when one was launched; 1 another start-up failure\n"
	"(said in one line), 3 no privilege, 4 no BTF, 5 unknown pid or a library\n"
	"without the hooked symbols, 6 database error (also when rows could not be\n"
	"stored: a full disk, a lock held past --lock-wait).\n";

static volatile sig_atomic_t stop_signal;

static int parse_pids(struct cw_trace_opts *o, const char *s)
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

/* One flag that takes a value (v). Returns 0 or CW_EXIT_USAGE after one line. */
static int parse_value(struct cw_trace_opts *o, const char *a, const char *v, int json)
{
	char shown[CW_SHOWN_BUF];

	if (trace_tenant_is_flag(a)) {
		char err[256];

		if (trace_tenant_flag(o->tenants, &o->ntenants, a, v, err, sizeof(err))) {
			cw_report_error(json, "trace: %s", err);
			return CW_EXIT_USAGE;
		}
	} else if (!strcmp(a, "--pid")) {
		int prc = parse_pids(o, v);

		if (prc) {
			cw_report_error(json, "trace: bad --pid \"%s\" (%s)", cw_shown(v, shown),
					prc == -E2BIG ? "at most 64 pids"
						      : "want P[,P...], each pid from 1 to 4194304");
			return CW_EXIT_USAGE;
		}
	} else if (!strcmp(a, "--cuda-lib")) {
		if (o->nlibs == MAX_LIBS) {
			cw_report_error(json, "trace: at most %d --cuda-lib", MAX_LIBS);
			return CW_EXIT_USAGE;
		}
		o->libs[o->nlibs++] = v;
	} else if (!strcmp(a, "--db")) {
		o->db = v;
	} else if (!strcmp(a, "--inference")) {
		if (!trace_inference_spec_ok(v)) {
			cw_report_error(json, "trace: bad --inference \"%s\" (PORT[,PORT...], at most %d, or auto)",
					cw_shown(v, shown), CW_INFERENCE_MAX_PORTS);
			return CW_EXIT_USAGE;
		}
		o->inference = v;
	} else if (!strcmp(a, "--nccl-ras")) {
		struct trace_ras_opts ro = { 0 };

		if (trace_ras_parse_addr(v, &ro)) {
			cw_report_error(json, "trace: bad --nccl-ras \"%s\" (PORT, HOST:PORT or off)", v);
			return CW_EXIT_USAGE;
		}
		o->nccl_ras = v;
	} else if (!strcmp(a, "--hang-after")) {
		if (cw_parse_duration(v, &o->hang_after_ns) || !o->hang_after_ns) {
			cw_report_error(json, "trace: bad --hang-after \"%s\"", v);
			return CW_EXIT_USAGE;
		}
	} else if (!strcmp(a, "--duration")) {
		if (cw_parse_duration(v, &o->duration_ns) || !o->duration_ns) {
			cw_report_error(json, "trace: bad --duration \"%s\" (e.g. 30s, 5m)",
					cw_shown(v, shown));
			return CW_EXIT_USAGE;
		}
	} else if (!strcmp(a, "--lock-wait")) {
		if (cw_parse_duration(v, &o->lock_wait_ns) || !o->lock_wait_ns) {
			cw_report_error(json, "trace: bad --lock-wait \"%s\"", v);
			return CW_EXIT_USAGE;
		}
	} else if (!strcmp(a, "--lock-buffer")) {
		if (cw_parse_size(v, &o->lock_buffer) || o->lock_buffer < (1u << 20) ||
		    o->lock_buffer > (64ull << 30)) {
			cw_report_error(json, "trace: bad --lock-buffer \"%s\" (1MiB to 64GiB)", v);
			return CW_EXIT_USAGE;
		}
	} else if (!strcmp(a, "--gpu-interval") || !strcmp(a, "--stall-after")) {
		uint64_t ns;
		if (cw_parse_duration(v, &ns) || ns < 10 * NSEC_PER_MSEC || ns > 3600 * NSEC_PER_SEC) {
			cw_report_error(json, "trace: bad %s \"%s\" (10ms to 1h)", a, v);
			return CW_EXIT_USAGE;
		}
		if (a[2] == 'g')
			o->gpu_interval_ns = ns;
		else
			o->stall_after_ns = ns;
	} else if (!strcmp(a, "--node")) {
		if (!cw_node_name_valid(v)) {
			cw_report_error(json, "trace: bad --node \"%s\" (" CW_NODE_NAME_RULE ")",
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
			cw_report_error(json, "trace: bad --py-stacks \"%s\" (slow, all or off)",
					cw_shown(v, shown));
			return CW_EXIT_USAGE;
		}
	} else if (!strcmp(a, "--capture")) {
		if (!strcmp(v, "full"))
			o->capture_summary = 0;
		else if (!strcmp(v, "summary"))
			o->capture_summary = 1;
		else {
			cw_report_error(json, "trace: bad --capture \"%s\" (full or summary)", cw_shown(v, shown));
			return CW_EXIT_USAGE;
		}
	} else if (!strcmp(a, "--size-cap")) {
		if (cw_parse_size(v, &o->size_cap) || !o->size_cap) {
			cw_report_error(json, "trace: bad --size-cap \"%s\" (e.g. 2GiB)",
					cw_shown(v, shown));
			return CW_EXIT_USAGE;
		}
	} else {
		int ring = !strcmp(a, "--ring-kb");
		uint64_t n;

		if (cw_parse_uint(v, ring ? 4 : 0, ring ? 1u << 20 : 100, &n)) {
			cw_report_error(json, "trace: bad %s \"%s\" (%s)", a, cw_shown(v, shown),
					ring ? "4 to 1048576 KiB" : "a percentage, 0 to 100");
			return CW_EXIT_USAGE;
		}
		if (ring)
			o->ring_kb = (unsigned)n;
		else
			o->agg_pct = (unsigned)n;
	}
	return 0;
}

static int parse_args(struct cw_trace_opts *o, int argc, char **argv, int *json_out)
{
	int i, rc;

	memset(o, 0, sizeof(*o));
	o->agg_pct = 75;
	o->lock_wait_ns = 30ull * NSEC_PER_SEC;
	o->lock_buffer = 256ull << 20;
	o->py_mode = CW_PY_SLOW;
	/* A fast call only feeds its op's baseline: counted in the kernel, it
	 * costs no record, no decode and no row (docs/trace.md, "Capture"). */
	o->capture_summary = 1; /* the default: --capture summary */
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
			    !strcmp(a, "--ring-kb") || !strcmp(a, "--agg-pct") || !strcmp(a, "--py-stacks") || !strcmp(a, "--capture") ||
			    !strcmp(a, "--serve") || !strcmp(a, "--otlp") || !strcmp(a, "--lock-wait") ||
			    !strcmp(a, "--lock-buffer") || trace_tenant_is_flag(a) ||
			    !strcmp(a, "--gpu-interval") || !strcmp(a, "--stall-after") ||
			    !strcmp(a, "--hang-after") || !strcmp(a, "--nccl-ras") || !strcmp(a, "--inference");

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
		if (!strcmp(a, "--no-uprobe-multi")) {
			o->no_uprobe_multi = 1;
			continue;
		}
		if (!strcmp(a, "--no-uprobe-session")) {
			o->no_uprobe_session = 1;
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
			static const char *const names[] = {
				"--pid", "--cgroup", "--container", "--pod", "--slurm-job", "--namespace", "--cuda-lib",
				"--db", "--duration", "--node", "--size-cap", "--lock-wait", "--lock-buffer",
				"--ring-kb", "--agg-pct", "--py-stacks", "--capture", "--native-stacks", "--hang-after",
				"--nccl-ras", "--inference",
				"--no-hold", "--no-uprobe-multi", "--no-uprobe-session", "--serve", "--bpf-stats", "--otlp",
				"--gpu-interval", "--no-gpu", "--stall-after", "--json", "--no-view",
				"--kill-on-exit", "--help", NULL,
			};
			char hint[96];

			cw_report_error(*json_out, "trace: unknown option \"%s\"%s; see 'causeway trace --help'",
					cw_shown(a, shown), cw_opt_hint(a, names, hint, sizeof(hint)));
			return CW_EXIT_USAGE;
		}
		if (!v) {
			cw_report_error(*json_out, "trace: %s needs a value", a);
			return CW_EXIT_USAGE;
		}
		i++;
		if ((rc = parse_value(o, a, v, *json_out)))
			return rc;
	}
	if (o->kill_on_exit && !o->command) {
		cw_report_error(*json_out, "trace: --kill-on-exit applies to a launched command (-- COMMAND)");
		return CW_EXIT_USAGE;
	}
	return 0;
}

/* The sink: progress lines as they are, the error line once. */
static void say_line(void *ctx, const char *text)
{
	(void)ctx;
	fputs(text, stderr);
}

static void say_error(void *ctx, const char *text)
{
	const struct cw_trace_opts *o = ctx;

	cw_report_error(o->json, "%s", text);
}

struct trace_services {
	const struct cw_trace_opts *o;
	struct serve_setup ss;
	struct cw_server *srv;
};

static int otlp_start(void *ctx, struct cw_live_metrics *m, struct cw_otlp **out)
{
	struct trace_services *sv = ctx;

	return otlp_setup_start(sv->o->otlp, sv->o->db, m, "trace", sv->o->json, out);
}

static void otlp_stop(void *ctx, struct cw_otlp *x)
{
	struct trace_services *sv = ctx;

	otlp_setup_stop(x, "trace", sv->o->json);
}

static int serve_start(void *ctx, struct cw_live_metrics *m)
{
	struct trace_services *sv = ctx;
	int rc;

	sv->ss.o.listen = sv->o->serve;
	sv->ss.o.db_path = sv->o->db;
	if ((rc = serve_setup_resolve(&sv->ss, "trace")) || (rc = serve_setup_start(&sv->ss, "trace", &sv->srv)))
		return rc;
	cw_server_set_live_metrics(sv->srv, m);
	return 0;
}

static void serve_lag(void *ctx, struct cw_writer_lag *lag)
{
	struct trace_services *sv = ctx;

	cw_server_set_writer_lag(sv->srv, lag);
}

static void serve_stop(void *ctx)
{
	struct trace_services *sv = ctx;

	cw_server_stop(sv->srv);
	sv->srv = NULL;
	serve_setup_release(&sv->ss);
}

/* -EPERM and -EACCES: privilege; -ENOMEM: the work failed; else dflt. */
static int errno_exit(int err, int dflt)
{
	if (err == -EPERM || err == -EACCES)
		return CW_EXIT_NOPERM;
	if (err == -ENOMEM)
		return CW_EXIT_FAIL;
	return dflt;
}

int cmd_trace_exit_code(const struct cw_trace_result *r)
{
	int code;

	switch (r->step) {
	case CW_TRACE_RAN:
		break;
	case CW_TRACE_PRIVILEGE:
		return CW_EXIT_NOPERM;
	case CW_TRACE_BTF:
	case CW_TRACE_TENANT:
	case CW_TRACE_BPF_STATS:
		return CW_EXIT_NOFEATURE;
	case CW_TRACE_PIDS:
	case CW_TRACE_LIBS:
	case CW_TRACE_ATTACH:
		return CW_EXIT_NOTARGET;
	case CW_TRACE_STORE:
	case CW_TRACE_WRITER:
		return CW_EXIT_DB;
	case CW_TRACE_KERNEL_PROBES:
		return r->err == -EPERM ? CW_EXIT_NOPERM
		       : r->err == -ENOENT || r->err == -EOPNOTSUPP ? CW_EXIT_NOFEATURE
								  : CW_EXIT_FAIL;
	case CW_TRACE_CUDA_PROBES:
		return r->err == -EPERM ? CW_EXIT_NOPERM : CW_EXIT_NOFEATURE;
	case CW_TRACE_PYTHON:
		return errno_exit(r->err, CW_EXIT_NOFEATURE);
	case CW_TRACE_INFERENCE:
		return r->err == -EPERM ? CW_EXIT_NOPERM : errno_exit(r->err, CW_EXIT_NOFEATURE);
	case CW_TRACE_RINGS:
	case CW_TRACE_GPU:
	case CW_TRACE_RESOLVER:
		return errno_exit(r->err, CW_EXIT_FAIL);
	case CW_TRACE_OTLP:
	case CW_TRACE_SERVE:
		return r->hook_exit ? r->hook_exit : CW_EXIT_FAIL;
	default: /* the session, the pipeline, the metrics: memory */
		return CW_EXIT_FAIL;
	}
	if (r->store_failed)
		return CW_EXIT_DB;
	if (r->child_done) {
		code = WIFEXITED(r->child_status) ? WEXITSTATUS(r->child_status) : 128 + WTERMSIG(r->child_status);
		if (code)
			return code;
	}
	return r->writer_failed && !r->lock_failed ? CW_EXIT_DB : CW_EXIT_OK;
}

/* $CW_FOLD_MAP_ENTRIES: the fold map's size, a testing knob (docs/trace.md,
 * "Capture"): a small map fills, and what a full map does can be seen. */
static int fold_map_entries(struct cw_trace_opts *o, int json)
{
	const char *v = getenv("CW_FOLD_MAP_ENTRIES");
	char *end, shown[CW_SHOWN_BUF];
	unsigned long n;

	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || !n || n > (1ul << 20) || *v == '-') {
		cw_report_error(json, "trace: bad CW_FOLD_MAP_ENTRIES \"%s\" (1 to 1048576)", cw_shown(v, shown));
		return CW_EXIT_USAGE;
	}
	o->fold_map_entries = (unsigned)n;
	return 0;
}

int cmd_trace(int argc, char **argv)
{
	struct cw_trace_opts o;
	struct trace_services sv = { .o = &o };
	struct cw_trace_hooks h = { otlp_start, otlp_stop, serve_start, serve_lag, serve_stop, &sv };
	struct cw_trace_result res;
	int json = 0, rc;

	rc = parse_args(&o, argc, argv, &json);
	if (rc)
		return rc < 0 ? CW_EXIT_OK : rc;
	/* Every call's line is what --py-stacks all is for. */
	if (o.py_mode == CW_PY_ALL)
		o.capture_summary = 0;
	if ((rc = fold_map_entries(&o, json)))
		return rc;
	if (cw_global_check_args)
		return CW_EXIT_OK;
	if (!o.db)
		o.db = cw_default_db();
	if (!o.size_cap)
		o.size_cap = cw_default_size_cap();
	o.node = cw_default_node();
	o.nvml_path = cw_default_nvml_lib();
	o.kubelet_url = cw_default_kubelet_url();
	if (!o.gpu_interval_ns)
		o.gpu_interval_ns = cw_default_gpu_interval();
	if (!o.stall_after_ns)
		o.stall_after_ns = cw_default_stall_after();
	if (!isatty(STDOUT_FILENO))
		o.no_view = 1;
	o.json_fd = STDOUT_FILENO;
	/* stdout is for the NDJSON alone: the launched command (and anything
	 * else writing to descriptor 1) gets stderr, the events a private copy
	 * of stdout that the command does not inherit. */
	if (o.json && o.command) {
		int fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);

		if (fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
			cw_report_error(1, "trace: cannot set up stdout for --json: %s", strerror(errno));
			return CW_EXIT_FAIL;
		}
		o.json_fd = fd;
	}
	o.view_out = stdout;
	o.say = (struct cw_trace_sink){ say_line, say_error, &o };
	cw_trace_run(&o, &h, &res);
	return cmd_trace_exit_code(&res);
}
